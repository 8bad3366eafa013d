"""Files that hold the persistent cache: bytes by name, each written atomically, in folders
only this user can write, every one reached through a checked handle (``trust``)."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .._digest import hexdigest
from . import trust
from .trust import UntrustedCacheError

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["FileStore", "UntrustedCacheError", "digest"]

_WRITE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | trust.NO_LINKS


def digest(data: bytes) -> str:
    return hexdigest(data)


class FileStore:
    """Bytes by name, one file each under ``<root>/entries`` (``<2 hex>/<62 hex>`` of the
    name's SHA-256), written through ``<root>/tmp`` and renamed into place, so that a reader
    sees a whole entry or none. Mapping-like: ``store[name]`` raises KeyError when missing,
    UntrustedCacheError when another user could have planted it, and OSError when unreadable.

    The root is opened (made owner-only if absent) and checked once, and held: every folder
    and file below it is opened from that handle, without following links, and checked
    before it is used, so what is read is what was checked, whatever happens to the paths.
    """

    def __init__(self, root: str):
        self.root = root
        parent, name = os.path.split(root)
        top = trust.open_root(parent)  # the configured folder, and every one on the way to it
        fix = f"chmod 700 {root} (and chown it to yourself)"
        try:
            self._root = trust.open_folder(top, name, root, create=True, fix=fix)
        finally:
            trust.close(top)
        try:
            for sub in ("entries", "tmp", "locks"):  # made and checked now: an untrusted cache is refused when opened
                trust.close(self._folder(sub))
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if isinstance(self._root, int):
            with contextlib.suppress(OSError):
                os.close(self._root)
            self._root = -1

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # (an __init__ that failed early, or the interpreter's exit)
            pass

    def _folder(self, sub: str, *, create: bool = True) -> trust.Folder:
        path = os.path.join(self.root, sub)
        return trust.open_folder(self._root, sub, path, create=create, fix=f"chmod 700 {path} (and chown it to yourself)")

    def path_for(self, name: str) -> Path:
        """Where entry ``name`` lies, for messages and tools: the store itself never reads a path."""
        from pathlib import Path  # (tools and tests only: the warm path has no pathlib)

        h = digest(name.encode())
        return Path(self.root, "entries", h[:2], h[2:])

    @contextlib.contextmanager
    def _slot(self, name: str, *, create: bool) -> Iterator[tuple[trust.Folder, str, str]]:
        """(the checked folder ``entries/<xx>`` of entry ``name``, the entry's file name, its path)."""
        h = digest(name.encode())
        entries = self._folder("entries", create=create)
        try:
            folder = trust.open_folder(entries, h[:2], os.path.join(self.root, "entries", h[:2]), create=create)
        finally:
            trust.close(entries)
        try:
            yield folder, h[2:], os.path.join(self.root, "entries", h[:2], h[2:])
        finally:
            trust.close(folder)

    def __getitem__(self, name: str) -> bytes:
        try:
            with self._slot(name, create=False) as (folder, file, path):
                fd, st = trust.open_file(folder, file, path)
        except FileNotFoundError:
            raise KeyError(name) from None
        try:
            chunks = []
            while chunk := os.read(fd, max(st.st_size, 1 << 16)):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def __setitem__(self, name: str, data: bytes) -> None:
        with self._slot(name, create=True) as (folder, file, _):
            tmp = self._folder("tmp")
            try:
                part, kw = trust.at(tmp, f"{os.getpid()}-{os.urandom(8).hex()}")
                fd = os.open(part, _WRITE, 0o600, **kw)
                try:
                    with os.fdopen(fd, "wb") as fh:
                        fh.write(data)
                        fh.flush()
                        os.fsync(fh.fileno())
                    dst, dst_kw = trust.at(folder, file)
                    os.replace(part, dst, src_dir_fd=kw.get("dir_fd"), dst_dir_fd=dst_kw.get("dir_fd"))
                except BaseException:
                    with contextlib.suppress(OSError):
                        os.unlink(part, **kw)
                    raise
            finally:
                trust.close(tmp)

    def __delitem__(self, name: str) -> None:
        """Remove entry ``name``, or an empty folder in its place."""
        try:
            with self._slot(name, create=False) as (folder, file, _):
                target, kw = trust.at(folder, file)
                if stat.S_ISDIR(os.stat(target, follow_symlinks=False, **kw).st_mode):
                    os.rmdir(target, **kw)
                else:
                    os.unlink(target, **kw)
        except FileNotFoundError:
            raise KeyError(name) from None

    def open_lock(self, name: str) -> int:
        """Lock file ``name`` (made if absent) opened for ``flock``, checked as an entry is."""
        locks = self._folder("locks")
        try:
            target, kw = trust.at(locks, name)
            fd = os.open(target, os.O_RDWR | os.O_CREAT | trust.NO_LINKS, 0o600, **kw)
            try:
                trust.check_own(fd, os.path.join(self.root, "locks", name))
            except BaseException:
                os.close(fd)
                raise
            return fd
        finally:
            trust.close(locks)

    def files(self) -> Iterator[tuple[str, str, os.stat_result]]:
        """(``<xx>``, file name, ``lstat``) of each entry file in a trusted folder."""
        try:
            entries = self._folder("entries", create=False)
        except FileNotFoundError:
            return
        try:
            for sub in os.listdir(entries):
                try:
                    folder = trust.open_folder(entries, sub, os.path.join(self.root, "entries", sub), create=False)
                except OSError:  # (untrusted, or not a folder: not the cache's)
                    continue
                try:
                    for file in os.listdir(folder):
                        target, kw = trust.at(folder, file)
                        with contextlib.suppress(OSError):
                            st = os.stat(target, follow_symlinks=False, **kw)
                            if stat.S_ISREG(st.st_mode):
                                yield sub, file, st
                finally:
                    trust.close(folder)
        finally:
            trust.close(entries)

    def unlink(self, sub: str, file: str) -> None:
        """Remove file ``entries/<sub>/<file>`` (one `files` listed)."""
        entries = self._folder("entries", create=False)
        try:
            folder = trust.open_folder(entries, sub, os.path.join(self.root, "entries", sub), create=False)
            try:
                target, kw = trust.at(folder, file)
                os.unlink(target, **kw)
            finally:
                trust.close(folder)
        finally:
            trust.close(entries)

    def clear(self) -> None:
        """Remove everything under ``entries`` (untrusted folders too: they are in the way)."""
        with contextlib.suppress(FileNotFoundError):
            entries = self._folder("entries", create=False)
            try:
                for sub in os.listdir(entries):
                    _remove(entries, sub)
            finally:
                trust.close(entries)


def _remove(folder: trust.Folder, name: str) -> None:
    """Remove ``name`` from ``folder`` and, if it is a folder, what it holds, never following a link."""
    target, kw = trust.at(folder, name)
    with contextlib.suppress(OSError):
        if not stat.S_ISDIR(os.stat(target, follow_symlinks=False, **kw).st_mode):
            os.unlink(target, **kw)
            return
        inner = os.open(target, trust.DIR_FLAGS, **kw) if trust.HANDLES else target
        try:
            for sub in os.listdir(inner):
                _remove(inner, sub)
        finally:
            trust.close(inner)
        os.rmdir(target, **kw)
