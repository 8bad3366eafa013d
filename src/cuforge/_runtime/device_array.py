"""cuforge's own small device array, for users who have neither CuPy nor PyTorch.

`DeviceArray` holds memory from cuda.core's device memory resource, copies by plain driver
memcpys, and has ``__cuda_array_interface__`` so CuPy, PyTorch and Numba can wrap it;
`empty`, `zeros` and `to_device` make one, `scratch_copy` a copy of an argument for autotuning.
Nothing on a launch's path imports this module (``cuforge.DeviceArray`` does, on first use);
it tells the launch layer's arrays (`arrays.LIBRARIES`) its type as it is imported.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .._declare.dtypes import DType, dtype_of
from ..errors import ArgumentTypeError, NoDeviceError
from . import arrays as _arrays
from . import device as _device
from . import faults as _faults
from . import libcuda as _libcuda

if TYPE_CHECKING:
    import numpy as np

__all__ = ["DeviceArray", "empty", "scratch_copy", "to_device", "zeros"]


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

    def __init__(self, shape: Any, dtype: Any, *, _who: str = "cf.empty()"):
        self.dtype = _resolve_dtype(dtype, "cuforge.empty")
        self.shape = _shape(shape)
        self.size = math.prod(self.shape)
        self.nbytes = self.size * self.dtype.itemsize
        try:
            dev = _device.current_device()
        except NoDeviceError as exc:
            numpy = "pass the NumPy array itself" if _who == "cf.to_device()" else f"use numpy.{_who[3:-2]}"
            raise _device.gpu_only(_who, exc, "device memory", f"a launch takes NumPy arrays in place: {numpy}") from None
        d = _device.core_device(dev.id)
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
            driver = _libcuda.bindings()
            _faults.check(driver.cuCtxSynchronize(), "cuCtxSynchronize")
            _faults.check(driver.cuMemcpyDtoH(out.ctypes.data, self.ptr, self.nbytes), "cuMemcpyDtoH")
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
            driver = _libcuda.bindings()
            _faults.check(driver.cuMemcpyHtoD(self.ptr, host.ctypes.data, self.nbytes), "cuMemcpyHtoD")
            # From pageable memory the call may return before the DMA lands; wait, so a kernel
            # on any stream (non-blocking ones too) sees the data.
            _faults.check(driver.cuCtxSynchronize(), "cuCtxSynchronize")

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
    arr = DeviceArray(shape, dtype, _who="cf.zeros()")
    if arr.nbytes:
        _faults.check(_libcuda.bindings().cuMemsetD8(arr.ptr, 0, arr.nbytes), "cuMemsetD8")
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
    arr = DeviceArray(host.shape, cf_dtype, _who="cf.to_device()")
    arr.copy_from_host(host)
    return arr


def scratch_copy(value: Any, dtype: DType) -> DeviceArray:
    """A new device array holding a copy of ``value`` (a host NumPy array or device memory)."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return to_device(value)
    arg = _arrays.array_arg(value)
    if arg is None:
        raise ArgumentTypeError(f"cannot copy {type(value).__name__}: not an array")
    copy = DeviceArray(arg.shape, dtype)
    if copy.nbytes:
        driver = _libcuda.bindings()
        _faults.check(driver.cuMemcpyDtoD(copy.ptr, arg.ptr, copy.nbytes), "cuMemcpyDtoD")
        _faults.check(driver.cuCtxSynchronize(), "cuCtxSynchronize")
    return copy


_arrays.LIBRARIES.meet_own(DeviceArray)  # (the C launcher reads DeviceArrays itself, as CuPy's arrays)
