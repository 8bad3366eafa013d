"""The device state, as one object (`state`): CUDA started once per process, the devices
opened and described, their primary contexts, the device each thread launches on, the
capture count, the bound launch entry, and what a fork leaves of them.

Nothing here runs at ``import cuforge``: CUDA is initialised on the first call that needs a
device. A missing driver or device is reported once as `NoDeviceError` and remembered.
Opening a device, making its primary context current and reading its description go
through ctypes (`libcuda`), which imports nothing.
"""

from __future__ import annotations

import _thread  # (threading's lock and thread-local types, without importing threading on a warm start)
import contextlib
import ctypes
import os
from collections.abc import Iterator, Mapping
from typing import Any

from .. import _config
from .._frozen import Record
from ..errors import ArgumentError, NoDeviceError
from . import libcuda as _libcuda
from .faults import check, error_text, history, launch_count
from .launch import entry_for
from .libcuda import claunch as _claunch


class DeviceInfo(Record):
    __slots__ = ()
    id: int
    cc: int  # compute capability as 90 for 9.0
    name: str
    sm_count: int
    shared_optin: int  # shared memory per block with the opt-in (bytes)

    def __new__(cls, id: Any, cc: Any, name: Any, sm_count: Any = 0, shared_optin: Any = 48 * 1024) -> Any:
        return tuple.__new__(cls, (id, cc, name, sm_count, shared_optin))


COMPILE_FIX = "compiling does not: use {}.compile(arch='sm_90')"
ON_CPU = "pass device='cpu', call cf.set_device('cpu') or set CUFORGE_DEVICE=cpu to run it with cuforge's CPU backend"
DEVICES = "'cpu', 'cuda', 'cuda:N' or a CUDA device ordinal N (an int >= 0)"  # what every device= takes
FORKED = (
    "CUDA cannot be used in a process forked from one that had already used CUDA (the driver's state "
    "does not survive fork()); start worker processes with the 'spawn' or 'forkserver' start method: "
    "multiprocessing.get_context('spawn'), or ProcessPoolExecutor(mp_context=multiprocessing.get_context('spawn'))"
)


def current_context() -> int:
    """The address of this thread's current CUDA context (0: none)."""
    return check(_libcuda.get("cuCtxGetCurrent", ctypes.c_void_p), "cuCtxGetCurrent")  # type: ignore[no-any-return]


def set_context(ctx: int) -> None:
    check(_libcuda.call("cuCtxSetCurrent", ctx), "cuCtxSetCurrent")


class ThreadState(_thread._local):
    """One thread's part of the device state. The class's values stand for a thread that has
    set none, so a read never misses (a missed attribute of a thread-local costs an exception
    caught, on every launch)."""

    device: DeviceInfo | None = None  # the device this thread launches on, once it has one
    device_id: int | None = None  # the device cf.set_device chose for it
    cpu: bool | None = None  # cf.set_device: the CPU (True) or a GPU (False); None: the process's choice
    capture: Any = None  # the cf.graph() it captures, while one is under way


class DeviceState:
    """The process's CUDA devices and contexts, each thread's `ThreadState` (``tls``), and
    where launches that name no device run (``tls.cpu``, else ``default_cpu``)."""

    def __init__(self) -> None:
        self.lock = _thread.allocate_lock()
        self.tls = ThreadState()
        # the process's choice of the CPU for launches that name no device: set_default_device's,
        # else CUFORGE_DEVICE, read once when first needed (the C launcher's set-up reads it here),
        # and the GPU a thread that chose none launches on (CUFORGE_DEVICE=cuda:N)
        self.default_cpu: bool | None = None
        self.default_gpu = 0
        self.devices: dict[int, Any] = {}  # device ordinal -> its CUdevice, once opened
        self.infos: dict[int, DeviceInfo] = {}
        self.contexts: dict[int, int] = {}  # device ordinal -> its primary context's address
        self.failure: str | None = None  # why CUDA cannot be used (no device, a fork), once known
        self.multi_gpu = False  # more than one device: the Python path then checks which context is current
        self.captures_open = 0  # cf.graph() captures under way in the process (the thread's own is tls.capture)
        # launch(function, config, stream, params) -> CUresult, bound when the first device is
        # made current; launcher names it ("c", "c-legacy" or "bindings": see launch.entry_for)
        self.launch: Any = None
        self.launcher = ""

    def thread_device(self) -> DeviceInfo | None:
        """The device this thread launches on, where it has one."""
        return self.tls.device

    def bind_launcher(self, kind: str | None = None) -> None:
        """Bind `launch` to the driver's launch (``kind``: see `launch.entry_for`)."""
        self.launch, self.launcher = entry_for(kind)

    def open(self, device_id: int) -> Any:
        """The driver's CUdevice for ``device_id``, CUDA initialised (once per process)."""
        if self.failure is not None:
            raise NoDeviceError(self.failure)
        with self.lock:
            dev = self.devices.get(device_id)
            if dev is None:
                try:
                    (err,) = _libcuda.call("cuInit", 0)
                    if err != 0:
                        raise RuntimeError(f"cuInit: {error_text(err)}")
                    count = check(_libcuda.get("cuDeviceGetCount", ctypes.c_int), "cuDeviceGetCount")
                except Exception as exc:  # driver missing, no device, broken install
                    self.failure = (f"no CUDA device is available ({type(exc).__name__}: {exc}); launching needs an "
                                    f"NVIDIA GPU and driver, or the CPU: {ON_CPU}; {COMPILE_FIX.format('Kernel')}")  # fmt: skip
                    raise NoDeviceError(self.failure) from None
                self.multi_gpu = self.multi_gpu or count > 1
                if not 0 <= device_id < count:
                    raise NoDeviceError(f"CUDA device {device_id} is not present: this machine has {count} (0 to {count - 1})")
                dev = self.devices[device_id] = check(_libcuda.get("cuDeviceGet", ctypes.c_int, device_id), "cuDeviceGet")
        return dev

    def current_device(self) -> DeviceInfo:
        """The device launches in this thread go to: the one ``cf.set_device`` chose, else the
        device whose context is current here (CuPy's ``with Device(1)``, PyTorch's
        ``torch.cuda.set_device``), else device 0, made current on first use."""
        if history.text is not None:  # every later call says what happened, not only launches
            raise history.fault(0, "")
        info = self.tls.device
        if info is not None and (not self.multi_gpu or current_context() == self.contexts.get(info.id)):
            return info
        # The thread's first use, or another device's context made current since (CuPy's `with
        # Device(n)`, torch.cuda.set_device): follow the current context, as CuPy does.
        chosen = self.tls.device_id
        followed = self._follow_current() if chosen is None or info is not None else None
        if chosen is None and info is None:
            self.default_on_cpu()  # reads the process's default GPU, once
            chosen = self.default_gpu
        return followed or self._make_current(chosen if chosen is not None else info.id)  # type: ignore[union-attr]

    def _follow_current(self) -> DeviceInfo | None:
        """Adopt the device of this thread's current primary context, if one is current."""
        self.open(0)  # starts CUDA, or raises NoDeviceError
        if self.launch is None:
            self.bind_launcher()
        cur = current_context()
        if not cur:
            return None
        err, device = _libcuda.get("cuCtxGetDevice", ctypes.c_int)
        if err != 0:
            return None
        info = self.device_info(int(device))
        if self.contexts.get(info.id) != cur:  # a context the user made: not a device's primary one
            return None
        self._adopt(info)
        return info

    def set_device(self, device_id: int | str) -> None:
        """Make ``device_id`` the device this thread's launches go to (see `cuforge.set_device`)."""
        chosen = parse_device(device_id, "set_device")
        if chosen == "cpu":
            self.tls.cpu = True
        elif chosen is None:  # "cuda": the GPU this thread has, else the process's default one
            self.current_device()  # raises NoDeviceError where no GPU can be used, as an ordinal does
            self.tls.cpu = False
        else:
            self._make_current(chosen)  # type: ignore[arg-type]
            self.tls.device_id = chosen  # type: ignore[assignment]
            self.tls.cpu = False
        if _claunch is not None:
            _claunch.set_cpu(int(self.tls.cpu), -1)

    def on_cpu(self) -> bool:
        """Whether a launch that names no device runs on the CPU: this thread's `set_device`,
        else the process's choice (`default_on_cpu`)."""
        chosen = self.tls.cpu
        if chosen is None:
            chosen = self.default_cpu  # (read here: every call of the general path asks)
        return self.default_on_cpu() if chosen is None else chosen

    def default_on_cpu(self) -> bool:
        """The process's choice: `set_default_device`'s, else CUFORGE_DEVICE, read once."""
        chosen = self.default_cpu
        if chosen is None:
            kind = parse_device(_config.device(), "CUFORGE_DEVICE")
            self.default_gpu = kind if kind.__class__ is int else 0  # type: ignore[assignment]
            chosen = self.default_cpu = kind == "cpu"
        return chosen

    def runs_on_cpu(self, options: Mapping[str, Any], preferred: bool = False) -> bool:
        """Whether a call runs on the CPU: its ``device=`` where ``options`` has one, else
        ``preferred`` (a ``%%cuda --device cpu`` kernel's), else `on_cpu`."""
        if options and "device" in options:
            return options["device"] == "cpu"  # type: ignore[no-any-return]  # (checked where the call is bound)
        return preferred or self.on_cpu()

    def _make_current(self, device_id: int) -> DeviceInfo:
        """Make ``device_id``'s primary context current in this thread, which launches there from
        now on (the device is opened and described once per process, by device_info)."""
        info = self.device_info(device_id)
        set_context(self.contexts[device_id])
        self._adopt(info)
        return info

    def _describe(self, device_id: int, dev: int) -> DeviceInfo:
        def attribute(name: str) -> int:
            return check(_libcuda.get("cuDeviceGetAttribute", ctypes.c_int, _libcuda.DEVICE_ATTRIBUTES[name], dev),
                         "cuDeviceGetAttribute")  # fmt: skip

        buffer = ctypes.create_string_buffer(256)
        check(_libcuda.call("cuDeviceGetName", buffer, 256, dev), "cuDeviceGetName")
        name = buffer.value.decode()
        cc = attribute("COMPUTE_CAPABILITY_MAJOR") * 10 + attribute("COMPUTE_CAPABILITY_MINOR")
        info = self.infos[device_id] = DeviceInfo(device_id, cc, name, attribute("MULTIPROCESSOR_COUNT"),
                                                  attribute("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"))  # fmt: skip
        return info

    def _adopt(self, info: DeviceInfo) -> None:
        """This thread now launches on ``info``'s device, whose primary context is current."""
        self.tls.device = info
        if _claunch is not None:
            _claunch.set_thread_device(info.id, self.contexts.get(info.id, 0))

    def device_info(self, device_id: int) -> DeviceInfo:
        """The description of ``device_id`` (opened, its primary context known), changing nothing
        in this thread."""
        info = self.infos.get(device_id)
        if info is None or device_id not in self.contexts:
            dev = self.open(device_id)
            if self.launch is None:
                self.bind_launcher()
            previous = current_context()
            primary = check(_libcuda.get("cuDevicePrimaryCtxRetain", ctypes.c_void_p, dev),
                            "cuDevicePrimaryCtxRetain")  # held for the process  # fmt: skip
            with self.lock:
                self.contexts[device_id] = primary
            info = self.infos.get(device_id) or self._describe(device_id, dev)
            if self.launcher == "c":
                self._hand_context_to_c(self.contexts.get(0, 0) if self.default_gpu == 0 else 0)
            set_context(previous)
        return info

    def enter_device(self, device_id: int) -> tuple[DeviceInfo, int | None]:
        """Make ``device_id``'s context current for a launch: (its description, the context to
        restore after the launch, or None). A thread with no context, or whose current context
        already is the device's (CuPy's ``with Device(1)``), adopts the device: its next launches
        take the C launcher."""
        info = self.device_info(device_id)
        want, cur = self.contexts[device_id], current_context()
        if cur == want or cur == 0:
            if cur == 0:
                set_context(want)
            self._adopt(info)
            return info, None
        set_context(want)
        return info, cur

    @contextlib.contextmanager
    def on_device(self, device_id: int) -> Iterator[DeviceInfo]:
        """`enter_device` for a block: the device's context current inside it, the
        thread's own made current again after it."""
        info, restore = self.enter_device(device_id)
        try:
            yield info
        finally:
            if restore is not None:
                set_context(restore)

    def begin_capture(self, capture: Any) -> None:
        """This thread captures a cf.graph() (``capture``): launches go to it, not the GPU."""
        self.tls.capture = capture
        with self.lock:
            self.captures_open += 1
        if _claunch is not None:
            _claunch.set_capturing(True)

    def end_capture(self) -> Any:
        """This thread's capture ended: the capture."""
        capture, self.tls.capture = self.tls.capture, None
        with self.lock:
            self.captures_open -= 1
        if _claunch is not None:
            _claunch.set_capturing(False)
        return capture

    @staticmethod
    def _hand_context_to_c(primary0: int) -> None:
        """Tell the C launcher how to read and set the current context (it checks before each
        launch that the thread's is the one it expects) and device 0's primary context (0 while
        unknown), which a new thread's first launch makes current (see _csrc/driver.c)."""
        found = [_libcuda.address(name) for name in ("cuCtxGetCurrent", "cuCtxSetCurrent")]
        if all(err == 0 and address for err, address in found):
            _claunch.set_context(found[0][1], found[1][1], primary0)

    def after_fork_in_child(self) -> None:
        """A child forked after CUDA was used: every CUDA use raises FORKED, in C and Python alike
        (compiling still works). The parent is untouched."""
        if not self.devices:
            return  # CUDA was never used in the parent: the child may start it itself
        self.failure = FORKED
        for table in (self.devices, self.infos, self.contexts):
            table.clear()
        self.tls = ThreadState()
        self.multi_gpu, self.captures_open = False, 0
        if _claunch is not None:
            _claunch.set_entry(0, True)  # the C Launchers decline every call, so it reaches the check above
            _claunch.set_thread_device(-1, 0)


state = DeviceState()
history.thread_device = state.thread_device

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=state.after_fork_in_child)


# ---------------------------------------------------------------- the public face of the state

current_device = state.current_device
device_info = state.device_info
enter_device = state.enter_device
on_device = state.on_device


def set_device(device_id: int | str) -> None:
    """Make ``device_id`` the device this thread's launches go to when their arrays do not say
    (launches run on the device their arrays are on), or ``"cpu"``: this thread's launches
    then run on the CPU (cuforge's CPU backend) unless a call passes ``device=``.

    Parameters
    ----------
    device_id : int or str
        A CUDA device ordinal, ``"cuda:N"`` (the same, in PyTorch's spelling), ``"cuda"``
        (the GPU this thread has, else the process's default one) or ``"cpu"``.

    Raises
    ------
    NoDeviceError
        Where that device is not present, or no GPU can be used.

    Examples
    --------
    >>> cf.set_device(0)  # doctest: +GPU
    """
    state.set_device(device_id)


on_cpu = state.on_cpu
runs_on_cpu = state.runs_on_cpu


def set_default_device(kind: str) -> None:
    """Where launches that name no device run in this process, over CUFORGE_DEVICE: ``"cuda"``
    (``"cuda:N"``: GPU N) or ``"cpu"`` (the pytest plugin's ``--cuforge-device``). A thread's
    `set_device` wins."""
    chosen = parse_device(kind, "set_default_device")
    if chosen.__class__ is int:
        kind = f"cuda:{chosen}"
    elif chosen is None:
        kind = "cuda"
    _config.override(device=kind)
    state.default_cpu = chosen == "cpu"
    state.default_gpu = chosen if chosen.__class__ is int else 0  # type: ignore[assignment]
    if _claunch is not None:
        _claunch.set_cpu(-2, int(chosen == "cpu"))
        if state.launcher == "c":  # new threads' first launches adopt device 0 from C only where it is the default
            state._hand_context_to_c(state.contexts.get(0, 0) if state.default_gpu == 0 else 0)


def parse_device(value: Any, who: str) -> int | str | None:
    """A device as a user names it (`DEVICES`: PyTorch's spellings, or an ordinal) as cuforge
    holds it: ``"cpu"``, a CUDA ordinal, or None for ``"cuda"``, the GPU the call's arrays or
    the thread's choice name. ``who`` starts the message of a value that is none of these."""
    if value == "cpu":
        return "cpu"
    if value.__class__ is int and value >= 0:
        return value  # type: ignore[no-any-return]
    if value == "cuda":
        return None
    if isinstance(value, str) and value.startswith("cuda:") and value[5:].isascii() and value[5:].isdigit():
        return int(value[5:])
    raise ArgumentError(f"{who}: device expects {DEVICES}, got {value!r}")


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

    Where the CPU is chosen (``cf.set_device("cpu")``, ``CUFORGE_DEVICE=cpu``) and no GPU was
    used, it returns at once: a launch on the CPU is done when its call returns.
    """
    if not state.contexts and state.on_cpu():
        return  # no GPU launch was made in this process: nothing to wait for
    try:
        state.current_device()
    except NoDeviceError as exc:
        instead = ("a launch is done when its call returns: there is nothing to wait for, and where the CPU is chosen, "
                   "by cf.set_device('cpu') or CUFORGE_DEVICE=cpu, cf.synchronize() returns at once")  # fmt: skip
        raise gpu_only("cf.synchronize()", exc, "cf.synchronize()", instead) from None
    count = launch_count()
    check(_libcuda.call("cuCtxSynchronize"), "cuCtxSynchronize")
    history.synchronised(count)  # those launches ran without a fault


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
        state.current_device()
    except NoDeviceError:
        return False
    return True


def no_device_for(label: str, exc: NoDeviceError, method: str = "compile", *, gpu_only: str = "",
                  cpu_cannot: str = "") -> NoDeviceError:  # fmt: skip
    """``exc``, raised where kernel ``label`` was called, as that kernel's error: named, and
    with its own compile call as the fix (``method``: ``precompile`` for a family; the error
    path only: a working launch never comes here). ``gpu_only`` names a call the CPU backend
    does not serve (``prepare()``): its message says so rather than offering the CPU; so does
    ``cpu_cannot``, why the CPU cannot run the kernel at all (a prebuilt module, CUB)."""
    text = str(exc)
    if text.startswith(f"{label}:"):
        return exc
    if gpu_only:
        text = text.replace(f", or the CPU: {ON_CPU}", f"; {gpu_only} is GPU-only (on the CPU, call the kernel itself)")
    elif cpu_cannot:
        text = text.replace(f", or the CPU: {ON_CPU}", f"; the CPU cannot run this kernel ({cpu_cannot})")
    generic = COMPILE_FIX.format("Kernel")
    fix = f"compiling does not: use {label if label.isidentifier() else ''}.{method}(arch='sm_90')"
    fix += "" if label.isidentifier() else " on it"
    return NoDeviceError(f"{label}: {text.replace(generic, fix)}")


def gpu_only(who: str, exc: NoDeviceError, what: str, instead: str) -> NoDeviceError:
    """``exc``, raised by ``who``, which needs a GPU whatever device is chosen (``what``:
    device memory, a graph, a prebuilt module): its message says so, with ``instead``, the
    way on the CPU, where it would offer the CPU and a compile (the error path only)."""
    text = str(exc).replace(f", or the CPU: {ON_CPU}; {COMPILE_FIX.format('Kernel')}",
                            f"; {what} is GPU-only (on the CPU, {instead})")  # fmt: skip
    return NoDeviceError(text if text.startswith(f"{who}:") else f"{who}: {text}")


def core_device(device_id: int) -> Any:
    """cuda.core's ``Device`` for ``device_id`` (its primary context, the one cuforge uses),
    set current in this thread as cuda.core asks before it allocates; imports cuda.core."""
    from cuda.core import Device

    state.device_info(device_id)
    dev = Device(device_id)
    dev.set_current()
    return dev


def pointer_device(ptr: int) -> int | None:
    """The device ordinal owning device pointer ``ptr``, or None if CUDA does not know it."""
    value = ctypes.c_int()
    (err,) = _libcuda.call("cuPointerGetAttribute", ctypes.byref(value), _libcuda.POINTER_DEVICE_ORDINAL, ptr)
    return value.value if err == 0 else None


def context_error() -> int:
    """The CUresult of ``cuCtxSynchronize`` in this thread's context, raising nothing (0:
    the work so far ran)."""
    return _libcuda.call("cuCtxSynchronize")[0]
