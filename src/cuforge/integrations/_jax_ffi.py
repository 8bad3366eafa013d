"""The XLA FFI handlers behind ``cuforge.jax`` (``_jax_ffi.cpp``): built once per jaxlib with the
host C++ compiler against the installed jaxlib's headers and cached as CPU kernels are,
registered with XLA as the target ``cuforge_launch`` for the platforms "cpu" and "CUDA"; and
`Launches`, the launch records the handlers follow (one per kernel instantiation and shapes).

Why a compiled shim: XLA's typed FFI is a C API whose structs change with jaxlib; compiling
against the headers of the jaxlib installed makes them agree by construction, and a C handler
costs a call no Python (a ctypes callback, as Warp's handlers are, takes the GIL on every call).
The shim links to nothing: it is handed the functions it calls (`setup`)."""

from __future__ import annotations

import ctypes
import os
import secrets
import threading
from typing import Any

import jax
import jaxlib

from .._cpu import runtime as _cpu_runtime
from .._cpu import store as _store
from .._cpu import toolchain as _toolchain
from .._launch.abstract import AbstractLaunch
from ..errors import ArgumentError, CuforgeError

TARGET = "cuforge_launch"
DEVICES, PARAMS = 64, 256  # the shim's limits (cuforge_jax_limits checks that both sides agree)
CPU, CUDA = 0, 1


class OpRecord(ctypes.Structure):
    """``struct cuforge_jax_op`` (_jax_ffi.cpp)."""

    _fields_ = [
        ("cpu_entry", ctypes.c_void_p),
        ("functions", ctypes.c_void_p * DEVICES),
        ("grid", ctypes.c_uint * 3),
        ("block", ctypes.c_uint * 3),
        ("shared_mem", ctypes.c_ulonglong),
        ("nparams", ctypes.c_int),
        ("nslots", ctypes.c_int),
        ("params", ctypes.c_void_p),
        ("slot_param", ctypes.c_void_p),
        ("slot_buffer", ctypes.c_void_p),
    ]


_RESOLVE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_ulonglong)


class Launch:
    """One launch record and what it keeps alive: the packed values, the parameter and slot
    arrays the record points into, and the kernel whose entry it is filled with per device."""

    def __init__(self, kernel: Any, launch: AbstractLaunch, slots: list[tuple[int, int]]):
        self.kernel = kernel
        self.packed = ctypes.create_string_buffer(launch.packed, max(len(launch.packed), 8))
        base = ctypes.addressof(self.packed)
        n = len(launch.offsets)
        self.params = (ctypes.c_void_p * max(n, 1))(*[base + o for o in launch.offsets])
        self.slot_param = (ctypes.c_int * max(len(slots), 1))(*[p for p, _ in slots])
        self.slot_buffer = (ctypes.c_int * max(len(slots), 1))(*[b for _, b in slots])
        rec = self.record = OpRecord()
        grid = launch.grid or (0, 0, 0)
        rec.grid[:], rec.block[:], rec.shared_mem = grid, launch.block, launch.shared_mem
        rec.nparams, rec.nslots = n, len(slots)
        rec.params = ctypes.addressof(self.params)
        rec.slot_param, rec.slot_buffer = ctypes.addressof(self.slot_param), ctypes.addressof(self.slot_buffer)
        self.address = ctypes.addressof(rec)
        self.launch = launch

    def resolve(self, platform: int, device: int) -> None:
        """Fill in the kernel's entry for the CPU, or its function on GPU ``device`` (compiled
        and loaded there on first use), checked against what the device allows."""
        if platform == CPU:
            if not self.record.cpu_entry:
                self.record.cpu_entry = self.kernel._plan.cpu()
            return
        if self.record.functions[device]:
            return
        from .._runtime import cuda as _cuda
        from .._runtime import limits as _limits

        plan = self.kernel._plan
        loaded = plan.loaded.get(device) or plan.load(_cuda.device_info(device))
        if self.launch.grid is not None:
            _limits.check_on_device(plan.label, loaded, plan.kind, self.launch.grid, self.launch.block, self.launch.shared_mem)
        self.record.functions[device] = loaded.handle


class Launches:
    """The launch records of this process, by content (a traced function traced again finds
    its record), kept for the process's life: XLA executables hold their addresses."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[tuple, Launch] = {}
        self._by_address: dict[int, Launch] = {}

    def get(self, kernel: Any, launch: AbstractLaunch, slots: list[tuple[int, int]]) -> Launch:
        key = (id(kernel), launch, tuple(slots))
        found = self._by_key.get(key)
        if found is None:
            if len(launch.offsets) > PARAMS:
                raise ArgumentError(f"{kernel.label}: a JAX op's kernel takes at most {PARAMS} parameters")
            with self._lock:
                found = self._by_key.setdefault(key, Launch(kernel, launch, slots))
                self._by_address[found.address] = found
        return found

    def resolve(self, address: int, platform: int, device: int, message: int, size: int) -> int:
        """The handler's callback on a device's first call: 0, or 1 with the error's message."""
        try:
            if not 0 <= device < DEVICES:
                raise CuforgeError(f"cuforge: device ordinal {device} is beyond the {DEVICES} a JAX op serves")
            self._by_address[address].resolve(platform, device)
            return 0
        except BaseException as exc:  # (an exception must not cross into XLA's C++)
            text = f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")[: size - 1]
            ctypes.memmove(message, text + b"\0", len(text) + 1)
            return 1


LAUNCHES = Launches()
_lock = threading.Lock()
_shim: Any = None
_KEEP: list[Any] = []
TOKEN = secrets.randbits(63) | 1  # this process's, in every op's attributes (see _jax_ffi.cpp)


def shim() -> Any:
    """The handlers' library: built (or read from the cache), set up and registered with XLA
    on first use."""
    global _shim
    if _shim is None:
        with _lock:
            if _shim is None:
                _shim = _build()
    return _shim


def _build() -> Any:
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "_jax_ffi.cpp"), encoding="utf-8") as f:
        source = f.read()
    include = jax.ffi.include_dir()
    compiler = _toolchain.find_compiler()
    flags: tuple[str, ...] = ("-std=c++17", "-O2", "-fPIC", "-shared", "-fvisibility=hidden", "-w")
    if compiler.kind == "zig":
        flags += ("-fno-sanitize=undefined",)
    lib = _store.shared_object(source, headers={}, include_dirs=(include, _cpu_runtime.INCLUDE), flags=flags,
                               label="cuforge's JAX handlers", key_extra=(jaxlib.__version__, _cpu_runtime.sources_digest())
                               ).library  # fmt: skip
    lib.cuforge_jax_limits.restype = ctypes.c_int
    lib.cuforge_jax_calls.restype = ctypes.c_ulonglong
    if (lib.cuforge_jax_limits(0), lib.cuforge_jax_limits(1), lib.cuforge_jax_limits(2)) != (
        DEVICES, PARAMS, ctypes.sizeof(OpRecord)):  # fmt: skip
        raise CuforgeError("cuforge's JAX handlers disagree with cuforge.integrations._jax_ffi on struct cuforge_jax_op")
    resolve = _RESOLVE(LAUNCHES.resolve)
    run = ctypes.cast(_cpu_runtime.library().cuforge_cpu_run, ctypes.c_void_p).value
    launch, error_name = _driver_entries()
    lib.cuforge_jax_setup.argtypes = [ctypes.c_uint64, _RESOLVE, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.cuforge_jax_setup(TOKEN, resolve, run, launch, error_name)
    _KEEP.append(resolve)  # the callback lives as long as the library
    jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(lib.cuforge_jax_cpu), platform="cpu")
    if launch:
        jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(lib.cuforge_jax_cuda), platform="CUDA")
    return lib


def handler_calls() -> int:
    """How many times XLA has called the handlers in this process (a CUDA graph's replay of an
    op calls none: the benchmark and the GPU tests count them)."""
    return int(shim().cuforge_jax_calls())


def _driver_entries() -> tuple[int | None, int | None]:
    """The driver's cuLaunchKernel and cuGetErrorName, or None where there is no driver."""
    from .._runtime import libcuda as _libcuda

    try:
        err, launch = _libcuda.address("cuLaunchKernel")
        _, name = _libcuda.address("cuGetErrorName")
    except OSError:
        return None, None
    return (launch or None, name or None) if err == 0 else (None, None)
