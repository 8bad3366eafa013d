"""Files that hold the persistent cache: bytes by name, each written atomically, in a
directory only this user can write."""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

from .. import _config


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class UntrustedCacheError(OSError):
    """A cache directory another user could have planted code in."""


def untrusted_reason(path: Path) -> str | None:
    """Why ``path`` cannot be trusted with executable code, or None: as OpenSSH treats
    ~/.ssh, it must be owned by this user and writable by no one else."""
    if not hasattr(os, "getuid"):  # Windows: ACLs, not modes; the user's profile dir is private
        return None
    st = path.stat()
    if st.st_uid != os.getuid():
        return f"{path} is owned by uid {st.st_uid}, not by this user (uid {os.getuid()})"
    if st.st_mode & 0o022:
        return f"{path} is writable by group or others (mode {st.st_mode & 0o777:o})"
    return None


class FileStore:
    """Bytes by name, one file each under ``<root>/entries`` (``<2 hex>/<62 hex>`` of the
    name's SHA-256), written through ``<root>/tmp`` and renamed into place, so that a reader
    sees a whole entry or none. Mapping-like: ``store[name]`` raises KeyError when missing
    and OSError when unreadable."""

    def __init__(self, root: Path):
        self.entries, self.tmp = root / "entries", root / "tmp"

    def path_for(self, name: str) -> Path:
        h = digest(name.encode())
        return self.entries / h[:2] / h[2:]

    def __getitem__(self, name: str) -> bytes:
        try:
            with open(self.path_for(name), "rb") as fh:
                return fh.read()
        except FileNotFoundError:
            raise KeyError(name) from None

    def __setitem__(self, name: str, data: bytes) -> None:
        import tempfile  # imported on the first write: a warm start only reads

        path = self.path_for(name)
        _config.ensure_dir(path.parent)
        _config.ensure_dir(self.tmp)  # (a hand-cleaned cache may have lost it)
        fd, tmp = tempfile.mkstemp(dir=self.tmp)  # 0600
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def __delitem__(self, name: str) -> None:
        try:
            os.unlink(self.path_for(name))
        except FileNotFoundError:
            raise KeyError(name) from None

    def clear(self) -> None:
        import shutil

        for sub in list(self.entries.iterdir()):
            if sub.is_dir() and not sub.is_symlink():
                shutil.rmtree(sub, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    sub.unlink()
