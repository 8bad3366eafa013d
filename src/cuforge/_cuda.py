"""The CUDA driver side: lazy device start-up, module loading, streams, synchronisation.

Nothing here runs at ``import cuforge``: cuda.core is imported (300-400 ms) and CUDA
initialised on the first call that needs a device. A missing driver or device is
reported once as :class:`NoDeviceError` and remembered.
"""

from __future__ import annotations

import os
import struct
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
    sm_count: int = 0
    shared_optin: int = 48 * 1024  # shared memory per block with the opt-in (bytes)


_lock = threading.Lock()
_tls: threading.local = threading.local()
_devices: dict[int, Any] = {}
_infos: dict[int, DeviceInfo] = {}
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

# launch(function, grid, block, shared_mem, stream, params, attrs=None) -> CUresult as an int:
# the driver's cuLaunchKernelEx with addresses for handles, bound when the first device is
# made current.
launch: Any = None
# which one: "c" (cuforge._claunch, cuLaunchKernelEx), "c-legacy" (cuLaunchKernel, a driver
# before CUDA 12.0) or "bindings" (cuda.bindings)
launcher: str = ""


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
    info = _infos.get(device_id)
    if info is None:  # described once per process: a new thread's first launch only sets the context
        major, minor = dev.compute_capability
        props = dev.properties
        info = _infos[device_id] = DeviceInfo(dev.device_id, major * 10 + minor, dev.name, props.multiprocessor_count,
                                              props.max_shared_memory_per_block_optin)  # fmt: skip
        if device_id == 0 and launcher == "c":
            _hand_context_to_c()
    _tls.device = info
    if _claunch is not None:
        _claunch.set_thread_device(info.id)
    return info


def _hand_context_to_c() -> None:
    """Tell the C launcher device 0's primary context (now current) and how to make it current
    in a new thread (see _csrc/driver.c)."""
    drv = _driver()
    ctx = check(drv.cuCtxGetCurrent(), "cuCtxGetCurrent")
    flag = drv.CUdriverProcAddress_flags.CU_GET_PROC_ADDRESS_DEFAULT
    found = [drv.cuGetProcAddress(name, 12000, flag) for name in (b"cuCtxGetCurrent", b"cuCtxSetCurrent")]
    if all(int(err) == 0 and address for err, address, _ in found):
        _claunch.set_context(int(found[0][1]), int(found[1][1]), int(ctx))


def bind_launcher(kind: str | None = None) -> None:
    """Bind :data:`launch` to the driver's launch: called from C when cuforge's extension is
    built (``kind`` "c"), else through cuda.bindings' Python wrapper ("bindings": every call
    then takes the general Python path, about 2.5x the time of a cuda.core launch; see the
    README); ``kind`` None reads ``CUFORGE_LAUNCHER`` ("auto": C when built).

    The C launcher calls the entry point cuGetProcAddress gives for the CUDA 12.0 ABI of
    cuLaunchKernelEx (cuLaunchKernel where the driver predates it), picked as cuda.bindings
    picks its own: ``CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM=1`` makes stream 0 the
    per-thread default stream in both.
    """
    global launch, launcher
    kind = kind or _config.launcher()
    if kind == "c" and _claunch is None:
        raise LaunchError("CUFORGE_LAUNCHER=c, but cuforge's C launcher is not built; "
                          "reinstall cuforge from a wheel, or where a C compiler is present")  # fmt: skip
    drv = _driver()
    if _claunch is None or kind == "bindings":
        if _claunch is not None:
            _claunch.set_entry(0, True)  # the C Launchers then decline every call to the general path
        launch, launcher = _bindings_launcher(), "bindings"
        return
    ptds = bool(int(os.environ.get("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM") or 0))
    flags = drv.CUdriverProcAddress_flags
    flag = flags.CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM if ptds else flags.CU_GET_PROC_ADDRESS_LEGACY_STREAM
    for name, ex in ((b"cuLaunchKernelEx", True), (b"cuLaunchKernel", False)):
        err, address, _ = drv.cuGetProcAddress(name, 12000, flag)
        if int(err) == 0 and address:
            _claunch.set_entry(int(address), ex)
            launch, launcher = _claunch.launch, "c" if ex else "c-legacy"
            return
    if kind == "c":  # a driver older than CUDA 12.0
        raise LaunchError(f"CUFORGE_LAUNCHER=c, but cuGetProcAddress found no launch entry point for the CUDA 12.0 "
                          f"ABI ({error_text(err)}); update the NVIDIA driver or unset CUFORGE_LAUNCHER")  # fmt: skip
    _claunch.set_entry(0, True)
    launch, launcher = _bindings_launcher(), "bindings"


def _bindings_launcher() -> Any:
    version = check(_driver().cuDriverGetVersion(), "cuDriverGetVersion")
    return _bindings_launch if int(version) >= 12000 else _bindings_launch_legacy


def _bindings_launch(function: int, grid: Any, block: Any, shared_mem: int, stream: int, params: int,
                     attrs: bytes | None = None) -> int:  # fmt: skip
    """The same call as ``_claunch.launch``, through cuda.bindings' cuLaunchKernelEx. A
    launch's configuration object is kept per (grid, block, shared_mem, stream, attributes)
    and its function object per handle: building them costs more than the call saves."""
    key = (grid, block, shared_mem, stream, attrs)
    cfg = _bindings_configs.get(key)
    if cfg is None:
        if len(_bindings_configs) >= 1024:
            _bindings_configs.clear()
        cfg = _bindings_configs[key] = _bindings_config(*key)
    f = _bindings_functions.get(function)
    if f is None:
        f = _bindings_functions[function] = driver.CUfunction(function)
    return driver.cuLaunchKernelEx(cfg, f, params, 0)[0]  # type: ignore[no-any-return]


def _bindings_launch_legacy(function: int, grid: Any, block: Any, shared_mem: int, stream: int, params: int,
                            attrs: bytes | None = None) -> int:  # fmt: skip
    """cuLaunchKernel through cuda.bindings, for a driver before CUDA 12.0 (no launch attributes)."""
    if attrs:
        return CUDA_ERROR_NOT_SUPPORTED
    return driver.cuLaunchKernel(function, *grid, *block, shared_mem, stream, params, 0)[0]  # type: ignore[no-any-return]


CUDA_ERROR_NOT_SUPPORTED = 801
_bindings_configs: dict[tuple[Any, ...], Any] = {}
_bindings_functions: dict[int, Any] = {}


def _bindings_config(grid: Any, block: Any, shared_mem: int, stream: int, attrs: bytes | None) -> Any:
    cfg = driver.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block
    cfg.sharedMemBytes, cfg.hStream = shared_mem, driver.CUstream(stream)
    if attrs:
        cfg.attrs = [_bindings_attribute(attrs[i : i + 72]) for i in range(0, len(attrs), 72)]
        cfg.numAttrs = len(attrs) // 72
    return cfg


def _bindings_attribute(record: bytes) -> Any:
    attr = driver.CUlaunchAttribute()
    ident = int.from_bytes(record[:4], "little")
    attr.id = driver.CUlaunchAttributeID(ident)
    if ident == _ATTR_CLUSTER_DIMENSION:
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = struct.unpack_from("<3I", record, 8)
    else:  # cooperative, programmatic stream serialization: an int
        setattr(attr.value, _ATTR_INT_FIELDS[ident], struct.unpack_from("<i", record, 8)[0])
    return attr


# CUlaunchAttributeID values (cuda.h, stable since CUDA 12.0) and the value field each sets.
_ATTR_COOPERATIVE, _ATTR_CLUSTER_DIMENSION, _ATTR_PROGRAMMATIC_SERIALIZATION = 2, 4, 6
_ATTR_INT_FIELDS = {_ATTR_COOPERATIVE: "cooperative", _ATTR_PROGRAMMATIC_SERIALIZATION: "programmaticStreamSerializationAllowed"}


def launch_attributes(*, cooperative: bool = False, cluster: tuple[int, int, int] | None = None,
                      programmatic_serialization: bool = False) -> bytes | None:  # fmt: skip
    """The launch-attribute list handed to cuLaunchKernelEx, as CUlaunchAttribute records
    (72 bytes each: the id, padding, a 64-byte value); None when no attribute is set."""
    records = []
    if cooperative:
        records.append(struct.pack("<I4xi60x", _ATTR_COOPERATIVE, 1))
    if cluster is not None:
        records.append(struct.pack("<I4x3I52x", _ATTR_CLUSTER_DIMENSION, *cluster))
    if programmatic_serialization:
        records.append(struct.pack("<I4xi60x", _ATTR_PROGRAMMATIC_SERIALIZATION, 1))
    return b"".join(records) or None


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
