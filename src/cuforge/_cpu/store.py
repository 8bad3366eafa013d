"""Shared objects built by the host C++ compiler from one translation unit, cached like
cubins and loaded once per process.

With the disk cache on (``_compile.disk``), a build takes two entries of that cache:

- ``so:<sha256>``: the shared object's bytes, content-addressed, and loaded straight from
  its file (a rebuilt object with other bytes has another file, so ``dlopen``, which hands
  back the handle it has for a path already open, never returns the stale one);
- ``cpu-meta:<key>``: a checksummed JSON record naming that SHA-256, the compiler, the
  flags and the compiler's warnings.

A read checks the record's checksum and the object's SHA-256 before anything is loaded; a
missing, damaged or foreign entry is a miss, built again. The directories are the compile
cache's (owner-only, refused when another user could write there), the writes atomic, and
a per-key lock file keeps N processes from building one object N times. With the disk
cache off, objects go to a private temporary folder removed when the process exits.

The key hashes the inputs only: the source, the in-memory headers, the include folders
(by path: their contents enter through ``key_extra``, the caller's digests of its runtime
and CUDA headers), the flags, the compiler's command and ``--version``, and cuforge's
version.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from .. import _config
from .._compile import disk as _disk
from .._compile.files import digest
from .._compile.stats import counters
from .._version import __version__
from ..errors import CompileError, CompilerNotFoundError
from .toolchain import Compiler, find_compiler

__all__ = ["cache_key", "load", "shared_object"]

SCHEMA = "cpu-so-1"
COMPILE_TIMEOUT_S = 300.0
LOG_LINES = 40  # of the compiler's messages, in a CompileError's text (all of them are on .log)

_lock = threading.Lock()
_key_locks: dict[str, threading.Lock] = {}
_paths: dict[str, str] = {}  # key -> a shared object built or found by this process
_loaded: dict[str, ctypes.CDLL] = {}  # path -> its library
_session: str | None = None

Units = str | Sequence[str]  # what a build compiles: one translation unit, or several
# (file, line) -> the text there and whether the compiler saw that text (else its columns are
# not this text's), for the lines of files the compiler cannot open
Excerpts = Callable[[], Mapping[tuple[str, int], tuple[str, bool]]]
# a message of GCC's or Clang's: "file:line:col: error: ..."
_MESSAGE = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+): (?:fatal error|error|warning|note):")
_EXCERPT = re.compile(r"^\s*\d* \| ")  # the compiler's own excerpt of a line


def cache_key(source: str, *, headers: Mapping[str, str], include_dirs: tuple[str, ...], flags: tuple[str, ...],
              key_extra: tuple[str, ...], compiler: Compiler) -> str:  # fmt: skip
    """The SHA-256 naming one build: every input that can change the shared object."""
    inputs = [SCHEMA, __version__, source, sorted(headers.items()), list(include_dirs), list(flags), list(key_extra),
              list(compiler.argv), compiler.version]  # fmt: skip
    return digest(json.dumps(inputs, ensure_ascii=False, separators=(",", ":")).encode())


def shared_object(source: str, *, headers: Mapping[str, str], include_dirs: tuple[str, ...], flags: tuple[str, ...],
                  label: str, key_extra: tuple[str, ...] = (), build: Callable[[], Units] | None = None,
                  excerpts: Excerpts | None = None) -> str:  # fmt: skip
    """The path of a shared object built from ``source`` (one C++ translation unit), from
    this process's builds, the disk cache, or the host compiler, in that order.

    ``headers`` (name -> text) are written to a private folder searched first; ``label``
    names what is built in error messages. Raises `CompileError` when the compiler fails.
    With ``build``, ``source`` is only what the key hashes, and the translation unit is
    ``build()``, made on a miss (a pure function of ``source`` and ``key_extra``): one
    translation unit, or several, linked into the one shared object. With
    ``excerpts`` (called on a failed build only), the compiler's messages about lines of files
    it cannot open (``#line`` names) are followed by those lines, as it shows its own files'.
    """
    compiler = find_compiler()
    key = cache_key(source, headers=headers, include_dirs=include_dirs, flags=flags, key_extra=key_extra,
                    compiler=compiler)  # fmt: skip
    with _lock:
        key_lock = _key_locks.setdefault(key, threading.Lock())
    with key_lock:  # (threads of this process: the one that builds, then the others find it)
        path = _paths.get(key)
        if path is not None and os.path.exists(path):  # (evicted from the disk meanwhile: found again)
            counters.add(memory_hits=1)
            return path
        disk = _disk.current()
        unit = build or (lambda: source)
        if disk is None:
            path = _keep(_build(unit(), headers, include_dirs, flags, label, compiler, excerpts)[0])
        else:
            found = _from_disk(disk, key)
            path = found or _build_into(disk, key, unit, headers, include_dirs, flags, label, compiler, excerpts)
        _paths[key] = path
        return path


def load(path: str, *, global_symbols: bool = False) -> ctypes.CDLL:
    """The library at ``path``, opened once per process (``RTLD_LOCAL`` unless
    ``global_symbols``: a library later ones link against)."""
    with _lock:
        lib = _loaded.get(path)
        if lib is None:
            lib = _loaded[path] = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL if global_symbols else ctypes.RTLD_LOCAL)
        return lib


def _meta_name(key: str) -> str:
    return f"cpu-meta:{key}"


def _from_disk(disk: _disk.DiskCache, key: str, *, recheck: bool = False) -> str | None:
    """The verified cached object of ``key``'s file, or None (damage counted, unless a
    ``recheck``, and removed)."""
    meta = disk.get_json(_meta_name(key), quiet=recheck)
    if meta is None:
        return None
    if meta.get("schema") != SCHEMA or meta.get("key") != key or not isinstance(meta.get("so_sha256"), str):
        if not recheck:  # (only a hand-made record reaches here: the key hashes the schema; rewritten below)
            counters.add(disk_errors=1)
        return None
    name = f"so:{meta['so_sha256']}"
    if disk.get_bytes(name, meta["so_sha256"], quiet=recheck) is None:
        return None
    return str(disk.path_of(name))


def _build_into(disk: _disk.DiskCache, key: str, unit: Callable[[], Units], headers: Mapping[str, str],
                include_dirs: tuple[str, ...], flags: tuple[str, ...], label: str, compiler: Compiler,
                excerpts: Excerpts | None) -> str:  # fmt: skip
    """Build under the key's lock (another process may have built it while we waited) and
    store the object; where it cannot be stored, it is kept for this process only."""
    with disk.locks([key], _config.cache_lock_seconds()):
        found = _from_disk(disk, key, recheck=True)
        if found is not None:
            return found
        data, log, seconds = _build(unit(), headers, include_dirs, flags, label, compiler, excerpts)
        sha = digest(data)
        if not disk.put_bytes(f"so:{sha}", data):  # (counted and warned about)
            return _keep(data)
        meta = {"schema": SCHEMA, "key": key, "cuforge": __version__, "so_sha256": sha, "label": label,
                "compiler": [*compiler.argv, compiler.version], "flags": list(flags), "log": log, "seconds": seconds}  # fmt: skip
        disk.put_json(_meta_name(key), meta)  # the object first: a record never points at nothing
        return str(disk.path_of(f"so:{sha}"))


def _keep(data: bytes) -> str:
    """``data`` written to this process's private folder (removed at exit) under its SHA-256."""
    global _session
    with _lock:
        if _session is None:
            import atexit
            import shutil
            import tempfile

            _session = tempfile.mkdtemp(prefix="cuforge-cpu-")  # 0700
            atexit.register(shutil.rmtree, _session, True)
    path = os.path.join(_session, f"so-{digest(data)}.so")
    if not os.path.exists(path):
        import tempfile

        fd, tmp = tempfile.mkstemp(dir=_session)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    return path


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
        argv = [*compiler.argv, *flags, "-Iheaders", *(f"-I{d}" for d in include_dirs), *files, "-o", f"{unit}.so"]
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
        m = _MESSAGE.match(raw)
        if m is None or (i + 1 < len(log_lines) and _EXCERPT.match(log_lines[i + 1])):
            continue
        found = lines.get((m["file"], int(m["line"])))
        if found is not None:
            text, exact = found[0].expandtabs(8), found[1]
            out.append(f"{m['line']:>6} | {text}")
            if exact:
                out.append(f"{'':>6} | {' ' * min(int(m['col']) - 1, len(text))}^")
    return "\n".join(out)
