"""Arrays as launches see them, and cuforge's own small device array.

`ArrayArg` is the one record of an array argument: every array library is read into
it by an extractor here (NumPy, CuPy, PyTorch, cuforge's `DeviceArray`, anything with
``__cuda_array_interface__`` or DLPack), and the checks read its fields by name. The C
launcher reads CuPy arrays, PyTorch tensors and DeviceArrays itself and asks
`array_arg` for everything else.

`DeviceArray` is for users who have neither CuPy nor PyTorch: memory from cuda.core's
device memory resource, copies by plain driver memcpys, and ``__cuda_array_interface__`` so
CuPy, PyTorch and Numba can wrap it.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from .._declare.dtypes import BY_NUMPY, DType, dtype_of
from ..errors import ArgumentTypeError
from . import cuda as _cuda

if TYPE_CHECKING:
    import numpy as np

__all__ = ["HOST", "UNKNOWN_DEVICE", "ArrayArg", "DeviceArray", "array_arg", "empty", "scratch_copy", "to_device", "zeros"]

HOST = -1  # ArrayArg.device of memory on the host (a NumPy array, a CPU tensor)
UNKNOWN_DEVICE = -2  # device memory whose device CUDA is asked at launch (__cuda_array_interface__)


class ArrayArg(NamedTuple):
    """One array argument, as the checks see it."""

    ptr: int
    dtype: DType | None  # None: an element type cuforge has no name for
    shape: tuple[int, ...]
    contiguous: bool  # C-contiguous
    device: int  # the device ordinal, HOST or UNKNOWN_DEVICE
    readonly: bool
    origin: str  # "cuforge", "numpy", "cupy", "torch", "cai" or "dlpack"


# The extractors build ArrayArgs with tuple.__new__: NamedTuple's own __new__ is a Python
# function, and extraction runs on every launch of the general path.
_new = tuple.__new__


def _c_contiguous(shape: tuple[int, ...], strides: Any, itemsize: int) -> bool:
    if strides is None:
        return True
    expected = itemsize
    for dim, stride in zip(reversed(shape), reversed(strides)):
        if dim > 1 and stride != expected:
            return False
        expected *= dim
    return True


def _from_own(a: DeviceArray) -> ArrayArg:
    return _new(ArrayArg, (a.ptr, a.dtype, a.shape, True, a.device_id, False, "cuforge"))


def _from_numpy(a: np.ndarray) -> ArrayArg:
    dt = BY_NUMPY.get(a.dtype) or dtype_of(a.dtype)
    return _new(ArrayArg, (a.ctypes.data, dt, a.shape, a.flags.c_contiguous, HOST, not a.flags.writeable, "numpy"))


def _from_cupy(a: Any) -> ArrayArg:
    mem = a.data
    dt = BY_NUMPY.get(a.dtype) or dtype_of(a.dtype)
    return _new(ArrayArg, (mem.ptr, dt, a.shape, a._c_contiguous, mem.device_id, False, "cupy"))


def _from_cupy_like(a: Any) -> ArrayArg:  # a CuPy array type without ndarray's _c_contiguous
    mem = a.data
    dt = BY_NUMPY.get(a.dtype) or dtype_of(a.dtype)
    return _new(ArrayArg, (mem.ptr, dt, a.shape, bool(a.flags.c_contiguous), mem.device_id, False, "cupy"))


BY_TORCH: dict[Any, DType] = {}


def _from_torch(t: Any) -> ArrayArg:
    if not BY_TORCH:
        import torch

        for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                     "float16", "bfloat16", "float32", "float64", "complex64", "complex128"):  # fmt: skip
            if hasattr(torch, name):
                BY_TORCH[getattr(torch, name)] = dtype_of(name)  # type: ignore[assignment]
    device = t.get_device()
    return _new(ArrayArg, (t.data_ptr(), BY_TORCH.get(t.dtype), tuple(t.shape), t.is_contiguous(),
                           device if device >= 0 else HOST, False, "torch"))  # fmt: skip


def _from_cai(a: Any) -> ArrayArg:
    cai = a.__cuda_array_interface__
    ptr, readonly = cai["data"]
    shape = tuple(cai["shape"])
    import numpy as np

    try:
        npdt = np.dtype(cai["typestr"])
    except TypeError:
        npdt = None
    dt = dtype_of(npdt) if npdt is not None else None
    contiguous = _c_contiguous(shape, cai.get("strides"), npdt.itemsize if npdt is not None else 1)
    return ArrayArg(ptr or 0, dt, shape, contiguous, UNKNOWN_DEVICE, bool(readonly), "cai")


def _from_dlpack(a: Any) -> ArrayArg:
    from cuda.core.utils import StridedMemoryView

    view = StridedMemoryView(a, stream_ptr=-1)
    shape = tuple(view.shape)
    itemsize = view.dtype.itemsize if view.dtype is not None else 1
    strides = None if view.strides is None else tuple(s * itemsize for s in view.strides)
    device = view.device_id if view.is_device_accessible else HOST
    return ArrayArg(view.ptr, dtype_of(view.dtype), shape, _c_contiguous(shape, strides, itemsize), device,
                    bool(getattr(view, "readonly", False)), "dlpack")  # fmt: skip


class _Libraries:
    """CuPy's and PyTorch's array types and current-stream functions, once met (so neither
    library is imported here); the C launcher is told them as they are found."""

    cupy: type | None = None
    torch: type | None = None
    cupy_stream: Callable[[], Any] | None = None  # cupy.cuda.get_current_stream
    torch_stream: Callable[[int], int] | None = None  # torch._C._cuda_getCurrentRawStream

    def publish(self) -> None:
        if _cuda.claunch is not None:
            _cuda.claunch.set_array_types(self.cupy, self.cupy_stream, self.torch, self.torch_stream)


LIBRARIES = _Libraries()
EXTRACTORS: dict[type, Callable[[Any], ArrayArg] | None] = {}


def _extractor(tp: type) -> Callable[[Any], ArrayArg] | None:
    root = tp.__module__.split(".")[0]
    np = sys.modules.get("numpy")
    if tp is DeviceArray:
        found: Any = _from_own
    elif np is not None and issubclass(tp, np.ndarray):
        found = _from_numpy
    elif root == "cupy" and hasattr(tp, "data") and hasattr(tp, "__cuda_array_interface__"):
        found = _from_cupy if hasattr(tp, "_c_contiguous") else _from_cupy_like
        LIBRARIES.cupy_stream = sys.modules["cupy"].cuda.get_current_stream
        if tp.__name__ == "ndarray" and hasattr(tp, "_c_contiguous"):
            LIBRARIES.cupy = tp  # the C launcher reads these itself
        LIBRARIES.publish()
    elif root == "torch" and hasattr(tp, "data_ptr"):
        found = _from_torch
        LIBRARIES.torch_stream = sys.modules["torch"]._C._cuda_getCurrentRawStream
        if tp.__name__ == "Tensor":
            LIBRARIES.torch = tp
        LIBRARIES.publish()
    elif hasattr(tp, "__cuda_array_interface__"):
        found = _from_cai
    elif hasattr(tp, "__dlpack__"):
        found = _from_dlpack
    else:
        found = None
    EXTRACTORS[tp] = found
    return found


def array_arg(value: Any) -> ArrayArg | None:
    """What the checks see of an array-like value, or None for anything else."""
    tp = type(value)
    ext = EXTRACTORS[tp] if tp in EXTRACTORS else _extractor(tp)
    if ext is None and hasattr(value, "__cuda_array_interface__"):  # set on the instance
        ext = _from_cai
    return ext(value) if ext is not None else None


def _resolve_dtype(dtype: Any, where: str) -> DType:
    found = dtype_of(dtype)
    if found is None:
        raise ArgumentTypeError(f"{where}: dtype expects a cuforge or NumPy dtype such as cf.float32, got {dtype!r}")
    return found


def _shape(shape: Any) -> tuple[int, ...]:
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
        raise ArgumentTypeError(f"cuforge.empty: shape expects non-negative ints, got {shape!r}")
    return shape


class DeviceArray:
    """A C-contiguous array in device memory.

    Build one with [`cuforge.to_device`][cuforge.to_device], [`cuforge.empty`][cuforge.empty] or
    [`cuforge.zeros`][cuforge.zeros]; copy it back with [`to_numpy`][cuforge.DeviceArray.to_numpy]. It is for users with neither
    CuPy nor PyTorch; it has ``__cuda_array_interface__``, so those libraries can view it.

    Examples
    --------
    >>> x = cf.to_device(np.arange(4, dtype=np.float32))  # doctest: +GPU
    >>> x.shape, x.dtype, x.to_numpy()  # doctest: +GPU
    ((4,), cuforge.float32, array([0., 1., 2., 3.], dtype=float32))
    """

    __module__ = "cuforge"
    __slots__ = ("_buffer", "device_id", "dtype", "nbytes", "ptr", "shape", "size")

    def __init__(self, shape: Any, dtype: Any):
        self.dtype = _resolve_dtype(dtype, "cuforge.empty")
        self.shape = _shape(shape)
        self.size = math.prod(self.shape)
        self.nbytes = self.size * self.dtype.itemsize
        dev = _cuda.current_device()
        d = _cuda.core_device(dev.id)
        self._buffer = d.allocate(max(self.nbytes, 1), stream=d.default_stream)
        self.ptr = int(self._buffer.handle)
        self.device_id = dev.id

    @property
    def ndim(self) -> int:
        """The number of dimensions.

        Returns
        -------
        int
        """
        return len(self.shape)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "typestr": self.dtype.numpy.str,
            "data": (self.ptr, False),
            "strides": None,
            "version": 3,
        }

    def to_numpy(self) -> np.ndarray:
        """Copy to a new host NumPy array (waits for work queued before it).

        Returns
        -------
        numpy.ndarray
        """
        import numpy as np

        out = np.empty(self.shape, dtype=self.dtype.numpy)
        if self.nbytes:
            driver = _cuda.bindings()
            _cuda.check(driver.cuCtxSynchronize(), "cuCtxSynchronize")
            _cuda.check(driver.cuMemcpyDtoH(out.ctypes.data, self.ptr, self.nbytes), "cuMemcpyDtoH")
        return out

    def copy_from_host(self, host: np.ndarray) -> None:
        """Copy a host array of the same dtype and size into this array.

        Parameters
        ----------
        host : numpy.ndarray
            Of this array's dtype and size (any shape).

        Raises
        ------
        ArgumentTypeError
            For another dtype or size.
        """
        import numpy as np

        host = np.ascontiguousarray(host)
        if dtype_of(host.dtype) is not self.dtype or host.size != self.size:
            raise ArgumentTypeError(
                f"DeviceArray.copy_from_host: expects {self.size} {self.dtype.name} values, got {host.size} {host.dtype}"
            )
        if self.nbytes:
            driver = _cuda.bindings()
            _cuda.check(driver.cuMemcpyHtoD(self.ptr, host.ctypes.data, self.nbytes), "cuMemcpyHtoD")
            # From pageable memory the call may return before the DMA lands; wait, so a kernel
            # on any stream (non-blocking ones too) sees the data.
            _cuda.check(driver.cuCtxSynchronize(), "cuCtxSynchronize")

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"cuforge.DeviceArray(shape={self.shape}, dtype={self.dtype.name}, device={self.device_id})"


def empty(shape: Any, dtype: Any) -> DeviceArray:
    """An uninitialised device array.

    Parameters
    ----------
    shape : int or tuple of int
    dtype : DType or dtype-like

    Returns
    -------
    DeviceArray

    Raises
    ------
    NoDeviceError
        Where no GPU can be used.

    Examples
    --------
    >>> cf.empty((2, 3), cf.float32).shape  # doctest: +GPU
    (2, 3)
    """
    return DeviceArray(shape, dtype)


def zeros(shape: Any, dtype: Any) -> DeviceArray:
    """A device array of zeros.

    Parameters
    ----------
    shape : int or tuple of int
    dtype : DType or dtype-like

    Returns
    -------
    DeviceArray

    Raises
    ------
    NoDeviceError
        Where no GPU can be used.

    Examples
    --------
    >>> cf.zeros(4, cf.int32).to_numpy()  # doctest: +GPU
    array([0, 0, 0, 0], dtype=int32)
    """
    arr = DeviceArray(shape, dtype)
    if arr.nbytes:
        _cuda.check(_cuda.bindings().cuMemsetD8(arr.ptr, 0, arr.nbytes), "cuMemsetD8")
    return arr


def to_device(host: Any, dtype: Any = None) -> DeviceArray:
    """Copy a host array (anything NumPy accepts) to a new device array.

    Parameters
    ----------
    host : array-like
        The data; its dtype is kept exactly.
    dtype : DType or dtype-like, optional
        Convert to this dtype first, explicitly.

    Returns
    -------
    DeviceArray

    Raises
    ------
    ArgumentTypeError
        For a dtype cuforge has no type for.
    NoDeviceError
        Where no GPU can be used.

    Examples
    --------
    >>> cf.to_device([1.0, 2.0], dtype=cf.float32).to_numpy()  # doctest: +GPU
    array([1., 2.], dtype=float32)
    """
    import numpy as np

    host = np.asarray(host) if dtype is None else np.asarray(host, dtype=_resolve_dtype(dtype, "to_device").numpy)
    cf_dtype = dtype_of(host.dtype)
    if cf_dtype is None:
        raise ArgumentTypeError(
            f"cuforge.to_device: NumPy dtype {host.dtype} has no CUDA counterpart; "
            f"convert with .astype(numpy.float32) or another supported dtype"
        )
    arr = DeviceArray(host.shape, cf_dtype)
    arr.copy_from_host(host)
    return arr


def scratch_copy(value: Any, dtype: DType) -> DeviceArray:
    """A new device array holding a copy of ``value`` (a host NumPy array or device memory)."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return to_device(value)
    arg = array_arg(value)
    if arg is None:
        raise ArgumentTypeError(f"cannot copy {type(value).__name__}: not an array")
    copy = DeviceArray(arg.shape, dtype)
    if copy.nbytes:
        driver = _cuda.bindings()
        _cuda.check(driver.cuMemcpyDtoD(copy.ptr, arg.ptr, copy.nbytes), "cuMemcpyDtoD")
        _cuda.check(driver.cuCtxSynchronize(), "cuCtxSynchronize")
    return copy
