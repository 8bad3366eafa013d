"""NVRTC through cuda.bindings: compile a translation unit, look up lowered names.

cuda.core's ``Program`` is not used here because it takes no in-memory headers (the
persistent cache needs their contents for its key) and keeps no log on success; the raw
NVRTC calls give both, and they are few.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import CompileError
from .artifact import CompileResult
from .stats import counters  # cf.cache_stats(): the one count of NVRTC programs compiled
from .toolchain import check as _check
from .toolchain import check_supported, nvrtc_api, nvrtc_version

# (a string: re compiles it when a log is first read)
_LOG_LINE = r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<what>(?:catastrophic )?error|warning)"


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

    nvrtc = nvrtc_api()
    check_supported(flags, kernel)
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
        m = re.match(_LOG_LINE, raw)
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
