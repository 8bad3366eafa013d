"""Hypothesis strategies for launch calls, and the two launch paths run on the same call.

Used by tests/unit/test_launch_paths.py (fake arrays, no GPU) and tests/gpu/ (CuPy and
PyTorch arrays). ``both`` runs the C launcher's ``check_and_pack`` and the general path's on
one call and returns what each would launch, in one form: (packed parameter bytes, grid,
block, shared_mem, stream or None, the arrays' devices, origin), None for nothing to launch,
or "declined".
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import strategies as st

import cuforge as cf
from cuforge._declare.dtypes import SCALAR_TYPES
from cuforge._launch import general as _launch
from cuforge._runtime.device_array import DeviceArray

SCALARS = list(SCALAR_TYPES)


@cf.kernel
class ByArrays:
    """One scalar of every dtype (a family instantiation each); the grid from the largest array."""

    T = cf.typeparam(*SCALARS)
    v: T
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32, 1]
    m: cf.Array[cf.int32, 2]
    n: cf.int32
    body = ";"


@cf.kernel
class ByParam:
    T = cf.typeparam(*SCALARS)
    v: T
    x: cf.In[cf.float64]
    n: cf.uint64
    grid = "n"
    body = ";"


@cf.kernel
class ByFunction:
    T = cf.typeparam(*SCALARS)
    v: T
    x: cf.Array[cf.int8]
    n: cf.int64
    block = 128
    body = ";"

    @staticmethod
    def grid(n, block):
        # (int: n may come as any integer type the check accepts for an int64, np.int8(0) among
        # them, and NumPy 2 keeps np.int8(0) // 128 an int8, which overflows)
        return (int(n) // block[0] + 1, 2)


@cf.kernel
class ByOptional:
    """Optional arrays: None (or leaving one out) is a null pointer, and the grid skips it."""

    T = cf.typeparam(*SCALARS)
    v: T
    x: cf.Optional[cf.In[cf.float32]]
    y: cf.Optional[cf.Out[cf.float64, 1]]
    body = ";"


@cf.kernel
class ByBlocks:
    """cf.blocks: the grid is an integer parameter's value, in blocks (a uint64 reaches past the
    grid limit and past 2**63)."""

    T = cf.typeparam(*SCALARS)
    v: T
    x: cf.In[cf.float32]
    nb: cf.uint64
    grid = cf.blocks("nb")
    body = ";"


@cf.kernel
class ByBlocks16:
    """cf.blocks on an int16, whose good values are mostly in range (and 0 or less is refused)."""

    T = cf.typeparam(*SCALARS)
    v: T
    nb: cf.int16
    grid = cf.blocks("nb")
    body = ";"


KERNELS = [fam[dt] for fam in (ByArrays, ByParam, ByFunction, ByOptional, ByBlocks, ByBlocks16) for dt in SCALARS]


class FakeCAI:
    """Device memory described only by __cuda_array_interface__ (no GPU needed)."""

    def __init__(self, typestr: str, shape: tuple[int, ...], strides: Any, readonly: bool, ptr: int):
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "data": (ptr, readonly), "strides": strides, "version": 3,
        }  # fmt: skip


def fake_device_array(shape: tuple[int, ...], dtype: cf.DType, device: int = 0) -> DeviceArray:
    """A DeviceArray record without memory: enough for checks that never reach the GPU."""
    d = object.__new__(DeviceArray)
    d.ptr, d.shape, d.dtype, d.device_id = 0x7F0000000000, shape, dtype, device
    d.size = math.prod(shape)
    d.nbytes = d.size * dtype.itemsize
    return d


def _around(lo: int, hi: int) -> list[int]:
    return [lo - 1, lo, lo + 1, -1, 0, 1, hi - 1, hi, hi + 1]


INT_EDGES = sorted({v for t in SCALARS if t.range for v in _around(*t.range)})
FLOAT_EDGES = [math.nan, math.inf, -math.inf, 0.0, -0.0, 0.5, 0.1, 1e-45, 5e-324, 2.0**24 + 1]
for _t in SCALARS:
    if _t.max_finite:
        FLOAT_EDGES += [_t.max_finite, -_t.max_finite, math.nextafter(_t.max_finite, math.inf), _t.max_finite * 1.0000001]
NUMPY_TYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
               np.float16, np.float32, np.float64, np.complex64, np.complex128]  # fmt: skip


def _numpy_scalar(draw: Any) -> Any:
    tp = draw(st.sampled_from(NUMPY_TYPES))
    kind = np.dtype(tp).kind
    if kind == "b":
        return tp(draw(st.booleans()))
    if kind in "iu":
        info = np.iinfo(tp)
        return tp(draw(st.integers(int(info.min), int(info.max))))
    value = draw(st.one_of(st.sampled_from(FLOAT_EDGES), st.floats(width=32)))
    with np.errstate(over="ignore"):
        return tp(value)


@st.composite
def scalars(draw: Any) -> Any:
    kind = draw(st.sampled_from(["int", "float", "bool", "numpy", "complex", "wrong"]))
    if kind == "int":
        return draw(st.one_of(st.sampled_from(INT_EDGES), st.integers(-(2**65), 2**65)))
    if kind == "float":
        return draw(st.one_of(st.sampled_from(FLOAT_EDGES), st.floats(), st.floats(width=16)))
    if kind == "bool":
        return draw(st.booleans())
    if kind == "numpy":
        return _numpy_scalar(draw)
    if kind == "complex":
        return draw(st.complex_numbers(allow_nan=True, allow_infinity=True))
    return draw(st.sampled_from(["8", None, b"x", [1], object(), 1.5j, np.ones(2)]))


ARRAY_DTYPES = ["<f4", "<f8", "<i4", "<i1", "<f2", "|b1", "<c8"]


@st.composite
def fake_arrays(draw: Any) -> Any:
    """A fake device array (CAI or DeviceArray), a host NumPy array, or something else."""
    kind = draw(st.sampled_from(["cai", "own", "numpy", "not"]))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=1, max_size=3)))
    if kind == "cai":
        typestr = draw(st.sampled_from(ARRAY_DTYPES))
        item = np.dtype(typestr).itemsize
        strides = draw(st.sampled_from([None, "c", "f"]))
        if strides == "c":
            strides = tuple(int(np.prod(shape[i + 1 :])) * item for i in range(len(shape)))
        elif strides == "f":
            strides = tuple(int(np.prod(shape[:i])) * item for i in range(len(shape)))
        return FakeCAI(typestr, shape, strides, draw(st.booleans()), draw(st.sampled_from([0, 0x7F0000001000])))
    if kind == "own":
        dtype = draw(st.sampled_from([cf.float32, cf.float64, cf.int32, cf.int8, cf.float16]))
        return fake_device_array(shape, dtype, draw(st.sampled_from([0, 1])))
    if kind == "numpy":
        arr = np.zeros(shape, dtype=draw(st.sampled_from(ARRAY_DTYPES)))
        if draw(st.booleans()):
            arr.flags.writeable = False
        return arr
    return draw(scalars())


DIMS = st.one_of(
    st.none(), st.integers(-1, 2**31), st.tuples(st.integers(0, 70000), st.integers(0, 70000)),
    st.lists(st.integers(1, 4), min_size=1, max_size=4), st.sampled_from([1.5, np.int32(4), (np.int64(2), 3), True]),
)  # fmt: skip


class StreamLike:
    def __init__(self, handle: Any):
        self.handle = handle

    def __cuda_stream__(self) -> tuple[int, Any]:
        return (0, self.handle)


@st.composite
def options(draw: Any) -> tuple[Any, Any, Any, Any]:
    grid = draw(DIMS)
    block = draw(st.one_of(st.none(), st.sampled_from([32, (16, 16), 1024, 1025, (32, 32, 2), [64]]), DIMS))
    shared = draw(st.one_of(st.just(0), st.integers(-1, 2**33), st.sampled_from([1.0, True, np.int32(8)])))
    stream = draw(st.one_of(st.none(), st.integers(-1, 2**65), st.builds(StreamLike, st.integers(-5, 2**64)),
                            st.sampled_from(["default", 1.0])))  # fmt: skip
    return grid, block, shared, stream


GOOD_OPTIONS = st.tuples(
    st.one_of(st.none(), st.sampled_from([1, (4,), (2, 3), 70000])),
    st.one_of(st.none(), st.sampled_from([32, (16, 16), 1024, (8, 8, 4)])),
    st.sampled_from([0, 0, 1024, 49152]),
    st.one_of(st.none(), st.sampled_from([0, 7, 2**63]), st.builds(StreamLike, st.integers(0, 2**64 - 1))),
)


@st.composite
def calls(draw: Any, arrays: Any = None) -> tuple[Any, ...]:
    """(kernel, args, kwargs, grid, block, shared_mem, stream): half of them valid but for at
    most one argument, the rest anything. ``arrays``: a strategy of device arrays to mix in."""
    good = (lambda spec: st.one_of(arrays, good_array(spec))) if arrays is not None else good_array
    arrays = arrays if arrays is not None else fake_arrays()
    kernel = draw(st.sampled_from(KERNELS))
    valid = draw(st.booleans())
    odd = draw(st.integers(-1, len(kernel._plan.specs) - 1)) if valid else None  # the one argument drawn freely
    values = []
    for spec in kernel._plan.specs:
        free = not valid or spec.index == odd
        if spec.is_array:
            values.append(draw(st.one_of(arrays, good_array(spec), fake_arrays()) if free else good(spec)))
        else:
            values.append(draw(st.one_of(scalars(), good_scalar(spec)) if free else good_scalar(spec)))
    split = draw(st.integers(0, len(values)))
    args, kwargs = tuple(values[:split]), {s.name: v for s, v in zip(kernel._plan.specs[split:], values[split:])}
    mess = "none" if valid else draw(st.sampled_from(["none"] * 6 + ["drop", "extra", "twice"]))
    if mess == "drop" and kwargs:
        kwargs.pop(next(iter(kwargs)))
    elif mess == "extra":
        kwargs["nope"] = 1
    elif mess == "twice" and args:
        kwargs[kernel._plan.specs[0].name] = args[0]
    return (kernel, args, kwargs, *draw(GOOD_OPTIONS if valid else options()))


@st.composite
def good_scalar(draw: Any, spec: Any) -> Any:
    dt = spec.dtype
    if dt.range:
        return draw(st.integers(*dt.range))
    if dt.kind == "b":
        return draw(st.booleans())
    if dt.is_float:
        return draw(st.floats(-1e4, 1e4, width=16))
    return draw(st.complex_numbers(max_magnitude=1e3))


@st.composite
def good_array(draw: Any, spec: Any) -> Any:
    if spec.optional and draw(st.booleans()):
        return None
    ndim = spec.ndim if spec.ndim >= 0 else draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(0, 9), min_size=ndim, max_size=ndim)))
    return fake_device_array(shape, spec.dtype)


def _origin(arrays: list[Any]) -> int:
    for _, arg in arrays:
        if arg.origin in ("cupy", "torch"):
            return 1 if arg.origin == "cupy" else 2
    return 0


def both(kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any, block: Any, shared: Any,
         stream: Any) -> tuple[Any, Any]:  # fmt: skip
    """(the C launcher's answer, the general path's answer) for one call (see the module docstring)."""
    fast = kernel._fast.check_and_pack(args, kwargs, grid, block, shared, stream)
    try:
        c = _launch.check_and_pack(kernel._plan, args, kwargs, grid, block, shared, stream)
    except cf.CuforgeError:
        general: Any = "declined"
    else:
        general = None if c is None else (
            kernel._plan.packer.to_bytes(c.values), c.grid, c.block, c.shared_mem, c.stream,
            tuple(arg.device for _, arg in c.arrays), _origin(c.arrays),
        )  # fmt: skip
    return ("declined" if fast is False else fast), general


def show(answer: Any) -> str:
    """An answer with its bytes unpacked as hex, for failure messages."""
    if isinstance(answer, tuple):
        return f"{answer[0].hex()} {answer[1:]}"
    return repr(answer)
