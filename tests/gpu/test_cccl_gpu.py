"""CCCL on a real GPU, against NumPy: a CUB block reduction (CUB is device code only)."""

from __future__ import annotations

import numpy as np

import cuforge as cf
from cuforge.pytest_plugin import gpu_module

pytestmark = gpu_module()


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


