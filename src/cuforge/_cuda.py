"""The CUDA driver side: lazy device start-up, module loading, streams, synchronisation.

Nothing here runs at ``import cuforge``: cuda.core is imported (300-400 ms) and CUDA
initialised on the first call that needs a device. A missing driver or device is
reported once as :class:`NoDeviceError` and remembered.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

from . import _config
from .errors import LaunchError, NoDeviceError

try:
    from . import _claunch  # type: ignore[attr-defined]  # the optional C launcher (setup.py)
except ImportError:  # built where no C compiler was present: launches go through cuda.bindings
    _claunch = None


@dataclass(frozen=True)
class DeviceInfo:
    id: int
    cc: int  # compute capability as 90 for 9.0
    name: str


_lock = threading.Lock()
_tls: threading.local = threading.local()
_devices: dict[int, Any] = {}
_failure: str | None = None
_last_launch: tuple[str, Any, Any, int] | None = None


def _note_launch(kernel: str, grid: Any, block: Any, shared_mem: int) -> None:
    global _last_launch
    _last_launch = (kernel, grid, block, shared_mem)


def _last_launch_py() -> tuple[str, Any, Any, int] | None:
    return _last_launch


# note_launch(kernel, grid, block, shared_mem) records each launch, and last_launch() returns
# the latest, so that a fault reported by a later CUDA call names the kernel that caused it.
# The C launcher keeps that record itself (it launches without touching Python objects).
note_launch: Any = _claunch.note_launch if _claunch is not None else _note_launch
last_launch: Any = _claunch.last_launch if _claunch is not None else _last_launch_py


driver: Any = None  # cuda.bindings.driver, bound on first use so the launch path skips the import

# launch(function, grid, block, shared_mem, stream, params) -> CUresult as an int: the driver's
# cuLaunchKernel with addresses for handles, bound when the first device is made current.
launch: Any = None
launcher: str = ""  # which one: "c" (cuforge._claunch) or "bindings" (cuda.bindings)


def _driver() -> Any:
    global driver
    if driver is None:
        from cuda.bindings import driver as mod

        driver = mod
    return driver


def check(result: Any, what: str) -> Any:
    """Unwrap a cuda.bindings driver result, raising LaunchError on failure."""
    err, *rest = result
    if int(err) != 0:
        raise LaunchError(f"{what} failed: {error_text(err)}")
    return rest[0] if len(rest) == 1 else (rest or None)


def error_text(err: Any) -> str:
    driver = _driver()
    err = driver.CUresult(int(err))
    _, name = driver.cuGetErrorName(err)
    _, text = driver.cuGetErrorString(err)
    return f"{name.decode() if name else err} ({text.decode() if text else 'unknown'})"


def _open(device_id: int) -> Any:
    global _failure
    if _failure is not None:
        raise NoDeviceError(_failure)
    with _lock:
        dev = _devices.get(device_id)
        if dev is None:
            try:
                from cuda.core import Device

                dev = Device(device_id)
            except ValueError as exc:  # an ordinal past the last device
                raise NoDeviceError(f"CUDA device {device_id} is not present: {exc}") from None
            except Exception as exc:  # driver missing, no device, broken install
                _failure = (
                    f"no CUDA device is available ({type(exc).__name__}: {exc}); launching needs "
                    f"an NVIDIA GPU and driver; compiling does not: use Kernel.compile(arch='sm_90')"
                )
                raise NoDeviceError(_failure) from None
            _devices[device_id] = dev
    return dev


def current_device() -> DeviceInfo:
    """The device launches in this thread go to (made current on first use)."""
    info = getattr(_tls, "device", None)
    if info is None:
        info = _make_current(getattr(_tls, "device_id", 0))
    return info


def set_device(device_id: int) -> None:
    """Make ``device_id`` the device this thread launches on."""
    _make_current(device_id)
    _tls.device_id = device_id


def _make_current(device_id: int) -> DeviceInfo:
    """Open ``device_id``, make its context current in this thread, remember it, describe it."""
    dev = _open(device_id)
    dev.set_current()
    _driver()
    if launch is None:
        bind_launcher()
    major, minor = dev.compute_capability
    info = DeviceInfo(dev.device_id, major * 10 + minor, dev.name)
    _tls.device = info
    if _claunch is not None:
        _claunch.set_thread_device(info.id)
    return info


def bind_launcher(kind: str | None = None) -> None:
    """Bind :data:`launch` to the driver's cuLaunchKernel: called from C when cuforge's
    extension is built (``kind`` "c"), else through cuda.bindings' Python wrapper
    ("bindings", about 2-3 us slower per checked launch, its checks then in Python); ``kind``
    None reads ``CUFORGE_LAUNCHER`` ("auto": C when built).

    The C launcher calls the entry point cuGetProcAddress gives for the CUDA 12.0 ABI of
    cuLaunchKernel (the signature _claunch.c spells out), picked as cuda.bindings picks its
    own: ``CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM=1`` makes stream 0 the per-thread
    default stream in both.
    """
    global launch, launcher
    kind = kind or _config.get("launcher")
    if kind not in ("auto", "c", "bindings"):
        raise LaunchError(f"CUFORGE_LAUNCHER expects auto, c or bindings, got {kind!r}; unset it to launch from C when built")
    if kind == "c" and _claunch is None:
        raise LaunchError("CUFORGE_LAUNCHER=c, but cuforge's C launcher is not built; "
                          "reinstall cuforge where a C compiler is present")  # fmt: skip
    drv = _driver()
    if _claunch is None or kind == "bindings":
        if _claunch is not None:
            _claunch.set_entry(0)  # the C launch functions then hand every call to their Python twins
        launch, launcher = _bindings_launch, "bindings"
        return
    ptds = bool(int(os.environ.get("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM") or 0))
    flags = drv.CUdriverProcAddress_flags
    flag = flags.CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM if ptds else flags.CU_GET_PROC_ADDRESS_LEGACY_STREAM
    err, address, _ = drv.cuGetProcAddress(b"cuLaunchKernel", 12000, flag)
    if int(err) != 0 or not address:  # a driver older than CUDA 12.0
        if kind == "c":
            raise LaunchError(f"CUFORGE_LAUNCHER=c, but cuGetProcAddress found no cuLaunchKernel for the CUDA 12.0 "
                              f"ABI ({error_text(err)}); update the NVIDIA driver or unset CUFORGE_LAUNCHER")  # fmt: skip
        _claunch.set_entry(0)
        launch, launcher = _bindings_launch, "bindings"
        return
    _claunch.set_entry(int(address))
    launch, launcher = _claunch.launch, "c"


def _bindings_launch(function: int, grid: Any, block: Any, shared_mem: int, stream: int, params: int) -> int:
    """The same call as ``_claunch.launch``, through cuda.bindings."""
    return driver.cuLaunchKernel(function, *grid, *block, shared_mem, stream, params, 0)[0]  # type: ignore[no-any-return]


def load_module(code: bytes, code_type: str) -> Any:
    """Load a cubin or PTX image as a cuda.core ObjectCode (its library is loaded lazily)."""
    from cuda.core import ObjectCode

    return ObjectCode.from_cubin(code) if code_type == "cubin" else ObjectCode.from_ptx(code)


def get_kernel(module: Any, symbol: str) -> Any:
    """The cuda.core Kernel for ``symbol`` in a loaded module."""
    try:
        return module.get_kernel(symbol)
    except Exception as exc:
        raise LaunchError(f"loading {symbol} from a {module.code_type} image failed: {exc}") from None


def pointer_device(ptr: int) -> int | None:
    """The device ordinal owning device pointer ``ptr``, or None if CUDA does not know it."""
    driver = _driver()
    attr = driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    err, value = driver.cuPointerGetAttribute(attr, ptr)
    return int(value) if int(err) == 0 else None


def synchronize() -> None:
    """Wait for all work on the current device to finish (``cuCtxSynchronize``)."""
    current_device()
    check(_driver().cuCtxSynchronize(), "cuCtxSynchronize")


def gpu_available() -> bool:
    """True when a CUDA device can be used for launches (initialises CUDA on first call)."""
    try:
        current_device()
    except NoDeviceError:
        return False
    return True
