"""The checks of one launch argument against its declared parameter, built once per parameter.

Each checker takes one argument and the launch's list of arrays, and returns what is packed
for it (a scalar converted to its C type, an array's pointer; an array's
`ArrayArg` is appended to the list, with the parameter's index), or
raises an
`ArgumentError` that names the kernel, the parameter, what was expected, what
was received and the fix. No check makes a CUDA call, so all of them run (and are tested) on
a machine without a GPU.

These are the definition of what a launch accepts. The C launcher accepts the common cases
by itself (exact Python scalars in range, CuPy/PyTorch/cuforge arrays) and hands every other
argument to these checkers; a Hypothesis test holds the two to the same answers.
"""

from __future__ import annotations

import math
import operator
import struct
from collections.abc import Callable
from typing import Any

from .._declare.annotations import INTENTS, ArrayType
from .._declare.dtypes import bfloat16, float32
from .._declare.signature import ParamSpec
from .._declare.spelling import a_or_an, cast_to, describe, numpy_scalar, type_name
from .._declare.vectors import VectorDType
from .._runtime import cuda as _cuda
from .._runtime.arrays import EXTRACTORS, HOST, ArrayArg, array_arg
from ..errors import ArgumentError, ArgumentTypeError

Arrays = list[tuple[int, ArrayArg]]


def checker(kernel: str, spec: ParamSpec, *, host: bool = False) -> Callable[[Any, Arrays], Any]:
    """The checker of one parameter (see the module docstring); ``host`` for a launch on the
    CPU, which takes host memory (used in place) and refuses device memory."""
    if not spec.is_array:
        return scalar_checker(kernel, spec)
    check = (vector_array_checker(kernel, spec, host) if isinstance(spec.dtype, VectorDType)
             else array_checker(kernel, spec, host))  # fmt: skip
    return optional_checker(check) if spec.optional else check


def optional_checker(check: Callable[[Any, Arrays], int]) -> Callable[[Any, Arrays], int]:
    """An ``Optional`` array's check: None is a null pointer, with no entry in the arrays (so
    no device to launch on, no size for the grid); anything else is checked as declared."""

    def check_optional(value: Any, arrays: Arrays) -> int:
        return 0 if value is None else check(value, arrays)

    return check_optional


def vector_array_checker(kernel: str, spec: ParamSpec, host: bool = False) -> Callable[[Any, Arrays], int]:
    """An array of a vector type (``float4``): an array of its element dtype whose last
    dimension is the vector's length, checked as such, and aligned to the vector's size. The
    launch rule sees its shape without that dimension (it counts vectors)."""
    vec = spec.dtype
    assert isinstance(vec, VectorDType)
    element = spec._replace(dtype=vec.element, ndim=spec.ndim + 1 if spec.ndim >= 0 else -1)
    check_elements = array_checker(kernel, element, host)

    def fail(message: str) -> Exception:
        return ArgumentTypeError(f"{kernel}: argument '{spec.name}' expects {spec.type_name} ({vec.cpp}), {message}")

    def check(value: Any, arrays: Arrays) -> int:
        ptr = check_elements(value, arrays)  # dtype (the element's), rank, layout, writability, place
        i, arg = arrays[-1]
        if not arg.shape or arg.shape[-1] != vec.lanes:
            raise fail(f"got shape {arg.shape}; its last dimension must be {vec.lanes}, one {vec.cpp} each: reshape it "
                       f"to (..., {vec.lanes})")  # fmt: skip
        if (host or arg.device != HOST) and ptr % vec.align:  # (host NumPy arrays for a GPU are copied)
            raise fail(f"got memory at {ptr:#x}, which is not aligned to {vec.align} bytes as {a_or_an(vec.cpp)} must be (an "
                       f"offset view?); pass an array that starts at an aligned address")  # fmt: skip
        arrays[-1] = (i, arg._replace(shape=arg.shape[:-1]))
        return ptr

    return check


# ---------------------------------------------------------------- arrays


def array_checker(kernel: str, spec: ParamSpec, host: bool = False) -> Callable[[Any, Arrays], int]:
    want, ndim, writes, name, index = spec.dtype, spec.ndim, spec.writes, spec.name, spec.index

    def fail(message: str) -> Exception:
        return ArgumentTypeError(f"{kernel}: argument '{name}' expects {spec.type_name}, {message}")

    def check(value: Any, arrays: Arrays) -> int:
        ext = EXTRACTORS.get(value.__class__)
        if ext is not None:
            arg = ext(value)
            ptr, dtype, shape, contiguous, device, readonly, origin, _ = arg  # ArrayArg's fields, unpacked at once
            # One expression for the common case; every failure is sorted out in explain().
            if (dtype is want and contiguous and (ndim < 0 or len(shape) == ndim) and not (writes and readonly)
                    and ((device == HOST) if host else (device != HOST or origin == "numpy"))):  # fmt: skip
                arrays.append((index, arg))
                return ptr  # type: ignore[no-any-return]
        arg = explain(value)
        arrays.append((index, arg))
        return arg.ptr

    def explain(value: Any) -> ArrayArg:
        arg = array_arg(value)
        if arg is None:
            hint = f" (to let it be None, declare it cf.Optional[{_as_written(spec.type)}])" if value is None else ""
            raise fail(
                f"got {describe(value)}; pass a host array (NumPy, a CPU tensor, anything with __array_interface__ "
                f"or the buffer protocol){hint}" if host else
                f"got {describe(value)}; pass a device array (CuPy, PyTorch, cuforge.DeviceArray, "
                f"anything with __cuda_array_interface__ or DLPack) or a NumPy array{hint}"
            )
        if arg.dtype is not want:
            got = arg.dtype.name if arg.dtype is not None else _foreign_dtype(value)
            raise fail(
                f"got {a_or_an(got)} array ({type_name(value)}); cast with {cast_to(name, value, arg.origin, want)} "
                f"or declare the parameter with cf.{want.name if arg.dtype is None else arg.dtype.name}"
            )
        if ndim >= 0 and len(arg.shape) != ndim:
            raise fail(f"got {a_or_an(f'{len(arg.shape)}-d')} array of shape {arg.shape}; reshape it to {ndim}-d")
        if not arg.contiguous:
            raise fail(
                f"got a non-C-contiguous array ({type_name(value)}, shape {arg.shape}); pass a contiguous "
                f"copy ({name}.copy(), numpy.ascontiguousarray({name}) or tensor.contiguous())"
            )
        if arg.readonly and writes:
            raise fail(f"got a read-only array ({type_name(value)}); the kernel writes to it, pass a writable one")
        if host and arg.device != HOST:
            raise fail(f"got {a_or_an(arg.origin)} array in GPU memory, but the launch runs on the CPU; pass host memory: "
                       f"{_TO_HOST.get(arg.origin, 'copy it to a NumPy array first')}")  # fmt: skip
        if not host and arg.device == HOST and arg.origin != "numpy":  # host NumPy arrays are staged; nothing else is
            raise fail(f"got a {arg.origin} array in host memory; {_to_device(arg.origin)}")
        return arg

    return check


_TO_HOST = {"cupy": "x.get() (or cupy.asnumpy(x))", "torch": "x.cpu()", "cuforge": "x.to_numpy()"}


def _to_device(origin: str) -> str:
    """The fix for host memory (not NumPy's) given to a GPU launch: the GPU where there is
    one, else the CPU, which takes it in place (the error path only: it may start CUDA)."""
    if _cuda.gpu_available():
        move = ".cuda()" if origin == "torch" else "cf.to_device(x)"
        return f"move it to the GPU first ({move}), or run the kernel on the CPU: pass device='cpu'"
    return f"no GPU can be used here, and the CPU takes it in place: {_cuda.ON_CPU}"


def _foreign_dtype(value: Any) -> str:
    dt = getattr(value, "dtype", None)
    return str(dt) if dt is not None else "unsupported"


# ---------------------------------------------------------------- scalars


def _round_trip(code: str, value: float) -> float:
    return struct.unpack(code, struct.pack(code, value))[0]  # type: ignore[no-any-return]


def bf16_bits(value: float) -> int:
    """IEEE round-to-nearest-even of a float to bfloat16, as its 16 bits (inf on overflow)."""
    if value != value:
        return 0x7FC0
    try:
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
    except OverflowError:
        return 0x7F80 if value > 0 else 0xFF80
    bits += 0x7FFF + ((bits >> 16) & 1)
    return (bits >> 16) & 0xFFFF  # type: ignore[no-any-return]


def _bf16_value(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]  # type: ignore[no-any-return]


def scalar_checker(kernel: str, spec: ParamSpec) -> Callable[..., Any]:
    """A function converting one scalar argument to the value packed for its C type."""
    dt = spec.dtype
    name = spec.name
    if isinstance(dt, VectorDType):
        return _vector_checker(kernel, spec)

    def fail(got: Any, fix: str, cls: type[Exception] = ArgumentTypeError) -> Exception:
        return cls(f"{kernel}: argument '{name}' expects {dt.name}, got {describe(got)}; {fix}")

    if dt.is_integer:
        lo, hi = spec.lo, spec.hi

        def check_int(v: Any, _: Any = None) -> int:
            if type(v) is int and lo <= v <= hi:
                return v
            try:
                iv = operator.index(v)
            except TypeError:
                if isinstance(v, (float, complex)) or numpy_scalar(v, "fc"):
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
            if numpy_scalar(v, "b"):
                return bool(v)
            if type(v) is int and v in (0, 1):
                return bool(v)
            raise fail(v, "pass True or False")

        return check_bool

    if dt.is_float:
        return _float_checker(spec, fail)
    return _complex_checker(spec, fail)


def _vector_checker(kernel: str, spec: ParamSpec) -> Callable[..., bytes]:
    """A vector by value (``uchar4 colors``): a tuple or list of its lanes, each checked as a
    scalar of the element type, or a NumPy array of shape ``(lanes,)`` of that dtype; packed
    lane after lane into the C struct's bytes (CUDA's vector types have no padding)."""
    vec = spec.dtype
    assert isinstance(vec, VectorDType)
    el = vec.element
    lo, hi = el.range or (0, 0)
    lane = scalar_checker(kernel, spec._replace(type=el, dtype=el, pack=el.pack, lo=lo, hi=hi, limit=el.max_finite or 0.0))
    pack = struct.Struct("=" + el.pack * vec.lanes).pack
    size = vec.itemsize

    def fail(got: Any) -> Exception:
        return ArgumentTypeError(
            f"{kernel}: argument '{spec.name}' expects {vec.name} ({vec.cpp}), got {describe(got)}; pass a tuple of "
            f"{vec.lanes} {el.name} values or a numpy array of shape ({vec.lanes},) and dtype {el.name}"
        )

    def check_vector(v: Any, _: Any = None) -> bytes:
        if v.__class__ in (tuple, list):
            if len(v) != vec.lanes:
                raise fail(v)
            return pack(*[lane(x) for x in v]).ljust(size, b"\0")
        shape, dtype = getattr(v, "shape", None), getattr(v, "dtype", None)
        dtype_name: Any = getattr(dtype, "name", None)
        if shape == (vec.lanes,) and dtype_name == el.name and getattr(dtype, "isnative", False) and hasattr(v, "tobytes"):
            return v.tobytes().ljust(size, b"\0")  # type: ignore[no-any-return]
        raise fail(v)

    return check_vector


def _complex_checker(spec: ParamSpec, fail: Callable[..., Exception]) -> Callable[..., complex]:
    single = spec.dtype.name == "complex64"
    limit = float32.max_finite or 0.0

    def check_complex(v: Any, _: Any = None) -> complex:
        if isinstance(v, (str, bytes)) or v is None or isinstance(v, bool):
            raise fail(v, "pass a Python complex or numpy.complex value")
        try:
            c = complex(v)
        except TypeError:
            raise fail(v, "pass a Python complex or numpy.complex value") from None
        if (isinstance(v, int) or numpy_scalar(v)) and single:
            if _round_trip("f", c.real) != c.real or _round_trip("f", c.imag) != c.imag:
                raise fail(v, "the value is not exact in complex64; convert with numpy.complex64(...) first", ArgumentError)
        elif single and max(abs(c.real), abs(c.imag)) > limit and math.isfinite(abs(c)):
            raise fail(v, "the value overflows complex64", ArgumentError)
        return c

    return check_complex


def _float_checker(spec: ParamSpec, fail: Callable[..., Exception]) -> Callable[..., Any]:
    dt = spec.dtype
    is_bf16 = dt is bfloat16
    code = "f" if is_bf16 else dt.pack
    limit = spec.limit

    def slow(v: Any, _: Any = None) -> Any:
        if isinstance(v, (str, bytes, complex, bool)) or v is None or numpy_scalar(v, "cb"):
            raise fail(v, f"pass a Python float or numpy.{dt.name}")
        if not is_bf16 and numpy_scalar(v) and v.dtype.name == dt.name:
            return float(v)
        integral = isinstance(v, int) or numpy_scalar(v, "iu")
        if integral or numpy_scalar(v, "f"):
            try:
                f = float(v)
                fits = abs(f) <= limit or not math.isfinite(f)
                exact = fits and ((_bf16_value(bf16_bits(f)) == f) if is_bf16 else (_round_trip(code, f) == f))
            except OverflowError:  # an int past every float
                fits = exact = False
            if not fits:
                raise fail(v, f"the value overflows {dt.name} (largest finite {limit:g})", ArgumentError)
            if not exact or (integral and int(f) != int(v)):
                raise fail(v, f"the value is not exact in {dt.name}; convert it explicitly first", ArgumentError)
            return bf16_bits(f) if is_bf16 else f
        if type(v) is float:
            if math.isfinite(v):
                try:
                    packed = _round_trip(code, v)
                except (OverflowError, struct.error):
                    packed = math.inf
                if is_bf16 and math.isinf(_bf16_value(bf16_bits(v))):
                    packed = math.inf
                if math.isinf(packed):
                    raise fail(v, f"the value overflows {dt.name} (largest finite {limit:g})", ArgumentError)
            return bf16_bits(v) if is_bf16 else v
        raise fail(v, f"pass a Python float or numpy.{dt.name}")

    if is_bf16:
        return slow

    def check_float(v: Any, _: Any = None) -> Any:
        if type(v) is float and -limit <= v <= limit:
            return v
        return slow(v)

    return check_float


def scalar_to_bytes(check: Callable[..., Any], spec: ParamSpec) -> Callable[[Any], bytes]:
    """The C launcher's way to take a scalar it does not convert itself (a NumPy scalar, a
    float16, a value out of its fast range): the parameter's checker (the one the general path
    calls), then its packing."""
    pack = struct.Struct("=" + spec.pack).pack
    if spec.dtype.is_complex:

        def complex_to_bytes(v: Any) -> bytes:
            c = check(v)
            return pack(c.real, c.imag)

        return complex_to_bytes
    return lambda v: pack(check(v))


def _as_written(t: ArrayType) -> str:
    """An array parameter's type as a user writes it in a class: ``cf.In[cf.float32, 2]``,
    ``cf.Array[cf.vector(cf.float32, 4)]``."""
    rank = f", {t.ndim}" if t.ndim is not None else ""
    return f"cf.{INTENTS[t.intent]}[{t.dtype!r}{rank}]".replace("cuforge.", "cf.")
