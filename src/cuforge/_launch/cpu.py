"""A launch on the CPU (cuforge's CPU backend, ``_cpu``): the same binding, checks, launch rules
and packing as a GPU launch, with the host checks (host memory used in place, device memory
refused), then the kernel's CPU entry run on the worker pool. It returns when the kernel is done."""

from __future__ import annotations

from typing import Any

from .. import _config
from .._cpu import runtime as _cpu_runtime
from .._declare import kinds as _kinds
from ..errors import ArgumentError, DeviceFaultError, LaunchError, LaunchTimeoutError
from .checks import checker
from .general import check_and_pack
from .plan import LaunchPlan

# The GPU's limits, which a CPU launch is held to as well (sm_90's: the opt-in maximum of
# dynamic shared memory per block), so that what runs on the CPU runs on the GPU.
MAX_SHARED = 227 * 1024
MAX_COOPERATIVE = 256  # blocks of a cooperative launch on the CPU: a thread each


# CUFORGE_CHECK, read at the first CPU launch and again after a change through _config (a scope,
# the pytest plugin's option): a read of the environment per launch costs as much as the launch
_checking: list[bool | None] = [None]
_config.on_change(lambda: _checking.__setitem__(0, None))


def launch(plan: LaunchPlan, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any, block: Any,
           shared_mem: Any, stream: Any) -> None:  # fmt: skip
    """Check a call and run it on the CPU."""
    label = plan.label
    if stream is not None:
        raise ArgumentError(
            f"{label}: stream= names a CUDA stream, but this launch runs on the CPU, where a launch is done "
            f"before the call returns; leave stream= out"
        )
    check = None
    if kwargs and "check" in kwargs and all(s.name != "check" for s in plan.specs):
        kwargs = dict(kwargs)
        check = kwargs.pop("check")
        if check.__class__ is not bool:
            raise ArgumentError(f"{label}: check expects True or False, got {check!r}")
    if check is None:
        check = plan.check_calls
        if check is None:
            check = _checking[0]
            if check is None:
                check = _checking[0] = _config.check()
    checks = plan.host_checks
    if checks is None:
        checks = plan.host_checks = tuple(checker(label, s, host=True) for s in plan.specs)
    c = check_and_pack(plan, args, kwargs, grid, block, shared_mem, None, checks)
    if c is None:
        return
    _, values, arrays, grid, block, shared_mem, _, kind, _ = c
    if shared_mem > MAX_SHARED:
        raise ArgumentError(
            f"{label}: shared_mem={shared_mem} bytes is more than the {MAX_SHARED} bytes of dynamic shared memory a "
            f"block can have on the GPU (sm_90's opt-in maximum), which a CPU launch is held to as well; ask for less"
        )
    if plan.cpu is None:  # (every Kernel gives its plan one)
        raise LaunchError(f"{label}: this kernel has no CPU build; launch it on a GPU")
    entry = 0 if check else plan.cpu()
    if check and plan.cpu_check is not None:
        plan.cpu_check()  # (finds grid_sync, as plan.cpu() does)
    if plan.grid_sync and not kind.cooperative:
        raise ArgumentError(
            f"{label}: the kernel's source syncs the whole grid (a grid group's sync()), which needs a cooperative "
            f"launch; set cooperative = True on the class or pass cooperative=True"
        )
    if grid is _kinds.FITS:  # a cooperative launch's default: a block per worker thread
        grid = (_cpu_runtime.threads(), 1, 1)
    if kind.cooperative and grid[0] * grid[1] * grid[2] > MAX_COOPERATIVE:
        raise ArgumentError(
            f"{label}: a cooperative launch on the CPU runs every block at once, each on a thread of its own: at most "
            f"{MAX_COOPERATIVE} blocks, got grid={grid}; use a smaller grid (a grid-stride loop covers the rest)"
        )
    # `c` lives until this returns: its arrays' `held` views keep buffers exported while the kernel runs
    if check:
        from . import check as _check  # (the checker loads on its first use)

        status, message = _check.launch(plan, values, arrays, grid, block, shared_mem, kind.cooperative, kind.cluster)
    else:
        status, message = _cpu_runtime.run(entry, grid, block, shared_mem, plan.packer.pack(values),
                                           cooperative=kind.cooperative, cluster=kind.cluster)  # fmt: skip
    if status == _cpu_runtime.ASSERTED:
        raise DeviceFaultError(f"{label} (grid={grid}, block={block}) on the CPU: {message}")
    if status == _cpu_runtime.FAULTED:
        raise DeviceFaultError(
            f"{label} faulted on the CPU (grid={grid}, block={block}): {message}. An out-of-bounds access that lands "
            f"in memory the process owns is not caught (as on a GPU without compute-sanitizer)"
        )
    if status == _cpu_runtime.INTERRUPTED:
        _cpu_runtime.interrupted()
    if status == _cpu_runtime.TIMED_OUT:
        raise LaunchTimeoutError(
            f"{label} (grid={grid}, block={block}) on the CPU: {message}: a kernel that never ends (a loop whose exit "
            f"never comes, a spin-wait without __nanosleep) or more work than the limit allows. Raise the limit with "
            f"CUFORGE_CPU_TIMEOUT=SECONDS (under pytest: --cuforge-cpu-timeout=SECONDS); 0 turns it off"
        )
    if status:
        raise LaunchError(f"{label} (grid={grid}, block={block}) on the CPU: {message}")
