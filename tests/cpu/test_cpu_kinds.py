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


# ---------------------------------------------------------------- coalesced, labeled and dynamic groups
# (kernels in the style of cuda-samples' warpAggregatedAtomicsCG and simpleCooperativeGroups)

AGGREGATE = """
__device__ int atomicAggInc(int* counter, int* bad) {
    cg::coalesced_group active = cg::coalesced_threads();
    int mask = active.ballot(1);
    if (mask != (int)((1ull << active.size()) - 1)) atomicAdd(bad, 1);  // by rank: the low size() bits
    int res;
    if (active.thread_rank() == 0) res = atomicAdd(counter, active.size());
    res = active.shfl(res, 0);
    return res + active.thread_rank();
}
__device__ int atomicAggIncMulti(const int bucket, int* counter) {
    cg::coalesced_group active = cg::coalesced_threads();
    auto labeledGroup = cg::labeled_partition(active, bucket);
    int res;
    if (labeledGroup.thread_rank() == 0) res = atomicAdd(&counter[bucket], labeledGroup.size());
    res = labeledGroup.shfl(res, 0);
    return res + labeledGroup.thread_rank();
}
"""


@cf.kernel
class FilterArr:
    dst: cf.Out[cf.int32]
    nres: cf.Array[cf.int32]
    src: cf.In[cf.int32]
    n: cf.int32
    block = 128
    preamble = PREAMBLE + AGGREGATE
    body = """
    int id = threadIdx.x + blockIdx.x * blockDim.x;
    for (int i = id; i < n; i += gridDim.x * blockDim.x) {
        if (src[i] > 0) dst[atomicAggInc(&nres[0], &nres[1])] = src[i];
    }
    """


@cf.kernel
class MapToBuckets:
    srcArr: cf.In[cf.int32]
    indicesBuckets: cf.Out[cf.int32]
    bucketCounters: cf.Array[cf.int32]
    srcSize: cf.int32
    numOfBuckets: cf.int32
    block = 128
    preamble = PREAMBLE + AGGREGATE
    body = """
#if __CUDA_ARCH__ >= 700
    cg::grid_group grid = cg::this_grid();
    for (int i = grid.thread_rank(); i < srcSize; i += grid.size()) {
        const int key = srcArr[i];
        if (key < numOfBuckets) indicesBuckets[i] = atomicAggIncMulti(key, bucketCounters);
    }
#endif
    """


def test_warp_aggregated_atomics_with_coalesced_threads():
    src = np.random.default_rng(5).integers(-5, 10, 5000).astype(np.int32)
    dst, nres = np.zeros(src.size, np.int32), np.zeros(2, np.int32)
    FilterArr(dst, nres, src, src.size, grid=8, device="cpu")
    assert nres.tolist() == [(src > 0).sum(), 0]
    np.testing.assert_array_equal(np.sort(dst[: nres[0]]), np.sort(src[src > 0]))


def test_map_to_buckets_with_labeled_partition():
    buckets = 6
    src = np.random.default_rng(6).integers(0, buckets + 2, 4000).astype(np.int32)  # keys past the buckets skip
    idx, counters = np.full(src.size, -1, np.int32), np.zeros(buckets, np.int32)
    MapToBuckets(src, idx, counters, src.size, buckets, grid=5, device="cpu")
    np.testing.assert_array_equal(counters, np.bincount(src[src < buckets], minlength=buckets))
    for b in range(buckets):  # each element of a bucket got its own slot in it
        np.testing.assert_array_equal(np.sort(idx[src == b]), np.arange(counters[b]))
    assert (idx[src >= buckets] == -1).all()


@cf.kernel
class SumReductions:
    """simpleCooperativeGroups: one reduction for thread_group parameters, over the block and
    over tiled_partition(block, 16)."""

    out: cf.Out[cf.int32]
    shared_mem = 64 * 4
    preamble = (
        PREAMBLE
        + """
__device__ int sumReduction(cg::thread_group g, int* x, int val) {
    int lane = g.thread_rank();
    for (int i = g.size() / 2; i > 0; i /= 2) {
        x[lane] = val;
        g.sync();
        if (lane < i) val += x[lane + i];
        g.sync();
    }
    return g.thread_rank() == 0 ? val : -1;
}"""
    )
    body = """
    cg::thread_block block = cg::this_thread_block();
    extern __shared__ int workspace[];
    int n = block.size();
    out[block.thread_rank()] = sumReduction(block, workspace, block.thread_rank());
    block.sync();
    cg::thread_group tile16 = cg::tiled_partition(block, 16);
    int offset = block.thread_rank() - tile16.thread_rank();
    out[n + block.thread_rank()] = sumReduction(tile16, workspace + offset, tile16.thread_rank());
    cg::thread_group tile4 = cg::tiled_partition(tile16, 4);
    out[2 * n + block.thread_rank()] = tile4.thread_rank() + 100 * tile4.size();
    """


def test_thread_group_parameters_and_a_dynamic_tiled_partition():
    out = np.zeros((3, 64), np.int32)
    SumReductions(out.ravel(), grid=1, block=64, device="cpu")
    t = np.arange(64)
    np.testing.assert_array_equal(out[0], np.where(t == 0, 63 * 64 // 2, -1))
    np.testing.assert_array_equal(out[1], np.where(t % 16 == 0, 15 * 16 // 2, -1))
    np.testing.assert_array_equal(out[2], t % 4 + 400)


@cf.kernel
class CoalescedOps:
    """Every third lane takes a branch and makes a coalesced group there."""

    out: cf.Out[cf.int32]
    block = 64
    preamble = PREAMBLE
    body = """
    unsigned t = threadIdx.x, lane = t % 32;
    for (int k = 0; k < 8; ++k) out[8 * t + k] = -1;
    if (lane % 3 == 0) {
        cg::coalesced_group g = cg::coalesced_threads();
        out[8 * t + 0] = g.size();
        out[8 * t + 1] = g.thread_rank();
        out[8 * t + 2] = g.shfl((int)t, 2);
        out[8 * t + 3] = g.shfl_down((int)t, 1);
        out[8 * t + 4] = g.shfl_up((int)t, 2);
        out[8 * t + 5] = g.ballot(lane % 2);
        out[8 * t + 6] = g.any(lane == 9) + 2 * g.all(lane < 40);
        g.sync();
        out[8 * t + 7] = cg::thread_group(g).thread_rank();
    }
    """


def test_coalesced_group_of_a_divergent_branch():
    out = np.zeros((64, 8), np.int32)
    CoalescedOps(out.ravel(), grid=1, device="cpu")
    for w in range(2):
        lanes = np.arange(0, 32, 3)  # the group's lanes, by rank
        t = 32 * w + lanes
        r = np.arange(lanes.size)
        got = out[t]
        np.testing.assert_array_equal(got[:, 0], lanes.size)
        np.testing.assert_array_equal(got[:, 1], r)
        np.testing.assert_array_equal(got[:, 2], t[2])
        np.testing.assert_array_equal(got[:, 3], np.where(r + 1 < lanes.size, t[np.minimum(r + 1, lanes.size - 1)], t))
        np.testing.assert_array_equal(got[:, 4], np.where(r >= 2, t[np.maximum(r - 2, 0)], t))
        np.testing.assert_array_equal(got[:, 5], sum(1 << int(k) for k in r[lanes % 2 == 1]))
        np.testing.assert_array_equal(got[:, 6], 1 + 2)
        np.testing.assert_array_equal(got[:, 7], r)
        others = np.setdiff1d(np.arange(32), lanes) + 32 * w
        assert (out[others] == -1).all()


@cf.kernel
class LabeledSums:
    """cg::reduce and the scans over the lanes of a warp that share a key (labeled_partition)."""

    keys: cf.In[cf.int32]
    v: cf.In[cf.int32]
    out: cf.Out[cf.int32]
    block = 64
    preamble = PREAMBLE + "\n#include <cooperative_groups/scan.h>"
    body = """
    auto warp = cg::tiled_partition<32>(cg::this_thread_block());
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    auto g = cg::labeled_partition(warp, keys[i]);
    out[3 * i + 0] = cg::reduce(g, v[i], cg::plus<int>());
    out[3 * i + 1] = cg::inclusive_scan(g, v[i]);
    out[3 * i + 2] = cg::exclusive_scan(g, v[i], cg::plus<int>());
    """


@pytest.mark.parametrize("check", [False, True])
def test_reduce_and_scans_over_a_labeled_partition(check):
    rng = np.random.default_rng(5)
    keys = rng.integers(0, 4, 128).astype(np.int32)
    v = rng.integers(-50, 50, 128).astype(np.int32)
    out = np.zeros((128, 3), np.int32)
    LabeledSums(keys, v, out.ravel(), grid=2, device="cpu", check=check)
    for w in range(4):
        for k in range(4):
            lanes = 32 * w + np.flatnonzero(keys[32 * w : 32 * (w + 1)] == k)  # the group, by rank
            if lanes.size == 0:
                continue
            np.testing.assert_array_equal(out[lanes, 0], v[lanes].sum())
            np.testing.assert_array_equal(out[lanes, 1], np.cumsum(v[lanes]))
            np.testing.assert_array_equal(out[lanes, 2], np.concatenate([[0], np.cumsum(v[lanes])[:-1]]))


@cf.kernel
class StagedCopy:
    """cg::memcpy_async of a block's row into shared memory, by the block and by its warps."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    preamble = PREAMBLE + "\n#include <cooperative_groups/memcpy_async.h>"
    body = """
    __shared__ float tile[64];
    __shared__ double wide[64];
    cg::thread_block block = cg::this_thread_block();
    cg::memcpy_async(block, tile, x + blockIdx.x * 64, sizeof(float) * 64);
    cg::wait(block);
    wide[threadIdx.x] = tile[63 - threadIdx.x];
    __syncthreads();
    auto warp = cg::tiled_partition<32>(block);
    unsigned w = threadIdx.x / 32;
    cg::memcpy_async(warp, tile + 32 * w, 32, reinterpret_cast<const float*>(wide) + 64 * w, 64);
    cg::wait_prior<0>(warp);
    y[blockIdx.x * 64 + threadIdx.x] = tile[threadIdx.x];
    """


@pytest.mark.parametrize("check", [False, True])
def test_memcpy_async_by_a_block_and_by_its_warps(check):
    x = np.arange(128, dtype=np.float32)
    y = np.zeros(128, np.float32)
    StagedCopy(x, y, grid=2, device="cpu", check=check)
    # each warp copies 32 floats from the front of its 32 doubles: the row reversed, as bytes
    rows = x.reshape(2, 64)[:, ::-1].astype(np.float64)
    want = np.concatenate([rows[:, 32 * w : 32 * w + 16].view(np.float32) for w in range(2)], axis=1)
    np.testing.assert_array_equal(y.reshape(2, 64), want)


@cf.kernel
class BarrierCopy:
    """libcu++'s cuda::memcpy_async with a cuda::barrier: a block's row copied by the block,
    then each thread's element copied by the thread alone, each completed by the barrier's wait;
    then a pipeline's copy of one element per thread."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    preamble = PREAMBLE + "\n#include <cuda/barrier>\n#include <cuda/pipeline>"
    body = """
    __shared__ float tile[64], mine[64], piped[64];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    cg::thread_block block = cg::this_thread_block();
    if (block.thread_rank() == 0) init(&bar, block.size());
    block.sync();
    cuda::memcpy_async(block, tile, x + blockIdx.x * 64, sizeof(float) * 64, bar);
    bar.arrive_and_wait();
    cuda::memcpy_async(&mine[threadIdx.x], &tile[63 - threadIdx.x], cuda::aligned_size_t<4>(sizeof(float)), bar);
    bar.arrive_and_wait();
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
    pipe.producer_acquire();
    cuda::memcpy_async(&piped[threadIdx.x], &mine[threadIdx.x], sizeof(float), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<0>(pipe);
    pipe.consumer_release();
    block.sync();
    y[blockIdx.x * 64 + threadIdx.x] = piped[(threadIdx.x + 1) % 64];
    """


@cf.kernel
class FlagWait:
    """A block's last thread publishes a value with cuda::atomic_ref's release store and
    notify_all; the others wait for it (wait(0)), with no other barrier in the kernel."""

    x: cf.In[cf.float32]
    flags: cf.Array[cf.int32]
    y: cf.Out[cf.float32]
    block = 64
    preamble = "#include <cuda/atomic>"
    body = """
    __shared__ float v;
    cuda::atomic_ref<int, cuda::thread_scope_block> flag(flags[blockIdx.x]);
    if (threadIdx.x == 63) {
        v = 2.f * x[blockIdx.x];
        flag.store(1, cuda::memory_order_release);
        flag.notify_all();
    } else {
        flag.wait(0, cuda::memory_order_acquire);
    }
    y[blockIdx.x * 64 + threadIdx.x] = v;
    """


@pytest.mark.parametrize("check", [False, True])
def test_libcu_barrier_memcpy_async_and_pipeline(check):
    x = np.arange(128, dtype=np.float32)
    y = np.zeros(128, np.float32)
    BarrierCopy(x, y, grid=2, device="cpu", check=check)
    np.testing.assert_array_equal(y.reshape(2, 64), np.roll(x.reshape(2, 64)[:, ::-1], -1, axis=1))
    flags, y = np.zeros(2, np.int32), np.zeros(128, np.float32)
    FlagWait(x[:2], flags, y, grid=2, device="cpu", check=check)  # (the waits let the last thread run)
    np.testing.assert_array_equal(y, np.repeat(2 * x[:2], 64))


@cf.kernel
class ReadsBeforeWait:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    preamble = PREAMBLE + "\n#include <cooperative_groups/memcpy_async.h>"
    body = """
    __shared__ float tile[64];
    cg::thread_block block = cg::this_thread_block();
    cg::memcpy_async(block, tile, x, sizeof(float) * 64);
    y[threadIdx.x] = tile[63 - threadIdx.x];
    cg::wait(block);
    """


def test_reading_a_memcpy_async_destination_before_the_wait_is_reported():
    # (thread 0 reads what thread 63 copies, which it has not yet: an uninitialised read here)
    with pytest.raises((cf.UninitializedReadError, cf.RaceError), match=r"ReadsBeforeWait .*__shared__ variable 'tile'.* at "
                       r"ReadsBeforeWait\.body, line 4: "):  # fmt: skip
        ReadsBeforeWait(np.ones(64, np.float32), np.zeros(64, np.float32), grid=1, device="cpu", check=True)


@cf.kernel
class GroupCallsInABranch:
    """A block's sync, or a tile's shuffle, that some of its threads never reach (mode 0, 1)."""

    y: cf.Out[cf.float32]
    mode: cf.int32
    block = 64
    preamble = PREAMBLE
    body = """
    cg::thread_block block = cg::this_thread_block();
    auto tile = cg::tiled_partition<32>(block);
    if (mode == 0 && threadIdx.x < 48) block.sync();
    if (mode == 1 && threadIdx.x % 32 < 8) y[threadIdx.x] = tile.shfl_down(1.f, 1);
    y[threadIdx.x] = 1.f;
    """


@pytest.mark.parametrize(
    "mode, message",
    [(0, r"threads \[0-47\] wait at the __syncthreads at GroupCallsInABranch.body, line 3, which threads \[48-63\] exited"),
     (1, r"exited without reaching the __shfl_down_sync that lanes 0x000000ff of its warp wait at \(mask 0xffffffff\) at "
         r"GroupCallsInABranch.body, line 4;")],
)  # fmt: skip
def test_a_group_call_some_threads_skip_names_the_kernel_s_line(mode, message):
    # (the cooperative-groups call's line, not the line in cuforge's header that makes the barrier)
    with pytest.raises(cf.LaunchError, match=message):
        GroupCallsInABranch(np.zeros(64, np.float32), mode, grid=1, device="cpu")
