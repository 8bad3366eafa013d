"""The C launcher's set-up: the rules and converters it takes from Python, given once at
import, and a kernel's `Launcher`, made from its `LaunchPlan`."""

from __future__ import annotations

from typing import Any

from .._declare import kinds as _kinds
from .._declare.dtypes import BY_NUMPY
from .._declare.launch_rules import BLOCK_LIMIT, DIMS_MEMO, GRID_LIMIT, dims
from .._runtime import cuda as _cuda
from .._runtime.arrays import BY_TORCH, array_arg
from .checks import scalar_to_bytes
from .general import raise_launch_error, stream_handle
from .plan import LaunchPlan

__all__ = ["c_launcher"]

_claunch = _cuda.claunch
if _claunch is not None:
    _claunch.configure(_cuda, BY_NUMPY, BY_TORCH, array_arg, dims, DIMS_MEMO, GRID_LIMIT, BLOCK_LIMIT,
                       stream_handle)  # fmt: skip
    _claunch.set_error_handler(raise_launch_error)
    _claunch.set_cpu(-2, int(_cuda.state.default_on_cpu()))  # CUFORGE_DEVICE=cpu: every call takes the general path


def c_launcher(plan: LaunchPlan) -> Any:
    """The kernel's Launcher in the C extension, or None where the extension is not built,
    the signature is past its limits (``_claunch.MAX_PARAMS``, ``MAX_PARAM_BYTES``) or the
    class declares a cooperative or clustered launch: the general path then takes every call."""
    if _claunch is None or len(plan.specs) > _claunch.MAX_PARAMS or plan.packer.size > _claunch.MAX_PARAM_BYTES:
        return None
    if plan.kind is not _kinds.PLAIN:  # cooperative or clustered: checked against the device on every call
        return None
    smem = plan.smem
    if smem is not None and smem.fixed is None:  # shared_mem from the arguments: the general path computes it
        return None
    grid = plan.grid
    converters = tuple(None if s.is_array else scalar_to_bytes(check, s) for check, s in zip(plan.checks, plan.specs))
    return _claunch.Launcher(plan.label, plan.specs, converters, plan.loaded, grid.source, grid.function,
                             plan.block, plan.attrs, smem.fixed if smem is not None else 0)  # fmt: skip
