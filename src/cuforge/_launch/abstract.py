"""A launch of arrays known only by shape and dtype (a JAX trace): the same binding, checks and
launch rules as a call, made once when the call is traced, so that what a framework replays
later (XLA, per call) is the packed values, the grid, the block and the shared memory, with the
arrays' addresses filled in at each call.

The arrays a trace has are not memory: they are stood in for by NumPy views of one element
claiming the traced shape (C-contiguous strides, never read), which the host checks take as they
take any host array."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .checks import checker
from .general import check_and_pack
from .plan import LaunchPlan


def stand_in(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """A writable, C-contiguous host array of ``shape`` and ``dtype`` that owns one element:
    what the checks and launch rules read of an array (dtype, shape, layout), without its memory."""
    dt = np.dtype(dtype)
    strides, step = [], dt.itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return np.lib.stride_tricks.as_strided(np.zeros(1, dt), shape, tuple(reversed(strides)), writeable=True)


class AbstractLaunch(NamedTuple):
    """A launch checked for its shapes: ``packed`` the parameters as a launch packs them (array
    parameters' pointers zero: each call fills them), and the launch configuration; ``grid`` is
    None where the sizing array is empty (nothing to launch)."""

    packed: bytes
    offsets: tuple[int, ...]  # each parameter's offset in ``packed``
    arrays: tuple[int, ...]  # the parameters that are arrays given (not None)
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int]
    shared_mem: int


def abstract_launch(plan: LaunchPlan, args: tuple[Any, ...]) -> AbstractLaunch:
    """Check a call whose arrays are `stand_in`s (raising as a launch does) and lay out its
    parameters, without launching."""
    checks = plan.host_checks
    if checks is None:
        checks = plan.host_checks = tuple(checker(plan.label, s, host=True) for s in plan.specs)
    c = check_and_pack(plan, args, {}, None, None, 0, None, checks)
    specs = plan.specs
    arrays = tuple(s.index for s in specs if s.is_array and args[s.index] is not None)
    if c is None:  # the sizing array is empty: every argument was checked, nothing runs
        return AbstractLaunch(b"", tuple(s.offset for s in specs), arrays, None, plan.block, 0)
    values = [0 if s.is_array else v for s, v in zip(specs, c.values)]
    return AbstractLaunch(plan.packer.to_bytes(values), plan.packer.offsets, arrays, c.grid, c.block, c.shared_mem)
