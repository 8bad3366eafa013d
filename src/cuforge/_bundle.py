"""cuforge's own modules served from one file of their compiled code.

A fresh process spends more of ``import cuforge`` finding and reading its ~55 modules' bytecode
files, one lookup, stat and read each, than running them. Python serves its own start-up
modules frozen for the same reason. Here a meta-path finder, installed when
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
coverage read the source as before.
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

_VERSION = 1
_PREFIX = __package__ + "."  # the names served: the package's submodules


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


def _read(path: str) -> dict[str, tuple[str, bool, int, int, bytes]]:
    """The bundle's entries (name: source path, is a package, mtime_ns, size, code), or none
    where it is missing, unreadable, not this interpreter's or not trusted."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        if st.st_uid not in (os.geteuid(), 0) or st.st_mode & 0o022:
            return {}  # (someone else could have written it)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            header, entries = marshal.load(fh)
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    finally:
        os.close(fd)
    return entries if header == _header() and isinstance(entries, dict) else {}


class _BundleFinder:
    """Serves the package's modules whose sources are unchanged since they were bundled."""

    def __init__(self, root: str, path: str, entries: dict[str, tuple[str, bool, int, int, bytes]]) -> None:
        self.root, self.path, self.entries = root, path, entries
        self.served: set[str] = set()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        entry = self.entries.get(name) if name.startswith(_PREFIX) else None
        if entry is None:
            return None
        source, package, mtime, size, _ = entry
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

    def create_module(self, spec: Any) -> None:
        return None  # (the default module)

    def exec_module(self, module: Any) -> None:
        name = module.__spec__.name
        code = marshal.loads(self.entries[name][4])
        self.served.add(name)
        exec(code, module.__dict__)

    def get_source(self, name: str) -> str:
        """The module's source (``linecache`` and ``inspect`` ask a loader where a file is gone)."""
        with open(self.entries[name][0], encoding="utf-8") as fh:
            return fh.read()

    def is_package(self, name: str) -> bool:
        return self.entries[name][1]

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

    entries = dict(finder.entries)
    changed = False
    root = os.path.join(finder.root, "")
    for name, module in list(sys.modules.items()):
        if not name.startswith(_PREFIX) or name in finder.served:
            continue  # (and no other module's attribute read: a lazy module would load now)
        source = getattr(module, "__file__", None)
        if not isinstance(source, str) or not source.endswith(".py") or not source.startswith(root):
            continue
        before = os.stat(source)
        code = SourceFileLoader(name, source).get_code(name)
        after = os.stat(source)
        if (before.st_mtime_ns, before.st_size) != (after.st_mtime_ns, after.st_size):
            continue  # (being edited)
        entry = (source, hasattr(module, "__path__"), after.st_mtime_ns, after.st_size, marshal.dumps(code))
        if entries.get(name) != entry:
            entries[name], changed = entry, True
    if not changed:
        return
    os.makedirs(os.path.dirname(finder.path), exist_ok=True)
    temporary = f"{finder.path}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            marshal.dump((_header(), entries), fh)
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
    finder = _BundleFinder(root, path, _read(path))
    try:
        at = sys.meta_path.index(PathFinder)
    except ValueError:
        at = len(sys.meta_path)
    sys.meta_path.insert(at, finder)
    import atexit

    atexit.register(finder.write)


install(os.path.dirname(os.path.abspath(__file__)))
