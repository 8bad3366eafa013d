"""Kernels of the driver's launch kinds, shared by the CPU tests (which compile them) and the
GPU tests (which launch them)."""

from __future__ import annotations

import cuforge as cf

CG = "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;"


@cf.kernel
class GridSum:
    """A two-phase sum: each block reduces its share, the grid syncs, thread 0 adds the blocks."""

    x: cf.In[cf.float32]
    partial: cf.Array[cf.float64]
    out: cf.Out[cf.float64]
    n: cf.int64
    cooperative = True
    block = 256
    preamble = CG
    body = """
    cg::grid_group grid = cg::this_grid();
    __shared__ double s[256];
    double acc = 0;
    for (long long i = grid.thread_rank(); i < n; i += grid.size()) acc += x[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
    grid.sync();
    if (grid.thread_rank() == 0) {
        double t = 0;
        for (unsigned b = 0; b < gridDim.x; ++b) t += partial[b];
        out[0] = t;
    }
    """


@cf.kernel
class GridSyncNoFlag:
    """Syncs the grid, but its class does not say cooperative: launching it is refused."""

    y: cf.Array[cf.float32]
    preamble = CG
    body = "cg::this_grid().sync(); y[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;"


@cf.kernel
class ClusterSwap:
    """Each block of a 2-block cluster reads its partner's shared memory (distributed shared memory)."""

    out: cf.Out[cf.int32]
    cluster = (2, 1, 1)
    block = 32
    preamble = CG
    body = """
    cg::cluster_group cluster = cg::this_cluster();
    __shared__ int mine;
    if (threadIdx.x == 0) mine = blockIdx.x;
    cluster.sync();
    int* theirs = cluster.map_shared_rank(&mine, (cluster.block_rank() + 1) % cluster.num_blocks());
    if (threadIdx.x == 0) out[blockIdx.x] = *theirs;
    cluster.sync();
    """


@cf.kernel
class BigShared:
    """Fills and sums 100 KiB of dynamic shared memory per block."""

    out: cf.Out[cf.int64]
    grid = 4
    block = 256
    body = """
    extern __shared__ int buf[];
    const int count = 100 * 1024 / 4;
    for (int i = threadIdx.x; i < count; i += blockDim.x) buf[i] = i + blockIdx.x;
    __syncthreads();
    if (threadIdx.x == 0) {
        long long s = 0;
        for (int i = 0; i < count; ++i) s += buf[i];
        out[blockIdx.x] = s;
    }
    """


@cf.kernel
class Bounded:
    """Compiled for at most 128 threads per block (__launch_bounds__)."""

    y: cf.Array[cf.float32]
    n: cf.int64
    name = "bounded"
    source = """
    extern "C" __global__ void __launch_bounds__(128) bounded(float* y, long long n) {
        long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
        if (i < n) y[i] += 1.0f;
    }
    """


@cf.kernel
class ClusterHistogram:
    """The CUDA Programming Guide's distributed-shared-memory histogram: each cluster keeps one
    histogram spread over its blocks' shared memory. It ranks threads with
    ``cg::this_grid().thread_rank()`` but never syncs the grid, so it needs no cooperative launch."""

    bins: cf.Out[cf.int32]
    data: cf.In[cf.int32]
    n: cf.int64
    nbins: cf.int32
    cluster = (2, 1, 1)
    block = 128
    grid = 16
    preamble = CG
    body = """
    extern __shared__ int smem[];
    cg::cluster_group cluster = cg::this_cluster();
    const int per_block = nbins / (int)cluster.dim_blocks().x;  // each block holds a slice of the bins
    for (int i = threadIdx.x; i < per_block; i += blockDim.x) smem[i] = 0;
    cluster.sync();
    for (long long i = cg::this_grid().thread_rank(); i < n; i += (long long)blockDim.x * gridDim.x) {
        int bin = data[i] < 0 ? 0 : data[i] >= nbins ? nbins - 1 : data[i];
        int* owner = cluster.map_shared_rank(smem, bin / per_block);
        atomicAdd(owner + bin % per_block, 1);
    }
    cluster.sync();  // the other blocks' shared memory stays in use until every block is done
    int* mine = bins + cluster.block_rank() * per_block;
    for (int i = threadIdx.x; i < per_block; i += blockDim.x) atomicAdd(&mine[i], smem[i]);
    """
