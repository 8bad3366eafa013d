"""The checker of checked launches (``check.cpp``): built once per compiler, loaded with its
symbols global before any checked kernel library, whose instrumented code calls it; the
compiler flags of a checked build; a checked launch's run; and what a report's code address
is in the kernel's source (``addr2line``, on the error path only)."""

from __future__ import annotations

import ctypes
import functools
import os
import threading
from typing import Any

from . import runtime as _runtime
from . import store as _store
from . import toolchain as _toolchain

HERE = _runtime.HERE
CHECKED = 4  # cuforge_cpu_launch.status of a checker's report (check.cpp)


class CheckArray(ctypes.Structure):
    """``struct cuforge_check_array`` (check.cpp)."""

    _fields_ = [("host", ctypes.c_ulonglong), ("bytes", ctypes.c_ulonglong), ("copy", ctypes.c_ulonglong),
                ("elem", ctypes.c_uint), ("intent", ctypes.c_int), ("param", ctypes.c_int),
                ("name", ctypes.c_char_p), ("floating", ctypes.c_uint), ("bfloat16", ctypes.c_uint)]  # fmt: skip


class CheckVar(ctypes.Structure):
    """``struct cuforge_check_var`` (check.cpp)."""

    _fields_ = [("address", ctypes.c_ulonglong), ("bytes", ctypes.c_ulonglong), ("name", ctypes.c_char_p)]


class CheckLaunch(ctypes.Structure):
    """``struct cuforge_check_launch`` (check.cpp)."""

    _fields_ = [("narrays", ctypes.c_int), ("nvars", ctypes.c_int), ("arrays", ctypes.POINTER(CheckArray)),
                ("vars", ctypes.POINTER(CheckVar)), ("pc", ctypes.c_ulonglong), ("library", ctypes.c_char * 1024),
                ("file", ctypes.c_char_p), ("line", ctypes.c_uint), ("unchecked", ctypes.c_uint),
                ("unknown", ctypes.c_ulonglong * 8)]  # fmt: skip


def flags(compiler: _toolchain.Compiler) -> tuple[str, ...]:
    """The flags of a checked build: ThreadSanitizer's instrumentation, the alignment check of
    every typed access, the bounds check of every index into an array of known extent and the
    range check of every conversion of a floating-point number to an integer and of every shift's
    amount (UBSan's ``alignment``, ``bounds``, ``float-cast-overflow`` and ``shift-exponent``, whose
    tests are inline) without their runtimes, so that the instrumented accesses, a misaligned
    pointer, an index past its dimension, a NaN made an integer and a shift by the width or more
    call ``check.cpp``
    (GCC: ``-nodefaultlibs`` and the libraries it would link but libtsan and libubsan, which
    it links even into a shared object; clang and zig's clang:
    ``-fno-sanitize-link-runtime``); volatile accesses told apart (a poll of a flag that
    atomics set is no race); debug lines for reports; ``-O1``, under which every access stays
    one (GCC's ``-fno-tree-sra`` keeps a vector load, a ``float4``, one access of its size,
    so that its alignment is checked); ``memset``, ``memcpy`` and ``memmove`` kept calls, which
    ``cuforge/cpu_check.h`` defines in the library (the compiler would write them inline,
    unseen; without glibc's fortified inline ones, which a distribution's compiler turns on by
    default: Ubuntu's GCC defines ``_FORTIFY_SOURCE`` when it optimizes); ``fmaxf``, ``fminf``,
    ``fmax`` and ``fmin`` kept calls and wrapped by the link, so that a max or min reduction keeps
    the mark of a shuffle's undefined lane (``check.cpp``)."""
    base = ("-fsanitize=thread", "-fsanitize=alignment", *_both(compiler), "-O1",
            "-fno-builtin-fmaxf", "-fno-builtin-fminf", "-fno-builtin-fmax", "-fno-builtin-fmin",
            "-Wl,--wrap=fmaxf,--wrap=fminf,--wrap=fmax,--wrap=fmin")
    if compiler.kind == "gcc":
        return (*base, "-fsanitize=bounds", "-fno-tree-sra", "--param", "tsan-instrument-func-entry-exit=0", "--param",
                "tsan-distinguish-volatile=1")  # fmt: skip
    return (*base, "-fsanitize=array-bounds", "-mllvm", "-tsan-distinguish-volatile=1")


def indexed_flags(compiler: _toolchain.Compiler) -> tuple[str, ...]:
    """The flags of a checked kernel's indexed build (``indexed.py``): ``flags``' but for
    ThreadSanitizer's instrumentation and what serves it (its accesses are checked inline, by
    ``cuforge/cpu_check.h``), at the unchecked build's optimization: the float-to-integer and shift
    checks, debug lines, ``memset``, ``memcpy`` and ``memmove`` kept calls, and without the
    sanitizers' runtimes. (No alignment check: an element of an array is aligned where its array
    is, which the inline check tests; the alignment check's tests were a fifth of the inline path.)"""
    return _both(compiler)


def _both(compiler: _toolchain.Compiler) -> tuple[str, ...]:
    """What both checked builds take (``flags``): the float-to-integer and shift checks, debug
    lines, ``memset``, ``memcpy`` and ``memmove`` kept calls, no sanitizer's runtime linked."""
    runtimeless = ("-nodefaultlibs", "-lstdc++", "-lm", "-lpthread", "-lc", "-lgcc_s") if compiler.kind == "gcc" else (
        "-fno-sanitize-link-runtime",)  # fmt: skip
    return ("-fsanitize=float-cast-overflow", "-fsanitize=shift-exponent", "-g", "-fno-builtin-memset", "-fno-builtin-memcpy",
            "-fno-builtin-memmove", "-U_FORTIFY_SOURCE", *runtimeless)  # fmt: skip


_lock = threading.Lock()
_library: ctypes.CDLL | None = None


def library() -> ctypes.CDLL:
    """The checker library, built (or read from the cache) and loaded on first use."""
    global _library
    if _library is None:
        with _lock:
            if _library is None:
                _runtime.library()  # (the checker calls its run functions)
                compiler = _toolchain.find_compiler()
                with open(os.path.join(HERE, "check.cpp"), encoding="utf-8") as f:
                    source = f.read()
                lib = _store.shared_object(source, headers={}, include_dirs=(_runtime.INCLUDE,),
                                           flags=(*_toolchain.compile_flags(compiler, debug=False),
                                                  f"-Wl,--version-script={os.path.join(HERE, 'check.map')}"),
                                           label="cuforge's CPU checker",
                                           key_extra=(_runtime.sources_digest(), _digest(), _toolchain.host_cpu()),
                                           global_symbols=True).library  # fmt: skip
                lib.cuforge_check_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(_runtime.Launch),
                                                  ctypes.POINTER(CheckLaunch)]  # fmt: skip
                lib.cuforge_check_run.restype = ctypes.c_int
                _library = lib
    return _library


def _digest() -> str:
    import hashlib

    h = hashlib.sha256()
    for name in ("check.cpp", "check.map"):
        with open(os.path.join(HERE, name), "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def run(entry: int, grid: tuple[int, int, int], block: tuple[int, int, int], shared_mem: int, args: int, check: CheckLaunch,
        *, cooperative: bool = False, cluster: tuple[int, int, int] | None = None) -> tuple[int, str]:  # fmt: skip
    """Run a launch checked (``runtime.run``'s arguments, and the arrays and variables the
    checker watches): (0, "") or (status, message)."""
    launch = _runtime.Launch()
    _runtime._HEAD.pack_into(launch, 0, *grid, *block, shared_mem, args, int(cooperative or cluster is not None),
                             *(cluster or (0, 0, 0)))  # fmt: skip
    if library().cuforge_check_run(entry, ctypes.byref(launch), ctypes.byref(check)) != 0:
        return _runtime.FAILED, "out of memory for the checker's copies of the arrays and their shadow"
    if launch.status:
        return launch.status, launch.message.decode("utf-8", "replace")
    return 0, ""


# Exported data that is no kernel's module variable: C++'s own (guards, vtables, VTTs, typeinfo,
# function statics), the standard library's and its ABI's (a toolchain whose sanitizer runtime
# is linked in statically brings them into the checked library: std::locale's ids, read-only
# VTTs), the reserved names (__tsan_*, __cxa_*) and cuforge's own
NOT_MODULE_VARIABLES = ("_ZGV", "_ZTV", "_ZTI", "_ZTS", "_ZTT", "_ZZ", "_ZNSt", "_ZNKSt", "_ZSt", "_ZN9__gnu_cxx",
                        "_ZN10__cxxabiv1", "__", "cuforge_")  # fmt: skip


@functools.lru_cache(maxsize=64)
def variables(path: str) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...]]:
    """The module variables a kernel library exports, and (offset, bytes) of its static locals
    and their guard variables (cuforge's own, which the checker leaves alone), from ``nm``;
    ((), ()) where binutils are missing."""
    exported, others = _nm(path, "-D"), _nm(path)
    names = tuple(n for n in exported if not n.startswith(NOT_MODULE_VARIABLES))
    return names, tuple(at for n, at in others.items() if n.startswith(("_ZZ", "_ZGV")) and n not in names)


class _DlInfo(ctypes.Structure):
    _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p), ("sname", ctypes.c_char_p),
                ("saddr", ctypes.c_void_p)]  # fmt: skip


def load_base(address: int) -> int | None:
    """The address the library holding ``address`` (a kernel's entry) is loaded at (``dladdr``)."""
    info = _DlInfo()
    dladdr = ctypes.CDLL(None).dladdr
    dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    return info.fbase if dladdr(address, ctypes.byref(info)) and info.fbase else None


@functools.lru_cache(maxsize=128)
def _nm(path: str, *extra: str) -> dict[str, tuple[int, int]]:
    import subprocess

    try:
        out = subprocess.run(["nm", *extra, "--defined-only", "-S", "-P", path], capture_output=True, text=True,
                             timeout=60, check=False).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        _warn_once("nm (binutils) was not found: module variables (__device__, __constant__) are not checked")
        return {}
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[1] in "BDGSVbdgsvu":
            found[parts[0]] = (int(parts[2], 16), int(parts[3], 16))
    return found


def where(path: str, pc: int, line_sources: dict[str, str]) -> str:
    """The line of the kernel's source at code offset ``pc`` of the library at ``path``
    ("Saxpy.body, line 3: y[i] = ..."), from its debug lines; inlined functions are followed
    out to the innermost frame in the user's code."""
    frames = _frames(path, pc)
    if frames is None:
        return f"code offset {pc:#x} of {os.path.basename(path)} (addr2line, from binutils, names the line)"
    for file, line in frames:  # (the kernel's own sources first: a header's line inlined there is not the kernel's)
        if line and any(file == s or file.endswith("/" + s) for s in line_sources):
            return source_line(file, line, line_sources)
    for file, line in frames:  # (else a header of the user's own)
        if file and file != "??" and not file.startswith((*_toolkit_headers(), "/usr/")) and line:
            return source_line(file, line, line_sources)
    return f"code offset {pc:#x} of {os.path.basename(path)}"


@functools.lru_cache(maxsize=1)
def _toolkit_headers() -> tuple[str, ...]:
    """The folders of headers that are not the user's: cuforge's runtime (its shims too), CUDA's and CCCL's."""
    from .._compile.headers import cccl_include_dir, cuda_include_dir

    return (_runtime.INCLUDE, *(d for d in (cuda_include_dir(), cccl_include_dir()) if d))


def own_line(path: str, pc: int, line_sources: dict[str, str]) -> str | None:
    """The line of the kernel's source (a file of ``line_sources``) whose own code is at offset
    ``pc``: None for cuforge's runtime or a system header inlined there, or without binutils."""
    frames = _frames(path, pc)
    if not frames:
        return None
    file, line = frames[0]  # (the innermost)
    if not line or not any(file == s or file.endswith("/" + s) for s in line_sources):
        return None
    return source_line(file, line, line_sources)


@functools.lru_cache(maxsize=256)
def _frames(path: str, pc: int) -> tuple[tuple[str, int], ...] | None:
    """(file, line) of each frame at code offset ``pc``, the innermost inlined one first (line 0
    where the debug lines give none), from ``addr2line``; None where it cannot run."""
    import subprocess

    if path.startswith("/proc/self/"):  # (dladdr's name of a memory file: ours, not addr2line's)
        path = f"/proc/{os.getpid()}/{path[len('/proc/self/') :]}"
    try:
        out = subprocess.run(["addr2line", "-e", path, "-i", hex(pc)], capture_output=True, text=True, timeout=60,
                             check=False).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    frames = []
    for frame in out.splitlines():
        file, _, line = frame.rpartition(":")
        line = line.split()[0] if line.split() else ""
        frames.append((file, int(line) if line.isdigit() else 0))
    return tuple(frames)


def source_line(file: str, n: int, line_sources: dict[str, str]) -> str:
    """Line ``n`` of the kernel's source ``file`` ("Saxpy.body, line 3: y[i] = ...")."""
    name = next((s for s in line_sources if file == s or file.endswith("/" + s)), os.path.basename(file))
    text = line_sources.get(name, "").splitlines()
    shown = f": {text[n - 1].strip()}" if 0 < n <= len(text) else ""
    return f"{name}, line {n}{shown}"


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        import warnings

        warnings.warn(f"cuforge checks: {message}", RuntimeWarning, stacklevel=3)


def address_of(lib: Any, name: str) -> tuple[int, int] | None:
    """(address, bytes) of a module variable of a loaded library."""
    return _runtime.variable(lib, name)
