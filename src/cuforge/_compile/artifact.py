"""The compiled artifact as data: `CompileResult`, what one NVRTC program produced (``nvrtc``
makes it, the disk cache reads it back: a warm start needs no NVRTC module), and
`CompiledKernel`, one kernel compiled for one arch: the binary, its lowered name, source,
log and resources. Loading it is the runtime's (`CompiledKernel._use_runtime`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

from .._frozen import Record
from ..errors import CuforgeError, NoDeviceError


class CompileResult(Record):
    """What one NVRTC program produced."""

    __slots__ = ()
    code: bytes
    code_type: str  # "cubin" or "ptx" ("ltoir" or a relocatable cubin before the link step)
    lowered: Mapping[str, str]  # name expression -> lowered (mangled) symbol
    log: str
    flags: tuple[str, ...]
    seconds: float
    nvrtc_version: tuple[int, int]
    from_disk: bool  # read from the persistent cache rather than compiled now

    def __new__(cls, code: Any, code_type: Any, lowered: Any, log: Any, flags: Any, seconds: Any,
                nvrtc_version: Any = (0, 0), from_disk: Any = False) -> Any:
        return tuple.__new__(cls, (code, code_type, lowered, log, flags, seconds, nvrtc_version, from_disk))


class Runtime(Protocol):
    """What loads compiled kernels: the runtime layer registers one."""

    def function(self, ck: CompiledKernel, device: int) -> Any: ...

    def driver_resources(self, ck: CompiledKernel) -> dict[str, Any] | None: ...


def _runtime(ck: CompiledKernel) -> Runtime:
    if ck._loader is None:
        raise NoDeviceError(f"{ck.kernel}: loading a compiled kernel needs cuforge's runtime; import cuforge")
    return ck._loader


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

    _loader: ClassVar[Runtime | None] = None  # what loads it (see _use_runtime)

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
        return _runtime(self).function(self, device)

    @classmethod
    def _use_runtime(cls, runtime: Runtime) -> None:
        """Set what loads compiled kernels (the runtime layer calls it when imported).

        Parameters
        ----------
        runtime : Runtime
            What loads a compiled kernel and reads its resources from the driver.
        """
        cls._loader = runtime

    def _repr_html_(self) -> str:
        from .html import compiled_html

        return compiled_html(self)

    def __repr__(self) -> str:
        return (
            f"<cuforge.CompiledKernel {self.kernel} {self.code_type} for {self.arch}, "
            f"{len(self.code)} bytes, symbol {self.lowered_name}>"
        )
