"""Faults: the record of recent launches, the sticky errors that end a CUDA context, and the
unwrapping of driver results (`check`, `error_text`).

A kernel's fault is reported by a later CUDA call, not by its launch. So every launch is
recorded (kernel, grid, block, shared memory), and the first sticky error names the kernels
launched since the last clean synchronisation: one of them caused it. Once one is seen,
every later CUDA use repeats that report, since the context cannot be used again.
"""

from __future__ import annotations

import collections
import ctypes
from collections.abc import Callable
from typing import Any

from ..errors import DeviceFaultError, LaunchError
from . import libcuda as _libcuda
from .libcuda import claunch as _claunch

# CUresults after which the context cannot be used again (cuda.h): a kernel faulted.
STICKY = frozenset({
    214,  # ECC_UNCORRECTABLE
    700,  # ILLEGAL_ADDRESS
    702,  # LAUNCH_TIMEOUT
    710,  # ASSERT (a device-side assert)
    714,  # HARDWARE_STACK_ERROR
    715,  # ILLEGAL_INSTRUCTION
    716,  # MISALIGNED_ADDRESS
    717,  # INVALID_ADDRESS_SPACE
    718,  # INVALID_PC
    719,  # LAUNCH_FAILED
})  # fmt: skip


class LaunchRecord:
    """The last 8 launches, for a build without the C launcher (which keeps its own record,
    as it launches without touching Python objects)."""

    def __init__(self) -> None:
        self.recent: collections.deque[tuple[str, Any, Any, int]] = collections.deque(maxlen=8)
        self.count = 0

    def note(self, kernel: str, grid: Any, block: Any, shared_mem: int) -> None:
        self.recent.append((kernel, grid, block, shared_mem))
        self.count += 1

    def last(self) -> tuple[str, Any, Any, int] | None:
        return self.recent[-1] if self.recent else None

    def newest_first(self) -> list[tuple[str, Any, Any, int]]:
        return list(reversed(self.recent))

    def total(self) -> int:
        return self.count


# note_launch(kernel, grid, block, shared_mem) records each launch; last_launch() returns the
# latest and recent_launches() the last 8, newest first; launch_count() counts every launch.
_record = LaunchRecord()
note_launch: Any = _claunch.note_launch if _claunch is not None else _record.note
last_launch: Any = _claunch.last_launch if _claunch is not None else _record.last
recent_launches: Any = _claunch.recent_launches if _claunch is not None else _record.newest_first
launch_count: Any = _claunch.launch_count if _claunch is not None else _record.total


class FaultHistory:
    """What ended the context, once a sticky error was seen, and the launches known innocent.

    ``thread_device`` gives the device this thread launches on (or None): the device state
    sets it, so that the report names the device."""

    def __init__(self) -> None:
        self.text: str | None = None  # the first report, once a sticky error was seen
        self.clean = 0  # launch_count() at the last synchronisation that found no fault
        self.thread_device: Callable[[], Any] = lambda: None

    def fault(self, err: Any, where: str, *, current: str | None = None) -> DeviceFaultError:
        """The error for a sticky CUresult seen by ``where``. The first names the kernels
        launched before it (``current``, the launch that reported it, is innocent and left
        out); every later one repeats that, and names no other kernel."""
        if self.text is None:
            launches = list(recent_launches())[: max(launch_count() - self.clean, 0)]  # only those since the last clean sync
            if current is not None and launches and launches[0][0] == current:
                launches = launches[1:]
            # (a graph replay is recorded with a zero grid: its kernels' dims are in the graph)
            suspects = "; ".join(k if tuple(g) == (0, 0, 0) else f"{k} (grid={g}, block={b}, shared_mem={m})"
                                 for k, g, b, m in launches) or "none recorded"  # fmt: skip
            info = self.thread_device()
            device = f"device {info.id}" if info is not None else "the device"
            self.text = (
                f"a kernel faulted on the GPU: {error_text(err)}, first reported by {where}. The CUDA context of {device} "
                f"is lost. The kernels launched last, newest first, one of which caused it: {suspects}"
            )
        return DeviceFaultError(
            f"{self.text}. No further GPU work can run in this process (a sticky CUDA error cannot be cleared): restart it"
        )

    def synchronised(self, count: int) -> None:
        """A synchronisation found no fault: the first ``count`` launches ran."""
        self.clean = max(self.clean, count)


history = FaultHistory()
fault = history.fault


def check(result: Any, what: str) -> Any:
    """Unwrap a driver result, cuda.bindings' or _libcuda's, raising LaunchError on failure
    (DeviceFaultError for a kernel's fault)."""
    err, *rest = result
    if int(err) != 0:
        if int(err) in STICKY:
            raise history.fault(err, what)
        raise LaunchError(f"{what} failed: {error_text(err)}")
    return rest[0] if len(rest) == 1 else (rest or None)


def error_text(err: Any) -> str:
    """The driver's name and description of a CUresult."""

    def ask(function: str) -> str | None:  # (the string's address is written to the second argument)
        out = ctypes.c_char_p()
        try:
            found = _libcuda.call(function, int(err), ctypes.byref(out))[0] == 0
        except OSError:  # no driver to ask
            return None
        return out.value.decode() if found and out.value else None

    return f"{ask('cuGetErrorName') or f'CUresult {int(err)}'} ({ask('cuGetErrorString') or 'unknown'})"
