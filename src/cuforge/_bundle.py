"""cuforge's own modules served from one file of their compiled code.

A fresh process spends a good part of ``import cuforge`` finding and reading its ~55 modules'
bytecode files, a lookup, a stat, an open and a read each (docs/benchmarks.md, "Start-up").
Python serves its own start-up modules frozen for the same reason. Here a meta-path finder, installed when
``cuforge/__init__.py`` imports this module (first, before the modules it serves), serves
``cuforge.*`` from one file in the package's ``__pycache__`` (``_bundle.<cache tag>.bin``)
that holds each module's code, as its ``.pyc`` would, and the size and modification time of
the source it was compiled from. The layout of the source is unchanged; only the reads are.

The same rules as Python's bytecode cache, and stricter:

- a module is served only while its source has the size and modification time (to the
  nanosecond) recorded with its code, and the file's header names this interpreter's magic
  number and optimisation level; any other module, or a changed one, is imported as usual;
- the file is read only if it is owned by this user (or root) and writable by no one else,
  checked on the open file (cuforge runs no code a stranger could have written);
- it is written at the interpreter's exit, when the process imported modules of the package
  that it did not serve, unless ``sys.dont_write_bytecode`` (``PYTHONDONTWRITEBYTECODE``) is
  set; it goes where Python's bytecode would (``sys.pycache_prefix`` included), in one atomic
  rename, and a failed write is ignored, as a failed ``.pyc`` write is.

Modules keep their ``__file__``, their code its file name, so tracebacks, ``inspect`` and
coverage read the source as before. The file stays open for the process (close-on-exec): a
module is read from it when imported, and some are imported late.
"""

from __future__ import annotations

import marshal
import os
import sys

# (_frozen_importlib is importlib's own bootstrap, always loaded: importlib.machinery,
# where the same ModuleSpec is public, is one more import for the start-up this serves)
from _frozen_importlib import ModuleSpec  # type: ignore[import-not-found]
from _frozen_importlib_external import MAGIC_NUMBER, PathFinder  # type: ignore[import-not-found]
from typing import Any

__all__ = ["install"]

_VERSION = 2
_PREFIX = __package__ + "."  # the names served: the package's submodules
_LENGTH = 8  # the file: the index's length (8 bytes, little-endian), the index, then each module's code

Entry = tuple  # (source path, is a package, source mtime_ns, source size, code's offset past the index, its length)


def _location(root: str) -> str | None:
    """The bundle's path for the package at ``root``, where Python would keep its bytecode."""
    tag = sys.implementation.cache_tag
    if tag is None:  # (an interpreter that caches no bytecode)
        return None
    level = sys.flags.optimize
    name = f"_bundle.{tag}{f'.opt-{level}' if level else ''}.bin"
    if sys.pycache_prefix:
        return os.path.join(sys.pycache_prefix, os.path.abspath(root).lstrip(os.sep), name)
    return os.path.join(root, "__pycache__", name)


def _header() -> tuple[Any, ...]:
    return (_VERSION, MAGIC_NUMBER, sys.flags.optimize)


def _open(path: str) -> tuple[int, int, dict[str, Entry]]:
    """The bundle, open, where its modules' code starts, and its index (name: `Entry`) less the
    entries that the file does not hold whole; (-1, 0, {}) where it is missing,
    unreadable, not this interpreter's or not trusted. Only the index is read now: each
    module's code is read when it is imported, from this descriptor (one read where a .pyc
    costs an open, a stat, a read and a close, into memory that is reused, where one read of
    the whole file would fault in fresh pages)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return -1, 0, {}
    try:
        st = os.fstat(fd)
        if st.st_uid in (os.geteuid(), 0) and not st.st_mode & 0o022:  # (else someone else could have written it)
            length = int.from_bytes(os.pread(fd, _LENGTH, 0), "little")
            if length > st.st_size - _LENGTH:
                raise ValueError("damaged")
            header, index = marshal.loads(os.pread(fd, length, _LENGTH))
            if header == _header() and isinstance(index, dict):
                base = _LENGTH + length
                return fd, base, {name: e for name, e in index.items() if base + e[4] + e[5] <= st.st_size}
    except (OSError, EOFError, ValueError, TypeError):
        pass
    os.close(fd)
    return -1, 0, {}


class _BundleFinder:
    """Serves the package's modules whose sources are unchanged since they were bundled."""

    def __init__(self, root: str, path: str) -> None:
        self.root, self.path = root, path
        self.fd, self.base, self.index = _open(path)  # (the descriptor stays open: modules are imported later too)
        self.served: set[str] = set()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        entry = self.index.get(name) if name.startswith(_PREFIX) else None
        if entry is None:
            return None
        source, package, mtime, size = entry[:4]
        try:
            st = os.stat(source)
        except OSError:
            return None
        if st.st_mtime_ns != mtime or st.st_size != size:
            return None
        spec = ModuleSpec(name, self, origin=source, is_package=package)  # type: ignore[arg-type]
        spec.has_location = True
        spec.cached = self.path  # (the module's __cached__: where its code was read; else computed per module)
        if package:
            spec.submodule_search_locations = [os.path.dirname(source)]
        return spec

    def code(self, name: str) -> bytes:
        offset, length = self.index[name][4:6]
        data = os.pread(self.fd, length, self.base + offset)
        if len(data) != length:
            raise ImportError(f"{self.path}: {name}'s code is cut short", name=name)
        return data

    def create_module(self, spec: Any) -> None:
        return None  # (the default module)

    def exec_module(self, module: Any) -> None:
        name = module.__spec__.name
        code = marshal.loads(self.code(name))
        self.served.add(name)
        exec(code, module.__dict__)

    def get_source(self, name: str) -> str:
        """The module's source (``linecache`` and ``inspect`` ask a loader where a file is gone)."""
        with open(self.index[name][0], encoding="utf-8") as fh:
            return fh.read()

    def is_package(self, name: str) -> bool:
        return self.index[name][1]

    def write(self) -> None:
        """At exit: bundle the package's modules this process imported, where some were not served."""
        if sys.dont_write_bytecode:
            return
        try:
            _write(self)
        except Exception:  # best-effort, as a .pyc's write is: never a traceback at exit
            pass


def _write(finder: _BundleFinder) -> None:
    from importlib.machinery import SourceFileLoader

    codes: dict[str, tuple[tuple[Any, ...], bytes | None]] = {name: (e[:4], None) for name, e in finder.index.items()}
    changed = False
    root = os.path.join(finder.root, "")
    for name, module in list(sys.modules.items()):
        if not name.startswith(_PREFIX) or name in finder.served:
            continue  # (and no other module's attribute read: a lazy module would load now)
        source = getattr(module, "__file__", None)
        if not isinstance(source, str) or not source.endswith(".py") or not source.startswith(root):
            continue
        before = os.stat(source)
        about = (source, hasattr(module, "__path__"), before.st_mtime_ns, before.st_size)
        if name in codes and codes[name][0] == about:
            continue  # (bundled as it is; imported by another finder)
        code = marshal.dumps(SourceFileLoader(name, source).get_code(name))
        after = os.stat(source)
        if (before.st_mtime_ns, before.st_size) == (after.st_mtime_ns, after.st_size):  # (else being edited)
            codes[name], changed = (about, code), True
    if not changed:
        return
    blobs = {name: code if code is not None else finder.code(name) for name, (_, code) in codes.items()}
    index: dict[str, Entry] = {}
    offset = 0
    for name, (about, _) in codes.items():
        index[name] = (*about, offset, len(blobs[name]))
        offset += len(blobs[name])
    head = marshal.dumps((_header(), index))
    os.makedirs(os.path.dirname(finder.path), exist_ok=True)
    temporary = f"{finder.path}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(len(head).to_bytes(_LENGTH, "little") + head + b"".join(blobs.values()))
        os.replace(temporary, finder.path)
    except BaseException:
        os.unlink(temporary)
        raise


def install(root: str) -> None:
    """Serve the package at ``root``'s modules from its bundle, ahead of the path's finder, and
    write the bundle at exit where this process imported modules it did not serve."""
    path = _location(root)
    if path is None or any(isinstance(f, _BundleFinder) for f in sys.meta_path):
        return
    if not hasattr(os, "pread") or not hasattr(os, "geteuid"):  # (Windows: its modules are imported as usual)
        return
    finder = _BundleFinder(root, path)
    try:
        at = sys.meta_path.index(PathFinder)
    except ValueError:
        at = len(sys.meta_path)
    sys.meta_path.insert(at, finder)
    import atexit

    atexit.register(finder.write)


install(os.path.dirname(os.path.abspath(__file__)))
