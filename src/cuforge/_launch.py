"""Launch-time argument checks, packing, and the one driver call.

Per-parameter checkers are built once, when a kernel is defined; a launch runs one checker
per argument, packs the values into a per-thread parameter buffer laid out by the C ABI,
and calls ``cuLaunchKernel`` once. All checks run before any CUDA call, so they behave the
same (and are tested) on a machine without a GPU.
"""

from __future__ import annotations

import ctypes
import functools
import math
import operator
import struct
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import _cuda
from ._arrays import DeviceArray
from ._signature import Param, Signature
from .errors import ArgumentError, ArgumentTypeError, LaunchError
from .types import _BY_NUMPY, ArrayType, DType, bfloat16, dtype_of

# An array argument, as the checks see it:
# (pointer, DType or None, shape, C-contiguous, device ordinal (-1 host, None unknown), read-only, origin)
ArrayInfo = tuple[int, Any, tuple[int, ...], bool, Any, bool, str]

HOST, UNKNOWN_DEVICE = -1, None

if TYPE_CHECKING:
    import numpy as np


def _numpy_scalar(value: Any, kinds: str = "") -> bool:
    """Whether ``value`` is a NumPy scalar (of one of ``kinds``: 'b', 'iu', 'f', 'c', ...).

    NumPy is looked up, never imported: without it no NumPy value can exist.
    """
    np = sys.modules.get("numpy")
    if np is None or not isinstance(value, np.generic):
        return False
    return not kinds or value.dtype.kind in kinds


def type_name(value: Any) -> str:
    tp = type(value)
    root = tp.__module__.split(".")[0]
    return tp.__qualname__ if root == "builtins" else f"{root}.{tp.__qualname__}"


def _describe(value: Any) -> str:
    if isinstance(value, (bool, int, float, complex, str)) or value is None:
        text = repr(value)
        return f"{type_name(value)} {text if len(text) < 40 else text[:37] + '...'}"
    return f"a {type_name(value)}"


# ---------------------------------------------------------------- array extraction


def _c_contiguous(shape: tuple[int, ...], strides: Any, itemsize: int) -> bool:
    if strides is None:
        return True
    expected = itemsize
    for dim, stride in zip(reversed(shape), reversed(strides)):
        if dim > 1 and stride != expected:
            return False
        expected *= dim
    return True


def _from_own(a: DeviceArray) -> ArrayInfo:
    return (a.ptr, a.dtype, a.shape, True, a.device_id, False, "cuforge")


def _from_numpy(a: np.ndarray) -> ArrayInfo:
    dt = _BY_NUMPY.get(a.dtype) or dtype_of(a.dtype)
    return (a.ctypes.data, dt, a.shape, a.flags.c_contiguous, HOST, not a.flags.writeable, "numpy")


def _from_cupy(a: Any) -> ArrayInfo:
    mem = a.data
    contiguous = getattr(a, "_c_contiguous", None)
    if contiguous is None:
        contiguous = a.flags.c_contiguous
    dt = _BY_NUMPY.get(a.dtype) or dtype_of(a.dtype)
    return (mem.ptr, dt, a.shape, contiguous, mem.device_id, False, "cupy")


_torch_dtypes: dict[Any, DType] = {}


def _from_torch(t: Any) -> ArrayInfo:
    if not _torch_dtypes:
        import torch

        for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                     "float16", "bfloat16", "float32", "float64", "complex64", "complex128"):  # fmt: skip
            if hasattr(torch, name):
                _torch_dtypes[getattr(torch, name)] = dtype_of(name)  # type: ignore[assignment]
    device = t.get_device()
    return (t.data_ptr(), _torch_dtypes.get(t.dtype), tuple(t.shape), t.is_contiguous(),
            device if device >= 0 else "cpu-tensor", False, "torch")  # fmt: skip


def _from_cai(a: Any) -> ArrayInfo:
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
    return (ptr or 0, dt, shape, contiguous, UNKNOWN_DEVICE, bool(readonly), "cai")


def _from_dlpack(a: Any) -> ArrayInfo:
    from cuda.core.utils import StridedMemoryView

    view = StridedMemoryView(a, stream_ptr=-1)
    shape = tuple(view.shape)
    itemsize = view.dtype.itemsize if view.dtype is not None else 1
    strides = None if view.strides is None else tuple(s * itemsize for s in view.strides)
    device = view.device_id if view.is_device_accessible else "host-dlpack"
    return (view.ptr, dtype_of(view.dtype), shape, _c_contiguous(shape, strides, itemsize), device,
            bool(getattr(view, "readonly", False)), "dlpack")  # fmt: skip


class _Never:
    """Matches no array type."""


class _FastTypes:
    """The array types the generated launch functions check inline (see ``_fastpath``), and
    how they find those libraries' current streams: set when the general path first meets
    them, so neither CuPy nor PyTorch is imported here."""

    cupy: type = _Never
    torch: type = _Never
    cupy_stream: Callable[[], Any]  # cupy.cuda.get_current_stream
    torch_stream: Callable[[int], int]  # torch._C._cuda_getCurrentRawStream


FAST_TYPES = _FastTypes()


def _publish_fast_types() -> None:
    """Tell the C launch functions (when built) the types the Python ones now check."""
    if _cuda._claunch is not None:
        ft = FAST_TYPES
        known = ft.cupy is not _Never, ft.torch is not _Never
        _cuda._claunch.set_array_types(ft.cupy if known[0] else None, getattr(ft, "cupy_stream", None),
                                       ft.torch if known[1] else None, getattr(ft, "torch_stream", None))  # fmt: skip


_EXTRACTORS: dict[type, Callable[[Any], ArrayInfo] | None] = {DeviceArray: _from_own}


def _extractor(tp: type) -> Callable[[Any], ArrayInfo] | None:
    root = tp.__module__.split(".")[0]
    np = sys.modules.get("numpy")
    if np is not None and issubclass(tp, np.ndarray):
        found: Any = _from_numpy
    elif root == "cupy" and hasattr(tp, "data") and hasattr(tp, "__cuda_array_interface__"):
        found = _from_cupy
        if tp.__name__ == "ndarray" and hasattr(tp, "_c_contiguous"):
            FAST_TYPES.cupy_stream = sys.modules["cupy"].cuda.get_current_stream
            FAST_TYPES.cupy = tp
            _publish_fast_types()
    elif root == "torch" and hasattr(tp, "data_ptr"):
        found = _from_torch
        if tp.__name__ == "Tensor":
            FAST_TYPES.torch_stream = sys.modules["torch"]._C._cuda_getCurrentRawStream
            FAST_TYPES.torch = tp
            _publish_fast_types()
    elif hasattr(tp, "__cuda_array_interface__"):
        found = _from_cai
    elif hasattr(tp, "__dlpack__"):
        found = _from_dlpack
    else:
        found = None
    _EXTRACTORS[tp] = found
    return found


def array_info(value: Any) -> ArrayInfo | None:
    """What the checks see of an array-like value, or None for anything else."""
    tp = type(value)
    ext = _EXTRACTORS[tp] if tp in _EXTRACTORS else _extractor(tp)
    if ext is None and hasattr(value, "__cuda_array_interface__"):
        ext = _from_cai
    return ext(value) if ext is not None else None


def array_dtype(value: Any) -> DType | None:
    info = array_info(value)
    return info[1] if info is not None else None


def array_shape(value: Any) -> tuple[int, ...]:
    info = array_info(value)
    return info[2] if info is not None else ()


def array_origin(value: Any) -> str | None:
    info = array_info(value)
    return info[6] if info is not None else None


describe_value = _describe


def array_checker(kernel: str, param: Param) -> Callable[[Any, list[Any]], int]:
    """A function checking one array argument without CUDA calls: it appends
    (parameter index, ArrayInfo) to its second argument and returns the pointer."""
    at: ArrayType = param.type
    want: DType = at.dtype
    decl = repr(at)
    name = param.name
    index = param.index

    def fail(message: str, cls: type[Exception] = ArgumentTypeError) -> Exception:
        return cls(f"{kernel}: argument '{name}' expects {decl}, {message}")

    ndim = at.ndim
    writes = at.writes

    def check(value: Any, infos: list[Any]) -> int:
        ext = _EXTRACTORS.get(value.__class__)
        if ext is not None:
            info = ext(value)
            # One expression for the common case; every failure is sorted out in explain().
            if (info[1] is want and info[3] and (ndim is None or len(info[2]) == ndim)
                    and not (writes and info[5]) and info[4].__class__ is not str):  # fmt: skip
                infos.append((index, info))
                return info[0]
        return explain(value, infos)

    def explain(value: Any, infos: list[Any]) -> int:
        info = array_info(value)
        if info is None:
            raise fail(
                f"got {_describe(value)}; pass a device array (CuPy, PyTorch, cuforge.DeviceArray, "
                f"anything with __cuda_array_interface__ or DLPack) or a NumPy array"
            )
        if info[1] is not want:
            got = info[1].name if info[1] is not None else _foreign_dtype(value)
            raise fail(
                f"got a {got} array ({type_name(value)}); cast with {name}.astype(numpy.{want.name}) "
                f"or declare the parameter with cf.{want.name if info[1] is None else info[1].name}"
            )
        if ndim is not None and len(info[2]) != ndim:
            raise fail(f"got a {len(info[2])}-d array of shape {info[2]}; reshape it to {ndim}-d")
        if not info[3]:
            raise fail(
                f"got a non-C-contiguous array ({type_name(value)}, shape {info[2]}); pass a contiguous "
                f"copy ({name}.copy(), numpy.ascontiguousarray({name}) or tensor.contiguous())"
            )
        if info[5] and writes:
            raise fail(f"got a read-only array ({type_name(value)}); the kernel writes to it, pass a writable one")
        if isinstance(info[4], str):
            raise fail(f"got a {info[4].replace('-', ' ')} in host memory; move it to the GPU first (.cuda() or cf.to_device)")
        infos.append((index, info))
        return info[0]

    return check


def _foreign_dtype(value: Any) -> str:
    dt = getattr(value, "dtype", None)
    return str(dt) if dt is not None else "unsupported"


# ---------------------------------------------------------------- scalar checks

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1), "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1), "uint8": (0, 2**8 - 1), "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1), "uint64": (0, 2**64 - 1),
}  # fmt: skip
_FLOAT_CODES = {"float16": "e", "float32": "f", "float64": "d"}
_F32_MAX = 3.4028234663852886e38


def _round_trip(code: str, value: float) -> float:
    return struct.unpack(code, struct.pack(code, value))[0]


def _bf16_bits(value: float) -> int:
    """IEEE round-to-nearest-even of a float to bfloat16, as its 16 bits (inf on overflow)."""
    if value != value:
        return 0x7FC0
    try:
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
    except OverflowError:
        return 0x7F80 if value > 0 else 0xFF80
    bits += 0x7FFF + ((bits >> 16) & 1)
    return (bits >> 16) & 0xFFFF


def _bf16_value(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


def scalar_checker(kernel: str, param: Param) -> Callable[[Any, Any], Any]:
    """A function converting one scalar argument to the value packed for its C type (its
    second argument, the launch's array list, is unused: all checkers share one call form)."""
    dt: DType = param.type
    name = param.name

    def fail(got: Any, fix: str, cls: type[Exception] = ArgumentTypeError) -> Exception:
        return cls(f"{kernel}: argument '{name}' expects {dt.name}, got {_describe(got)}; {fix}")

    if dt.is_integer:
        lo, hi = _INT_RANGES[dt.name]

        def check_int(v: Any, _: Any = None) -> int:
            if type(v) is int and lo <= v <= hi:
                return v
            try:
                iv = operator.index(v)
            except TypeError:
                if isinstance(v, (float, complex)) or _numpy_scalar(v, "fc"):
                    raise fail(v, f"pass an int (int({v!r}) if truncation is intended)") from None
                raise fail(v, f"pass a Python int or numpy.{dt.name}") from None
            if not lo <= iv <= hi:
                raise fail(v, f"{dt.name} holds {lo}..{hi}; declare a wider type or pass a smaller value", ArgumentError)
            return iv

        return check_int

    if dt.kind == "b":

        def check_bool(v: Any, _: Any = None) -> bool:
            if type(v) is bool:
                return v
            if _numpy_scalar(v, "b"):
                return bool(v)
            if type(v) is int and v in (0, 1):
                return bool(v)
            raise fail(v, "pass True or False")

        return check_bool

    if dt.is_float:
        return _float_checker(dt, fail)

    exact_code = "f" if dt.name == "complex64" else "d"

    def check_complex(v: Any, _: Any = None) -> complex:
        if isinstance(v, (str, bytes)) or v is None or isinstance(v, bool):
            raise fail(v, "pass a Python complex or numpy.complex value")
        try:
            c = complex(v)
        except TypeError:
            raise fail(v, "pass a Python complex or numpy.complex value") from None
        if (isinstance(v, int) or _numpy_scalar(v)) and exact_code == "f":
            if _round_trip("f", c.real) != c.real or _round_trip("f", c.imag) != c.imag:
                raise fail(v, "the value is not exact in complex64; convert with numpy.complex64(...) first", ArgumentError)
        elif exact_code == "f" and max(abs(c.real), abs(c.imag)) > _F32_MAX and math.isfinite(abs(c)):
            raise fail(v, "the value overflows complex64", ArgumentError)
        return c

    return check_complex


def _float_checker(dt: DType, fail: Callable[..., Exception]) -> Callable[[Any, Any], Any]:
    is_bf16 = dt is bfloat16
    code = "f" if is_bf16 else _FLOAT_CODES[dt.name]
    limit = {"float16": 65504.0, "float32": _F32_MAX, "bfloat16": 3.3895313892515355e38}.get(dt.name, math.inf)

    def slow(v: Any) -> Any:
        if isinstance(v, (str, bytes, complex, bool)) or v is None or _numpy_scalar(v, "cb"):
            raise fail(v, f"pass a Python float or numpy.{dt.name}")
        if not is_bf16 and _numpy_scalar(v) and v.dtype.name == dt.name:
            return float(v)
        integral = isinstance(v, int) or _numpy_scalar(v, "iu")
        if integral or _numpy_scalar(v, "f"):
            f = float(v)
            exact = (_bf16_value(_bf16_bits(f)) == f) if is_bf16 else (_round_trip(code, f) == f)
            if not exact or (integral and int(f) != int(v)):
                raise fail(v, f"the value is not exact in {dt.name}; convert it explicitly first", ArgumentError)
            return _bf16_bits(f) if is_bf16 else f
        if type(v) is float:
            if math.isfinite(v):
                try:
                    packed = _round_trip(code, v)
                except (OverflowError, struct.error):
                    packed = math.inf
                if is_bf16 and math.isinf(_bf16_value(_bf16_bits(v))):
                    packed = math.inf
                if math.isinf(packed):
                    raise fail(v, f"the value overflows {dt.name} (largest finite {limit:g})", ArgumentError)
            return _bf16_bits(v) if is_bf16 else v
        raise fail(v, f"pass a Python float or numpy.{dt.name}")

    if is_bf16:

        def check_bf16(v: Any, _: Any = None) -> int:
            return slow(v)  # type: ignore[no-any-return]

        return check_bf16

    def check_float(v: Any, _: Any = None) -> Any:
        if type(v) is float and -limit <= v <= limit:
            return v
        return slow(v)

    return check_float


# ---------------------------------------------------------------- packing

_PACK_CODES = {
    "bool": "?", "int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint8": "B", "uint16": "H",
    "uint32": "I", "uint64": "Q", "float16": "e", "bfloat16": "H", "float32": "f", "float64": "d",
    "complex64": "ff", "complex128": "dd",
}  # fmt: skip


class Packer:
    """Packs checked values into a per-thread C-ABI parameter buffer.

    ``cuLaunchKernel`` copies the parameters when it is called, so one buffer per thread is
    reused by every launch of the kernel from that thread.
    """

    __slots__ = ("_tls", "complex_at", "offsets", "size", "struct")

    def __init__(self, signature: Signature):
        fmt, pos = "=", 0
        layout = signature.layout()
        for p, (offset, _) in zip(signature.params, layout):
            fmt += "x" * (offset - pos) + ("Q" if p.is_array else _PACK_CODES[p.dtype.name])
            pos = offset + p.size
        self.struct = struct.Struct(fmt)
        self.offsets = tuple(offset for offset, _ in layout)
        self.size = max(self.struct.size, 8)
        self.complex_at = tuple(i for i, p in enumerate(signature.params) if not p.is_array and p.dtype.is_complex)
        self._tls = threading.local()

    def buffers(self) -> tuple[Any, int]:
        """This thread's (parameter buffer, address of its void* array)."""
        bufs = getattr(self._tls, "bufs", None) or self.thread_buffers()
        return bufs[0], bufs[2]

    def thread_buffers(self) -> tuple[Any, Any, int]:
        """This thread's buffers (made on its first launch): see ``_new_buffer``."""
        bufs = self._tls.bufs = self._new_buffer()
        return bufs

    def _new_buffer(self) -> tuple[Any, Any, int]:
        """(parameter buffer, void* array pointing at each parameter in it, that array's address)."""
        buf = ctypes.create_string_buffer(self.size)
        base = ctypes.addressof(buf)
        n = max(len(self.offsets), 1)
        ptrs = (ctypes.c_void_p * n)(*[base + o for o in self.offsets] or [base])
        return buf, ptrs, ctypes.addressof(ptrs)

    def standalone(self, values: list[Any]) -> tuple[Any, Any, int]:
        """A buffer of its own holding ``values``: (buffer, void* array, its address)."""
        buf, ptrs, addr = self._new_buffer()
        self.struct.pack_into(buf, 0, *self._flat(values))
        return buf, ptrs, addr

    def _flat(self, values: list[Any]) -> list[Any]:
        if not self.complex_at:
            return values
        flat: list[Any] = []
        for i, v in enumerate(values):
            flat += (v.real, v.imag) if i in self.complex_at else (v,)
        return flat

    def pack(self, values: list[Any]) -> int:
        """Pack ``values`` and return the address to pass as ``kernelParams``."""
        if self.complex_at:
            values = self._flat(values)
        buf, addr = self.buffers()
        self.struct.pack_into(buf, 0, *values)
        return addr


class PreparedLaunch:
    """One launch, checked and packed once: calling it is a single ``cuLaunchKernel``.

    Made by :meth:`Kernel.prepare`. It keeps the arguments alive and owns its parameter
    buffer, so it can be called from any thread that has the device's context current.
    """

    __module__ = "cuforge"
    __slots__ = ("_buf", "_call", "_keep", "_ptrs", "block", "grid", "kernel", "shared_mem", "stream")

    def __init__(self, kernel: str, handle: int, packer: Packer, values: list[Any], grid: tuple[int, int, int],
                 block: tuple[int, int, int], shared_mem: int, stream: int, keep: Any) -> None:  # fmt: skip
        self._buf, self._ptrs, addr = packer.standalone(values)
        self._keep = keep
        self.kernel, self.grid, self.block, self.shared_mem, self.stream = kernel, grid, block, shared_mem, stream
        self._call = functools.partial(_cuda.launch, handle, grid, block, shared_mem, stream, addr)

    def __call__(self) -> None:
        err = self._call()
        if err:
            raise_launch_error(err, self.grid, self.block, self.shared_mem, self.kernel)

    def __repr__(self) -> str:
        return f"<cuforge.PreparedLaunch {self.kernel} grid={self.grid} block={self.block} stream={self.stream:#x}>"


# ---------------------------------------------------------------- launch configuration


_DIMS: dict[tuple[Any, int], tuple[int, int, int]] = {}


def dims(value: Any, what: str, kernel: str, limit: tuple[int, int, int]) -> tuple[int, int, int]:
    """Normalise a grid or block to 3 positive ints within ``limit`` (valid ones are memoised:
    a launch that passes the same grid= every time pays for one dict lookup)."""
    try:
        return _DIMS[value, id(limit)]
    except (KeyError, TypeError):
        pass
    out = _dims(value, what, kernel, limit)
    if isinstance(value, (int, tuple)) and len(_DIMS) < 4096:
        _DIMS[value, id(limit)] = out
    return out


def _dims(value: Any, what: str, kernel: str, limit: tuple[int, int, int]) -> tuple[int, int, int]:
    if _is_int(value):
        value = (value,)
    if not isinstance(value, (tuple, list)) or not 1 <= len(value) <= 3:
        raise ArgumentError(f"{kernel}: {what} expects an int or a tuple of 1 to 3 ints, got {_describe(value)}")
    out = []
    for i, v in enumerate(value):
        if not _is_int(v) or not 1 <= v <= limit[i]:
            raise ArgumentError(
                f"{kernel}: {what}[{i}] expects an int from 1 to {limit[i]}, got {v!r} (in {what}={tuple(value)!r})"
            )
        out.append(int(v))
    while len(out) < 3:
        out.append(1)
    if limit is BLOCK_LIMIT and out[0] * out[1] * out[2] > 1024:
        raise ArgumentError(
            f"{kernel}: {what}={tuple(value)!r} has {out[0] * out[1] * out[2]} threads; a block holds at most 1024"
        )
    return out[0], out[1], out[2]


def _is_int(v: Any) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or _numpy_scalar(v, "iu")


GRID_LIMIT = (2**31 - 1, 65535, 65535)
BLOCK_LIMIT = (1024, 1024, 64)


def stream_handle(stream: Any, kernel: str) -> int:
    """The CUstream handle of a stream-like object (no CUDA call)."""
    if isinstance(stream, int) and not isinstance(stream, bool):
        return stream
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        return int(proto()[1])
    for attr in ("cuda_stream", "ptr", "handle"):  # torch, cupy, cuda.core
        h = getattr(stream, attr, None)
        if h is not None:
            return int(h)
    raise ArgumentTypeError(
        f"{kernel}: stream expects a stream (cuda.core, CuPy, PyTorch, anything with __cuda_stream__, "
        f"or an int handle), got {_describe(stream)}"
    )


def default_stream(infos: list[Any], device: int) -> int:
    """The current CuPy or PyTorch stream when the arrays come from one, else the legacy default."""
    for _, info in infos:
        if info[6] == "torch":
            import torch

            return int(torch._C._cuda_getCurrentRawStream(device))
        if info[6] == "cupy":
            import cupy

            return int(cupy.cuda.get_current_stream().ptr)
    return 0


def check_devices(kernel: str, params: tuple[Param, ...], infos: list[Any], device: int) -> None:
    """Every array must live on ``device`` (host NumPy arrays are staged, so they pass)."""
    for i, info in infos:
        where = info[4]
        if where is UNKNOWN_DEVICE:
            where = _cuda.pointer_device(info[0]) if info[0] else device
            if where is None:
                raise ArgumentTypeError(
                    f"{kernel}: argument '{params[i].name}' expects device memory, but CUDA does not know "
                    f"pointer {info[0]:#x} ({info[6]}); pass memory allocated by CUDA"
                )
        if where != HOST and where != device:
            raise ArgumentTypeError(
                f"{kernel}: argument '{params[i].name}' is on device {where}, but the launch runs on device "
                f"{device}; copy it there or call cuforge.set_device({where})"
            )


def launch_raw(handle: int, grid: tuple[int, int, int], block: tuple[int, int, int], shared_mem: int,
               stream: int, params_addr: int, kernel: str) -> None:  # fmt: skip
    err = _cuda.launch(handle, grid, block, shared_mem, stream, params_addr)
    if err:  # a CUresult: CUDA_SUCCESS is 0
        raise_launch_error(err, grid, block, shared_mem, kernel)


def raise_launch_error(err: Any, grid: Any, block: Any, shared_mem: int, kernel: str) -> None:
    raise LaunchError(
        f"{kernel}: cuLaunchKernel(grid={grid}, block={block}, shared_mem={shared_mem}) failed: {_cuda.error_text(err)}"
    )
