"""NVRTC through cuda.bindings: compile a translation unit, look up lowered names.

cuda.core's ``Program`` is not used here because it takes no in-memory headers (the
persistent cache needs their contents for its key) and keeps no log on success; the raw
NVRTC calls give both, and they are few.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import os
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from .. import _config
from ..errors import CompileError, NoDeviceError
from ..options import arch_number
from .stats import counters  # cf.cache_stats(): the one count of NVRTC programs compiled

_LOG_LINE = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<what>(?:catastrophic )?error|warning)")


class CompileResult(NamedTuple):
    """What one NVRTC program produced."""

    code: bytes
    code_type: str  # "cubin" or "ptx" ("ltoir" or a relocatable cubin before the link step)
    lowered: Mapping[str, str]  # name expression -> lowered (mangled) symbol
    log: str
    flags: tuple[str, ...]
    seconds: float
    nvrtc_version: tuple[int, int] = (0, 0)
    from_disk: bool = False  # read from the persistent cache rather than compiled now


def _nvrtc() -> Any:
    from cuda.bindings import nvrtc

    return nvrtc


def _check(result: Any, call: str) -> Any:
    """Unwrap a cuda.bindings NVRTC result tuple, raising on failure."""
    err, *rest = result
    if int(err) != 0:
        nvrtc = _nvrtc()
        _, msg = nvrtc.nvrtcGetErrorString(err)
        raise CompileError(f"NVRTC {call} failed: {msg.decode()}", log="", source="", options=())
    return rest[0] if len(rest) == 1 else rest


def _check_supported(flags: Sequence[str], kernel: str) -> None:
    """An arch this NVRTC does not know is a clear error, not NVRTC's "invalid value"."""
    arch = next((f[len("-arch=") :] for f in flags if f.startswith("-arch=")), None)
    if arch is not None and arch_number(arch) not in supported_archs():
        have = ", ".join(f"sm_{a}" for a in supported_archs())
        raise CompileError(
            f"{kernel}: NVRTC {'.'.join(map(str, nvrtc_version()))} does not compile for {arch}; it knows {have} "
            f"(and compute_XY of each); pass one of them", log="", source="", options=tuple(flags),
        )  # fmt: skip


@functools.lru_cache(maxsize=1)
def nvrtc_version() -> tuple[int, int]:
    major, minor = _check(_nvrtc().nvrtcVersion(), "nvrtcVersion")
    return (int(major), int(minor))


@functools.lru_cache(maxsize=1)
def supported_archs() -> tuple[int, ...]:
    return tuple(int(a) for a in _check(_nvrtc().nvrtcGetSupportedArchs(), "nvrtcGetSupportedArchs"))


@functools.lru_cache(maxsize=1)
def _nvidia_roots() -> tuple[str, ...]:
    """The directories of the ``nvidia`` namespace package, where NVIDIA's wheels install."""
    import importlib.util

    spec = importlib.util.find_spec("nvidia")
    return tuple(spec.submodule_search_locations or ()) if spec is not None else ()


def _headers(libname: str, wheel_dir: str, marker: str) -> str | None:
    """A header directory: the CUDA 13 wheel's, found with a stat per site directory, else
    cuda.pathfinder's answer. Pathfinder looks in the wheels first too, but importing it costs
    20-70 ms, more than a warm start, which needs these directories for its cache key; a test
    holds the two answers equal."""
    for root in _nvidia_roots():
        if os.path.isfile(os.path.join(root, wheel_dir, marker)):
            return os.path.join(root, wheel_dir)
    try:
        from cuda.pathfinder import find_nvidia_header_directory
    except ImportError:
        return None
    found = find_nvidia_header_directory(libname)
    return str(found) if found else None


@functools.lru_cache(maxsize=4)
def _find_cuda_include(configured: str) -> str | None:
    return configured or _headers("cudart", os.path.join("cu13", "include"), "cuda_runtime_api.h")


def cuda_include_dir() -> str | None:
    """Directory of the CUDA runtime headers (cuda_fp16.h, cuda_bf16.h, cuComplex.h)."""
    return _find_cuda_include(_config.cuda_include())


@functools.lru_cache(maxsize=1)
def cccl_include_dir() -> str | None:
    """Directory of CCCL's headers (libcu++, CUB, Thrust, <nv/target>, which the runtime's
    cooperative_groups.h includes), from the nvidia-cuda-cccl wheel or a toolkit."""
    return _headers("cccl", os.path.join("cu13", "include", "cccl"), os.path.join("cuda", "version"))


def include_dirs() -> tuple[str, ...]:
    """The header directories every compile gets: the CUDA runtime's, then CCCL's."""
    return tuple(d for d in (cuda_include_dir(), cccl_include_dir()) if d)


def _fingerprint(path: str) -> str:
    st = os.stat(path)
    return f"{os.path.basename(path)}:{st.st_size}:{st.st_mtime_ns}"


@functools.lru_cache(maxsize=4)
def cuda_headers_version(include_dir: str | None) -> str:
    """Identity of the CUDA headers NVRTC is given (cuda_runtime_api.h's size and mtime, and
    CCCL's cuda/version: a new toolkit, runtime or CCCL wheel changes them). Keys system
    headers by toolkit without reading them."""
    if not include_dir:
        return "none"
    marks = []
    for path in (os.path.join(include_dir, "cuda_runtime_api.h"), os.path.join(cccl_include_dir() or "", "cuda", "version")):
        try:
            marks.append(_fingerprint(path))
        except OSError:
            marks.append("unknown")
    return ";".join(marks)


@functools.lru_cache(maxsize=1)
def nvrtc_identity() -> str:
    """What identifies the NVRTC that compiles, for cache keys, without loading it.

    cuda.bindings finds NVRTC through cuda.pathfinder, which prefers an NVIDIA wheel in
    site-packages; that library file's size and mtime identify it (a wheel upgrade changes
    them) at the cost of a few stats. Loading NVRTC just to ask its version takes ~15 ms, too
    much for a warm start; it is done only when no wheel is found (a system toolkit).
    """
    path = nvrtc_wheel_library()
    if path is not None:
        with contextlib.suppress(OSError):
            return f"wheel:{_fingerprint(path)}"
    return "nvrtc:{}.{}".format(*nvrtc_version())


@functools.lru_cache(maxsize=1)
def nvrtc_wheel_library() -> str | None:
    """The NVRTC library file of an NVIDIA wheel (what cuda.bindings loads), or None where
    NVRTC comes from a system toolkit."""
    roots = _nvidia_roots()
    for root in roots:  # the wheels' known places first: a few stats, no directory listing
        for sub in ("cu13/lib/libnvrtc.so.13", "cuda_nvrtc/lib/libnvrtc.so.12", "cu12/lib/libnvrtc.so.12"):
            if os.path.isfile(os.path.join(root, sub)):
                return os.path.join(root, sub)
    for root in roots:
        for pattern in ("*/lib/libnvrtc.so*", "*/bin/nvrtc64*.dll", "*/bin/*/nvrtc64*.dll"):
            for path in sorted(glob.glob(os.path.join(root, pattern))):
                if "builtins" not in path and "alt" not in os.path.basename(path) and os.path.isfile(path):
                    return path
    return None


@functools.lru_cache(maxsize=1)
def nvjitlink_identity() -> str:
    """nvJitLink's version, for the keys of kernels it links."""
    try:
        from cuda.bindings import nvjitlink

        return "nvjitlink:{}.{}".format(*nvjitlink.version())
    except Exception:  # no nvJitLink: cuda.core falls back to the driver's linker
        return "nvjitlink:none"


def target_for(cc: int, archs: tuple[int, ...] | None = None) -> str:
    """The arch to compile for a device of compute capability ``cc`` (90 for 9.0): a cubin
    when NVRTC knows the arch, else PTX for the newest arch it knows below it. ``archs``
    (NVRTC's supported archs, if already known) saves loading NVRTC to ask."""
    archs = supported_archs() if archs is None else archs
    if cc in archs:
        return f"sm_{cc}"
    older = [a for a in archs if a <= cc]
    if not older:
        raise NoDeviceError(
            f"this NVRTC ({'.'.join(map(str, nvrtc_version()))}) supports archs "
            f"{', '.join(map(str, archs))}, none of which runs on a compute capability "
            f"{cc // 10}.{cc % 10} device; install an NVRTC that supports it"
        )
    return f"compute_{max(older)}"


def compile_program(
    source: str,
    *,
    program_name: str,
    name_expressions: Sequence[str],
    flags: tuple[str, ...],
    headers: Mapping[str, str] | None = None,
    kernel: str,
    line_sources: Mapping[str, str] | None = None,
) -> CompileResult:
    """Compile ``source`` with NVRTC and resolve every name expression.

    ``flags`` must hold ``-arch=sm_XY`` (cubin) or ``-arch=compute_XY`` (PTX).
    ``line_sources`` maps ``#line`` file names to their text, for error messages.
    """
    from . import pch as _pch  # (NVRTC's side: imported by the first compile, not at start-up)

    nvrtc = _nvrtc()
    _check_supported(flags, kernel)
    headers = dict(headers or {})
    start = time.perf_counter()
    with _pch.session(source) as pch:  # (not in the result's flags: a PCH changes no output)
        prog, err, log = _compile_once(nvrtc, source, program_name, headers, name_expressions, flags + pch)
        if pch:
            log = _pch.after_compile(nvrtc, prog, log)
            if int(err) != 0 and _pch.failed(log):  # no room to write a PCH: compile without, from now on
                nvrtc.nvrtcDestroyProgram(prog)
                prog, err, log = _compile_once(nvrtc, source, program_name, headers, name_expressions, flags)
    try:
        if int(err) != 0:
            sources = {program_name: source, **(line_sources or {})}
            raise CompileError(format_failure(kernel, flags, log, sources), log=log, source=source, options=flags)
        ptx = any(f.startswith("-arch=compute_") for f in flags)
        lto = "-dlto" in flags
        if lto:
            size = _check(nvrtc.nvrtcGetLTOIRSize(prog), "nvrtcGetLTOIRSize")
            out = bytearray(size)
            _check(nvrtc.nvrtcGetLTOIR(prog, out), "nvrtcGetLTOIR")
            code = bytes(out)
        elif ptx:
            size = _check(nvrtc.nvrtcGetPTXSize(prog), "nvrtcGetPTXSize")
            out = bytearray(size)  # writable: NVRTC fills it (never a bytes object, which may be shared)
            _check(nvrtc.nvrtcGetPTX(prog, out), "nvrtcGetPTX")
            code = bytes(out).rstrip(b"\x00")
        else:
            size = _check(nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
            out = bytearray(size)
            _check(nvrtc.nvrtcGetCUBIN(prog, out), "nvrtcGetCUBIN")
            code = bytes(out)
        lowered = {
            expr: _check(nvrtc.nvrtcGetLoweredName(prog, expr.encode()), "nvrtcGetLoweredName").decode()
            for expr in name_expressions
        }
    finally:
        nvrtc.nvrtcDestroyProgram(prog)

    counters.add(compiles=1, compile_seconds=time.perf_counter() - start)
    return CompileResult(
        code=code,
        code_type="ltoir" if lto else "ptx" if ptx else "cubin",
        lowered=lowered,
        log=log,
        flags=flags,
        seconds=time.perf_counter() - start,
        nvrtc_version=nvrtc_version(),
    )


def _compile_once(nvrtc: Any, source: str, program_name: str, headers: dict[str, str], name_expressions: Sequence[str],
                  flags: tuple[str, ...]) -> tuple[Any, Any, str]:  # fmt: skip
    """One NVRTC program made and compiled: (program, its nvrtcResult, its log)."""
    prog = _check(
        nvrtc.nvrtcCreateProgram(
            source.encode(), program_name.encode(), len(headers), [v.encode() for v in headers.values()],
            [k.encode() for k in headers],
        ),
        "nvrtcCreateProgram",
    )  # fmt: skip
    try:
        for expr in name_expressions:
            _check(nvrtc.nvrtcAddNameExpression(prog, expr.encode()), "nvrtcAddNameExpression")
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(flags), [f.encode() for f in flags])
        return prog, err, _program_log(nvrtc, prog)
    except BaseException:
        nvrtc.nvrtcDestroyProgram(prog)
        raise


def _program_log(nvrtc: Any, prog: Any) -> str:
    size = _check(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
    buf = bytearray(size)  # writable, never a possibly shared bytes object
    _check(nvrtc.nvrtcGetProgramLog(prog, buf), "nvrtcGetProgramLog")
    return bytes(buf).rstrip(b"\x00").decode(errors="replace").strip()


def format_failure(kernel: str, flags: tuple[str, ...], log: str, sources: Mapping[str, str]) -> str:
    """NVRTC's errors, each followed by the offending line of the body, preamble or
    rendered source, numbered as the user sees it."""
    arch = next((f.split("=", 1)[1] for f in flags if f.startswith("-arch=")), "?")
    out = [f"{kernel}: NVRTC failed to compile for {arch}:"]
    shown = 0
    for raw in log.splitlines():
        m = _LOG_LINE.match(raw)
        out.append("  " + raw)
        if not m or m["what"] == "warning" or shown >= 10:
            continue
        text = sources.get(m["file"])
        if text is None:
            continue
        shown += 1
        lines, n = text.split("\n"), int(m["line"])
        for i in range(max(1, n - 1), min(len(lines), n + 1) + 1):
            out.append(f"    {'>' if i == n else ' '} {i:>4} | {lines[i - 1]}")
    if not log:
        out.append("  (NVRTC printed no log)")
    return "\n".join(out)
