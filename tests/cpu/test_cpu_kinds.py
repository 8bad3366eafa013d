"""Cooperative launches, clusters and cooperative groups on the CPU backend, checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import cuforge as cf

PREAMBLE = "#include <cooperative_groups.h>\n#include <cooperative_groups/reduce.h>\nnamespace cg = cooperative_groups;"


@cf.kernel
class GridSum:
    """Each block sums its grid-stride share into partial[block]; after grid.sync() block 0 adds them up."""

    x: cf.In[cf.float32]
    partial: cf.Array[cf.float32]
    out: cf.Out[cf.float32]
    n: cf.int64
    block = 64
    cooperative = True
    preamble = PREAMBLE
    body = """
    cg::grid_group grid = cg::this_grid();
    cg::thread_block tb = cg::this_thread_block();
    auto tile = cg::tiled_partition<32>(tb);
    float acc = 0;
    for (long long i = grid.thread_rank(); i < n; i += grid.size()) acc += x[i];
    acc = cg::reduce(tile, acc, cg::plus<float>());
    if (tile.thread_rank() == 0) atomicAdd(&partial[blockIdx.x], acc);
    grid.sync();
    if (grid.thread_rank() == 0) {
        float s = 0;
        for (unsigned b = 0; b < gridDim.x; ++b) s += partial[b];
        out[0] = s;
    }
    """


@pytest.mark.parametrize("grid", [1, 4, 7])
def test_a_cooperative_grid_sync(grid):
    x = (np.arange(10_000) % 5).astype(np.float32)  # integer sums: exact in any order
    partial, out = np.zeros(grid, np.float32), np.zeros(1, np.float32)
    GridSum(x, partial, out, x.size, grid=grid, device="cpu")
    assert out[0] == x.sum()
    assert partial.sum() == x.sum()


def test_a_cooperative_default_grid_and_a_refused_plain_launch():
    x = np.ones(1000, np.float32)
    out = np.zeros(1, np.float32)
    GridSum(x, np.zeros(64, np.float32), out, x.size, device="cpu")  # as many blocks as worker threads
    assert out[0] == 1000
    with pytest.raises(cf.ArgumentError, match=r"GridSum: the kernel's source syncs the whole grid .* cooperative=True"):
        GridSum(x, np.zeros(4, np.float32), out, x.size, grid=4, cooperative=False, device="cpu")


@cf.kernel
class SkipsTheSync:
    out: cf.Array[cf.int32]
    block = 32
    cooperative = True
    preamble = PREAMBLE
    body = """
    if (blockIdx.x == 1) return;  // block 1 never reaches grid.sync()
    cg::this_grid().sync();
    out[blockIdx.x] = 1;
    """


def test_a_block_that_skips_grid_sync_is_an_error_not_a_hang():
    with pytest.raises(cf.LaunchError, match=r"SkipsTheSync .* block 1 of the grid exited without reaching the sync"):
        SkipsTheSync(np.zeros(3, np.int32), grid=3, device="cpu")


@cf.kernel
class Neighbour:
    """Each block reads its cluster neighbour's shared value through map_shared_rank."""

    out: cf.Out[cf.int32]
    block = 32
    preamble = PREAMBLE
    body = """
    __shared__ int mine;
    cg::cluster_group cl = cg::this_cluster();
    if (threadIdx.x == 0) mine = blockIdx.x * 10 + (int)cl.block_rank();
    cl.sync();
    int* other = cl.map_shared_rank(&mine, (cl.block_rank() + 1) % cl.num_blocks());
    if (threadIdx.x == 0) out[blockIdx.x] = *other;
    cl.sync();  // the neighbour's shared memory stays until every block has read it
    """


@pytest.mark.parametrize("cluster", [2, 4])
def test_a_cluster_reads_its_neighbour_s_shared_memory(cluster):
    grid = 8
    out = np.zeros(grid, np.int32)
    Neighbour(out, grid=grid, cluster=(cluster, 1, 1), device="cpu")
    b = np.arange(grid)
    nxt = (b // cluster) * cluster + (b % cluster + 1) % cluster
    np.testing.assert_array_equal(out, nxt * 10 + nxt % cluster)


@cf.kernel
class TileOps:
    out: cf.Out[cf.int32]
    block = 64
    preamble = PREAMBLE
    body = """
    auto tile = cg::tiled_partition<8>(cg::this_thread_block());
    int v = (int)threadIdx.x;
    unsigned t = threadIdx.x;
    out[5 * t + 0] = tile.thread_rank();
    out[5 * t + 1] = tile.shfl(v, 3);
    out[5 * t + 2] = tile.shfl_down(v, 1);
    out[5 * t + 3] = cg::reduce(tile, v, cg::plus<int>());
    out[5 * t + 4] = cg::inclusive_scan(tile, 1);
    """


def test_tiled_partition_collectives_against_numpy():
    out = np.zeros((64, 5), np.int32)
    TileOps(out.ravel(), grid=1, device="cpu")
    t = np.arange(64)
    base = t - t % 8
    np.testing.assert_array_equal(out[:, 0], t % 8)
    np.testing.assert_array_equal(out[:, 1], base + 3)
    np.testing.assert_array_equal(out[:, 2], np.where(t % 8 == 7, t, t + 1))
    np.testing.assert_array_equal(out[:, 3], np.repeat(t.reshape(8, 8).sum(axis=1), 8))
    np.testing.assert_array_equal(out[:, 4], t % 8 + 1)
