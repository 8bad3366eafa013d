"""cuforge's own small device array, for users who have neither CuPy nor PyTorch.

Memory comes from cuda.core's device memory resource; copies are plain driver memcpys.
A DeviceArray exposes ``__cuda_array_interface__``, so CuPy, PyTorch and Numba can wrap it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from . import _cuda
from .errors import ArgumentTypeError
from .types import DType, dtype_of

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

    Build one with :func:`cuforge.to_device`, :func:`cuforge.empty` or
    :func:`cuforge.zeros`; copy it back with :meth:`to_numpy`.
    """

    __module__ = "cuforge"
    __slots__ = ("_buffer", "device_id", "dtype", "nbytes", "ptr", "shape", "size")

    def __init__(self, shape: Any, dtype: Any):
        self.dtype = _resolve_dtype(dtype, "cuforge.empty")
        self.shape = _shape(shape)
        self.size = math.prod(self.shape)
        self.nbytes = self.size * self.dtype.itemsize
        dev = _cuda.current_device()
        from cuda.core import Device

        d = Device(dev.id)
        self._buffer = d.allocate(max(self.nbytes, 1), stream=d.default_stream)
        self.ptr = int(self._buffer.handle)
        self.device_id = dev.id

    @property
    def ndim(self) -> int:
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
        """Copy to a new host NumPy array (waits for work queued before it)."""
        import numpy as np

        out = np.empty(self.shape, dtype=self.dtype.numpy)
        if self.nbytes:
            driver = _cuda._driver()
            _cuda.check(driver.cuCtxSynchronize(), "cuCtxSynchronize")
            _cuda.check(driver.cuMemcpyDtoH(out.ctypes.data, self.ptr, self.nbytes), "cuMemcpyDtoH")
        return out

    def copy_from_host(self, host: np.ndarray) -> None:
        """Copy a host array of the same dtype and size into this array."""
        import numpy as np

        host = np.ascontiguousarray(host)
        if dtype_of(host.dtype) is not self.dtype or host.size != self.size:
            raise ArgumentTypeError(
                f"DeviceArray.copy_from_host: expects {self.size} {self.dtype.name} values, got {host.size} {host.dtype}"
            )
        if self.nbytes:
            driver = _cuda._driver()
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
    """An uninitialised device array."""
    return DeviceArray(shape, dtype)


def zeros(shape: Any, dtype: Any) -> DeviceArray:
    """A device array of zeros."""
    arr = DeviceArray(shape, dtype)
    if arr.nbytes:
        _cuda.check(_cuda._driver().cuMemsetD8(arr.ptr, 0, arr.nbytes), "cuMemsetD8")
    return arr


def to_device(host: Any, dtype: Any = None) -> DeviceArray:
    """Copy a host array (anything NumPy accepts) to a new device array.

    The dtype is kept exactly; pass ``dtype=`` to convert explicitly first.
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
    from ._launch import array_info

    info = array_info(value)
    if info is None:
        raise ArgumentTypeError(f"cannot copy {type(value).__name__}: not an array")
    copy = DeviceArray(info[2], dtype)
    if copy.nbytes:
        driver = _cuda._driver()
        _cuda.check(driver.cuMemcpyDtoD(copy.ptr, info[0], copy.nbytes), "cuMemcpyDtoD")
        _cuda.check(driver.cuCtxSynchronize(), "cuCtxSynchronize")
    return copy
