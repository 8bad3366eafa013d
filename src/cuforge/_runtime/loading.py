"""Loading: a cubin or PTX image as a context-independent library (``cuLibraryLoadData``),
a kernel of it, and a loaded kernel's attributes and parameter sizes.

A compiled kernel is loaded through its NVRTC program: a batch compiled together is loaded
once, however many of its kernels are used, and serves every device of its arch. The
runtime registers itself with `CompiledKernel` here (`CompiledKernel._use_runtime`), so
that the compiled artifact stays data.
"""

from __future__ import annotations

import _thread  # (threading's lock and thread-local types, without importing threading on a warm start)
import ctypes
from typing import Any

from .._compile.artifact import CompiledKernel, CompileResult
from ..errors import LaunchError
from . import libcuda as _libcuda
from .device import state
from .faults import check, error_text


def load_library(code: bytes, code_type: str) -> int:
    """Load a cubin or PTX image with ``cuLibraryLoadData``: a context-independent library,
    which the driver loads onto each device the first time one of its kernels is used there
    (the CUlibrary's address)."""
    if code_type == "ptx" and not code.endswith(b"\0"):
        code += b"\0"  # the driver reads PTX as a NUL-terminated string
    return check(_libcuda.get("cuLibraryLoadData", ctypes.c_void_p, code, None, None, 0, None, None, 0),  # type: ignore[no-any-return]
                 "cuLibraryLoadData")  # fmt: skip


def unload_library(library: int) -> None:
    """Free a library `load_library` loaded (best effort; never in a forked child)."""
    if state.failure is None:
        _libcuda.call("cuLibraryUnload", library)


def library_kernel(library: int, symbol: str) -> int:
    """The CUkernel handle of ``symbol`` in a loaded library."""
    err, kernel = _libcuda.get("cuLibraryGetKernel", ctypes.c_void_p, library, symbol.encode())
    if err != 0:
        raise LaunchError(f"loading {symbol} from its module failed: {error_text(err)}")
    return kernel  # type: ignore[no-any-return]


def kernel_attribute(handle: int, name: str, device: int) -> int:
    """A CUfunction_attribute (``"NUM_REGS"``, ``"MAX_THREADS_PER_BLOCK"``, ...) of a kernel on a device."""
    attr = _libcuda.FUNCTION_ATTRIBUTES[name]
    return check(_libcuda.get("cuKernelGetAttribute", ctypes.c_int, attr, handle, device), "cuKernelGetAttribute")  # type: ignore[no-any-return]


def set_kernel_attribute(handle: int, name: str, value: int, device: int) -> int:
    """Set a CUfunction_attribute of a kernel on a device: the CUresult (0 when it was set)."""
    return _libcuda.call("cuKernelSetAttribute", _libcuda.FUNCTION_ATTRIBUTES[name], value, handle, device)[0]


def kernel_param_sizes(handle: int) -> list[int]:
    """The size in bytes of each parameter of a compiled kernel, as the driver reads them."""
    sizes: list[int] = []
    offset, size = ctypes.c_size_t(), ctypes.c_size_t()
    info = _libcuda.function("cuKernelGetParamInfo")
    while info(handle, len(sizes), ctypes.byref(offset), ctypes.byref(size)) == 0:
        sizes.append(size.value)  # (CUDA_ERROR_INVALID_VALUE past the last parameter)
    return sizes


class CompiledLoader:
    """The libraries of the NVRTC programs loaded in this process, and the kernels taken
    from them: what `CompiledKernel` delegates its loading to."""

    def __init__(self) -> None:
        self.lock = _thread.allocate_lock()
        self.libraries: dict[int, tuple[CompileResult, int]] = {}  # id(program) -> (program, its CUlibrary)
        self.handles: dict[tuple[int, str], int] = {}  # (id(program), lowered name) -> its CUkernel

    def library(self, ck: CompiledKernel) -> int:
        """The CUlibrary of the program ``ck`` was compiled in (loaded once per process)."""
        program = ck._result
        with self.lock:
            found = self.libraries.get(id(program))
            if found is None:
                found = self.libraries[id(program)] = (program, load_library(program.code, program.code_type))
        return found[1]

    def handle(self, ck: CompiledKernel) -> int:
        """The kernel's CUkernel handle, its program loaded once per process (CUDA initialised)."""
        key = (id(ck._result), ck.lowered_name)
        found = self.handles.get(key)
        if found is None:
            library = self.library(ck)
            with self.lock:
                found = self.handles.get(key)
                if found is None:
                    found = self.handles[key] = library_kernel(library, ck.lowered_name)
        return found

    def loaded_handle(self, ck: CompiledKernel) -> int | None:
        """The kernel's handle where it was loaded, else None."""
        return self.handles.get((id(ck._result), ck.lowered_name))

    def function(self, ck: CompiledKernel, device: int) -> Any:
        """``ck`` loaded on a device, as cuda.core's ``Kernel`` (imports cuda.core)."""
        from cuda.core import Kernel

        state.device_info(device)
        return Kernel.from_handle(self.handle(ck))

    def driver_resources(self, ck: CompiledKernel) -> dict[str, Any] | None:
        """Registers, shared and local memory from the driver, where ``ck`` is loaded and this
        thread has a device; else None."""
        handle, info = self.loaded_handle(ck), state.thread_device()
        if handle is None or info is None:
            return None
        return {
            "registers": kernel_attribute(handle, "NUM_REGS", info.id),
            "shared_bytes": kernel_attribute(handle, "SHARED_SIZE_BYTES", info.id),
            "local_bytes": kernel_attribute(handle, "LOCAL_SIZE_BYTES", info.id),
            "source": "GPU",
        }


compiled = CompiledLoader()
CompiledKernel._use_runtime(compiled)
