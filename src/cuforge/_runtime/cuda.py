"""The CUDA driver side: lazy device start-up, module loading, streams, synchronisation.

Nothing here runs at ``import cuforge``: CUDA is initialised on the first call that needs a
device. A missing driver or device is reported once as `NoDeviceError` and
remembered. The path of a launch (opening the device, making its primary context current,
loading a compiled kernel with ``cuLibraryLoadData``, reading its limits) calls the driver
through ctypes (`cuforge._libcuda`), which costs no import: cuda.bindings' driver
module (15-19 ms to import) is left to streams, graphs, memory and module variables, and
cuda.core (some 100 ms: it imports all of itself) to what needs it (linking,
``CompiledKernel.function``, cuforge's own arrays).
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import functools
import os
import struct
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import _config
from ..errors import DeviceFaultError, LaunchError, NoDeviceError
from . import libcuda as _libcuda

if TYPE_CHECKING:
    from .._declare.kinds import LaunchKind

_claunch: Any  # the optional C launcher (setup.py), which has no type stubs
try:
    from .. import _claunch  # type: ignore[attr-defined,no-redef,unused-ignore]
except ImportError:  # built where no C compiler was present: launches go through cuda.bindings
    _claunch = None


class DeviceInfo(NamedTuple):
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
_recent: collections.deque[tuple[str, Any, Any, int]] = collections.deque(maxlen=8)


_count = 0


def _note_launch(kernel: str, grid: Any, block: Any, shared_mem: int) -> None:
    global _count
    _recent.append((kernel, grid, block, shared_mem))
    _count += 1


def _launch_count_py() -> int:
    return _count


def _last_launch_py() -> tuple[str, Any, Any, int] | None:
    return _recent[-1] if _recent else None


def _recent_launches_py() -> list[tuple[str, Any, Any, int]]:
    return list(reversed(_recent))


# note_launch(kernel, grid, block, shared_mem) records each launch; last_launch() returns the
# latest and recent_launches() the last 8, newest first, so that a fault reported by a later
# CUDA call names the kernels that may have caused it. The C launcher keeps that record itself
# (it launches without touching Python objects).
note_launch: Any = _claunch.note_launch if _claunch is not None else _note_launch
last_launch: Any = _claunch.last_launch if _claunch is not None else _last_launch_py
recent_launches: Any = _claunch.recent_launches if _claunch is not None else _recent_launches_py
launch_count: Any = _claunch.launch_count if _claunch is not None else _launch_count_py
_clean = 0  # launch_count() at the last synchronisation that found no fault: those launches are innocent

# ---------------------------------------------------------------- faults

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
_fault: str | None = None  # what ended the context, once a sticky error was seen


def fault(err: Any, where: str, *, current: str | None = None) -> DeviceFaultError:
    """The error for a sticky CUresult seen by ``where``. The first names the kernels launched
    before it (``current``, the launch that reported it, is innocent and left out); every
    later one repeats that, and names no other kernel."""
    global _fault
    if _fault is None:
        launches = list(recent_launches())[: max(launch_count() - _clean, 0)]  # only those since the last clean sync
        if current is not None and launches and launches[0][0] == current:
            launches = launches[1:]
        # (a graph replay is recorded with a zero grid: its kernels' dims are in the graph)
        suspects = "; ".join(k if tuple(g) == (0, 0, 0) else f"{k} (grid={g}, block={b}, shared_mem={m})"
                             for k, g, b, m in launches) or "none recorded"  # fmt: skip
        # (launches that finished before the last clean synchronisation are left out: they ran)
        info = getattr(_tls, "device", None)
        device = f"device {info.id}" if info is not None else "the device"
        _fault = (
            f"a kernel faulted on the GPU: {error_text(err)}, first reported by {where}. The CUDA context of {device} "
            f"is lost. The kernels launched last, newest first, one of which caused it: {suspects}"
        )
    return DeviceFaultError(
        f"{_fault}. No further GPU work can run in this process (a sticky CUDA error cannot be cleared): restart it"
    )



driver: Any = None  # cuda.bindings.driver, bound on first use (the launch path uses _libcuda instead)

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
    """Unwrap a driver result, cuda.bindings' or _libcuda's, raising LaunchError on failure
    (DeviceFaultError for a kernel's fault)."""
    err, *rest = result
    if int(err) != 0:
        if int(err) in STICKY:
            raise fault(err, what)
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


def _open(device_id: int) -> Any:
    """The driver's CUdevice for ``device_id``, CUDA initialised (once per process)."""
    global _failure, multi_gpu
    if _failure is not None:
        raise NoDeviceError(_failure)
    with _lock:
        dev = _devices.get(device_id)
        if dev is None:
            try:
                (err,) = _libcuda.call("cuInit", 0)
                if err != 0:
                    raise RuntimeError(f"cuInit: {error_text(err)}")
                count = check(_libcuda.get("cuDeviceGetCount", ctypes.c_int), "cuDeviceGetCount")
            except Exception as exc:  # driver missing, no device, broken install
                _failure = (f"no CUDA device is available ({type(exc).__name__}: {exc}); launching needs "
                            f"an NVIDIA GPU and driver; {_COMPILE_FIX.format('Kernel')}")  # fmt: skip
                raise NoDeviceError(_failure) from None
            multi_gpu = multi_gpu or count > 1
            if not 0 <= device_id < count:
                raise NoDeviceError(f"CUDA device {device_id} is not present: this machine has {count} (0 to {count - 1})")
            dev = _devices[device_id] = check(_libcuda.get("cuDeviceGet", ctypes.c_int, device_id), "cuDeviceGet")
    return dev


_COMPILE_FIX = "compiling does not: use {}.compile(arch='sm_90')"


def no_device_for(label: str, exc: NoDeviceError, method: str = "compile") -> NoDeviceError:
    """``exc``, raised where kernel ``label`` was called, as that kernel's error: named, and
    with its own compile call as the fix (``method``: ``precompile`` for a family; the error
    path only: a working launch never comes here)."""
    text = str(exc)
    if text.startswith(f"{label}:"):
        return exc
    generic = _COMPILE_FIX.format("Kernel")
    fix = f"compiling does not: use {label if label.isidentifier() else ''}.{method}(arch='sm_90')"
    fix += "" if label.isidentifier() else " on it"
    return NoDeviceError(f"{label}: {text.replace(generic, fix)}")


def current_device() -> DeviceInfo:
    """The device launches in this thread go to: the one ``cf.set_device`` chose, else the
    device whose context is current here (CuPy's ``with Device(1)``, PyTorch's
    ``torch.cuda.set_device``), else device 0, made current on first use."""
    if _fault is not None:  # every later call says what happened, not only launches
        raise fault(0, "")
    info = getattr(_tls, "device", None)
    if info is not None and (not multi_gpu or current_context() == _contexts.get(info.id)):
        return info
    # The thread's first use, or another device's context made current since (CuPy's `with
    # Device(n)`, torch.cuda.set_device): follow the current context, as CuPy does.
    chosen = getattr(_tls, "device_id", None)
    followed = _follow_current() if chosen is None or info is not None else None
    return followed or _make_current(chosen if chosen is not None else info.id if info is not None else 0)


def _follow_current() -> DeviceInfo | None:
    """Adopt the device of this thread's current primary context, if one is current."""
    _open(0)  # starts CUDA, or raises NoDeviceError
    if launch is None:
        bind_launcher()
    cur = current_context()
    if not cur:
        return None
    err, device = _libcuda.get("cuCtxGetDevice", ctypes.c_int)
    if err != 0:
        return None
    info = device_info(int(device))
    if _contexts.get(info.id) != cur:  # a context the user made: not a device's primary one
        return None
    _adopt(info)
    return info


def set_device(device_id: int) -> None:
    """Make ``device_id`` the device this thread's launches go to when their arrays do not say
    (launches run on the device their arrays are on).

    Parameters
    ----------
    device_id : int
        A CUDA device ordinal.

    Raises
    ------
    NoDeviceError
        Where that device is not present, or no GPU can be used.

    Examples
    --------
    >>> cf.set_device(0)  # doctest: +GPU
    """
    _make_current(device_id)
    _tls.device_id = device_id


def _make_current(device_id: int) -> DeviceInfo:
    """Make ``device_id``'s primary context current in this thread, which launches there from
    now on (the device is opened and described once per process, by device_info)."""
    info = device_info(device_id)
    set_context(_contexts[device_id])
    _adopt(info)
    return info


def _describe(device_id: int, dev: int) -> DeviceInfo:
    def attribute(name: str) -> int:
        return check(_libcuda.get("cuDeviceGetAttribute", ctypes.c_int, _libcuda.DEVICE_ATTRIBUTES[name], dev),
                     "cuDeviceGetAttribute")  # fmt: skip

    buffer = ctypes.create_string_buffer(256)
    check(_libcuda.call("cuDeviceGetName", buffer, 256, dev), "cuDeviceGetName")
    name = buffer.value.decode()
    cc = attribute("COMPUTE_CAPABILITY_MAJOR") * 10 + attribute("COMPUTE_CAPABILITY_MINOR")
    info = _infos[device_id] = DeviceInfo(device_id, cc, name, attribute("MULTIPROCESSOR_COUNT"),
                                          attribute("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"))  # fmt: skip
    return info


def _adopt(info: DeviceInfo) -> None:
    """This thread now launches on ``info``'s device, whose primary context is current."""
    _tls.device = info
    if _claunch is not None:
        _claunch.set_thread_device(info.id, _contexts.get(info.id, 0))


# ---------------------------------------------------------------- launching where the arrays are

_contexts: dict[int, int] = {}  # device ordinal -> its primary context's address
multi_gpu = False  # more than one device: the Python path then checks which context is current
capturing = 0  # cf.graph() captures under way in the process (the thread's own is _tls.capture)


def device_info(device_id: int) -> DeviceInfo:
    """The description of ``device_id`` (opened, its primary context known), changing nothing
    in this thread."""
    info = _infos.get(device_id)
    if info is None or device_id not in _contexts:
        dev = _open(device_id)
        if launch is None:
            bind_launcher()
        previous = current_context()
        primary = check(_libcuda.get("cuDevicePrimaryCtxRetain", ctypes.c_void_p, dev),
                        "cuDevicePrimaryCtxRetain")  # held for the process  # fmt: skip
        with _lock:
            _contexts[device_id] = primary
        info = _infos.get(device_id) or _describe(device_id, dev)
        if launcher == "c":
            _hand_context_to_c(_contexts.get(0, 0))
        set_context(previous)
    return info


def current_context() -> int:
    """The address of this thread's current CUDA context (0: none)."""
    return check(_libcuda.get("cuCtxGetCurrent", ctypes.c_void_p), "cuCtxGetCurrent")  # type: ignore[no-any-return]


def set_context(ctx: int) -> None:
    check(_libcuda.call("cuCtxSetCurrent", ctx), "cuCtxSetCurrent")


def enter_device(device_id: int) -> tuple[DeviceInfo, int | None]:
    """Make ``device_id``'s context current for a launch: (its description, the context to
    restore after the launch, or None). A thread with no context, or whose current context
    already is the device's (CuPy's ``with Device(1)``), adopts the device: its next launches
    take the C launcher."""
    info = device_info(device_id)
    want, cur = _contexts[device_id], current_context()
    if cur == want or cur == 0:
        if cur == 0:
            set_context(want)
        _adopt(info)
        return info, None
    set_context(want)
    return info, cur


@contextlib.contextmanager
def on_device(device_id: int) -> Iterator[DeviceInfo]:
    """`enter_device` for a block: the device's context current inside it, the
    thread's own made current again after it."""
    info, restore = enter_device(device_id)
    try:
        yield info
    finally:
        if restore is not None:
            set_context(restore)


def _hand_context_to_c(primary0: int) -> None:
    """Tell the C launcher how to read and set the current context (it checks before each
    launch that the thread's is the one it expects) and device 0's primary context (0 while
    unknown), which a new thread's first launch makes current (see _csrc/driver.c)."""
    found = [_libcuda.address(name) for name in ("cuCtxGetCurrent", "cuCtxSetCurrent")]
    if all(err == 0 and address for err, address in found):
        _claunch.set_context(found[0][1], found[1][1], primary0)


def bind_launcher(kind: str | None = None) -> None:
    """Bind `launch` to the driver's launch: called from C when cuforge's extension is
    built (``kind`` "c"), else through cuda.bindings' Python wrapper ("bindings": every call
    then takes the general Python path; see docs/guide/types.md, "Without a C compiler");
    ``kind`` None reads ``CUFORGE_LAUNCHER`` ("auto": C when built).

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
    if _claunch is None or kind == "bindings":
        if _claunch is not None:
            _claunch.set_entry(0, True)  # the C Launchers then decline every call to the general path
        _driver()
        launch, launcher = _bindings_launcher(), "bindings"
        return
    ptds = bool(int(os.environ.get("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM") or 0))
    flag = _libcuda.PER_THREAD_DEFAULT_STREAM if ptds else _libcuda.LEGACY_STREAM
    for name, ex in (("cuLaunchKernelEx", True), ("cuLaunchKernel", False)):
        err, address = _libcuda.address(name, 12000, flag)
        if err == 0 and address:
            _claunch.set_entry(address, ex)
            launch, launcher = _claunch.launch, "c" if ex else "c-legacy"
            return
    if kind == "c":  # a driver older than CUDA 12.0
        raise LaunchError(f"CUFORGE_LAUNCHER=c, but cuGetProcAddress found no launch entry point for the CUDA 12.0 "
                          f"ABI ({error_text(err)}); update the NVIDIA driver or unset CUFORGE_LAUNCHER")  # fmt: skip
    _claunch.set_entry(0, True)
    _driver()
    launch, launcher = _bindings_launcher(), "bindings"


def _bindings_launcher() -> Any:
    version = check(_libcuda.get("cuDriverGetVersion", ctypes.c_int), "cuDriverGetVersion")
    return _bindings_launch if version >= 12000 else _bindings_launch_legacy


def _bindings_launch(function: int, grid: Any, block: Any, shared_mem: int, stream: int, params: int,
                     attrs: bytes | None = None) -> int:  # fmt: skip
    """The same call as ``_claunch.launch``, through cuda.bindings' cuLaunchKernelEx. A
    launch's configuration object is kept per (grid, block, shared_mem, stream, attributes)
    and its function object per handle: building them costs more than the call saves. The
    last launch's are also kept by identity, as the general path hands the same grid and
    block tuples to a loop's every launch: comparing them costs less than hashing them."""
    global _bindings_last
    last = _bindings_last
    if (last[0] == function and last[1] is grid and last[2] is block and last[3] == shared_mem and last[4] == stream
            and last[5] is attrs):  # fmt: skip
        return driver.cuLaunchKernelEx(last[6], last[7], params, 0)[0]  # type: ignore[no-any-return]
    key = (grid, block, shared_mem, stream, attrs)
    cfg = _bindings_configs.get(key)
    if cfg is None:
        if len(_bindings_configs) >= 1024:
            _bindings_configs.clear()
        cfg = _bindings_configs[key] = _bindings_config(*key)
    f = _bindings_functions.get(function)
    if f is None:
        f = _bindings_functions[function] = driver.CUfunction(function)
    _bindings_last = (function, grid, block, shared_mem, stream, attrs, cfg, f)  # one object: threads read it whole
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
_bindings_last: tuple[Any, ...] = (None,) * 8


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


@functools.cache
def kind_attributes(kind: LaunchKind) -> bytes | None:
    """cuLaunchKernelEx's attribute list for a launch kind (made once per kind)."""
    return launch_attributes(cooperative=kind.cooperative, cluster=kind.cluster)


def core_device(device_id: int) -> Any:
    """cuda.core's ``Device`` for ``device_id`` (its primary context, the one cuforge uses),
    set current in this thread as cuda.core asks before it allocates; imports cuda.core."""
    from cuda.core import Device

    device_info(device_id)
    dev = Device(device_id)
    dev.set_current()
    return dev


def load_library(code: bytes, code_type: str) -> int:
    """Load a cubin or PTX image with ``cuLibraryLoadData``: a context-independent library,
    which the driver loads onto each device the first time one of its kernels is used there
    (the CUlibrary's address)."""
    if code_type == "ptx" and not code.endswith(b"\0"):
        code += b"\0"  # the driver reads PTX as a NUL-terminated string
    return check(_libcuda.get("cuLibraryLoadData", ctypes.c_void_p, code, None, None, 0, None, None, 0),  # type: ignore[no-any-return]
                 "cuLibraryLoadData")  # fmt: skip


def unload_library(library: int) -> None:
    """Free a library `load_library` loaded (best effort; never in a forked child)."""
    if _failure is None:
        _libcuda.call("cuLibraryUnload", library)


def library_kernel(library: int, symbol: str) -> int:
    """The CUkernel handle of ``symbol`` in a loaded library."""
    err, kernel = _libcuda.get("cuLibraryGetKernel", ctypes.c_void_p, library, symbol.encode())
    if err != 0:
        raise LaunchError(f"loading {symbol} from its module failed: {error_text(err)}")
    return kernel  # type: ignore[no-any-return]


def kernel_attribute(handle: int, name: str, device: int) -> int:
    """A CUfunction_attribute (``"NUM_REGS"``, ``"MAX_THREADS_PER_BLOCK"``, ...) of a kernel on a device."""
    attr = _libcuda.FUNCTION_ATTRIBUTES[name]
    return check(_libcuda.get("cuKernelGetAttribute", ctypes.c_int, attr, handle, device), "cuKernelGetAttribute")  # type: ignore[no-any-return]


def set_kernel_attribute(handle: int, name: str, value: int, device: int) -> int:
    """Set a CUfunction_attribute of a kernel on a device: the CUresult (0 when it was set)."""
    return _libcuda.call("cuKernelSetAttribute", _libcuda.FUNCTION_ATTRIBUTES[name], value, handle, device)[0]


def kernel_param_sizes(handle: int) -> list[int]:
    """The size in bytes of each parameter of a compiled kernel, as the driver reads them."""
    sizes: list[int] = []
    offset, size = ctypes.c_size_t(), ctypes.c_size_t()
    info = _libcuda.function("cuKernelGetParamInfo")
    while info(handle, len(sizes), ctypes.byref(offset), ctypes.byref(size)) == 0:
        sizes.append(size.value)  # (CUDA_ERROR_INVALID_VALUE past the last parameter)
    return sizes


def pointer_device(ptr: int) -> int | None:
    """The device ordinal owning device pointer ``ptr``, or None if CUDA does not know it."""
    value = ctypes.c_int()
    (err,) = _libcuda.call("cuPointerGetAttribute", ctypes.byref(value), _libcuda.POINTER_DEVICE_ORDINAL, ptr)
    return value.value if err == 0 else None


def context_error() -> int:
    """The CUresult of ``cuCtxSynchronize`` in this thread's context, raising nothing (0:
    the work so far ran)."""
    return _libcuda.call("cuCtxSynchronize")[0]


def synchronize() -> None:
    """Wait for all work on the current device to finish (``cuCtxSynchronize``).

    Raises
    ------
    DeviceFaultError
        Where a kernel launched since the last clean synchronisation faulted: it names those
        launches.

    Examples
    --------
    >>> cf.synchronize()  # doctest: +GPU
    """
    global _clean
    current_device()
    count = launch_count()
    check(_libcuda.call("cuCtxSynchronize"), "cuCtxSynchronize")
    _clean = max(_clean, count)  # those launches ran without a fault


FORKED = (
    "CUDA cannot be used in a process forked from one that had already used CUDA (the driver's state "
    "does not survive fork()); start worker processes with the 'spawn' or 'forkserver' start method: "
    "multiprocessing.get_context('spawn'), or ProcessPoolExecutor(mp_context=multiprocessing.get_context('spawn'))"
)


def _after_fork_in_child() -> None:
    """A child forked after CUDA was used: every CUDA use raises FORKED, in C and Python alike
    (compiling still works). The parent is untouched."""
    global _failure, _tls, multi_gpu, capturing
    if not _devices:
        return  # CUDA was never used in the parent: the child may start it itself
    _failure = FORKED
    for table in (_devices, _infos, _contexts):
        table.clear()
    _tls = threading.local()
    multi_gpu, capturing = False, 0
    if _claunch is not None:
        _claunch.set_entry(0, True)  # the C Launchers decline every call, so it reaches the check above
        _claunch.set_thread_device(-1, 0)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def gpu_available() -> bool:
    """Whether a CUDA device can be used for launches (initialises CUDA on first call).

    Returns
    -------
    bool

    Examples
    --------
    >>> isinstance(cf.gpu_available(), bool)
    True
    """
    try:
        current_device()
    except NoDeviceError:
        return False
    return True
