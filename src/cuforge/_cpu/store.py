"""Shared objects built by the host C++ compiler from one translation unit, cached like
cubins and loaded once per process.

With the disk cache on (``_compile.disk``), a build takes two entries of that cache:

- ``so:<sha256>``: the shared object's bytes, content-addressed;
- ``cpu-meta:<key>``: a checksummed text record (`meta_record`) naming the schema, the key
  and that SHA-256, then, as JSON for people reading the cache, the compiler, the flags
  and the compiler's warnings. A warm start reads its first three lines and no JSON.

A read checks the record's checksum and the object's SHA-256; a missing, damaged or foreign
entry is a miss, built again. The directories are the compile cache's (owner-only, reached
through checked handles, refused when another user could write there), the writes atomic,
and a per-key lock file keeps N processes from building one object N times.

What is loaded is the bytes that were checked (or built), never a path read again: they are
copied into a sealed memory file (``memfd_create``) that ``dlopen`` opens through
``/proc/self/fd``; where there is none, into a file of a private folder of this process.
With the disk cache off, the same.

The key hashes the inputs only: the source, the in-memory headers, the include folders
(by path: their contents enter through ``key_extra``, the caller's digests of its runtime
and CUDA headers), the flags, the compiler's command and ``--version``, and cuforge's
version.
"""

from __future__ import annotations

import _thread  # (threading's lock and thread-local types, without importing threading on a warm start)
import contextlib
import ctypes
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import _config
from .._compile import disk as _disk
from .._compile.files import digest
from .._compile.stats import counters
from .._frozen import Record
from .._version import __version__
from ..errors import CompileError, CompilerNotFoundError
from .toolchain import Compiler, find_compiler

__all__ = ["Loaded", "cache_key", "shared_object"]

SCHEMA = "cpu-so-3"  # (3: libraries after the sources on the command line)
COMPILE_TIMEOUT_S = 300.0
LOG_LINES = 40  # of the compiler's messages, in a CompileError's text (all of them are on .log)


class Loaded(Record):
    """A shared object loaded in this process."""

    __slots__ = ()
    library: ctypes.CDLL
    sha256: str  # of its bytes: its disk-cache entry is ``so:<sha256>``

    def __new__(cls, library: Any, sha256: Any) -> Any:
        return tuple.__new__(cls, (library, sha256))

    @property
    def file(self) -> str:
        return file_of(self.library)


def file_of(library: ctypes.CDLL) -> str:
    """Where another process (binutils' ``nm``, ``addr2line``) reads a loaded library's bytes
    while this process lives: its memory file as ``/proc/<pid>/fd/<n>``, or its private file."""
    name = str(library._name)
    return f"/proc/{os.getpid()}/{name[len('/proc/self/'):]}" if name.startswith("/proc/self/") else name


_lock = _thread.allocate_lock()
_key_locks: dict[str, _thread.LockType] = {}
_objects: dict[str, Loaded] = {}  # key -> what this process built or found
_libraries: dict[str, ctypes.CDLL] = {}  # SHA-256 -> its library (the same bytes are loaded once)
_memfds: list[int] = []  # the memory files loaded from, open for the process (see _open)
_private: str | None = None  # the private folder, where there are no memory files


def _after_fork() -> None:  # a fork's child has only the forking thread: a lock another one held would never open
    global _lock
    _lock = _thread.allocate_lock()
    _key_locks.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)

Units = str | Sequence[str]  # what a build compiles: one translation unit, or several
# (file, line) -> the text there and whether the compiler saw that text (else its columns are
# not this text's), for the lines of files the compiler cannot open
Excerpts = Callable[[], Mapping[tuple[str, int], tuple[str, bool]]]
# a message of GCC's or Clang's: "file:line:col: error: ..." (strings: re compiles them when a build fails)
_MESSAGE = r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+): (?:fatal error|error|warning|note):"
_EXCERPT = r"^\s*\d* \| "  # the compiler's own excerpt of a line


def cache_key(source: str, *, headers: Mapping[str, str], include_dirs: tuple[str, ...], flags: tuple[str, ...],
              key_extra: tuple[str, ...], compiler: Compiler) -> str:  # fmt: skip
    """The SHA-256 naming one build: every input that can change the shared object (a tuple
    of strings, whose ``repr`` spells each one unambiguously)."""
    inputs = (SCHEMA, __version__, source, tuple(sorted(headers.items())), tuple(include_dirs), tuple(flags),
              tuple(key_extra), tuple(compiler.argv), compiler.version)  # fmt: skip
    return digest(repr(inputs).encode("utf-8", "surrogatepass"))


def shared_object(source: str, *, headers: Mapping[str, str], include_dirs: tuple[str, ...], flags: tuple[str, ...],
                  label: str, key_extra: tuple[str, ...] = (), build: Callable[[], Units] | None = None,
                  excerpts: Excerpts | None = None, global_symbols: bool = False) -> Loaded:  # fmt: skip
    """The shared object built from ``source`` (one C++ translation unit), loaded: from this
    process's builds, the disk cache, or the host compiler, in that order.

    ``headers`` (name -> text) are written to a private folder searched first; ``label``
    names what is built in error messages. Raises `CompileError` when the compiler fails.
    With ``build``, ``source`` is only what the key hashes, and the translation unit is
    ``build()``, made on a miss (a pure function of ``source`` and ``key_extra``): one
    translation unit, or several, linked into the one shared object. With
    ``excerpts`` (called on a failed build only), the compiler's messages about lines of files
    it cannot open (``#line`` names) are followed by those lines, as it shows its own files'.
    The library is opened ``RTLD_LOCAL`` unless ``global_symbols`` (one later ones link against).
    """
    compiler = find_compiler()
    key = cache_key(source, headers=headers, include_dirs=include_dirs, flags=flags, key_extra=key_extra,
                    compiler=compiler)  # fmt: skip
    with _lock:
        key_lock = _key_locks.setdefault(key, _thread.allocate_lock())
    with key_lock:  # (threads of this process: the one that builds, then the others find it)
        found = _objects.get(key)
        if found is not None:
            counters.add(memory_hits=1)
            return found
        disk = _disk.current()
        unit = build or (lambda: source)
        if disk is None:
            data = _build(unit(), headers, include_dirs, flags, label, compiler, excerpts)[0]
            sha = digest(data)
        else:
            data, sha = _from_disk(disk, key) or _build_into(disk, key, unit, headers, include_dirs, flags, label,
                                                             compiler, excerpts)  # fmt: skip
        try:
            found = _objects[key] = _load(data, sha, global_symbols)
        except OSError as exc:  # (the loader's own message: an undefined symbol, say)
            message = (f"{label}: its CPU build could not be loaded: {exc}; 'undefined symbol' names a function or "
                       f"variable declared, and defined in none of the sources this build compiled: define it")  # fmt: skip
            raise CompileError(message, log=str(exc), source=source, options=flags) from None
        return found


def _load(data: bytes, sha: str, global_symbols: bool) -> Loaded:
    """``data`` itself loaded (once per process for the same bytes), not a file read again.
    ``sha`` is the SHA-256 of these very bytes (the cache's read checked it, or a build just
    made them): hashing them again would cost as much as that check."""
    with _lock:
        lib = _libraries.get(sha)
        if lib is None:
            mode = ctypes.RTLD_GLOBAL if global_symbols else ctypes.RTLD_LOCAL
            lib = _libraries[sha] = _open(data, sha, mode)
        return Loaded(lib, sha)


def _open(data: bytes, sha: str, mode: int) -> ctypes.CDLL:
    """``dlopen`` of a sealed memory file holding ``data``, else of a file in a private folder.

    The memory file stays open for the process, as the library stays loaded: ``dlopen`` finds
    a library it has by its name first, so a closed descriptor's number, reused for another
    object, would hand back this one."""
    fd = _memory_file(data, sha)
    if fd is not None:
        try:
            lib = ctypes.CDLL(f"/proc/self/fd/{fd}", mode=mode)
        except OSError:  # (a system that maps no code from memory files, say: the private folder)
            os.close(fd)
        else:
            _memfds.append(fd)
            return lib
    return ctypes.CDLL(_private_file(data, sha), mode=mode)


def _memory_file(data: bytes, sha: str) -> int | None:
    """A sealed memory file holding ``data``; None where there are none, or no /proc to open it by."""
    if not hasattr(os, "memfd_create") or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        fd = os.memfd_create(f"cuforge-{sha[:16]}.so", os.MFD_CLOEXEC | getattr(os, "MFD_ALLOW_SEALING", 0))
    except OSError:
        return None
    try:
        _write(fd, data)
    except BaseException:
        os.close(fd)
        raise
    with contextlib.suppress(AttributeError, OSError):  # (where the kernel has seals)
        import fcntl

        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SEAL)
    return fd


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _private_file(data: bytes, sha: str) -> str:
    """``data`` written to this process's private folder (0700, removed at exit) under its SHA-256.
    Called from ``_load``, which holds ``_lock`` (a lock it took again would never open)."""
    global _private
    import tempfile

    if _private is None:
        import atexit
        import shutil

        _private = tempfile.mkdtemp(prefix="cuforge-cpu-")
        atexit.register(shutil.rmtree, _private, True)
    path = os.path.join(_private, f"so-{sha}.so")
    fd, tmp = tempfile.mkstemp(dir=_private)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)
    return path


def _meta_name(key: str) -> str:
    return f"cpu-meta:{key}"


def meta_record(key: str, sha: str, details: Mapping[str, Any]) -> str:
    """The text of ``key``'s record: the schema, the key and the object's SHA-256, a line
    each, then ``details`` as JSON (written with a build, never read by a load)."""
    import json  # (a build's; a load parses the first three lines only)

    return f"{SCHEMA}\n{key}\n{sha}\n" + json.dumps(dict(details), ensure_ascii=False, separators=(",", ":"))


def _from_disk(disk: _disk.DiskCache, key: str, *, recheck: bool = False) -> tuple[bytes, str] | None:
    """The verified bytes of ``key``'s cached object and their SHA-256, or None (damage
    counted, unless a ``recheck``, and removed)."""
    meta = disk.get_text(_meta_name(key), quiet=recheck)
    if meta is None:
        return None
    lines = meta.split("\n", 3)  # the schema, the key, the object's SHA-256, the details
    if len(lines) < 3 or lines[0] != SCHEMA or lines[1] != key or not lines[2]:
        if not recheck:  # (only a hand-made record reaches here: the key hashes the schema; rewritten below)
            counters.add(disk_errors=1)
        return None
    sha = lines[2]
    data = disk.get_bytes(f"so:{sha}", sha, quiet=recheck)
    return None if data is None else (data, sha)


def _build_into(disk: _disk.DiskCache, key: str, unit: Callable[[], Units], headers: Mapping[str, str],
                include_dirs: tuple[str, ...], flags: tuple[str, ...], label: str, compiler: Compiler,
                excerpts: Excerpts | None) -> tuple[bytes, str]:  # fmt: skip
    """Build under the key's lock (another process may have built it while we waited) and
    store the object (where it cannot be, it is only loaded): its bytes and their SHA-256."""
    with disk.locks([key], _config.cache_lock_seconds()):
        found = _from_disk(disk, key, recheck=True)
        if found is not None:
            return found
        data, log, seconds = _build(unit(), headers, include_dirs, flags, label, compiler, excerpts)
        sha = digest(data)
        if not disk.put_bytes(f"so:{sha}", data):  # (counted and warned about)
            return data, sha
        details = {"cuforge": __version__, "label": label, "compiler": [*compiler.argv, compiler.version],
                   "flags": list(flags), "log": log, "seconds": seconds}  # fmt: skip
        disk.put_text(_meta_name(key), meta_record(key, sha, details))  # the object first: a record never points at nothing
        return data, sha


def _build(sources: Units, headers: Mapping[str, str], include_dirs: tuple[str, ...], flags: tuple[str, ...], label: str,
           compiler: Compiler, excerpts: Excerpts | None = None) -> tuple[bytes, str, float]:  # fmt: skip
    """Run the compiler on ``sources`` (a translation unit, or several) in a private folder:
    (the object's bytes, the compiler's messages, seconds)."""
    import shlex
    import subprocess
    import tempfile

    # the files' name: ASCII letters, digits, "_", "." and "-", never first "-" (an option to the
    # compiler) or "." (hidden, or "..")
    unit = re.sub(r"[^A-Za-z0-9_.-]", "_", label)[:64].lstrip("-.").rstrip(".") or "kernel"
    units = [sources] if isinstance(sources, str) else list(sources)
    source = units[0]
    with tempfile.TemporaryDirectory(prefix="cuforge-cpu-build-") as work:
        for name, text in headers.items():
            target = os.path.normpath(os.path.join(work, "headers", name))
            if os.path.isabs(name) or not target.startswith(os.path.join(work, "headers") + os.sep):
                raise CompileError(f"{label}: the in-memory header name {name!r} leads out of its folder; name headers "
                                   f"with relative paths (\"util.h\", \"detail/x.h\")", log="", source=source,
                                   options=flags)  # fmt: skip
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w", encoding="utf-8") as fh:
                fh.write(text)
        files = [f"{unit}.cpp"] + [f"{unit}.{i}.cpp" for i in range(1, len(units))]
        for file, text in zip(files, units):
            with open(os.path.join(work, file), "w", encoding="utf-8") as fh:
                fh.write(text)
        # (libraries after the sources: where one is a static archive, such as a toolchain's only
        # libstdc++, the linker takes from it what the objects before it need)
        libraries = [f for f in flags if f.startswith("-l")]
        argv = [*compiler.argv, *(f for f in flags if not f.startswith("-l")), "-Iheaders", *(f"-I{d}" for d in include_dirs),
                *files, *libraries, "-o", f"{unit}.so"]  # fmt: skip
        shown = shlex.join([os.path.basename(argv[0]), *argv[1:]])
        start = time.perf_counter()
        try:
            run = subprocess.run(argv, cwd=work, capture_output=True, text=True, errors="replace",
                                 timeout=COMPILE_TIMEOUT_S, check=False)  # fmt: skip
        except subprocess.TimeoutExpired:
            raise CompileError(f"{label}: the host C++ compiler did not finish within {COMPILE_TIMEOUT_S:.0f} s:\n"
                               f"  {shown}", log="", source=source, options=flags) from None  # fmt: skip
        except OSError as exc:
            raise CompilerNotFoundError(f"{label}: cannot run the host C++ compiler {compiler.argv[0]!r} ({exc}); "
                                        f"set CXX to a C++17 compiler, or unset it to use the one on PATH") from None  # fmt: skip
        seconds = time.perf_counter() - start
        log = (run.stderr + run.stdout).strip()
        if run.returncode != 0:
            shown_log = _with_excerpts(log, excerpts()) if excerpts is not None else log
            raise CompileError(_failure(label, shown, run.returncode, shown_log), log=log, source=source, options=flags)
        with open(os.path.join(work, f"{unit}.so"), "rb") as fh:
            data = fh.read()
    counters.add(cpu_compiles=1)
    return data, log, seconds


def _failure(label: str, command: str, status: int, log: str) -> str:
    """A failed build's message: what, the command, and the first of the compiler's lines."""
    lines = log.splitlines()
    out = [f"{label}: the host C++ compiler failed to build it for the CPU (exit status {status}):", f"  $ {command}"]
    out += [f"  {line}" for line in lines[:LOG_LINES]] or ["  (the compiler printed nothing)"]
    if len(lines) > LOG_LINES:
        out.append(f"  ... {len(lines) - LOG_LINES} more lines (all of them are on the error's .log)")
    return "\n".join(out)


def _with_excerpts(log: str, lines: Mapping[tuple[str, int], tuple[str, bool]]) -> str:
    """``log`` with each message about a line in ``lines`` that the compiler gave no excerpt
    of followed by one (the line, and a caret under the column), in the compiler's layout."""
    out: list[str] = []
    log_lines = log.splitlines()
    for i, raw in enumerate(log_lines):
        out.append(raw)
        m = re.match(_MESSAGE, raw)
        if m is None or (i + 1 < len(log_lines) and re.match(_EXCERPT, log_lines[i + 1])):
            continue
        found = lines.get((m["file"], int(m["line"])))
        if found is not None:
            text, exact = found[0].expandtabs(8), found[1]
            out.append(f"{m['line']:>6} | {text}")
            if exact:
                out.append(f"{'':>6} | {' ' * min(int(m['col']) - 1, len(text))}^")
    return "\n".join(out)
