"""Launch argument checks: every one runs before any CUDA call, so all are tested here."""

from __future__ import annotations

import ctypes
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cuforge as cf
from cuforge._declare.signature import Param, Signature, param_specs
from cuforge._launch import general as _launch
from cuforge._launch.checks import scalar_checker
from cuforge._runtime.arrays import array_arg

from ..conftest import gpu_missing_reason

f32 = np.float32
NO_GPU = pytest.mark.skipif(gpu_missing_reason() is None, reason="a GPU is present, so the launch would run")


class CudaArray:
    """An object speaking the CUDA Array Interface (v3), as Numba's and others' arrays do."""

    def __init__(self, shape, typestr, strides=None, readonly=False, ptr=0x7F0000000000):
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "data": (ptr, readonly), "strides": strides, "version": 3,
        }  # fmt: skip


def ok_args(n=8):
    return (2.0, np.ones(n, f32), np.ones(n, f32), n)


@NO_GPU
def test_valid_arguments_reach_the_device_check(saxpy):
    with pytest.raises(cf.NoDeviceError, match=r"no CUDA device is available"):
        saxpy(*ok_args())


@pytest.mark.parametrize(
    "x, match",
    [
        (
            np.ones(8),
            r"^Saxpy: argument 'x' expects In\[float32\], got a float64 array \(numpy.ndarray\); cast with x.astype\(numpy.float32\)",
        ),
        (2.0, r"^Saxpy: argument 'x' expects In\[float32\], got float 2.0; pass a device array \(CuPy, PyTorch"),
        ([1.0, 2.0], r"got a list; pass a device array"),
        (np.ones((4, 4), f32)[:, 1], r"got a non-C-contiguous array \(numpy.ndarray, shape \(4,\)\); pass a contiguous copy"),
        (np.ones(8, ">f4"), r"got a >f4 array \(numpy.ndarray\); cast with x.astype\(numpy.float32\)"),
        (CudaArray((8,), "<f8"), r"got a float64 array \(.*CudaArray\)"),
        (np.ones(8, np.int32), r"got an int32 array \(numpy.ndarray\); cast with x.astype\(numpy.float32\)"),
        (np.ones(8, np.uint8), r"got a uint8 array \(numpy.ndarray\)"),
        (np.ones(8, object), r"got an object array \(numpy.ndarray\)"),
        (object(), r"got an object; pass a device array"),
        (CudaArray((8,), "<f4", strides=(8,)), r"got a non-C-contiguous array"),
    ],
)
def test_array_errors(saxpy, x, match):
    with pytest.raises(cf.ArgumentTypeError, match=match):
        saxpy(2.0, x, np.ones(8, f32), 8)


def test_float64_for_x_is_caught_before_any_cuda_call():
    """The issue's promise, in a fresh process: the error comes and cuda.core was never imported."""
    code = textwrap.dedent(
        """
        import sys, numpy as np, cuforge as cf
        @cf.kernel
        class Saxpy:
            a: cf.float32
            x: cf.In[cf.float32]
            y: cf.Array[cf.float32]
            n: cf.int64
            body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i];"
        try:
            Saxpy(2.0, np.ones(16), np.ones(16, np.float32), 16)
        except cf.ArgumentTypeError as e:
            print("ERR", e)
        print("cuda.core imported:", "cuda.core" in sys.modules, "driver:", "cuda.bindings.driver" in sys.modules)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "ERR Saxpy: argument 'x' expects In[float32], got a float64 array" in out
    assert "cuda.core imported: False driver: False" in out


def test_read_only_arrays_cannot_be_written(saxpy):
    y = np.ones(8, f32)
    y.flags.writeable = False
    with pytest.raises(cf.ArgumentTypeError, match=r"argument 'y' expects Array\[float32\], got a read-only array"):
        saxpy(2.0, np.ones(8, f32), y, 8)
    with pytest.raises(cf.ArgumentTypeError, match=r"got a read-only array \(.*CudaArray\)"):
        saxpy(2.0, np.ones(8, f32), CudaArray((8,), "<f4", readonly=True), 8)


def test_declared_rank_is_checked():
    @cf.kernel
    class Mat:
        m: cf.Array[cf.float32, 2]
        body = "m[0] = 0;"

    with pytest.raises(
        cf.ArgumentTypeError,
        match=r"Mat: argument 'm' expects Array\[float32, 2\], got a 1-d array of shape \(4,\); reshape it to 2-d",
    ):
        Mat(np.ones(4, f32))
    with pytest.raises(cf.ArgumentTypeError, match=r"got an 8-d array of shape \(1, 1, 1, 1, 1, 1, 1, 1\)"):
        Mat(np.ones((1,) * 8, f32))


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        ((2.0,), {}, r"^Saxpy: missing arguments 'x', 'y', 'n'; the signature is Saxpy\(a: float32, x: In\[float32\]"),
        ((*ok_args(), 5), {}, r"^Saxpy: takes 4 arguments \(a, x, y, n\), got 5 positional"),
        (ok_args(), {"z": 1}, r"^Saxpy: unexpected argument 'z'; the parameters are a, x, y, n \(launch options: grid, block"),
        (ok_args()[:3], {"a": 1.0}, r"^Saxpy: argument 'a' given twice"),
    ],
)
def test_argument_count_and_names(saxpy, args, kwargs, match):
    with pytest.raises(cf.ArgumentError, match=match):
        saxpy(*args, **kwargs)


@NO_GPU
def test_keyword_arguments_bind_by_name(saxpy):
    a, x, y, n = ok_args()
    with pytest.raises(cf.NoDeviceError):
        saxpy(n=n, y=y, x=x, a=a)


@pytest.mark.parametrize(
    "a, n, cls, match",
    [
        ("2", 8, cf.ArgumentTypeError, r"argument 'a' expects float32, got str '2'; pass a Python float or numpy.float32"),
        (None, 8, cf.ArgumentTypeError, r"argument 'a' expects float32, got NoneType None"),
        (True, 8, cf.ArgumentTypeError, r"argument 'a' expects float32, got bool True"),
        (1e39, 8, cf.ArgumentError, r"argument 'a' expects float32, got float 1e\+39; the value overflows float32"),
        (
            np.float64(0.1),
            8,
            cf.ArgumentError,
            r"got numpy.float64 np.float64\(0.1\); the value is not exact in float32; convert it explicitly",
        ),
        (2**24 + 1, 8, cf.ArgumentError, r"got int 16777217; the value is not exact in float32"),
        (
            2.0,
            8.0,
            cf.ArgumentTypeError,
            r"argument 'n' expects int64, got float 8.0; pass an int \(int\(8.0\) if truncation is intended\)",
        ),
        (2.0, 2**63, cf.ArgumentError, r"argument 'n' expects int64, got int 9223372036854775808; int64 holds"),
        (2.0, np.float32(3), cf.ArgumentTypeError, r"argument 'n' expects int64, got a numpy.float32; pass an int"),
        (2.0, "8", cf.ArgumentTypeError, r"argument 'n' expects int64, got str '8'; pass a Python int or numpy.int64"),
    ],
)
def test_scalar_errors(saxpy, a, n, cls, match):
    with pytest.raises(cls, match=match):
        saxpy(a, np.ones(8, f32), np.ones(8, f32), n)


def _checker(dtype):
    (spec,) = param_specs(Signature((Param("v", 0, dtype),)))
    return scalar_checker("K", spec)


@pytest.mark.parametrize(
    "dtype, value, expected",
    [
        (cf.int32, 2**31 - 1, 2**31 - 1),
        (cf.int32, -(2**31), -(2**31)),
        (cf.int32, np.int64(5), 5),
        (cf.int32, True, 1),
        (cf.uint8, np.uint8(255), 255),
        (cf.uint64, 2**64 - 1, 2**64 - 1),
        (cf.float32, 2**24, 16777216.0),
        (cf.float32, np.float64(0.5), 0.5),
        (cf.float32, np.float32(0.1), float(np.float32(0.1))),
        (cf.float32, float("inf"), float("inf")),
        (cf.float64, np.float32(0.1), float(np.float32(0.1))),
        (cf.float16, 65504.0, 65504.0),
        (cf.float16, np.float16(1.5), 1.5),
        (cf.bfloat16, 1.0, 0x3F80),
        (cf.bfloat16, -2.0, 0xC000),
        (cf.bfloat16, 1.00390625, 0x3F80),  # ties to even
        (cf.bool_, np.bool_(True), True),
        (cf.bool_, 0, False),
        (cf.complex64, 1 + 2j, 1 + 2j),
        (cf.complex128, np.complex64(1 + 2j), 1 + 2j),
        (cf.complex64, 3, 3 + 0j),
    ],
)
def test_scalar_conversions(dtype, value, expected):
    got = _checker(dtype)(value)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(
    "dtype, value, cls, match",
    [
        (cf.int8, 128, cf.ArgumentError, r"int8 holds -128..127"),
        (cf.uint32, -1, cf.ArgumentError, r"uint32 holds 0..4294967295"),
        (cf.int32, np.int64(2**40), cf.ArgumentError, r"int32 holds"),
        (cf.int16, 1.5, cf.ArgumentTypeError, r"pass an int"),
        (cf.float16, 70000.0, cf.ArgumentError, r"overflows float16 \(largest finite 65504\)"),
        (cf.float16, np.float32(0.1), cf.ArgumentError, r"not exact in float16"),
        (cf.bfloat16, 1e39, cf.ArgumentError, r"overflows bfloat16"),
        (cf.bfloat16, np.float32(1.001), cf.ArgumentError, r"not exact in bfloat16"),
        (cf.bool_, 2, cf.ArgumentTypeError, r"int 2; pass True or False"),
        (cf.complex64, np.complex128(0.1 + 0j), cf.ArgumentError, r"not exact in complex64"),
        (cf.complex64, "1j", cf.ArgumentTypeError, r"pass a Python complex"),
        (cf.float64, 1 + 1j, cf.ArgumentTypeError, r"complex \(1\+1j\); pass a Python float"),
    ],
)
def test_scalar_conversion_errors(dtype, value, cls, match):
    with pytest.raises(cls, match=rf"^K: argument 'v' expects {dtype.name}, got .*{match}"):
        _checker(dtype)(value)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"grid": 0}, r"Saxpy: grid\[0\] expects an int from 1 to 2147483647, got 0"),
        ({"grid": (1, 70000)}, r"grid\[1\] expects an int from 1 to 65535"),
        ({"block": (32, 32, 2)}, r"Saxpy: block=\(32, 32, 2\) has 2048 threads; a block holds at most 1024"),
        ({"block": "256"}, r"block expects an int or a tuple of 1 to 3 ints, got str '256'"),
        ({"shared_mem": -1}, r"shared_mem expects an int from 0 to 4294967295 \(bytes\), got -1"),
    ],
)
def test_launch_configuration_errors(saxpy, kw, match):
    with pytest.raises(cf.ArgumentError, match=match):
        saxpy(*ok_args(), **kw)


def test_the_last_grid_and_block_are_kept_by_identity_only(saxpy):
    grid, block = (2,), (128,)
    first = _launch.check_and_pack(saxpy._plan, ok_args(), {}, grid, block, 0, None)
    again = _launch.check_and_pack(saxpy._plan, ok_args(), {}, grid, block, 0, None)
    assert (first.grid, first.block) == ((2, 1, 1), (128, 1, 1)) and again.block is first.block
    # Equal to the kept objects, but not ints: still refused (a memo by value would let them through).
    with pytest.raises(cf.ArgumentError, match=r"Saxpy: block\[0\] expects an int from 1 to 1024, got 128.0"):
        _launch.check_and_pack(saxpy._plan, ok_args(), {}, grid, (128.0,), 0, None)
    with pytest.raises(cf.ArgumentError, match=r"Saxpy: grid\[0\] expects an int from 1 to 2147483647, got True"):
        _launch.check_and_pack(saxpy._plan, ok_args(), {}, (True,), block, 0, None)
    assert _launch.check_and_pack(saxpy._plan, ok_args(), {}, 3, 64, 0, None)[3:5] == ((3, 1, 1), (64, 1, 1))


def _reduce(grid):
    """The CUDA sample's reduce<<<numOfBlocks, 512>>>, its grid rule given as ``grid``."""
    ns = {"__annotations__": {"x": cf.In[cf.float32], "partial": cf.Out[cf.float32], "numOfBlocks": cf.int32},
          "block": 512, "grid": grid, "body": "partial[blockIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];"}  # fmt: skip
    return cf.kernel(type("Reduce", (), ns))


@pytest.mark.parametrize(
    "rule, grid",
    [
        (cf.blocks("numOfBlocks"), (512, 1, 1)),  # that many blocks, as CUDA's <<<numOfBlocks, 512>>>
        (cf.covering("numOfBlocks"), (1, 1, 1)),  # enough 512-thread blocks to cover 512 threads
        ("numOfBlocks", (1, 1, 1)),  # a plain string means covering
        (cf.covering("x"), (513, 1, 1)),  # an array: one thread per element
    ],
)
def test_a_grid_rule_says_what_it_counts(rule, grid):
    k = _reduce(rule)
    args = (CudaArray((512 * 513,), "<f4"), CudaArray((512,), "<f4"), 512)
    assert k._plan.grid(args, [(0, array_arg(args[0]))], (512, 1, 1)) == grid
    assert _launch.check_and_pack(k._plan, args, {}, None, None, 0, None).grid == grid
    if k._fast is not None:  # the C launcher computes it the same way
        assert k._fast.check_and_pack(args, {}, None, None, 0, None)[1] == grid


def test_grid_rule_mistakes():
    with pytest.raises(cf.DeclarationError, match=r"Reduce: grid = cf.blocks\('x'\) must name an integer parameter \(the "
                                                  r"number of blocks\), not In\[float32\]; to cover an array's elements "
                                                  r"use cf.covering\('x'\)"):  # fmt: skip
        _reduce(cf.blocks("x"))
    with pytest.raises(cf.DeclarationError, match=r"Reduce: grid = cf.covering\('m'\) names no parameter; the parameters"):
        _reduce(cf.covering("m"))
    with pytest.raises(cf.DeclarationError, match=r"cf.blocks\(\) takes a parameter's name \(a str\), got 3"):
        cf.blocks(3)
    k = _reduce(cf.blocks("numOfBlocks"))
    with pytest.raises(cf.ArgumentError, match=r"Reduce: grid = cf.blocks\('numOfBlocks'\) launches numOfBlocks blocks, "
                                               r"which must be from 1 to 2147483647; got numOfBlocks=0; pass a count >= 1, "
                                               r"or grid= to choose the grid at launch"):  # fmt: skip
        _launch.check_and_pack(k._plan, (CudaArray((8,), "<f4"), CudaArray((8,), "<f4"), 0), {}, None, None, 0, None)


def test_stream_errors(saxpy):
    with pytest.raises(cf.ArgumentTypeError, match=r"Saxpy: stream expects a stream \(cuda.core, CuPy, PyTorch"):
        saxpy(*ok_args(), stream="default")


def test_stream_handles_from_protocols():
    class Proto:
        def __cuda_stream__(self):
            return (0, 1234)

    class TorchLike:
        cuda_stream = 99

    assert _launch.stream_handle(Proto(), "K") == 1234
    assert _launch.stream_handle(TorchLike(), "K") == 99
    assert _launch.stream_handle(7, "K") == 7


@NO_GPU
def test_empty_arrays_launch_nothing(saxpy):
    # The default rule sizes the grid by the largest array: zero elements, no launch, no device needed.
    assert saxpy(2.0, np.ones(0, f32), np.ones(0, f32), 0) is None


def test_packer_follows_the_c_abi():
    sig = Signature(tuple(Param(n, i, t) for i, (n, t) in enumerate(
        [("b", cf.bool_), ("d", cf.float64), ("c", cf.int8), ("z", cf.complex128), ("p", cf.In[cf.float32]), ("h", cf.float16)]
    )))  # fmt: skip
    assert sig.layout() == ((0, 1), (8, 8), (16, 1), (32, 16), (48, 8), (56, 2))
    packer = _launch.Packer(param_specs(sig))
    addr = packer.pack([True, 1.5, -3, 1 + 2j, 0xABCDEF, 1.0])
    buf, _, addr2 = packer._tls.bufs
    assert addr == addr2
    raw = bytes(buf)[:58]
    assert raw == packer.to_bytes([True, 1.5, -3, 1 + 2j, 0xABCDEF, 1.0])
    assert raw[0] == 1 and struct.unpack_from("=d", raw, 8)[0] == 1.5 and struct.unpack_from("=b", raw, 16)[0] == -3
    assert struct.unpack_from("=dd", raw, 32) == (1.0, 2.0) and struct.unpack_from("=Q", raw, 48)[0] == 0xABCDEF
    assert struct.unpack_from("=e", raw, 56)[0] == 1.0
    ptrs = (ctypes.c_void_p * 6).from_address(addr)
    assert [p - ctypes.addressof(buf) for p in ptrs] == [0, 8, 16, 32, 48, 56]


@cf.kernel
class LayerNorm:
    """llm.c's layernorm: ``mean`` and ``rstd`` are written only where the caller wants them."""

    out: cf.Out[cf.float32]
    mean: cf.Optional[cf.Out[cf.float32]]
    rstd: cf.Optional[cf.Out[cf.float32]]
    inp: cf.In[cf.float32]
    n: cf.int32
    body = "if (mean != nullptr) mean[0] = 0.0f; if (rstd != nullptr) rstd[0] = 1.0f;"


def test_optional_array_packs_a_null_pointer():
    out, inp, mean = np.ones(8, f32), np.ones(8, f32), np.ones(2, f32)
    c = _launch.check_and_pack(LayerNorm._plan, (out, None, None, inp, 8), {}, None, None, 0, None)
    assert c.values[1:3] == [0, 0]
    assert [i for i, _ in c.arrays] == [0, 3]  # None is no array: no device, nothing to stage
    assert c.grid == (1, 1, 1)
    c = _launch.check_and_pack(LayerNorm._plan, (out, mean, None, inp, 8), {}, None, None, 0, None)
    assert c.values[1] == mean.ctypes.data and [i for i, _ in c.arrays] == [0, 1, 3]


def test_optional_array_may_be_left_out():
    out, inp = np.ones(8, f32), np.ones(8, f32)
    c = _launch.check_and_pack(LayerNorm._plan, (out,), {"inp": inp, "n": 8}, None, None, 0, None)
    assert c.values[1:3] == [0, 0]


def test_optional_array_is_still_checked():
    with pytest.raises(cf.ArgumentTypeError, match=r"LayerNorm: argument 'mean' expects Optional\[Out\[float32\]\], "
                                                   r"got a float64 array"):  # fmt: skip
        _launch.check_and_pack(LayerNorm._plan, (np.ones(8, f32), np.ones(2), None, np.ones(8, f32), 8), {}, None, None, 0, None)


def test_none_for_a_required_array_says_how_to_allow_it():
    with pytest.raises(cf.ArgumentTypeError, match=r"LayerNorm: argument 'inp' expects In\[float32\], got NoneType None; "
                                                   r".* \(to let it be None, declare it cf\.Optional\[cf\.In\[cf\.float32\]\]\)$"):  # fmt: skip
        _launch.check_and_pack(LayerNorm._plan, (np.ones(8, f32), None, None, None, 8), {}, None, None, 0, None)
    with pytest.raises(cf.ArgumentError, match=r"LayerNorm: missing argument 'inp'"):
        _launch.check_and_pack(LayerNorm._plan, (np.ones(8, f32),), {"n": 8}, None, None, 0, None)


def test_the_grid_skips_none_arrays():
    @cf.kernel
    class OnlyOptional:
        x: cf.Optional[cf.Array[cf.float32]]
        y: cf.Optional[cf.Array[cf.float32]]
        body = ";"

    assert _launch.check_and_pack(OnlyOptional._plan, (None, None), {}, None, None, 0, None) is None  # nothing to size by
    c = _launch.check_and_pack(OnlyOptional._plan, (None, np.ones(300, f32)), {}, None, None, 0, None)
    assert c.grid == (2, 1, 1)


def test_only_arrays_can_be_optional():
    with pytest.raises(cf.DeclarationError, match=r"Optional\[\.\.\.\] takes an array parameter type such as "
                                                  r"cf.In\[cf.float32\], got cuforge.int32; only a pointer can be null"):  # fmt: skip
        cf.Optional[cf.int32]


def _sgemm_like(block, **extra):
    """SGEMM's launch shape: a block of (BM*BN)/(TM*TN) threads, one per TMxTN tile."""
    ns = {"BM": cf.intparam(128, 64), "BN": cf.intparam(128, 64), "TM": cf.intparam(8), "TN": cf.intparam(8, 4),
          "__annotations__": {"c": cf.Out[cf.float32]}, "block": block, "grid": 1,
          "body": "c[blockIdx.x * blockDim.x + threadIdx.x] = BM * BN;", **extra}  # fmt: skip
    return cf.kernel(type("Sgemm", (), ns))


def test_a_block_computed_from_template_parameters():
    for rule in (staticmethod(lambda BM, BN, TM, TN: (BM * BN) // (TM * TN)), lambda BM, BN, TM, TN: BM * BN // (TM * TN)):
        family = _sgemm_like(rule)
        assert family[128, 128, 8, 8]._plan.block == (256, 1, 1)
        assert family[64, 128, 8, 4]._plan.block == (256, 1, 1)
        assert family[64, 64, 8, 8]._plan.block == (64, 1, 1)
        c = _launch.check_and_pack(family[64, 64, 8, 8]._plan, (CudaArray((64,), "<f4"),), {}, None, None, 0, None)
        assert c.block == (64, 1, 1)
    two_d = _sgemm_like(staticmethod(lambda BN, TN: (BN // TN, 2)))
    assert two_d[128, 64, 8, 4]._plan.block == (16, 2, 1)


def test_a_wrong_block_rule_is_refused_at_definition_showing_what_was_given():
    with pytest.raises(cf.DeclarationError, match=r"Sgemm: block = the function \S*<lambda> gave 2048 for BM=128, BN=128, "
                                                  r"TM=8, TN=4: block\[0\] expects an int from 1 to 1024, got 2048"):  # fmt: skip
        _sgemm_like(staticmethod(lambda BM, BN, TM, TN: BM * BN // (TM * TN) * 4))
    with pytest.raises(cf.DeclarationError, match=r"Sgemm: the block function asks for n, which are not template parameters "
                                                  r"of this class \(template parameters: BM, BN, TM, TN\); a block is fixed "
                                                  r"per instantiation"):  # fmt: skip
        _sgemm_like(staticmethod(lambda BM, n: BM))
    with pytest.raises(cf.DeclarationError, match=r"Sgemm: block names 'BM \* 2', which is not an intparam of this class \(intparams: "
                                                  r"BM, BN, TM, TN\); give ints, intparam names or a function"):  # fmt: skip
        _sgemm_like("BM * 2")
    with pytest.raises(
        cf.DeclarationError, match=r"Sgemm: block = 2.5: block expects an int or a tuple of 1 to 3 ints, got float 2.5"
    ):
        _sgemm_like(2.5)


def test_a_block_rule_is_checked_only_on_the_combinations_restrict_keeps():
    """BM=128, BN=128, TN=4 would need 2048 threads: restrict leaves it out, so the class is
    declared, and only the kept instantiations exist."""
    sgemm = _sgemm_like(staticmethod(lambda BM, BN, TM, TN: BM * BN // (TM * TN) * 4),
                        restrict=staticmethod(lambda BM, BN, TN: BM * BN // (8 * TN) * 4 <= 1024))  # fmt: skip
    assert [k._plan.block[0] for k in sgemm.instantiations()] == [1024, 512, 1024, 512, 1024, 256, 512]
    with pytest.raises(cf.DeclarationError, match=r"restrict"):
        sgemm[128, 128, 8, 4]


def test_a_wrong_block_names_a_dtype_template_value_as_python_indexes_with_it():
    ns = {"T": cf.typeparam(cf.float32, cf.float64), "__annotations__": {"x": cf.Out[cf.float32]},
          "block": staticmethod(lambda T: 2048 if T is cf.float64 else 128), "body": "x[0] = 1;"}  # fmt: skip
    with pytest.raises(cf.DeclarationError, match=r"^K: block = the function \S*<lambda> gave 2048 for T=float64: "):
        cf.kernel(type("K", (), ns))
