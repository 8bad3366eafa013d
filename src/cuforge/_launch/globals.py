"""A kernel's module variables (``__constant__`` and ``__device__``), written and read per device.

What CuPy's ``RawModule.get_global`` and Kernel Tuner's ``cmem_args`` give: a filter in
constant memory, a device-side counter. The variable is found in the kernel's loaded module
on that device by ``cuLibraryGetGlobal`` (so by its symbol: a variable at namespace scope,
outside any C++ namespace, as ``__constant__ float d_filter[289];`` in a preamble or a
``source=``, or ``static``, as the CUDA samples declare theirs); its size, from the driver, is
what a write must match. A family whose source declares module variables compiles each
instantiation alone (``_compile/parallel.py``), so each has its own; kernels declared over one
``source=`` text share one program, and so its variables.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .._runtime import cuda as _cuda
from .._runtime.module import library_of
from ..errors import ArgumentError, ArgumentTypeError
from .general import stream_handle
from .plan import LaunchPlan

__all__ = ["get_global", "set_global"]


def _address(plan: LaunchPlan, name: str, info: _cuda.DeviceInfo, who: str) -> tuple[int, int]:
    """(device pointer, bytes) of variable ``name`` in the plan's kernel's module on ``info``'s device,
    whose context is current."""
    loaded = plan.loaded.get(info.id) or plan.load(info)
    library = library_of(loaded.compiled)  # a CompiledKernel's program, or a prebuilt Module
    err, ptr, size = _cuda.bindings().cuLibraryGetGlobal(library, name.encode())
    if int(err) != 0 and name.isidentifier():  # a static variable's symbol is its internal one: `_ZL7c_Table`
        err, ptr, size = _cuda.bindings().cuLibraryGetGlobal(library, f"_ZL{len(name)}{name}".encode())
    if int(err) != 0:
        raise ArgumentError(
            f"{who}: the module of {plan.label} has no variable {name!r} ({_cuda.error_text(err)}); declare it at "
            f"namespace scope, outside any C++ namespace, e.g. `__constant__ float {name}[16];` in the preamble"
        )
    return int(ptr), int(size)


def _on_cpu(plan: LaunchPlan, device: int | str | None, who: str) -> bool:
    if device is not None:
        _cuda.parse_device(device, who)
    return _cuda.runs_on_cpu({} if device is None else {"device": device}, plan.on_cpu)


def _gpu(device: int | str | None) -> int:
    """The ordinal of a GPU ``device`` (checked by `_on_cpu`): the thread's for None or ``"cuda"``."""
    ordinal = None if device is None else _cuda.parse_device(device, "")
    return ordinal if isinstance(ordinal, int) else _cuda.current_device().id


def _cpu_address(plan: LaunchPlan, name: str, who: str) -> tuple[int, int]:
    """(address, bytes) of variable ``name`` in the kernel's CPU library."""
    from .._cpu import runtime as _cpu_runtime

    found = _cpu_runtime.variable(plan.cpu_library(), name) if plan.cpu_library is not None else None
    if found is None or not found[1]:
        raise ArgumentError(
            f"{who}: the CPU build of {plan.label} has no variable {name!r}; declare it at namespace scope, outside any "
            f"C++ namespace, e.g. `__constant__ float {name}[16];` in the preamble"
        )
    return found


def _size_error(who: str, size: int, data: np.ndarray) -> ArgumentTypeError:
    return ArgumentTypeError(
        f"{who}: the variable holds {size} bytes; got {data.nbytes} ({data.dtype}, shape {data.shape}); pass "
        f"exactly {size} bytes, e.g. {size // max(data.itemsize, 1)} values of {data.dtype}"
    )


def set_global(plan: LaunchPlan, name: str, value: Any, *, stream: Any = None, device: int | str | None = None) -> None:
    """Copy host data ``value`` (a NumPy array or anything ``numpy.asarray`` takes) into the
    module variable ``name`` on ``device`` (default: the thread's; ``"cpu"``: the kernel's CPU
    build), on ``stream`` (default: the legacy default stream). Its size must be the variable's,
    exactly."""
    who = f"{plan.label}.set_global({name!r})"
    data = np.ascontiguousarray(value)
    if data.dtype.hasobject or data.dtype.kind not in "biufc":
        raise ArgumentTypeError(f"{who}: expects numbers (a NumPy array), got {data.dtype} ({type(value).__name__})")
    if _on_cpu(plan, device, who):
        ptr, size = _cpu_address(plan, name, who)
        if data.nbytes != size:
            raise _size_error(who, size, data)
        ctypes.memmove(ptr, data.ctypes.data, size)
        return
    handle = 0 if stream is None else stream_handle(stream, who)
    with _cuda.on_device(_gpu(device)) as info:
        ptr, size = _address(plan, name, info, who)
        if data.nbytes != size:
            raise _size_error(who, size, data)
        # from pageable memory the call returns once the data is staged: `data` may go at once
        _cuda.check(_cuda.bindings().cuMemcpyHtoDAsync(ptr, data.ctypes.data, size, handle), "cuMemcpyHtoDAsync")


def get_global(plan: LaunchPlan, name: str, dtype: Any = np.uint8, *, device: int | str | None = None) -> np.ndarray:
    """The module variable ``name`` on ``device`` (``"cpu"``: the kernel's CPU build), copied to
    a host array of ``dtype`` (its size must divide by the itemsize), after the device's work so
    far (``cuCtxSynchronize``)."""
    who = f"{plan.label}.get_global({name!r})"
    dt = np.dtype(dtype)
    if _on_cpu(plan, device, who):
        ptr, size = _cpu_address(plan, name, who)
        if size % dt.itemsize:
            raise ArgumentTypeError(f"{who}: the variable holds {size} bytes, not a whole number of {dt} ({dt.itemsize} bytes)")
        return np.frombuffer(ctypes.string_at(ptr, size), dt).copy()
    with _cuda.on_device(_gpu(device)) as info:
        ptr, size = _address(plan, name, info, who)
        if size % dt.itemsize:
            raise ArgumentTypeError(f"{who}: the variable holds {size} bytes, not a whole number of {dt} ({dt.itemsize} bytes)")
        out = np.empty(size // dt.itemsize, dt)
        driver = _cuda.bindings()
        _cuda.check(driver.cuCtxSynchronize(), "cuCtxSynchronize")
        _cuda.check(driver.cuMemcpyDtoH(out.ctypes.data, ptr, size), "cuMemcpyDtoH")
        return out
