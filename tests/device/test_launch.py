"""Launches on host (NumPy) arrays, checked against NumPy: on the GPU where one is usable,
else on cuforge's CPU backend (the plugin's ``launches`` marker)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import cuforge as cf

from ..unit.test_vectors import Saxpy4

pytestmark = pytest.mark.launches


def _saxpy_for(dtype: cf.DType) -> cf.Kernel:
    cls = type(
        f"Saxpy_{dtype.name}",
        (),
        {
            "__annotations__": {"a": dtype, "x": cf.In[dtype], "y": cf.Array[dtype], "n": cf.int64},
            "body": """
            long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
            if (i < n) y[i] = a * x[i] + y[i];
            """,
        },
    )
    return cf.kernel(cls)


TOL = {"float16": 2e-3, "bfloat16": 2e-2, "float32": 1e-6, "float64": 1e-12}


@pytest.mark.parametrize("dtype", [cf.float16, cf.float32, cf.float64], ids=lambda d: d.name)
def test_saxpy_every_float_dtype(dtype):
    k = _saxpy_for(dtype)
    n = 100_003
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n).astype(dtype.numpy)
    y = rng.standard_normal(n).astype(dtype.numpy)
    expected = 1.5 * x.astype(np.float64) + y.astype(np.float64)
    k(1.5, x, y, n)
    np.testing.assert_allclose(y.astype(np.float64), expected, rtol=TOL[dtype.name], atol=TOL[dtype.name])


def test_saxpy_bfloat16():
    k = _saxpy_for(cf.bfloat16)
    n = 4097
    rng = np.random.default_rng(2)
    x = rng.standard_normal(n).astype(cf.bfloat16.numpy)
    y = rng.standard_normal(n).astype(cf.bfloat16.numpy)
    expected = 1.5 * x.astype(np.float64) + y.astype(np.float64)
    k(1.5, x, y, n)
    np.testing.assert_allclose(y.astype(np.float64), expected, rtol=2e-2, atol=2e-2)


@cf.kernel
class Transpose:
    src: cf.In[cf.float32, 2]
    dst: cf.Out[cf.float32, 2]
    rows: cf.int32
    cols: cf.int32
    block = (16, 16)

    @staticmethod
    def grid(rows, cols, block):
        return ((cols + block[0] - 1) // block[0], (rows + block[1] - 1) // block[1])

    body = """
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) dst[c * rows + r] = src[r * cols + c];
    """


def test_2d_transpose_with_grid_function():
    a = np.arange(37 * 53, dtype=np.float32).reshape(37, 53)
    dst = np.zeros((53, 37), dtype=np.float32)
    Transpose(a, dst, 37, 53)
    np.testing.assert_array_equal(dst, a.T)


def test_host_numpy_round_trip(saxpy):
    x = np.arange(1000, dtype=np.float32)
    y = np.ones(1000, dtype=np.float32)
    x_before = x.copy()
    saxpy(2.0, x, y, 1000)  # returns after the kernel, y written back
    np.testing.assert_array_equal(y, 2 * x_before + 1)
    np.testing.assert_array_equal(x, x_before)


@cf.kernel
class Rotate:
    z: cf.complex64
    x: cf.Array[cf.complex64]
    n: cf.int32
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = cuCmulf(x[i], z);
    """


def test_complex_scalars_and_arrays():
    x = (np.arange(64) + 1j * np.arange(64)).astype(np.complex64)
    expected = x * np.complex64(1j)
    Rotate(1j, x, 64)
    np.testing.assert_allclose(x, expected)


def test_source_kernel_that_agrees_launches():
    @cf.kernel
    class Fill:
        x: cf.Out[cf.float32]
        v: cf.float32
        n: cf.int64
        name = "fill"
        source = """
        extern "C" __global__ void fill(float* x, float v, long long n) {
            long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
            if (i < n) x[i] = v;
        }
        """

    x = np.zeros(777, np.float32)
    Fill(x, 4.5, 777)
    assert (x == 4.5).all()


def test_whole_kernel_template_launches(scale):
    x = np.arange(10, dtype=np.float32)
    y = np.zeros(10, np.float32)
    scale(3.0, x, y, 10)
    np.testing.assert_array_equal(y, 3 * x)


def test_launch_from_another_thread(saxpy):
    """A thread's first launch goes where the process's do (on the GPU, the device's context
    made current in that thread)."""
    x = np.ones(64, np.float32)
    y = np.zeros(64, np.float32)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            saxpy(3.0, x, y, 64)
        except BaseException as exc:  # reported in the main thread
            errors.append(exc)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert not errors, errors
    assert (y == 3.0).all()


def test_float4_arrays_match_numpy(cuforge_device):
    n4 = 10_001
    x = np.random.default_rng(4).random((n4, 4), dtype=np.float32)
    y = np.ones((n4, 4), np.float32)
    Saxpy4(2.0, x, y, n4)  # arrays of shape (n4, 4): float4*
    np.testing.assert_allclose(y, 2 * x + 1, rtol=1e-6)
    view = np.ones(4 * n4 + 4, np.float32)[1:-3].reshape(-1, 4)  # one float past an aligned address
    if cuforge_device == "cpu":  # used in place: refused
        with pytest.raises(cf.ArgumentTypeError, match=r"not aligned to 16 bytes as a float4 must be"):
            Saxpy4(2.0, view, y, n4)
    else:  # a host array is copied to aligned device memory
        Saxpy4(2.0, view, y, n4)
        np.testing.assert_allclose(y, 2 * x + 3, rtol=1e-6)


@cf.kernel
class RowMean:
    """Each row's mean into ``out``; its square into ``sq`` only where one is passed."""

    out: cf.Out[cf.float32]
    sq: cf.Optional[cf.Out[cf.float32]]
    x: cf.In[cf.float32, 2]
    rows: cf.int32
    cols: cf.int32
    grid = "rows"
    body = """
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += x[r * cols + c];
    out[r] = s / cols;
    if (sq != nullptr) sq[r] = (s / cols) * (s / cols);
    """


def test_optional_array_none_is_a_null_pointer():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    out, sq = np.zeros(3, np.float32), np.full(3, -1.0, np.float32)
    RowMean(out, None, x, 3, 4)
    np.testing.assert_allclose(out, [1.5, 5.5, 9.5])
    RowMean(out, sq, x, 3, 4)
    np.testing.assert_allclose(sq, [2.25, 30.25, 90.25])
    out.fill(0)
    RowMean(out=out, x=x, rows=3, cols=4)  # left out: None
    np.testing.assert_allclose(out, [1.5, 5.5, 9.5])


@cf.kernel
class Double8:
    """Eight halves per 16-byte load and store (cuforge::float16x8)."""

    x: cf.In[cf.vector(cf.float16, 8)]
    y: cf.Out[cf.vector(cf.float16, 8)]
    n: cf.int64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    cuforge::float16x8 v = x[i];
    for (int k = 0; k < 4; ++k) v.h2(k) = __hadd2(v.h2(k), v.h2(k));
    y[i] = v;
    """


def test_float16x8_arrays():
    x = np.arange(8 * 1000, dtype=np.float16).reshape(1000, 8) / 16
    y = np.zeros_like(x)
    Double8(x, y, 1000)
    np.testing.assert_array_equal(y, x * 2)


def test_complex_arithmetic_matches_numpy():
    from ..unit.test_complex import ComplexOps

    n = 5000
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    y = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    a = np.complex64(0.5 - 2j)
    want = y.astype(np.complex128)
    xd = x.astype(np.complex128)
    z = a * xd + want * 2 - 1
    z += np.conj(xd) / (want + 1)
    want = z * np.abs(xd) + np.exp(xd) * np.where(z == xd, 1.0, 0.5)
    ComplexOps(a, x, y, n)
    np.testing.assert_allclose(y, want, rtol=2e-4, atol=2e-4)
