"""Arrays as launches see them.

`ArrayArg` is the one record of an array argument: every array library is read into
it by an extractor here (NumPy, CuPy, PyTorch, cuforge's `DeviceArray`, anything with
``__cuda_array_interface__`` or DLPack), and the checks read its fields by name. The C
launcher reads CuPy arrays, PyTorch tensors and DeviceArrays itself and asks
`array_arg` for everything else. `DeviceArray`'s module is not imported here: a launch with
other arrays does not need it, and it tells `LIBRARIES` its type when it is imported.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._declare.dtypes import BY_NUMPY, DType, dtype_of
from .._frozen import Record
from . import libcuda as _libcuda

if TYPE_CHECKING:
    import numpy as np

__all__ = ["HOST", "UNKNOWN_DEVICE", "ArrayArg", "array_arg"]

HOST = -1  # ArrayArg.device of memory on the host (a NumPy array, a CPU tensor)
UNKNOWN_DEVICE = -2  # device memory whose device CUDA is asked at launch (__cuda_array_interface__)


class ArrayArg(Record):
    """One array argument, as the checks see it."""

    __slots__ = ()
    ptr: int
    dtype: DType | None  # None: an element type cuforge has no name for
    shape: tuple[int, ...]
    contiguous: bool  # C-contiguous
    device: int  # the device ordinal, HOST or UNKNOWN_DEVICE
    readonly: bool
    origin: str  # "cuforge", "numpy", "cupy", "torch", "cai", "array_interface", "buffer" or "dlpack"
    # What keeps the memory where ``ptr`` says until the launch returns, where the array itself
    # does not: the view that holds a buffer's export (so that a resize in another thread raises
    # BufferError instead of freeing the memory under the kernel), a DLPack view. Else None.
    held: Any

    def __new__(cls, ptr: Any, dtype: Any, shape: Any, contiguous: Any, device: Any, readonly: Any, origin: Any,
                held: Any) -> Any:
        return tuple.__new__(cls, (ptr, dtype, shape, contiguous, device, readonly, origin, held))


# The extractors build ArrayArgs with tuple.__new__: a record's own __new__ is a Python
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


def _from_own(a: Any) -> ArrayArg:  # a DeviceArray
    return _new(ArrayArg, (a.ptr, a.dtype, a.shape, True, a.device_id, False, "cuforge", None))


def _from_numpy(a: np.ndarray) -> ArrayArg:
    dt = BY_NUMPY.get(a.dtype) or dtype_of(a.dtype)
    return _new(ArrayArg, (a.ctypes.data, dt, a.shape, a.flags.c_contiguous, HOST, not a.flags.writeable, "numpy", None))


def _from_cupy(a: Any) -> ArrayArg:
    # CuPy's private ``ndarray._c_contiguous`` is read on purpose (here and by the C launcher):
    # it is the flag itself, where ``flags.c_contiguous`` builds a Flags object per call. A
    # CuPy type without it (a release that renames it) takes _from_cupy_like, public flags only.
    mem = a.data
    dt = BY_NUMPY.get(a.dtype) or dtype_of(a.dtype)
    return _new(ArrayArg, (mem.ptr, dt, a.shape, a._c_contiguous, mem.device_id, False, "cupy", None))


def _from_cupy_like(a: Any) -> ArrayArg:  # a CuPy array type without ndarray's _c_contiguous: the fallback
    mem = a.data
    dt = BY_NUMPY.get(a.dtype) or dtype_of(a.dtype)
    return _new(ArrayArg, (mem.ptr, dt, a.shape, bool(a.flags.c_contiguous), mem.device_id, False, "cupy", None))


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
                           device if device >= 0 else HOST, False, "torch", None))  # fmt: skip


def _from_interface(described: dict[str, Any], ptr: int, readonly: bool, device: int, origin: str) -> ArrayArg:
    """An array described by an array interface (NumPy's or CUDA's: typestr, shape, strides)."""
    import numpy as np

    shape = tuple(described["shape"])
    try:
        npdt = np.dtype(described["typestr"])
    except TypeError:
        npdt = None
    dt = dtype_of(npdt) if npdt is not None else None
    contiguous = _c_contiguous(shape, described.get("strides"), npdt.itemsize if npdt is not None else 1)
    return _new(ArrayArg, (ptr or 0, dt, shape, contiguous, device, bool(readonly), origin, None))


def _from_cai(a: Any) -> ArrayArg:
    cai = a.__cuda_array_interface__
    ptr, readonly = cai["data"]
    return _from_interface(cai, ptr, readonly, UNKNOWN_DEVICE, "cai")


def _from_host_interface(a: Any) -> ArrayArg:
    """Host memory described by NumPy's ``__array_interface__`` (used in place by a CPU launch)."""
    ai = a.__array_interface__
    data = ai.get("data")
    if isinstance(data, tuple):  # an address: the object keeps the memory (and the call holds the object)
        ptr, readonly = data
        return _from_interface(ai, ptr, readonly, HOST, "array_interface")
    import numpy as np

    if data is None:  # the object's own buffer, whose export NumPy's view holds
        view = np.asarray(a)
        return _from_view(view, "array_interface", view)
    # A buffer: NumPy's view lets go of its export at once, so the export is held here, taken
    # first, and the view made of this very description (a second read of the attribute could
    # name another buffer).
    export = memoryview(data)
    view = np.asarray(_Described(ai))
    return _from_view(view, "array_interface", (export, view))


class _Described:
    """An ``__array_interface__`` already read, for NumPy to view."""

    def __init__(self, described: dict[str, Any]) -> None:
        self.__array_interface__ = described


def _from_buffer(a: Any) -> ArrayArg:
    """Anything with the buffer protocol (``array.array``, ``bytearray``, ``memoryview``): host memory."""
    import numpy as np

    view = np.asarray(memoryview(a))  # a view of the same memory (nothing is copied), holding the buffer's export
    return _from_view(view, "buffer", view)


def _from_view(view: np.ndarray, origin: str, held: Any) -> ArrayArg:
    """Host memory as NumPy's ``view`` of it sees it; ``held`` keeps it in place for the launch."""
    dt = BY_NUMPY.get(view.dtype) or dtype_of(view.dtype)
    return _new(ArrayArg, (view.ctypes.data, dt, view.shape, view.flags.c_contiguous, HOST, not view.flags.writeable,
                           origin, held))  # fmt: skip


def _from_dlpack(a: Any) -> ArrayArg:
    from cuda.core.utils import StridedMemoryView

    view = StridedMemoryView(a, stream_ptr=-1)
    shape = tuple(view.shape)
    itemsize = view.dtype.itemsize if view.dtype is not None else 1
    strides = None if view.strides is None else tuple(s * itemsize for s in view.strides)
    device = view.device_id if view.is_device_accessible else HOST
    return ArrayArg(view.ptr, dtype_of(view.dtype), shape, _c_contiguous(shape, strides, itemsize), device,
                    bool(getattr(view, "readonly", False)), "dlpack", view)  # fmt: skip


class _Libraries:
    """CuPy's and PyTorch's array types and current-stream functions, once met (so neither
    library is imported here), and cuforge's `DeviceArray` once its module is imported; the C
    launcher is told them as they are found."""

    cupy: type | None = None
    torch: type | None = None
    cupy_stream: Callable[[], Any] | None = None  # cupy.cuda.get_current_stream
    torch_stream: Callable[[int], int] | None = None  # torch._C._cuda_getCurrentRawStream
    own: type | None = None  # cuforge.DeviceArray

    def publish(self) -> None:
        if _libcuda.claunch is not None:
            _libcuda.claunch.set_array_types(self.cupy, self.cupy_stream, self.torch, self.torch_stream, self.own)

    def meet_own(self, tp: type) -> None:
        """``DeviceArray``, told by its module as it is imported (before any of its arrays exists)."""
        self.own = tp
        self.publish()


LIBRARIES: _Libraries = _Libraries()
EXTRACTORS: dict[type, Callable[[Any], ArrayArg] | None] = {}


def _extractor(tp: type) -> Callable[[Any], ArrayArg] | None:
    root = tp.__module__.split(".")[0]
    np = sys.modules.get("numpy")
    if tp is LIBRARIES.own:
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
        LIBRARIES.torch_stream = _torch_stream_function(sys.modules["torch"])
        if tp.__name__ == "Tensor":
            LIBRARIES.torch = tp
        LIBRARIES.publish()
    elif hasattr(tp, "__cuda_array_interface__"):
        found = _from_cai
    elif hasattr(tp, "__array_interface__"):
        found = _from_host_interface
    elif hasattr(tp, "__dlpack__"):
        found = _from_dlpack
    elif hasattr(tp, "__buffer__") or tp in (bytearray, memoryview) or (tp.__module__ == "array" and tp.__name__ == "array"):
        found = _from_buffer
    else:
        found = None
    EXTRACTORS[tp] = found
    return found


def _torch_stream_function(torch: Any) -> Callable[[int], int]:
    """PyTorch's current stream on a device, as a handle. The private
    ``torch._C._cuda_getCurrentRawStream`` is read on purpose: it is what
    ``torch.cuda.current_stream`` calls beneath, without making a Stream object per launch.
    Where a PyTorch build lacks it, the public call serves."""
    raw = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw  # type: ignore[no-any-return]
    return lambda device: int(torch.cuda.current_stream(device).cuda_stream)


def meet(tp: type) -> None:
    """Read an array type before any of its arrays is passed (the C launcher is told CuPy's
    and PyTorch's types as they are met)."""
    if tp not in EXTRACTORS:
        _extractor(tp)


def array_arg(value: Any) -> ArrayArg | None:
    """What the checks see of an array-like value, or None for anything else."""
    tp = type(value)
    ext = EXTRACTORS[tp] if tp in EXTRACTORS else _extractor(tp)
    if ext is None and hasattr(value, "__cuda_array_interface__"):  # set on the instance
        ext = _from_cai
    return ext(value) if ext is not None else None
