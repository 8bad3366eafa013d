"""Vector element types: cf.vector(cf.float32, 4) is float4; an array of float32 whose last
dimension is 4 passes as float4*, checked for shape and alignment (no GPU needed)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import cuforge as cf
from cuforge._declare.cparse import cpp_type
from cuforge._launch import general as _launch

from ..launch_inputs import FakeCAI, fake_device_array


@cf.kernel
class Saxpy4:
    a: cf.float32
    x: cf.In[cf.vector(cf.float32, 4)]
    y: cf.Array[cf.vector(cf.float32, 4)]
    n: cf.int64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) { float4 u = x[i], v = y[i]; y[i] = make_float4(a * u.x + v.x, a * u.y + v.y, a * u.z + v.z, a * u.w + v.w); }
    """


def vec4(n: int, ptr: int = 0x7F0000000000) -> FakeCAI:
    return FakeCAI("<f4", (n, 4), None, False, ptr)


def test_a_vector_array_renders_as_the_cuda_vector_type_and_compiles():
    assert "const float4* __restrict__ x, float4* y" in Saxpy4.render()
    assert Saxpy4.compile("sm_90").lowered_name == "_Z6Saxpy4fPK6float4PS_x"
    assert cf.vector(cf.float16, 2).cpp == "__half2" and cf.vector(cf.float16, 2).header == "cuda_fp16.h"
    assert cf.vector(cf.float32, 4) is cf.vector(cf.float32, 4)
    assert pickle.loads(pickle.dumps(cf.vector(cf.float32, 4))) is cf.vector(cf.float32, 4)


def test_the_launch_rule_counts_vectors_and_the_last_dimension_is_checked():
    c = _launch.check_and_pack(Saxpy4._plan, (2.0, vec4(1000), vec4(1000, 0x7F0000100000), 1000), {}, None, None, 0, None)
    assert c.grid == (4, 1, 1)  # 1000 float4s in blocks of 256, not 4000 floats
    assert [arg.shape for _, arg in c.arrays] == [(1000,), (1000,)]
    with pytest.raises(cf.ArgumentTypeError, match=r"argument 'x' expects In\[float32x4\] \(float4\), got shape \(1000, 3\); "
                                                   r"its last dimension must be 4"):  # fmt: skip
        _launch.check_and_pack(Saxpy4._plan, (2.0, FakeCAI("<f4", (1000, 3), None, False, 0x7F0000000000), vec4(1000), 1000),
                               {}, None, None, 0, None)  # fmt: skip
    with pytest.raises(cf.ArgumentTypeError, match=r"got memory at 0x7f0000000004, which is not aligned to 16 bytes"):
        _launch.check_and_pack(Saxpy4._plan, (2.0, vec4(10, 0x7F0000000004), vec4(10), 10), {}, None, None, 0, None)
    with pytest.raises(cf.ArgumentTypeError, match=r"expects In\[float32x4\], got a float64 array"):
        _launch.check_and_pack(Saxpy4._plan, (2.0, np.zeros((10, 4)), vec4(10), 10), {}, None, None, 0, None)


@cf.kernel
class Mandel:
    """The Mandelbrot kernel's by-value palette: ``const uchar4 colors``, and a double4."""

    out: cf.Out[cf.uint8]
    colors: cf.vector(cf.uint8, 4)
    d: cf.vector(cf.float64, 4)
    body = "out[threadIdx.x] = colors.x + colors.y + colors.z + colors.w + (unsigned char)(d.x + d.y + d.z + d.w);"


def test_a_vector_by_value_compiles_for_the_gpu_with_the_c_structs_layout():
    assert "unsigned char* __restrict__ out, uchar4 colors, double4_32a d" in Mandel.render()
    assert Mandel.compile("sm_90").lowered_name == "_Z6MandelPh6uchar411double4_32a"
    d4 = cf.vector(cf.float64, 4)
    assert (d4.cpp, d4.itemsize, d4.align) == ("double4_32a", 32, 32)  # CUDA 13 deprecates plain double4
    assert [(s.offset, s.size) for s in Mandel._plan.specs] == [(0, 8), (8, 4), (32, 32)]
    assert cpp_type("const uchar4", "parameter 'colors'") is cf.vector(cf.uint8, 4)  # as %%cuda reads it


def test_a_vector_by_value_takes_a_tuple_or_a_numpy_array_of_its_lanes():
    c = _launch.check_and_pack(Mandel._plan, (np.zeros(4, np.uint8), (1, 2, 3, 255), np.arange(4.0)), {}, 1, 4, 0, None)
    assert c.values[1] == bytes([1, 2, 3, 255]) and c.values[2] == np.arange(4.0).tobytes()
    with pytest.raises(cf.ArgumentError, match=r"argument 'colors' expects uint8, got int 256; uint8 holds 0..255"):
        _launch.check_and_pack(Mandel._plan, (np.zeros(4, np.uint8), (1, 2, 3, 256), np.arange(4.0)), {}, 1, 4, 0, None)
    with pytest.raises(cf.ArgumentTypeError, match=r"argument 'd' expects float64x4 \(double4_32a\), got .*; pass a tuple "
                                                   r"of 4 float64 values or a numpy array of shape \(4,\) and dtype float64"):  # fmt: skip
        _launch.check_and_pack(Mandel._plan, (np.zeros(4, np.uint8), (1, 2, 3, 4), np.arange(4.0, dtype=np.float32)),
                               {}, 1, 4, 0, None)  # fmt: skip


def test_unknown_vector_types_are_refused_naming_the_known_ones():
    with pytest.raises(cf.DeclarationError, match=r"cf.vector\(cuforge.float64, 5\) is not a vector type cuforge knows; "
                                                  r"it knows .*\(float64, 4\)"):  # fmt: skip
        cf.vector(cf.float64, 5)


@cf.kernel
class Scale8:
    """llm.c's Packed128<half>: eight halves per 16-byte load."""

    x: cf.In[cf.vector(cf.float16, 8)]
    y: cf.Out[cf.vector(cf.bfloat16, 8)]
    n: cf.int64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    cuforge::float16x8 u = x[i];
    cuforge::bfloat16x8 v;
    for (int k = 0; k < 8; ++k) v[k] = __float2bfloat16(2.0f * __half2float(u[k]));
    v.h2(0) = __hadd2(v.h2(0), v.h2(0));
    y[i] = v;
    """


def test_eight_16_bit_lanes_are_cuforges_16_byte_vectors_and_compile():
    h8, b8 = cf.vector(cf.float16, 8), cf.vector(cf.bfloat16, 8)
    assert (h8.cpp, h8.itemsize, h8.align, h8.header) == ("cuforge::float16x8", 16, 16, "cuforge_vector.cuh")
    assert (b8.cpp, repr(b8)) == ("cuforge::bfloat16x8", "cuforge.vector(cuforge.bfloat16, 8)")
    assert "const cuforge::float16x8* __restrict__ x, cuforge::bfloat16x8* __restrict__ y" in Scale8.render()
    assert Scale8.compile("sm_90").lowered_name.startswith("_Z6Scale8PKN7cuforge")


def test_eight_lane_arrays_are_checked_for_shape_dtype_and_alignment():
    def h8(shape, ptr=0x7F0000000000, typestr="<f2"):
        return FakeCAI(typestr, shape, None, False, ptr)

    y8 = fake_device_array((512, 8), cf.bfloat16)
    c = _launch.check_and_pack(Scale8._plan, (h8((512, 8)), y8, 512), {}, None, None, 0, None)
    assert c.grid == (2, 1, 1) and [arg.shape for _, arg in c.arrays] == [(512,), (512,)]
    with pytest.raises(cf.ArgumentTypeError, match=r"argument 'x' expects In\[float16x8\] \(cuforge::float16x8\), got "
                                                   r"shape \(512, 4\); its last dimension must be 8"):  # fmt: skip
        _launch.check_and_pack(Scale8._plan, (h8((512, 4)), y8, 512), {}, None, None, 0, None)
    with pytest.raises(cf.ArgumentTypeError, match=r"got memory at 0x7f0000000008, which is not aligned to 16 bytes as "
                                                   r"a cuforge::float16x8 must be"):  # fmt: skip
        _launch.check_and_pack(Scale8._plan, (h8((512, 8), 0x7F0000000008), y8, 512), {}, None, None, 0, None)
    with pytest.raises(cf.ArgumentTypeError, match=r"expects In\[float16x8\], got a float32 array"):
        _launch.check_and_pack(Scale8._plan, (h8((512, 8), typestr="<f4"), y8, 512), {}, None, None, 0, None)
