"""The limits of a kernel loaded on one device: its threads, shared memory and occupancy,
and the checks of a launch against them (cooperative occupancy, cluster support).

`load_limits` runs once per kernel and device, when the kernel is loaded: it sets the
shared-memory opt-in (so a launch may ask for up to the device's per-block maximum) and
records what the C launcher compares each call against.
"""

from __future__ import annotations

import _thread  # (threading's lock and thread-local types, without importing threading on a warm start)
from typing import Any

from .._declare.kinds import DEFAULT_SHARED, LaunchKind
from .._frozen import Record
from ..errors import ArgumentError
from . import faults as _faults
from . import libcuda as _libcuda
from . import loading as _loading


class Loaded(Record):
    """A kernel loaded on one device: what ``Kernel._by_device`` holds. The C launcher reads
    ``handle``, ``max_threads`` and ``max_shared`` by position (0, 2, 3)."""

    __slots__ = ()
    handle: int  # the CUkernel address the launch takes
    compiled: Any  # the CompiledKernel, or the prebuilt Module it came from
    max_threads: int  # threads per block the compiled code allows
    max_shared: int  # dynamic shared memory per block, after the opt-in
    static_shared: int
    device: Any  # _device.DeviceInfo

    def __new__(cls, handle: Any, compiled: Any, max_threads: Any, max_shared: Any, static_shared: Any, device: Any) -> Any:
        return tuple.__new__(cls, (handle, compiled, max_threads, max_shared, static_shared, device))


def load_limits(handle: int, device: Any) -> tuple[int, int, int]:
    """(max threads per block, max dynamic shared memory, static shared memory) of a kernel
    (its CUkernel ``handle``) on ``device``, after setting its opt-in to the device's
    per-block maximum (once per kernel and device, at load: the attribute is a permission,
    not a reservation)."""
    static = _loading.kernel_attribute(handle, "SHARED_SIZE_BYTES", device.id)
    max_dynamic = max(device.shared_optin - static, 0)
    if max_dynamic > DEFAULT_SHARED - static:
        err = _loading.set_kernel_attribute(handle, "MAX_DYNAMIC_SHARED_SIZE_BYTES", max_dynamic, device.id)
        if err != 0:  # a driver that refuses: keep the default limit
            max_dynamic = max(DEFAULT_SHARED - static, 0)
    return _loading.kernel_attribute(handle, "MAX_THREADS_PER_BLOCK", device.id), max_dynamic, static


_occupancy: dict[tuple[int, int, int], int] = {}


_non_portable: set[tuple[int, int]] = set()


_lock = _thread.allocate_lock()


def blocks_per_sm(loaded: Loaded, threads: int, shared_mem: int) -> int:
    """Active blocks per SM for this block size and dynamic shared memory (remembered)."""
    key = (loaded.handle, threads, shared_mem)
    found = _occupancy.get(key)
    if found is None:
        drv = _libcuda.bindings()  # the kernel's function in the current context (the device's)
        function = _faults.check(drv.cuKernelGetFunction(drv.CUkernel(loaded.handle)), "cuKernelGetFunction")
        found = _occupancy[key] = int(_faults.check(
            drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(function, threads, shared_mem),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor"))  # fmt: skip
    return found


def fitting_grid(loaded: Loaded, kind: LaunchKind, block: tuple[int, int, int], shared_mem: int) -> tuple[int, int, int]:
    """The most blocks that run at once (occupancy x SMs) for this block and dynamic shared
    memory: the default grid of a cooperative launch, whole clusters where it is clustered."""
    blocks = blocks_per_sm(loaded, block[0] * block[1] * block[2], shared_mem) * loaded.device.sm_count
    if kind.cluster is not None:
        blocks -= blocks % kind.cluster[0]
    return (max(blocks, 1), 1, 1)


def check_on_device(label: str, loaded: Loaded, kind: LaunchKind, grid: tuple[int, int, int],
                    block: tuple[int, int, int], shared_mem: int) -> None:  # fmt: skip
    """The checks that need the loaded kernel: raise ArgumentError before the launch."""
    threads = block[0] * block[1] * block[2]
    device = loaded.device
    if threads > loaded.max_threads:
        raise ArgumentError(
            f"{label}: block={block} has {threads} threads, but the compiled kernel allows at most "
            f"{loaded.max_threads} per block on device {device.id} (its register use or __launch_bounds__); "
            f"use a smaller block"
        )
    if shared_mem > loaded.max_shared:
        raise ArgumentError(
            f"{label}: shared_mem={shared_mem} bytes is more than the {loaded.max_shared} bytes of dynamic shared "
            f"memory a block can have on device {device.id} ({device.name}: {device.shared_optin} per block, less "
            f"{loaded.static_shared} of static shared memory); ask for less"
        )
    if kind.cooperative:
        per_sm = blocks_per_sm(loaded, threads, shared_mem)
        limit = per_sm * device.sm_count
        blocks = grid[0] * grid[1] * grid[2]
        if blocks > limit:
            raise ArgumentError(
                f"{label}: a cooperative launch must fit on the GPU at once: at most {limit} blocks ({per_sm} per SM x "
                f"{device.sm_count} SMs) for block={block} and shared_mem={shared_mem}, got grid={grid} ({blocks} "
                f"blocks); use a smaller grid (a grid-stride loop covers the rest)"
            )
    if kind.cluster is not None:
        if device.cc < 90:
            raise ArgumentError(
                f"{label}: thread-block clusters need compute capability 9.0 or newer; device {device.id} "
                f"({device.name}) is {device.cc // 10}.{device.cc % 10}; launch without cluster="
            )
        if kind.non_portable_cluster and (loaded.handle, device.id) not in _non_portable:
            with _lock:
                err = _loading.set_kernel_attribute(loaded.handle, "NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1, device.id)
                _faults.check((err,), "cuKernelSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)")
                _non_portable.add((loaded.handle, device.id))


class KernelAttributes(Record):
    """What a kernel's compiled code needs and allows on one device (``Kernel.attributes``).

    Examples
    --------
    >>> @cf.kernel
    ... class Probe:
    ...     x: cf.Array[cf.float32]
    ...     body = "__shared__ float s[32]; s[threadIdx.x] = x[threadIdx.x]; x[threadIdx.x] = s[31 - threadIdx.x];"
    >>> attrs = Probe.attributes  # doctest: +GPU
    >>> attrs.static_shared_bytes, attrs.max_threads_per_block  # doctest: +GPU
    (128, 1024)
    """

    registers: int  # per thread
    local_bytes: int  # local memory per thread (spills, stack arrays)
    static_shared_bytes: int
    max_threads_per_block: int
    max_dynamic_shared_bytes: int  # after cuforge's opt-in: the most shared_mem= a launch may ask
    device: int

    __module__ = "cuforge"
    __slots__ = ()

    def __new__(cls, registers: int, local_bytes: int, static_shared_bytes: int, max_threads_per_block: int,
                max_dynamic_shared_bytes: int, device: int) -> Any:  # fmt: skip
        return tuple.__new__(cls, (registers, local_bytes, static_shared_bytes, max_threads_per_block,
                                   max_dynamic_shared_bytes, device))  # fmt: skip
