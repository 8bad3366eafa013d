"""What a kernel can do on the current device, read from its loaded function: its attributes
and its occupancy (`Kernel.attributes`, `Kernel.occupancy`)."""

from __future__ import annotations

from typing import Any

from .._declare import launch_rules as _launch_rules
from .._runtime import cuda as _cuda
from .._runtime import limits as _limits
from ..errors import ArgumentError
from .plan import LaunchPlan


def attributes(plan: LaunchPlan) -> _limits.KernelAttributes:
    """The kernel's attributes on the current device (loads it there)."""
    loaded = plan.load(_cuda.current_device())
    return _limits.KernelAttributes(
        registers=_cuda.kernel_attribute(loaded.handle, "NUM_REGS", loaded.device.id),
        local_bytes=_cuda.kernel_attribute(loaded.handle, "LOCAL_SIZE_BYTES", loaded.device.id),
        static_shared_bytes=loaded.static_shared,
        max_threads_per_block=loaded.max_threads,
        max_dynamic_shared_bytes=loaded.max_shared,
        device=loaded.device.id,
    )


def occupancy(plan: LaunchPlan, block: Any, shared_mem: int) -> int:
    """Active blocks per SM of the kernel on the current device (loads it there)."""
    blk = plan.block if block is None else _launch_rules.dims(block, "block", plan.label, _launch_rules.BLOCK_LIMIT)
    if shared_mem.__class__ is not int or shared_mem < 0:
        raise ArgumentError(f"{plan.label}.occupancy(): shared_mem expects an int >= 0 (bytes), got {shared_mem!r}")
    loaded = plan.load(_cuda.current_device())
    return _limits.blocks_per_sm(loaded, blk[0] * blk[1] * blk[2], shared_mem)
