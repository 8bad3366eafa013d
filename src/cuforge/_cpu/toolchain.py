"""The host C++ compiler the CPU backend builds kernels with, and its flags.

Found once per process (per value of ``CXX`` and ``PATH``): ``$CXX`` when set (split as a
shell would: ``ccache g++`` or a path), else the first of ``c++``, ``g++``, ``clang++`` on
``PATH``, else the compiler of the ``ziglang`` wheel (``pip install "cuforge[cpu]"``). Its
``--version`` line enters every CPU compile's cache key, so a compiler upgrade rebuilds.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from typing import Literal

from .._frozen import Frozen
from ..errors import CompilerNotFoundError

__all__ = ["Compiler", "compile_flags", "find_compiler"]

CANDIDATES = ("c++", "g++", "clang++")
VERSION_TIMEOUT_S = 60.0
FIX = (
    'Fix: set CXX to a C++17 compiler, install g++ or clang++, or pip install "cuforge[cpu]" '
    "(which brings the ziglang wheel's C++ compiler)"
)


class Compiler(Frozen):
    """A host C++ compiler: the command that runs it, its family, and its ``--version`` line."""

    __slots__ = ("argv", "kind", "version")
    argv: tuple[str, ...]
    kind: Literal["gcc", "clang", "zig"]
    version: str

    def __init__(self, argv: tuple[str, ...], kind: Literal["gcc", "clang", "zig"], version: str) -> None:
        for name, value in (("argv", argv), ("kind", kind), ("version", version)):
            object.__setattr__(self, name, value)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Compiler:
            return NotImplemented
        return (self.argv, self.kind, self.version) == (other.argv, other.kind, other.version)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((self.argv, self.kind, self.version))

    def __repr__(self) -> str:
        return f"Compiler(argv={self.argv!r}, kind={self.kind!r}, version={self.version!r})"


_found: dict[tuple[str, str], Compiler] = {}


def find_compiler() -> Compiler:
    """The host C++ compiler, looked up once per process (and again if ``CXX`` or ``PATH``
    changes). Raises `CompilerNotFoundError`, saying how to get one, when there is none."""
    where = (os.environ.get("CXX", ""), os.environ.get("PATH", ""))
    found = _found.get(where)
    if found is None:  # (a failure is not remembered: installing a compiler fixes the next call)
        found = _found[where] = _find(*where)
    return found


def _find(cxx: str, path: str) -> Compiler:
    if cxx.strip():
        import shlex  # (only where CXX is set: a warm start without it does not load it)

        try:
            argv = shlex.split(cxx)
        except ValueError as exc:  # (an unclosed quote, a trailing backslash)
            raise CompilerNotFoundError(
                f"running kernels on the CPU needs a C++17 compiler, but CXX={cxx!r} cannot be split into a command as a "
                f"shell would ({exc}). Fix: close its quotes (CXX='ccache g++', or a path with spaces in quotes), or unset "
                f"CXX to use the first of {', '.join(CANDIDATES)} found on PATH"
            ) from None
        program = _which(argv[0], path or os.defpath) if os.sep not in argv[0] else argv[0]
        if program is None or not os.access(program, os.X_OK):
            raise CompilerNotFoundError(
                f"running kernels on the CPU needs a C++17 compiler: CXX={cxx!r} names {argv[0]!r}, which is not an "
                f"executable program{'' if os.sep in argv[0] else ' on PATH'}. {FIX}, or unset CXX to use the first "
                f"of {', '.join(CANDIDATES)} found on PATH"
            )
        return _describe((program, *argv[1:]), cxx=cxx)
    for name in CANDIDATES:
        program = _which(name, path) if path else None
        if program is not None:
            return _describe((program,))
    import importlib.util

    if importlib.util.find_spec("ziglang") is not None:
        return _describe((sys.executable, "-m", "ziglang", "c++"))
    raise CompilerNotFoundError(
        "running kernels on the CPU needs a C++17 compiler, and none was found: CXX is unset, none of "
        f"{', '.join(CANDIDATES)} is on PATH, and the ziglang package is not installed. {FIX}"
    )


def _which(name: str, path: str) -> str | None:
    """The first executable ``name`` on ``path`` (``shutil.which``'s answer, without importing
    shutil and its compression modules at a warm start)."""
    for folder in path.split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def _describe(argv: tuple[str, ...], *, cxx: str = "") -> Compiler:
    """``argv`` with its kind and version; the version costs a process, so it is asked once
    per compiler binary (remembered in the disk cache, by the binary's path, size and time)."""
    try:
        version = _remembered_version(argv)
    except (OSError, ValueError) as exc:  # (subprocess's errors are OSErrors and SubprocessErrors: see _version)
        import shlex

        what = f"CXX={cxx!r}" if cxx else shlex.join(argv)
        raise CompilerNotFoundError(
            f"running kernels on the CPU needs a C++17 compiler, and {what} did not answer --version ({exc}). {FIX}"
        ) from None
    return Compiler(argv, _kind(argv, version), version)


def _kind(argv: tuple[str, ...], version: str) -> Literal["gcc", "clang", "zig"]:
    if "ziglang" in argv or any(os.path.basename(a) in ("zig", "zig.exe") for a in argv):
        return "zig"
    return "clang" if "clang" in version.lower() else "gcc"


def _remembered_version(argv: tuple[str, ...]) -> str:
    from .._compile import disk as _disk
    from .._compile.files import digest

    disk = _disk.current()
    if disk is None or "ziglang" in argv:  # (zig's answer depends on the wheel, not on a binary)
        return _version(argv)
    try:
        st = os.stat(os.path.realpath(argv[0]))
    except OSError:
        return _version(argv)
    name = "cpu-compiler-version:" + digest(repr((argv, os.path.realpath(argv[0]), st.st_size, st.st_mtime_ns)).encode())
    found = disk.get_text(name, quiet=True)
    if found:
        return found
    version = _version(argv)
    disk.put_text(name, version)
    return version


@functools.cache
def _version(argv: tuple[str, ...]) -> str:
    """The first line of ``argv --version`` (zig's clang names no zig release: the wheel's
    version is put before it)."""
    import subprocess  # (a warm start finds the version in the disk cache)

    try:
        run = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S, check=False)
    except subprocess.SubprocessError as exc:
        raise ValueError(str(exc)) from None
    lines = (run.stdout or run.stderr).strip().splitlines()
    if run.returncode != 0 or not lines:
        raise ValueError(f"exit status {run.returncode}: {(run.stderr or run.stdout).strip()[:200]!r}")
    if "ziglang" in argv:
        from importlib.metadata import version

        return f"ziglang {version('ziglang')}: {lines[0].strip()}"
    return lines[0].strip()


def compile_flags(compiler: Compiler, *, debug: bool) -> tuple[str, ...]:
    """The flags that build one translation unit into a shared object this Python can load
    (the caller adds ``-D`` and ``-I``).

    - ``-fno-strict-aliasing``: CUDA code reads one type through a pointer to another
      (``reinterpret_cast<float4*>``) and nvcc compiles it as meant; so must we.
    - ``-fno-math-errno``: CUDA's math functions never set ``errno``; without the flag
      ``sqrtf`` and friends cannot become single instructions.
    - Signed overflow and the rest of the language's undefined behaviour stay as the
      compiler's default (no ``-fwrapv``), as under nvcc.
    - ``-O3 -march=native``: a barrier-free kernel's threads are a loop the compiler can
      vectorize, which needs this machine's masked loads and stores; the library is cached
      for this machine only (`host_cpu` enters its key).
    - zig: its clang turns UBSan on with traps in unoptimised builds; kernels get the same
      semantics from every compiler, so it is off.
    - ``-fstack-clash-protection``: a frame larger than a page (a big local array) touches
      each page as it grows, so that a thread whose locals outgrow its fiber stack hits the
      guard page below it (a fault, reported as a stack overflow) instead of jumping over it
      into the next thread's stack. g++ 8 and clang 11 on (zig's clang included) take it.
    - GCC: ``-fno-gnu-unique``: a ``static __shared__`` array in an inline or template
      ``__device__`` function is a static local of a function the library exports, which GCC
      makes one object for the whole process (``STB_GNU_UNIQUE``): two kernels' libraries
      would share its place in shared memory, which each library lays out for itself.
    """
    flags = ["-std=c++17", "-O3", "-march=native", "-fPIC", "-shared", "-fno-strict-aliasing", "-fno-math-errno",
             "-pthread"]  # fmt: skip
    if _probes_stack(compiler):
        flags.append("-fstack-clash-protection")
    if compiler.kind == "zig":
        flags.append("-fno-sanitize=undefined")
    if compiler.kind == "gcc":
        flags.append("-fno-gnu-unique")
    if debug:
        flags.append("-g")
    return tuple(flags)


def _probes_stack(compiler: Compiler) -> bool:
    """Whether ``compiler`` takes ``-fstack-clash-protection`` (g++ 8 on, clang 11 on; zig's
    clang always): read from its ``--version`` line, where a version is taken as a new one."""
    if compiler.kind == "zig":
        return True
    found = re.search(r"(\d+)\.\d+", compiler.version.split("version", 1)[-1])
    return found is None or int(found.group(1)) >= (8 if compiler.kind == "gcc" else 11)


@functools.lru_cache(maxsize=1)
def host_cpu() -> str:
    """This machine's processor as ``-march=native`` sees it: its model and feature flags
    (a digest), so that a library built for one CPU is never loaded on another."""
    from .._digest import hexdigest

    if hasattr(os, "uname"):  # what platform.machine() reads on POSIX, without importing platform
        text = os.uname().machine
    else:
        import platform

        text = platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            info = f.read().split("\n\n", 1)[0]
    except OSError:
        import platform

        info = platform.processor()
    keep = [line for line in info.splitlines() if line.split(":")[0].strip() in ("vendor_id", "model name", "flags")]
    return text + ":" + hexdigest("\n".join(keep).encode())[:16]
