"""Prepared launches: a call checked and packed once, then launched again with only the
driver call (`Kernel.prepare`)."""

from __future__ import annotations

from typing import Any

from .._runtime import cuda as _cuda
from .._runtime.device import state as _state
from .._runtime.launch import prepared
from ..errors import ArgumentError, ArgumentTypeError
from .general import Checked, check_and_pack, config_of, place, raise_launch_error, target_device
from .plan import LaunchPlan

__all__ = ["PreparedLaunch", "prepare"]


def prepare(plan: LaunchPlan, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any, block: Any,
            shared_mem: Any, stream: Any) -> PreparedLaunch:  # fmt: skip
    """Check and pack a call once (see `Kernel.prepare`): device arrays only."""
    checked = check_and_pack(plan, args, kwargs, grid, block, shared_mem, stream)
    if checked is None:
        raise ArgumentError(f"{plan.label}.prepare(): the arrays are empty, so there is nothing to launch")
    with _cuda.on_device(target_device(plan, checked)) as info:
        checked, handle, sh, staged = place(plan, checked, info)
    if staged:
        names = ", ".join(repr(plan.specs[i].name) for i, arg in checked.arrays if arg.origin == "numpy")
        raise ArgumentTypeError(
            f"{plan.label}.prepare(): argument(s) {names} are host NumPy arrays; pass device arrays "
            f"(cf.to_device, CuPy, PyTorch) to prepare a launch"
        )
    return PreparedLaunch(plan, checked, handle, sh, stream)


class PreparedLaunch:
    """One launch, checked and packed once: calling it is a single driver call.

    Made by [`Kernel.prepare`][cuforge.Kernel.prepare]. It keeps the arguments and the stream alive and owns its
    parameter buffer, so it can be called from any thread that has the device's context current.

    Examples
    --------
    >>> @cf.kernel
    ... class Inc:
    ...     x: cf.Array[cf.int32]
    ...     body = "x[threadIdx.x] += 1;"
    >>> x = cf.zeros(32, cf.int32)  # doctest: +GPU
    >>> step = Inc.prepare(x)  # doctest: +GPU
    >>> step(); step()  # doctest: +GPU
    >>> int(x.to_numpy()[0])  # doctest: +GPU
    2
    """

    __module__ = "cuforge"
    __slots__ = ("_buf", "_call", "_keep", "_module", "_ptrs", "block", "grid", "kernel", "shared_mem", "stream")

    def __init__(self, plan: LaunchPlan, c: Checked, handle: int, stream: int, stream_object: Any = None) -> None:
        self._buf, self._ptrs, addr = plan.packer.standalone(c.values)
        self._keep = (c.args, stream_object)  # a CuPy or PyTorch stream destroys its handle when collected
        self._module = plan.module  # a prebuilt kernel's Module: refuse to launch once it is unloaded
        self.kernel, self.grid, self.block, self.shared_mem, self.stream = plan.label, c.grid, c.block, c.shared_mem, stream
        self._call = prepared(_state.launch, handle, config_of(c), stream, addr)

    def __call__(self) -> None:
        if self._module is not None:
            self._module._check_loaded(self.kernel)
        if _state.captures_open and _state.tls.capture is not None:  # inside cf.graph(): see capture.py
            _state.tls.capture.prepared(self, self._module)
        err = self._call()
        if err:
            raise_launch_error(err, self.grid, self.block, self.shared_mem, self.kernel)

    def __repr__(self) -> str:
        return f"<cuforge.PreparedLaunch {self.kernel} grid={self.grid} block={self.block} stream={self.stream:#x}>"
