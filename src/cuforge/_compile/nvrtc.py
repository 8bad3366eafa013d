"""NVRTC through cuda.bindings: compile a translation unit, look up lowered names.

cuda.core's ``Program`` is not used here because it takes no in-memory headers (the
persistent cache needs their contents for its key) and keeps no log on success; the raw
NVRTC calls give both, and they are few.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from .._runtime import cuda as _cuda
from ..errors import CompileError, CuforgeError
from .stats import counters  # cf.cache_stats(): the one count of NVRTC programs compiled
from .toolchain import check as _check
from .toolchain import check_supported, nvrtc_api, nvrtc_version

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


# ---------------------------------------------------------------- compiled kernels and their modules


class CompiledKernel:
    """One kernel compiled for one arch: the binary, its symbol, source and log.

    Attributes
    ----------
    kernel : str
        The kernel's name.
    arch : str
        ``sm_XY`` for a cubin, ``compute_XY`` for PTX.
    code_type : str
        ``"cubin"`` or ``"ptx"``.
    code : bytes
        The binary image.
    lowered_name : str
        The symbol NVRTC reported for the kernel through ``nvrtcGetLoweredName``.
    name_expression : str
        The C++ expression that was looked up.
    source : str
        The rendered CUDA C++ that was compiled.
    log : str
        NVRTC's log (warnings).
    flags : tuple of str
        The NVRTC flags used.
    compile_seconds : float
        Time NVRTC took (when it was compiled, for one read from the disk cache).
    from_cache : bool
        True when read from the persistent cache rather than compiled in this process.

    Examples
    --------
    >>> @cf.kernel
    ... class Inc:
    ...     x: cf.Array[cf.int32]
    ...     body = "x[threadIdx.x] += 1;"
    >>> ck = Inc.compile(arch="sm_90")
    >>> ck.arch, ck.code_type, ck.lowered_name, ck.cubin[1:4]
    ('sm_90', 'cubin', '_Z3IncPi', b'ELF')
    """

    __module__ = "cuforge"

    def __init__(self, kernel: Any, arch: str, result: CompileResult, expr: str, source: str):
        self.kernel = kernel.label
        self._result = result  # shared by every kernel compiled in the same NVRTC program
        self.arch = arch
        self.code_type = result.code_type
        self.code = result.code
        self.name_expression = expr
        self.lowered_name = result.lowered[expr]
        self.source = source
        self.log = result.log
        self.flags = result.flags
        self.compile_seconds = result.seconds
        self.from_cache = result.from_disk
        self._handle: int | None = None  # its CUkernel, once loaded (context-independent)
        self._lock = threading.Lock()

    @property
    def cubin(self) -> bytes:
        """The ELF cubin.

        Returns
        -------
        bytes

        Raises
        ------
        CuforgeError
            Where the kernel was compiled to PTX.
        """
        if self.code_type != "cubin":
            raise CuforgeError(f"{self.kernel} was compiled to PTX for {self.arch}; use .ptx, or compile with arch='sm_XY'")
        return self.code

    @property
    def ptx(self) -> str:
        """The PTX text.

        Returns
        -------
        str

        Raises
        ------
        CuforgeError
            Where the kernel was compiled to a cubin.

        Examples
        --------
        >>> ".entry _Z3IncPi" in Inc.compile(arch="compute_90").ptx
        True
        """
        if self.code_type != "ptx":
            raise CuforgeError(
                f"{self.kernel} was compiled to a cubin for {self.arch}; use .cubin, or compile with arch='compute_XY'"
            )
        return self.code.decode()

    def resources(self) -> dict[str, int]:
        """What the cubin says the kernel uses, read without a GPU.

        Returns
        -------
        dict of str to int
            ``registers`` (per thread), ``frame_bytes`` and ``min_stack_bytes`` (per thread),
            ``shared_bytes`` (the kernel's static shared memory per block, the figure
            ``Kernel.attributes.static_shared_bytes`` reports); in an sm_90 (and newer)
            cubin, ``reserved_shared_bytes``: the 1 KiB per block the system reserves, which
            the cubin counts in the shared memory of a kernel that uses any (0 for one that
            uses none); with ``__launch_bounds__``, ``max_threads`` (its threads per block).
            Empty for PTX.

        Examples
        --------
        >>> sorted(ck.resources())
        ['frame_bytes', 'min_stack_bytes', 'registers', 'reserved_shared_bytes', 'shared_bytes']
        """
        if self.code_type != "cubin":
            return {}
        from .elf import cubin_resources

        return cubin_resources(self.code, self.lowered_name)

    @property
    def registers(self) -> int | None:
        """Registers per thread, from the cubin's metadata.

        Returns
        -------
        int or None
            None for PTX.
        """
        return self.resources().get("registers")

    def _loaded_library(self) -> Any:
        """The CUlibrary of the program it was compiled in (loaded once per process), as
        ``Module._loaded_library`` gives a prebuilt module's."""
        return _library(self._result)

    def _kernel_handle(self) -> int:
        """The kernel's CUkernel handle, its program loaded once per process (CUDA initialised)."""
        if self._handle is None:
            with self._lock:
                if self._handle is None:
                    self._handle = _cuda.library_kernel(self._loaded_library(), self.lowered_name)
        return self._handle

    def function(self, device: int) -> Any:
        """The code loaded on a device, as cuda.core's ``Kernel`` (imports cuda.core).

        Parameters
        ----------
        device : int
            A device ordinal.

        Returns
        -------
        cuda.core.Kernel

        Raises
        ------
        NoDeviceError
            Where no GPU can be used.
        """
        from cuda.core import Kernel

        _cuda.device_info(device)
        return Kernel.from_handle(self._kernel_handle())

    def __getstate__(self) -> dict[str, Any]:
        """Pickled as its binary and what describes it (so a worker process can hand one back);
        the copy loads the code again on first use, since driver handles do not travel."""
        return {k: v for k, v in self.__dict__.items() if k not in ("_handle", "_lock")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _handle=None, _lock=threading.Lock())

    def _repr_html_(self) -> str:
        from .._kernel.display import compiled_html

        return compiled_html(self)

    def __repr__(self) -> str:
        return (
            f"<cuforge.CompiledKernel {self.kernel} {self.code_type} for {self.arch}, "
            f"{len(self.code)} bytes, symbol {self.lowered_name}>"
        )


_libraries: dict[int, tuple[CompileResult, Any]] = {}  # id(result) -> (result, its CUlibrary)
_libraries_lock = threading.Lock()


def _library(result: CompileResult) -> Any:
    """The loaded library of one NVRTC program: a batch compiled together is loaded once,
    however many of its kernels are used, and serves every device of its arch."""
    with _libraries_lock:
        found = _libraries.get(id(result))
        if found is None:
            found = _libraries[id(result)] = (result, _cuda.load_library(result.code, result.code_type))
    return found[1]
