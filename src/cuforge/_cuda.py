"""The CUDA driver side: lazy device start-up, module loading, streams, synchronisation.

Nothing here runs at ``import cuforge``: cuda.core is imported (300-400 ms) and CUDA
initialised on the first call that needs a device. A missing driver or device is
reported once as :class:`NoDeviceError` and remembered.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from .errors import LaunchError, NoDeviceError


@dataclass(frozen=True)
class DeviceInfo:
    id: int
    cc: int  # compute capability as 90 for 9.0
    name: str


_lock = threading.Lock()
_tls = threading.local()
_devices: dict[int, Any] = {}
_failure: str | None = None
last_launch: tuple[str, Any, Any, int] | None = None  # (kernel, grid, block, shared_mem) of the latest launch


driver: Any = None  # cuda.bindings.driver, bound on first use so the launch path skips the import


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
    major, minor = dev.compute_capability
    info = DeviceInfo(dev.device_id, major * 10 + minor, dev.name)
    _tls.device = info
    return info


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
