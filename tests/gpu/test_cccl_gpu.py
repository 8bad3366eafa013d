"""CCCL and complex kernels on a real GPU, against NumPy: a CUB block reduction, and complex
arithmetic with + and *."""

from __future__ import annotations

import numpy as np
import pytest

import cuforge as cf

from ..unit.test_complex import ComplexOps

pytestmark = pytest.mark.gpu


@cf.kernel
class BlockSums:
    """out[b] = the sum of block b's 256 values, by cub::BlockReduce."""

    x: cf.In[cf.float32]
    out: cf.Out[cf.float32]
    n: cf.int64
    name = "block_sums"
    source = """
#include <cub/block/block_reduce.cuh>
extern "C" __global__ void block_sums(const float* x, float* out, long long n) {
    using BlockReduce = cub::BlockReduce<float, 256>;
    __shared__ typename BlockReduce::TempStorage tmp;
    long long i = blockIdx.x * 256LL + threadIdx.x;
    float s = BlockReduce(tmp).Sum(i < n ? x[i] : 0.0f);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}
"""
    block = 256
    grid = staticmethod(lambda n: (n + 255) // 256)


def test_cub_block_reduction_matches_numpy():
    n = 256 * 37 + 11
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    out = np.zeros(-(-n // 256), np.float32)
    BlockSums(x, out, n)
    expected = np.add.reduceat(x.astype(np.float64), np.arange(0, n, 256))
    np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_complex_arithmetic_matches_numpy():
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
