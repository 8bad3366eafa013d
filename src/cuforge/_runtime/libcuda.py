"""The driver calls on the way to a first launch, made through ctypes on libcuda; cuda.bindings'
driver module for the others; the C extension, where it is built.

Importing cuda.bindings' driver module is slow (it builds a Python type for every struct and
enum of the driver API), so the few calls that opening a device and loading a cached kernel
make (the entry points listed in `PROTOTYPES`) go through ctypes here, as Numba's driver
layer does. NumPy has already imported ctypes. Every other driver call (streams, graphs,
memory, module variables) goes through `bindings`, which imports cuda.bindings when first
needed.

Each entry point comes from the driver's ``cuGetProcAddress`` at the CUDA version given
beside it, so its ABI is the one that version's ``cuda.h`` declares and the prototype here
matches it. Results look like cuda.bindings' results, ``(CUresult,)`` or ``(CUresult,
value)``, so ``faults.check`` unwraps both alike.
"""

from __future__ import annotations

import _thread  # (threading's lock and thread-local types, without importing threading on a warm start)
import ctypes
import sys
from ctypes import POINTER, c_char_p, c_int, c_size_t, c_uint, c_uint64, c_void_p
from typing import Any

claunch: Any  # the optional C launcher (setup.py), which has no type stubs
try:
    from .. import _claunch as claunch  # type: ignore[attr-defined,no-redef,unused-ignore]
except ImportError:  # built where no C compiler was present: launches go through cuda.bindings
    claunch = None

_p = c_void_p  # a handle (CUcontext, CUlibrary, CUkernel, ...) or a pointer

# name -> (the CUDA version whose ABI is asked for, argument types); every one returns a CUresult
PROTOTYPES: dict[str, tuple[int, tuple[Any, ...]]] = {
    "cuInit": (12000, (c_uint,)),
    "cuDriverGetVersion": (12000, (POINTER(c_int),)),
    "cuDeviceGetCount": (12000, (POINTER(c_int),)),
    "cuDeviceGet": (12000, (POINTER(c_int), c_int)),
    "cuDeviceGetName": (12000, (c_char_p, c_int, c_int)),
    "cuDeviceGetAttribute": (12000, (POINTER(c_int), c_int, c_int)),
    "cuDevicePrimaryCtxRetain": (12000, (POINTER(_p), c_int)),
    "cuCtxGetCurrent": (12000, (POINTER(_p),)),
    "cuCtxSetCurrent": (12000, (_p,)),
    "cuCtxGetDevice": (12000, (POINTER(c_int),)),
    "cuCtxSynchronize": (12000, ()),
    "cuGetErrorName": (12000, (c_int, POINTER(c_char_p))),
    "cuGetErrorString": (12000, (c_int, POINTER(c_char_p))),
    "cuGetProcAddress": (12000, (c_char_p, POINTER(_p), c_int, c_uint64, POINTER(c_int))),
    "cuLibraryLoadData": (12000, (POINTER(_p), c_char_p, _p, _p, c_uint, _p, _p, c_uint)),
    "cuLibraryUnload": (12000, (_p,)),
    "cuLibraryGetKernel": (12000, (POINTER(_p), _p, c_char_p)),
    "cuKernelGetAttribute": (12000, (POINTER(c_int), c_int, _p, c_int)),
    "cuKernelSetAttribute": (12000, (c_int, c_int, _p, c_int)),
    "cuKernelGetParamInfo": (12040, (_p, c_size_t, POINTER(c_size_t), POINTER(c_size_t))),
    "cuPointerGetAttribute": (12000, (_p, c_int, c_uint64)),
}

# cuGetProcAddress's flags (CUdriverProcAddress_flags): which default stream an entry point uses
DEFAULT, LEGACY_STREAM, PER_THREAD_DEFAULT_STREAM = 0, 1, 2

# The attribute numbers cuforge reads (cuda.h's CUdevice_attribute, CUfunction_attribute and
# CUpointer_attribute; tests/unit/test_libcuda.py compares them with cuda.bindings' enums).
DEVICE_ATTRIBUTES = {"COMPUTE_CAPABILITY_MAJOR": 75, "COMPUTE_CAPABILITY_MINOR": 76, "MULTIPROCESSOR_COUNT": 16,
                     "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 97}  # fmt: skip
FUNCTION_ATTRIBUTES = {"MAX_THREADS_PER_BLOCK": 0, "SHARED_SIZE_BYTES": 1, "LOCAL_SIZE_BYTES": 3, "NUM_REGS": 4,
                       "MAX_DYNAMIC_SHARED_SIZE_BYTES": 8, "NON_PORTABLE_CLUSTER_SIZE_ALLOWED": 14}  # fmt: skip
POINTER_DEVICE_ORDINAL = 9

CUDA_ERROR_NOT_FOUND = 500
_lock = _thread.allocate_lock()
_functions: dict[str, Any] = {}
_proc_address: Any = None


def _library_name() -> str:
    return "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"


def _get_proc_address() -> Any:
    """The driver's cuGetProcAddress (its CUDA 12.0 ABI, exported as ``cuGetProcAddress_v2``);
    raises OSError where the driver is missing or predates CUDA 12.0."""
    global _proc_address
    if _proc_address is None:
        lib = ctypes.CDLL(_library_name())
        try:
            found = lib.cuGetProcAddress_v2
        except AttributeError:
            raise OSError(f"{_library_name()} has no cuGetProcAddress_v2: the NVIDIA driver predates CUDA 12.0; "
                          f"update it") from None  # fmt: skip
        found.restype, found.argtypes = c_int, PROTOTYPES["cuGetProcAddress"][1]
        _proc_address = found
    return _proc_address


def address(name: str, version: int = 12000, flags: int = DEFAULT) -> tuple[int, int]:
    """``(CUresult, address)`` of a driver entry point for the ABI of CUDA ``version``."""
    pfn, status = c_void_p(), c_int()
    err = _get_proc_address()(name.encode(), ctypes.byref(pfn), version, flags, ctypes.byref(status))
    return err, pfn.value or 0


def function(name: str) -> Any:
    """The ctypes function for a driver entry point of `PROTOTYPES` (resolved once);
    raises OSError where the driver lacks it."""
    fn = _functions.get(name)
    if fn is None:
        with _lock:
            version, argtypes = PROTOTYPES[name]
            err, where = address(name, version)
            if err != 0 or not where:
                raise OSError(f"the NVIDIA driver has no {name} for the CUDA {version // 1000}.{version % 1000 // 10} "
                              f"ABI (cuGetProcAddress returned {err}); update the driver")  # fmt: skip
            fn = _functions[name] = ctypes.CFUNCTYPE(c_int, *argtypes)(where)
    return fn


def call(name: str, *args: Any) -> tuple[int]:
    """``(CUresult,)`` of a driver call."""
    return (function(name)(*args),)


def get(name: str, kind: Any, *args: Any) -> tuple[int, Any]:
    """``(CUresult, value)`` of a driver call whose first argument is where it writes a value
    of ctypes type ``kind`` (``cuDeviceGetCount(int *count)``, ...; not ``cuGetErrorName``,
    whose is its second)."""
    out = kind()
    err = function(name)(ctypes.byref(out), *args)
    return err, out.value if out.value is not None else 0


driver: Any = None  # cuda.bindings.driver, once `bindings` imported it


def bindings() -> Any:
    """cuda.bindings' driver module (imported on first use)."""
    global driver
    if driver is None:
        from cuda.bindings import driver as mod

        driver = mod
    return driver
