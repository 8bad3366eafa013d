"""The persistent compile cache: compiled kernels that survive the process.

Storage is a directory of files, one per entry, each written atomically (to ``tmp/``,
fsync, rename into ``entries/``: ``files.FileStore``) and evicted least-recently-read past a
size cap. Importing cuda.core's ``FileStreamProgramCache``, which works the same way, would
import all of cuda.core, which a warm start, needing only to read two files, should not do.
It stores bytes and nothing else, so each kernel takes two entries:

- ``code:<sha256>``: the cubin or PTX exactly as NVRTC produced it (content-addressed, so
  a family compiled in one program is stored, and loaded, once; ``cuobjdump`` reads it);
- ``meta:<key>``: JSON with what cuda.core's cache drops (the lowered names, NVRTC's log,
  the flags, the arch) plus the versions, the code's SHA-256 and a checksum of the JSON
  itself.

The CPU backend's entries (``_cpu.store``) are its shared objects' bytes and checksummed
text records (`text_record`), which a read checks without a JSON parser: a cached CPU launch
loads no ``json``, which GPU records and the tuner's still use.

A read checks everything; anything missing, truncated, bit-flipped, of another version or
unreadable is a miss (counted in ``disk_errors``, logged at debug level): the kernel is
compiled again and the entries replaced. Nothing is pickled.

Every directory cuforge creates is 0700, parents included. The store (``files``, by the
rules of ``trust``) opens the cache root once and reaches every folder and file through that
handle, checked and never through a link: a root that another user could write to or swap is
refused (one warning; the process keeps its kernels in memory only), and so is, as a miss,
an entry whose folder or file another user could have planted. What is read is what was
checked: a cubin's bytes, or a CPU object's, verified against their SHA-256, are what loads.

Keys are cuforge's own SHA-256 of the program's inputs (``identity.cache_key``), not
cuda.core's ``make_program_cache_key``: that one keys cuda.core ``Program`` inputs (we
compile through cuda.bindings, with in-memory headers it cannot see), and is slow for a warm
start. `DiskCache` is a ``cache.Store`` of ``CompileResult`` (``get``, ``put``).

Across processes a per-key lock file (``fcntl.flock``, released by the kernel when its
process dies, so a killed compiler leaves no stale lock) keeps N processes that want the
same kernel from compiling it N times; after ``CUFORGE_CACHE_LOCK_S`` a waiter compiles
anyway.
"""

from __future__ import annotations

import _thread  # (threading's lock and thread-local types, without importing threading on a warm start)
import contextlib
import os
import time
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .. import _config
from .._version import __version__
from .artifact import CompileResult
from .files import FileStore, UntrustedCacheError
from .files import digest as _digest
from .stats import counters

if TYPE_CHECKING:
    from pathlib import Path


def _debug(message: str, *args: Any) -> None:
    """Log to the ``cuforge.cache`` logger (logging is imported when there is something to say,
    not at start-up)."""
    import logging

    logging.getLogger("cuforge.cache").debug(message, *args)


class CacheSecurityWarning(UserWarning):
    """The configured cache directory, or a folder or file in it, is not safe to load code
    from; it is not used. Given once per process for each path."""


class CacheWriteWarning(UserWarning):
    """The disk cache could not be opened or written (read-only, full, over quota): kernels
    still work, compiled again in later processes. Given once per process."""


_warned: set[str] = set()


def _warn_once(what: str, message: str, stacklevel: int = 4, category: type[Warning] = CacheWriteWarning) -> None:
    if what not in _warned:
        _warned.add(what)
        warnings.warn(message, category, stacklevel=stacklevel)


ENTRY_SCHEMA = 1


def _canonical(obj: Any) -> bytes:
    import json  # (JSON records are the GPU's and the tuner's: a cached CPU launch reads text records only)

    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def text_record(text: str) -> bytes:
    """A text record's bytes: the SHA-256 of ``text`` (UTF-8), a newline, then ``text``."""
    body = text.encode("utf-8")
    return _digest(body).encode() + b"\n" + body


class DiskCache:
    """One cache directory (``<root>/entries``, ``tmp``, ``locks``), created owner-only, and
    used only when this user owns it and no one else can write to it."""

    def __init__(self, root: str, max_bytes: int):
        self.path = root  # (a string: the warm path has no pathlib)
        self._store = FileStore(root)  # made 0700 where missing; raises UntrustedCacheError
        self.max_bytes = max_bytes  # enforced after writes: a warm start (reads only) walks nothing
        self._results: dict[str, CompileResult] = {}  # code digest -> result, shared by its kernels
        self._size: int | None = None  # bytes on disk as this process believes; seeded on first write
        self._size_lock = _thread.allocate_lock()

    def _wrote(self, nbytes: int) -> None:
        """Account for a write and evict least-recently-read entries past the cap."""
        with self._size_lock:
            if self._size is None:
                self._size = self.info()["bytes"]
            else:
                self._size += nbytes
            if self._size > self.max_bytes:
                self.prune(self.max_bytes)
                self._size = self.info()["bytes"]

    @property
    def root(self) -> Path:
        """The cache's folder, for tools and tests."""
        from pathlib import Path

        return Path(self.path)

    # ------------------------------------------------------------ kernels

    def get(self, key: str, *, recheck: bool = False) -> CompileResult | None:
        """The stored program for ``key``, verified; None on a miss or any damage.

        ``recheck``: a second look (after waiting for another process's compile) whose
        damage was already counted by the first.
        """
        meta = self.get_json(self.meta_name(key), quiet=recheck)
        if meta is None:
            return None
        try:
            expected = {"schema": ENTRY_SCHEMA, "key": key, "cuforge": __version__}
            if any(meta.get(k) != v for k, v in expected.items()):
                self._bad(key, f"entry from another version ({meta.get('cuforge')}, schema {meta.get('schema')})", quiet=recheck)
                return None
            digest = meta["code_sha256"]
            shared = self._results.get(digest)
            if shared is not None:
                return shared
            code = self._store[f"code:{digest}"]
            if _digest(code) != digest:
                self._bad(key, "code checksum mismatch", quiet=recheck)
                return None
            result = CompileResult(
                code=code,
                code_type=meta["code_type"],
                lowered=dict(meta["lowered"]),
                log=meta["log"],
                flags=tuple(meta["flags"]),
                seconds=float(meta["seconds"]),
                nvrtc_version=tuple(meta["nvrtc"]),  # type: ignore[arg-type]
                from_disk=True,
            )
        except KeyError:
            self._bad(key, "code entry missing", quiet=recheck)
            return None
        except UntrustedCacheError as exc:
            self._refused(exc)
            return None
        except (OSError, TypeError, ValueError, AttributeError) as exc:
            self._bad(key, f"unreadable entry: {exc}", quiet=recheck)
            return None
        self._results[digest] = result
        counters.add(disk_hits=1)
        return result

    def put(self, key: str, result: CompileResult) -> None:
        """Write ``result`` under ``key``; a failure is logged and counted, never raised."""
        digest = _digest(result.code)
        meta = {
            "schema": ENTRY_SCHEMA, "key": key, "cuforge": __version__, "nvrtc": list(result.nvrtc_version),
            "code_sha256": digest, "code_type": result.code_type, "lowered": dict(result.lowered),
            "log": result.log, "flags": list(result.flags), "seconds": result.seconds,
        }  # fmt: skip
        try:
            self._store[f"code:{digest}"] = result.code  # code first: a meta entry never points at nothing
            self.put_json(self.meta_name(key), meta, raising=True)
        except UntrustedCacheError as exc:
            self._refused(exc)
            return
        except OSError as exc:
            self._write_failed(key, exc)
            return
        self._results[digest] = result
        counters.add(disk_writes=1)
        self._wrote(len(result.code) + 1024)

    def _write_failed(self, name: str, exc: OSError) -> None:
        counters.add(disk_errors=1)
        _debug("cuforge cache: could not write %s in %s: %s", name[:24], self.path, exc)
        _warn_once("write", f"cuforge: cannot write the compile cache at {self.path} ({exc}); kernels still work, "
                            f"but a new process compiles them again. Free space or set CUFORGE_CACHE_DIR "
                            f"(this warning is given once per process)", stacklevel=5)  # fmt: skip

    def _bad(self, name: str, why: str, *, quiet: bool = False) -> None:
        """Count and log a damaged entry, and remove it so the rewrite can take its place."""
        if not quiet:  # a recheck's damage was counted by the first look
            counters.add(disk_errors=1)
        _debug("cuforge cache: entry %s in %s is unusable (%s); recompiling", name[:24], self.path, why)
        for entry in {name, name if ":" in name else self.meta_name(name)}:
            with contextlib.suppress(KeyError, OSError):
                del self._store[entry]  # (or an empty folder in its place: unreadable, in the way)
        return None

    def _refused(self, exc: UntrustedCacheError) -> None:
        """Count and warn (once per path) about a folder or file another user could have
        planted: a miss, or a write not made. Nothing is removed: the user should look."""
        counters.add(disk_errors=1)
        _debug("cuforge cache: refused %s: %s", exc.path, exc)
        _warn_once(f"untrusted:{exc.path}", f"cuforge: not using {exc.path} in the compile cache at {self.path}: {exc}; "
                                            f"another user could plant code there. Fix: {exc.fix}. Kernels stored there "
                                            f"are compiled again meanwhile", 5, CacheSecurityWarning)  # fmt: skip

    # ------------------------------------------------------------ JSON records

    def _read(self, name: str, *, quiet: bool, missing: bool = False) -> bytes | None:
        """Entry ``name``'s bytes, or None: missing (damage where ``missing`` says it should
        be there), planted by another user (refused) or unreadable (damage)."""
        try:
            return self._store[name]
        except KeyError:
            if missing:
                self._bad(name, "entry missing", quiet=quiet)
            return None
        except UntrustedCacheError as exc:
            self._refused(exc)
            return None
        except OSError as exc:
            self._bad(name, f"unreadable: {exc}", quiet=quiet)
            return None

    def get_json(self, name: str, *, quiet: bool = False) -> dict[str, Any] | None:
        """A checksummed JSON record, or None when missing or damaged (damage is counted)."""
        raw = self._read(name, quiet=quiet)
        if raw is None:
            return None
        import json  # (see _canonical)

        try:
            record = json.loads(raw)
            body, checksum = record["body"], record["checksum"]
            if not isinstance(body, dict) or _digest(_canonical(body)) != checksum:
                self._bad(name, "checksum mismatch", quiet=quiet)
                return None
        except (ValueError, KeyError, TypeError):
            self._bad(name, "truncated or not JSON", quiet=quiet)
            return None
        return body

    def put_json(self, name: str, body: dict[str, Any], *, raising: bool = False) -> None:
        data = _canonical({"body": body, "checksum": _digest(_canonical(body))})
        try:
            self._store[name] = data
        except UntrustedCacheError as exc:
            if raising:
                raise
            self._refused(exc)
            return
        except OSError as exc:
            if raising:
                raise
            counters.add(disk_errors=1)
            _debug("cuforge cache: could not write %s in %s: %s", name, self.path, exc)
            return
        if not raising:  # a kernel's metadata is accounted with its code in put()
            self._wrote(len(data))

    # ------------------------------------------------------------ text records

    def get_text(self, name: str, *, quiet: bool = False) -> str | None:
        """A checksummed text record (`put_text`'s), or None when missing or damaged (damage
        is counted). The CPU backend's records are text: reading them needs no parser, and
        a cached CPU launch loads no JSON module."""
        raw = self._read(name, quiet=quiet)
        if raw is None:
            return None
        checksum, _, body = raw.partition(b"\n")
        if _digest(body) != checksum.decode("ascii", "replace"):
            self._bad(name, "checksum mismatch", quiet=quiet)
            return None
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:  # (only a hand-made entry: the checksum matched)
            self._bad(name, "not UTF-8", quiet=quiet)
            return None

    def put_text(self, name: str, text: str) -> None:
        """Write ``text`` as record ``name``, after its SHA-256 (best-effort, as `put_json`)."""
        data = text_record(text)
        try:
            self._store[name] = data
        except UntrustedCacheError as exc:
            self._refused(exc)
            return
        except OSError as exc:
            counters.add(disk_errors=1)
            _debug("cuforge cache: could not write %s in %s: %s", name, self.path, exc)
            return
        self._wrote(len(data))

    # ------------------------------------------------------------ other compiled code (the CPU backend's)

    def get_bytes(self, name: str, sha256: str, *, quiet: bool = False) -> bytes | None:
        """Entry ``name``'s bytes when their SHA-256 is ``sha256``; None when missing or
        damaged (counted, unless ``quiet``, and removed)."""
        data = self._read(name, quiet=quiet, missing=True)
        if data is None:
            return None
        if _digest(data) != sha256:
            self._bad(name, "checksum mismatch", quiet=quiet)
            return None
        counters.add(disk_hits=1)
        return data

    def put_bytes(self, name: str, data: bytes) -> bool:
        """Write ``data`` as entry ``name``; False (counted, warned once) when it could not be."""
        try:
            self._store[name] = data
        except UntrustedCacheError as exc:
            self._refused(exc)
            return False
        except OSError as exc:
            self._write_failed(name, exc)
            return False
        counters.add(disk_writes=1)
        self._wrote(len(data))
        return True

    # ------------------------------------------------------------ cross-process locks

    @contextlib.contextmanager
    def locks(self, keys: list[str], timeout: float) -> Iterator[None]:
        """Hold the lock files of ``keys`` (sorted, so batches cannot deadlock), waiting at
        most ``timeout`` seconds in all; past it, go on without the rest."""
        try:
            import fcntl
        except ImportError:  # Windows: no cross-process lock; the atomic writes still hold
            yield
            return
        deadline = time.monotonic() + timeout
        fds: list[int] = []
        try:
            for key in sorted(set(keys)):
                try:
                    fd = self._store.open_lock(f"{key[:40]}.lock")
                except UntrustedCacheError as exc:
                    self._refused(exc)
                    continue
                except OSError:
                    continue
                fds.append(fd)
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() > deadline:
                            _debug("cuforge cache: waited %.0f s for %s; compiling anyway", timeout, key[:16])
                            break
                        time.sleep(0.01)
            yield
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)

    # ------------------------------------------------------------ maintenance

    def path_of(self, name: str) -> Path:
        """The file holding entry ``name`` (``meta:<key>``, ``code:<sha256>``), for tools and tests
        (cuforge's own reads and writes go through the store's checked handles)."""
        return self._store.path_for(name)

    def meta_name(self, key: str) -> str:
        return f"meta:{key}"

    def code_name(self, key: str) -> str | None:
        """The code entry a kernel's metadata points at, or None if the metadata is unusable."""
        meta = self.get_json(self.meta_name(key))
        return f"code:{meta['code_sha256']}" if meta and "code_sha256" in meta else None

    def info(self) -> dict[str, Any]:
        sizes = [st.st_size for _, _, st in self._store.files()]
        return {"path": self.path, "entries": len(sizes), "bytes": sum(sizes), "max_bytes": self.max_bytes}

    def clear(self) -> None:
        self._store.clear()
        self._results.clear()

    def prune(self, max_bytes: int) -> int:
        """Evict least-recently-read entries until at most ``max_bytes`` remain; returns how
        many were removed."""
        files = sorted((st.st_atime, st.st_size, sub, file) for sub, file, st in self._store.files())
        total, removed = sum(f[1] for f in files), 0
        for _, size, sub, file in files:
            if total <= max_bytes:
                break
            with contextlib.suppress(OSError):
                self._store.unlink(sub, file)
                total -= size
                removed += 1
        self._results.clear()
        return removed


_opened: dict[tuple[str, int], DiskCache | None] = {}
_opened_lock = _thread.allocate_lock()


def _after_fork() -> None:  # a fork's child has only the forking thread: a lock another one held would never open
    global _opened_lock
    _opened_lock = _thread.allocate_lock()
    for cache in _opened.values():
        if cache is not None:
            cache._size_lock = _thread.allocate_lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def current() -> DiskCache | None:
    """The disk cache configured now, or None when it is off or cannot be opened (a
    read-only or missing location only costs the persistence, never the kernel)."""
    if not _config.cache_enabled():
        return None
    root, cap = _config.cache_path(), _config.cache_max_bytes()
    with _opened_lock:
        if (root, cap) not in _opened:
            try:
                _opened[root, cap] = DiskCache(root, cap)
            except UntrustedCacheError as exc:
                counters.add(disk_errors=1)
                warnings.warn(
                    f"cuforge: not using the compile cache at {root}: {exc}; another user could plant code there. "
                    f"Fix: {exc.fix}, or set CUFORGE_CACHE_DIR to a folder of your own. Kernels are cached in memory "
                    f"only for this process.",
                    CacheSecurityWarning,
                    stacklevel=3,
                )
                _opened[root, cap] = None
            except OSError as exc:
                counters.add(disk_errors=1)
                _debug("cuforge cache: cannot open %s (%s); the disk cache is off for this process", root, exc)
                _warn_once("open", f"cuforge: cannot open the compile cache at {root} ({exc}); kernels are cached in "
                                   f"memory only in this process. Set CUFORGE_CACHE_DIR to a writable directory, or "
                                   f"CUFORGE_CACHE=0 (this warning is given once per process)")  # fmt: skip
                _opened[root, cap] = None
        return _opened[root, cap]
