"""The capture of one thread: what a `cuforge.graph` block records while it lasts.

A capture is CUDA stream capture on one stream of one device, in the thread that opened it.
While it lasts, that thread's cuforge launches leave the C launcher (``_csrc/launcher.c``
declines them) for the general path, whose `cuforge._launch.launch_checked` hands them
to `Capture.launch`: it sends each to the capture stream, keeps its arguments alive for
the graph's life, and refuses what a graph cannot hold (host arrays to stage, a first NVRTC
compile, autotuning, another device or stream). A refusal ends the capture at once, so the
device stays usable whatever the caller does with the error.
"""

from __future__ import annotations

from typing import Any

from .._runtime import cuda as _cuda
from .._runtime.arrays import HOST
from ..errors import GraphCaptureError
from . import general as _launch
from .plan import LaunchPlan

__all__ = ["Capture", "capture_in_thread", "end_capture"]


class Capture:
    """One capture under way in this thread (``_cuda.state.tls.capture``)."""

    __slots__ = ("device", "failed", "id", "keep", "launches", "modules", "stream")

    def __init__(self, device: int, stream: int, capture_id: int):
        self.device, self.stream, self.id = device, stream, capture_id
        self.keep: list[Any] = []  # the arguments of each launch, and the loaded kernel
        self.launches: list[tuple[str, bool]] = []  # (kernel label, cooperative) per launch
        self.modules: set[Any] = set()  # prebuilt modules: refuse to replay once one is unloaded
        self.failed: GraphCaptureError | None = None

    def refuse(self, message: str) -> GraphCaptureError:
        """End the capture now (the device stays usable) and return the error to raise; every
        later launch in the block, and the block's end, raise it again."""
        if self.failed is None:
            self.failed = GraphCaptureError(f"{message}. The capture was ended; nothing was recorded")
            end_capture(self.stream)
        return self.failed

    def launch(self, plan: LaunchPlan, c: Any) -> None:
        """Record a checked call (see ``_launch.Checked``) in the graph."""
        label = plan.label
        if self.failed is not None:
            raise GraphCaptureError(f"{label}: this cf.graph() capture already failed: {self.failed}")
        host = [repr(plan.specs[i].name) for i, arg in c.arrays if arg.device == HOST]
        if host:
            raise self.refuse(
                f"{label}: argument(s) {', '.join(host)} are host NumPy arrays, which a launch copies in and out "
                f"and waits for, and a CUDA graph cannot hold that; pass device arrays (cf.to_device, CuPy, PyTorch)"
            )
        device = _launch.target_device(plan, c)
        if device != self.device:
            raise self.refuse(
                f"{label}: the launch runs on device {device}, but this graph captures on device {self.device}; "
                f"open the capture there (cf.graph(device={device})) or move the arrays"
            )
        loaded = plan.loaded.get(device) or plan.load(_cuda.device_info(device))
        c = _launch.check_loaded(plan, loaded, c)
        stream = self.stream if c.stream is None else self._joined(c.stream, label)
        self.keep.append((c.args, loaded))
        if plan.module is not None:
            self.modules.add(plan.module)
        self.launches.append((label, c.kind.cooperative))
        _launch.launch_raw(loaded[0], _launch.config_of(c), stream, plan.packer.pack(c.values), label)

    def prepared(self, launch: Any, module: Any) -> None:
        """A PreparedLaunch called in the block (``module``: its prebuilt Module, or None): its
        stream must be part of the capture."""
        if self.failed is not None:
            raise GraphCaptureError(f"{launch.kernel}: this cf.graph() capture already failed: {self.failed}")
        self._joined(launch.stream, launch.kernel)
        self.keep.append(launch)
        if module is not None:
            self.modules.add(module)
        self.launches.append((launch.kernel, False))

    def _joined(self, stream: int, label: str) -> int:
        """``stream`` if it captures into this graph (the capture stream, or one forked from it
        with an event), else a refusal: its launches would run now, outside the graph."""
        if stream != self.stream:
            err, status, capture_id, *_ = _cuda.bindings().cuStreamGetCaptureInfo(stream)
            if int(err) != 0 or int(status) != 1 or int(capture_id) != self.id:  # 1: CU_STREAM_CAPTURE_STATUS_ACTIVE
                raise self.refuse(
                    f"{label}: stream={stream:#x} is not part of this cf.graph() capture, so the launch would run now, "
                    f"outside the graph; leave stream= out inside the block (launches go on the capture stream), or "
                    f"capture on that stream with cf.graph(stream=...)"
                )
        return stream


def capture_in_thread() -> Capture | None:
    """The capture under way in this thread, if any (one global read when there is none)."""
    return _cuda.state.tls.capture if _cuda.state.captures_open else None


def end_capture(stream: int) -> tuple[int, Any]:
    """End the capture on ``stream`` whatever state it is in: (CUresult, the CUgraph or None)."""
    err, captured = _cuda.bindings().cuStreamEndCapture(stream)
    return int(err), captured
