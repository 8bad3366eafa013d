"""cuforge's own modules served from one file of their compiled code.

A fresh process spends a good part of ``import cuforge`` finding and reading its ~55 modules'
bytecode files, a lookup, a stat, an open and a read each (docs/benchmarks.md, "Start-up").
Python serves its own start-up modules frozen for the same reason. Here a meta-path finder,
installed when ``cuforge/__init__.py`` imports this module (first, before the modules it
serves), serves ``cuforge.*`` from one file: an index (each module's source path, the size
and modification time of the source its code was compiled from, where its code lies), then
each module's code, as its ``.pyc`` holds it. The layout of the source is unchanged; only the
reads are. Each module gets a source-file loader (``__file__``, ``get_data``, resources,
``python -m`` as usual) whose code comes from the file, else from the ``.pyc`` or the
source, as usual.

The file is ``_bundle.pyc`` beside this module: Python never imports it (this module has its
source) and pip removes it with the package (it removes ``NAME.pyc`` for each ``NAME.py`` it
installed), so an uninstall leaves no folder behind. Under ``PYTHONPYCACHEPREFIX`` it goes
where the package's bytecode goes. The same rules as Python's bytecode cache, and stricter:

- a module is served only while its source, where this import looks for it, has the size and
  modification time (to the nanosecond) recorded with its code, and the file's header names
  this interpreter's magic number and optimisation level; any other module, or a changed one,
  is imported as usual;
- the file is read only if it is owned by this user (or root) and writable by no one else,
  checked on the open file, and a module's code only while that descriptor is still that file
  (cuforge runs no code a stranger could have written);
- it is written at the interpreter's exit, when the process imported modules of the package
  that it did not serve, each compiled from its source then, unless ``sys.dont_write_bytecode``
  (``PYTHONDONTWRITEBYTECODE``) is set; in one atomic rename, and a failed write is ignored,
  as a failed ``.pyc`` write is.

Modules keep their ``__file__``, their code its file name, so tracebacks, ``inspect`` and
coverage read the source as before; ``__cached__`` names the file. The file stays open for
the process (close-on-exec): a module is read from it when imported, and some are imported
late.
"""

from __future__ import annotations

import marshal
import os
import sys

# (_frozen_importlib is importlib's own bootstrap, always loaded: importlib.machinery, where
# the same classes are public, is one more import for the start-up this serves)
from _frozen_importlib import ModuleSpec  # type: ignore[import-not-found]
from _frozen_importlib_external import MAGIC_NUMBER, PathFinder, SourceFileLoader  # type: ignore[import-not-found]
from typing import Any

__all__ = ["install"]

_VERSION = 3
_PREFIX = __package__ + "."  # the names served: the package's submodules
_LENGTH = 8  # the file: the index's length (8 bytes, little-endian), the index, then each module's code

Entry = tuple  # (source path, is a package, source mtime_ns, source size, code's offset past the index, its length)


def _location(root: str) -> str | None:
    """The file's path for the package at ``root``."""
    if sys.implementation.cache_tag is None:  # (an interpreter that caches no bytecode)
        return None
    if sys.pycache_prefix:
        tag = f"{sys.implementation.cache_tag}{f'.opt-{sys.flags.optimize}' if sys.flags.optimize else ''}"
        return os.path.join(sys.pycache_prefix, os.path.abspath(root).lstrip(os.sep), f"_bundle.{tag}.bin")
    return os.path.join(root, "_bundle.pyc")


def _header() -> tuple[Any, ...]:
    return (_VERSION, MAGIC_NUMBER, sys.flags.optimize)


def _trusted(st: os.stat_result) -> bool:
    """Owned by this user (or root) and writable by no one else."""
    return st.st_uid in (os.geteuid(), 0) and not st.st_mode & 0o022


def _open(path: str) -> tuple[int, tuple[int, int], int, dict[str, Entry]]:
    """The file, open, its (device, inode), where its modules' code starts, and its index (name:
    `Entry`) less the entries that it does not hold whole; (-1, (0, 0), 0, {}) where it is
    missing, unreadable, not this interpreter's or not trusted. Only the index is read now: a
    module's code is read when it is imported (one read where a .pyc costs an open, a stat, a
    read and a close, into memory that is reused, where one read of the whole file would fault
    in fresh pages)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return -1, (0, 0), 0, {}
    try:
        st = os.fstat(fd)
        if _trusted(st):
            length = int.from_bytes(os.pread(fd, _LENGTH, 0), "little")
            if length <= st.st_size - _LENGTH:
                header, index = marshal.loads(os.pread(fd, length, _LENGTH))
                if header == _header() and isinstance(index, dict):
                    base = _LENGTH + length
                    whole = {name: e for name, e in index.items() if base + e[4] + e[5] <= st.st_size}
                    return fd, (st.st_dev, st.st_ino), base, whole
    except (OSError, EOFError, ValueError, TypeError, IndexError):
        pass
    os.close(fd)
    return -1, (0, 0), 0, {}


class _Loader(SourceFileLoader):  # type: ignore[misc]
    """A module's source-file loader whose code comes from the file, else (the file changed
    since it was opened, or is damaged there) from the module's .pyc or source, as usual."""

    def __init__(self, fullname: str, path: str, finder: _BundleFinder) -> None:
        super().__init__(fullname, path)
        self.finder = finder

    def get_code(self, fullname: str) -> Any:
        try:
            code = marshal.loads(self.finder.code(fullname))
        except (OSError, EOFError, ValueError, TypeError, KeyError):
            return super().get_code(fullname)
        self.finder.served.add(fullname)
        return code


class _BundleFinder:
    """Serves the package's modules whose sources are unchanged since they were bundled."""

    def __init__(self, root: str, path: str) -> None:
        self.root, self.path = root, path
        self.fd, self.file, self.base, self.index = _open(path)  # (the descriptor stays open: modules are imported later too)
        self.served: set[str] = set()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        entry = self.index.get(name) if name.startswith(_PREFIX) else None
        if entry is None or not path:
            return None
        source, package, mtime, size = entry[:4]
        folder = os.path.dirname(source)
        if (os.path.dirname(folder) if package else folder) not in path:
            return None  # (another copy of the package, where this import looks)
        try:
            st = os.stat(source)
        except OSError:
            return None
        if st.st_mtime_ns != mtime or st.st_size != size:
            return None
        spec = ModuleSpec(name, _Loader(name, source, self), origin=source, is_package=package)
        spec.has_location = True
        spec.cached = self.path  # (the module's __cached__: where its code was read; else computed per module)
        if package:
            spec.submodule_search_locations = [folder]
        return spec

    def code(self, name: str) -> bytes:
        """The module's marshalled code, read from the file opened at start-up while the
        descriptor is still that file (a program that closed it may have opened another)."""
        offset, length = self.index[name][4:6]
        st = os.fstat(self.fd)
        if (st.st_dev, st.st_ino) != self.file:
            self.index = {}  # (serves nothing more)
            raise OSError(f"{self.path}: its descriptor is another file's now")
        data = os.pread(self.fd, length, self.base + offset)
        if len(data) != length:
            raise EOFError(f"{self.path}: {name}'s code is cut short")
        return data

    def write(self) -> None:
        """At exit: bundle the package's modules this process imported, where some were not served."""
        if sys.dont_write_bytecode:
            return
        try:
            _write(self)
        except BaseException:  # best-effort, as a .pyc's write is: never a traceback at exit
            pass


def _stale(finder: _BundleFinder) -> list[tuple[str, tuple[Any, ...]]]:
    """The modules imported here that the file does not hold as their sources are now: (name,
    (source, is a package, mtime_ns, size))."""
    stale = []
    root = os.path.join(finder.root, "")
    for name, module in list(sys.modules.items()):
        if not name.startswith(_PREFIX) or name in finder.served or name == __name__:
            continue  # (and no other module's attribute read: a lazy module would load now)
        source = getattr(module, "__file__", None)
        if not isinstance(source, str) or not source.endswith(".py") or not source.startswith(root):
            continue
        st = os.stat(source)
        about = (source, hasattr(module, "__path__"), st.st_mtime_ns, st.st_size)
        if finder.index.get(name, ())[:4] != about:  # (else bundled as it is; imported by another finder)
            stale.append((name, about))
    return stale


def _compiled(name: str, about: tuple[Any, ...]) -> bytes | None:
    """The module's code compiled from its source now (a .pyc of the same second and size could
    be older), or None where the source is being changed."""
    source = about[0]
    loader = SourceFileLoader(name, source)
    code = marshal.dumps(loader.source_to_code(loader.get_data(source), source))
    st = os.stat(source)
    return code if (st.st_mtime_ns, st.st_size) == about[2:4] else None


def _write(finder: _BundleFinder) -> None:
    stale = _stale(finder)
    if not stale:
        return
    os.makedirs(os.path.dirname(finder.path), exist_ok=True)
    temporary = f"{finder.path}.{os.getpid()}.tmp"
    # (before compiling: where the file cannot be written, or would not be trusted, nothing is)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        if not _trusted(os.fstat(fd)):
            return
        codes = {name: (e[:4], finder.code(name)) for name, e in finder.index.items()}
        for name, about in stale:
            code = _compiled(name, about)
            if code is not None:
                codes[name] = (about, code)
        index: dict[str, Entry] = {}
        offset = 0
        for name, (about, code) in codes.items():
            index[name] = (*about, offset, len(code))
            offset += len(code)
        head = marshal.dumps((_header(), index))
        with os.fdopen(fd, "wb", closefd=False) as fh:
            fh.write(len(head).to_bytes(_LENGTH, "little") + head + b"".join(code for _, code in codes.values()))
        os.replace(temporary, finder.path)
    finally:
        os.close(fd)
        if os.path.lexists(temporary):
            os.unlink(temporary)


def install(root: str) -> None:
    """Serve the package at ``root``'s modules from its file, ahead of the path's finder, and
    write the file at exit where this process imported modules it did not serve."""
    path = _location(root)
    if path is None or any(type(f).__name__ == "_BundleFinder" for f in sys.meta_path):
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
