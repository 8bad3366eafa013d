"""CUB's block and warp collectives on the CPU backend (cub::BlockReduce, BlockScan, WarpReduce,
WarpScan), checked and not, against NumPy; their misuse reported, and the rest of CUB refused.
tests/gpu/test_cub_gpu.py runs the same kernels against CUB itself on a GPU."""

from __future__ import annotations

import numpy as np
import pytest

import cuforge as cf

CUB = """
#include <cub/block/block_load.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>
#include <cub/warp/warp_reduce.cuh>
#include <cub/warp/warp_scan.cuh>
"""


@cf.kernel
class Collectives:
    """Each collective once, on integers: out has 8 columns per thread, -7 where CUB's result is
    not defined (a reduction's, outside its first thread or lane)."""

    x: cf.In[cf.int32]
    out: cf.Array[cf.int32]
    block = 96  # (three warps: a block's warps and a logical warp of 16 lanes)
    preamble = CUB
    body = """
    using BR = cub::BlockReduce<int, 96>;
    using BS = cub::BlockScan<int, 96>;
    using WR = cub::WarpReduce<int>;
    using WS = cub::WarpScan<int, 16>;
    __shared__ typename BR::TempStorage br;
    __shared__ typename BS::TempStorage bs;
    __shared__ typename WR::TempStorage wr[3];
    __shared__ typename WS::TempStorage ws[6];
    int t = threadIdx.x, i = blockIdx.x * 96 + t, v = x[i];
    int total = BR(br).Sum(v);
    if (t == 0) out[8 * i + 0] = total;
    int inclusive, exclusive, aggregate;
    BS(bs).InclusiveSum(v, inclusive);
    __syncthreads();
    BS(bs).ExclusiveSum(v, exclusive, aggregate);
    out[8 * i + 1] = inclusive;
    out[8 * i + 2] = exclusive;
    out[8 * i + 3] = aggregate;
    int warp_sum = WR(wr[t / 32]).Sum(v);
    if (t % 32 == 0) out[8 * i + 4] = warp_sum;
    int lane_inclusive, lane_max;
    WS(ws[t / 16]).InclusiveSum(v, lane_inclusive);
    WS(ws[t / 16]).ExclusiveScan(v, lane_max, 100, cuda::maximum<>{});
    out[8 * i + 5] = lane_inclusive;
    out[8 * i + 6] = lane_max;
    int items[3] = {v, 2 * v, 3 * v}, scanned[3];
    __syncthreads();
    BS(bs).ExclusiveSum(items, scanned);
    out[8 * i + 7] = scanned[2];
    """


@pytest.mark.parametrize("check", [False, True])
def test_block_and_warp_collectives_against_numpy(check):
    x = np.random.default_rng(0).integers(-100, 100, 192).astype(np.int32)
    out = np.full(192 * 8, -7, np.int32)
    Collectives(x, out, grid=2, device="cpu", check=check)
    got = out.reshape(2, 96, 8)
    for xs, o in zip(x.reshape(2, 96), got):
        np.testing.assert_array_equal(o[:, 0], [xs.sum()] + [-7] * 95)
        np.testing.assert_array_equal(o[:, 1], np.cumsum(xs))
        np.testing.assert_array_equal(o[:, 2], np.cumsum(xs) - xs)
        np.testing.assert_array_equal(o[:, 3], xs.sum())
        np.testing.assert_array_equal(o[::32, 4], xs.reshape(3, 32).sum(axis=1))
        assert (np.delete(o[:, 4], [0, 32, 64]) == -7).all()
        segments = xs.reshape(6, 16)
        np.testing.assert_array_equal(o[:, 5], np.cumsum(segments, axis=1).ravel())
        running = np.maximum.accumulate(np.maximum(segments, 100), axis=1)
        np.testing.assert_array_equal(o[:, 6], np.concatenate([np.full((6, 1), 100), running[:, :-1]], axis=1).ravel())
        np.testing.assert_array_equal(o[:, 7], np.cumsum(6 * xs) - 6 * xs + 3 * xs)


@cf.kernel
class TiledScan:
    """A scan of many tiles by one block, a prefix callback carrying the running total (CUB's
    documented pattern), and an argmax of a 16-byte struct by a block's own TempStorage."""

    x: cf.In[cf.float64]
    scan: cf.Out[cf.float64]
    best: cf.Out[cf.float64]
    where: cf.Out[cf.int32]
    n: cf.int32
    block = (32, 4)
    preamble = (
        CUB
        + """
    struct Running {
        double total;
        __device__ double operator()(double block_aggregate) { double old = total; total += block_aggregate; return old; }
    };
    struct Candidate { double value; long long index; };
    struct Larger {
        __device__ Candidate operator()(const Candidate& a, const Candidate& b) const {
            return b.value > a.value || (b.value == a.value && b.index < a.index) ? b : a;
        }
    };
    """
    )
    body = """
    using BS = cub::BlockScan<double, 32, cub::BLOCK_SCAN_WARP_SCANS, 4>;
    __shared__ typename BS::TempStorage temp;
    Running running{0.0};
    int t = threadIdx.y * 32 + threadIdx.x;
    Candidate mine{-1e300, -1};
    for (int base = 0; base < n; base += 128) {
        int i = base + t;
        double v = i < n ? x[i] : 0.0;
        double s;
        BS(temp).InclusiveSum(v, s, running);
        __syncthreads();
        if (i < n) {
            scan[i] = s;
            if (v > mine.value) mine = Candidate{v, i};
        }
    }
    Candidate top = cub::BlockReduce<Candidate, 32, cub::BLOCK_REDUCE_WARP_REDUCTIONS, 4>().Reduce(mine, Larger{}, n < 128 ? n : 128);
    if (t == 0) { best[0] = top.value; where[0] = int(top.index); }
    """


@pytest.mark.parametrize("check", [False, True])
@pytest.mark.parametrize("n", [500, 100])
def test_a_prefix_callback_over_tiles_and_a_struct_reduction(n, check):
    x = np.random.default_rng(n).integers(-9, 10, n).astype(np.float64)
    scan, best, where = np.zeros(n), np.zeros(1), np.zeros(1, np.int32)
    TiledScan(x, scan, best, where, n, grid=1, device="cpu", check=check)
    np.testing.assert_array_equal(scan, np.cumsum(x))
    assert (best[0], where[0]) == (x.max(), int(np.argmax(x)))


@cf.kernel
class TileCumsum:
    """A cumulative sum tile by tile, as PyTorch's and cuDF's scans are written: BlockLoad (warp
    transposed, the tail guarded with a default), BlockScan over items per thread with a running
    prefix, BlockStore (guarded); and a striped load and store of the same tile beside it."""

    x: cf.In[cf.int32]
    y: cf.Out[cf.int32]
    striped: cf.Out[cf.int32]
    n: cf.int32
    block = 64
    preamble = (
        CUB
        + """
    struct Running {
        int total;
        __device__ int operator()(int block_aggregate) { int old = total; total += block_aggregate; return old; }
    };
    """
    )
    body = """
    using Load = cub::BlockLoad<int, 64, 4, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
    using Scan = cub::BlockScan<int, 64>;
    using Store = cub::BlockStore<int, 64, 4, cub::BLOCK_STORE_WARP_TRANSPOSE>;
    __shared__ union { typename Load::TempStorage load; typename Scan::TempStorage scan; typename Store::TempStorage store; } temp;
    Running running{0};
    for (int base = 0; base < n; base += 256) {
        int items[4], left = n - base;
        Load(temp.load).Load(x + base, items, left, 0);
        __syncthreads();
        Scan(temp.scan).InclusiveSum(items, items, running);
        __syncthreads();
        Store(temp.store).Store(y + base, items, left);
        __syncthreads();
        int raw[4];
        cub::BlockLoad<int, 64, 4, cub::BLOCK_LOAD_STRIPED>().Load(x + base, raw, left, -1);
        for (int i = 0; i < 4; ++i) raw[i] *= 2;
        cub::BlockStore<int, 64, 4, cub::BLOCK_STORE_STRIPED>().Store(striped + base, raw, left);
    }
    """


@pytest.mark.parametrize("check", [False, True])
def test_tiles_loaded_scanned_and_stored(check):
    n = 700
    x = np.random.default_rng(4).integers(-50, 50, n).astype(np.int32)
    y, striped = np.zeros(n, np.int32), np.zeros(n, np.int32)
    TileCumsum(x, y, striped, n, grid=1, device="cpu", check=check)
    np.testing.assert_array_equal(y, np.cumsum(x))
    np.testing.assert_array_equal(striped, 2 * x)


@cf.kernel
class ReusedWithoutBarrier:
    x: cf.In[cf.int32]
    out: cf.Out[cf.int32]
    block = 64
    preamble = CUB
    body = """
    using BS = cub::BlockScan<int, 64>;
    __shared__ typename BS::TempStorage temp;
    int v = x[threadIdx.x], a, b;
    BS(temp).InclusiveSum(v, a);
    BS(temp).ExclusiveSum(v, b);
    out[threadIdx.x] = a + b;
    """


@cf.kernel
class WarpReduceInABranch:
    x: cf.In[cf.int32]
    out: cf.Out[cf.int32]
    block = 64
    preamble = CUB
    body = """
    using WR = cub::WarpReduce<int>;
    __shared__ typename WR::TempStorage temp[2];
    int s = 0;
    if (threadIdx.x % 32 < 16) s = WR(temp[threadIdx.x / 32]).Sum(x[threadIdx.x]);
    out[threadIdx.x] = s;
    """


@cf.kernel
class BlockOfTheWrongSize:
    x: cf.In[cf.int32]
    out: cf.Out[cf.int32]
    preamble = CUB
    body = """
    using BR = cub::BlockReduce<int, 128>;
    __shared__ typename BR::TempStorage temp;
    int s = BR(temp).Sum(x[threadIdx.x]);
    if (threadIdx.x == 0) out[0] = s;
    """


@cf.kernel
class NormalizeByEveryThread:
    """Every thread divides by the block's sum: CUB defines a reduction's result in thread 0 only."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    preamble = CUB
    body = """
    using BR = cub::BlockReduce<float, 64>;
    __shared__ typename BR::TempStorage temp;
    float total = BR(temp).Sum(x[threadIdx.x]);
    y[threadIdx.x] = x[threadIdx.x] / total;
    """


def test_a_reduction_s_result_used_outside_its_first_thread_is_reported_at_the_call():
    x = np.ones(64, np.float32)
    with pytest.raises(cf.UninitializedReadError, match=r"NormalizeByEveryThread .*cub::BlockReduce's result is defined in "
                       r"the first thread only \(CUB's contract\), and thread \(\d+, 0, 0\) of block \(0, 0, 0\)'s .* reached "
                       r"parameter 'y'.* at NormalizeByEveryThread\.body, line 3: "):  # fmt: skip
        NormalizeByEveryThread(x, np.zeros(64, np.float32), grid=1, device="cpu", check=True)
    y = np.zeros(64, np.float32)
    NormalizeByEveryThread(x, y, grid=1, device="cpu", check=False)  # (warps' partial sums, as CUB leaves them)
    assert y[0] == 1 / 64 and y[32] == 1 / 32  # (lane 0 of each warp: its warp's sum; others less)


@cf.kernel
class ShareOfEveryThread:
    """Every thread's share of the block's count, in thousandths: CUB defines the count in thread 0 only,
    and an integer has no NaN to carry a mark (the reruns find it)."""

    x: cf.In[cf.int32]
    y: cf.Out[cf.int32]
    block = 64
    preamble = CUB
    body = """
    using BR = cub::BlockReduce<int, 64>;
    __shared__ typename BR::TempStorage temp;
    int total = BR(temp).Sum(x[threadIdx.x]);
    y[threadIdx.x] = 1000 * x[threadIdx.x] / total;
    """


def test_an_integer_reduction_s_result_used_outside_its_first_thread_is_reported_at_the_call():
    with pytest.raises(cf.UninitializedReadError, match=r"ShareOfEveryThread .*cub::BlockReduce's result is defined in "
                       r"the first thread only \(CUB's contract\), and thread \(\d+, 0, 0\) of block \(0, 0, 0\)'s decided "
                       r"parameter 'y'.* at ShareOfEveryThread\.body, line 3: "):  # fmt: skip
        ShareOfEveryThread(np.ones(64, np.int32), np.zeros(64, np.int32), grid=1, device="cpu", check=True)


def _run(kernel, check, **launch):
    kernel(np.arange(64, dtype=np.int32), np.zeros(64, np.int32), grid=1, device="cpu", check=check, **launch)


def test_a_temp_storage_reused_without_a_barrier_is_a_race_at_the_second_use():
    with pytest.raises(cf.RaceError, match=r"ReusedWithoutBarrier .*data race on __shared__ variable 'temp'.* at "
                       r"ReusedWithoutBarrier\.body, line 5: BS\(temp\)\.ExclusiveSum\(v, b\);"):  # fmt: skip
        _run(ReusedWithoutBarrier, True)
    _run(ReusedWithoutBarrier, False)  # (unchecked: the race goes unseen, as on a GPU)


@pytest.mark.parametrize("check", [False, True])
def test_a_warp_reduction_some_lanes_skip_is_warp_misuse(check):
    with pytest.raises(cf.LaunchError, match=r"WarpReduceInABranch .*thread 16 \(lane 16\) exited without reaching the "
                       r"__shfl_sync that lanes 0x0000ffff of its warp wait at \(mask 0xffffffff\) at "
                       r"WarpReduceInABranch\.body, line 4;"):  # fmt: skip
        _run(WarpReduceInABranch, check)


@pytest.mark.parametrize("check", [False, True])
def test_a_block_collective_for_another_block_size_is_refused_with_the_fix(check):
    with pytest.raises(cf.LaunchError, match=r"BlockOfTheWrongSize .*cub::BlockReduce's BlockDimX \* BlockDimY \* BlockDimZ "
                       r"is 128 threads, but the block has 64; name the launch's block in its template arguments"):  # fmt: skip
        _run(BlockOfTheWrongSize, check, block=64)


@pytest.mark.parametrize(
    "preamble, body, construct",
    [("#include <cub/block/block_radix_sort.cuh>", "", r"CUB device code other than cub::BlockReduce, BlockScan, BlockLoad, "
      r"BlockStore, WarpReduce, WarpScan, KeyValuePair, ArgMin and ArgMax"),
     (CUB, "cub::BlockExchange<int, 64, 1> *exchange = nullptr;", r"CUB device code other than cub::BlockReduce, BlockScan, "
      r"BlockLoad, BlockStore, WarpReduce, WarpScan, KeyValuePair, ArgMin and ArgMax"),
     ("#include <thrust/sort.h>", "", "Thrust device code")],
    ids=["radix-sort header", "block exchange", "thrust"],
)  # fmt: skip
def test_the_rest_of_cub_and_thrust_are_refused_at_compile(preamble, body, construct):
    Refused = cf.kernel(type("Refused", (), {"__annotations__": {"x": cf.Array[cf.int32]}, "preamble": preamble,
                                             "body": body + " x[threadIdx.x] = 1;"}))  # fmt: skip
    with pytest.raises(cf.CompileError, match=rf"Refused: {construct} cannot run on the CPU \(.*\); launch it on a GPU "
                       r"with device='cuda'"):  # fmt: skip
        Refused(np.zeros(64, np.int32), grid=1, block=64, device="cpu")


def test_cub_cub_cuh_is_refused_as_nvrtc_refuses_it():
    Whole = cf.kernel(type("Whole", (), {"__annotations__": {"x": cf.Array[cf.int32]}, "preamble": "#include <cub/cub.cuh>",
                                         "body": "x[threadIdx.x] = 1;"}))  # fmt: skip
    with pytest.raises(cf.CompileError, match=r"Including <cub/cub\.cuh> is not supported when compiling with NVRTC\. Include "
                       r"the specific device header instead"):  # fmt: skip
        Whole(np.zeros(64, np.int32), grid=1, block=64, device="cpu")


@cf.kernel
class ArgExtremes:
    """cuML's arg-min (and an arg-max) by cub::KeyValuePair through a BlockReduce."""

    x: cf.In[cf.float32]
    out: cf.Out[cf.int32]
    block = 64
    preamble = "#include <cub/block/block_reduce.cuh>\n#include <cub/util_type.cuh>\n#include <cub/thread/thread_operators.cuh>"
    body = """
    typedef cub::KeyValuePair<int, float> KVP;
    typedef cub::BlockReduce<KVP, 64> BR;
    __shared__ typename BR::TempStorage t;
    KVP least = BR(t).Reduce(KVP(threadIdx.x, x[blockIdx.x * 64 + threadIdx.x]), cub::ArgMin());
    __syncthreads();
    KVP most = BR(t).Reduce(KVP(threadIdx.x, x[blockIdx.x * 64 + threadIdx.x]), cub::ArgMax());
    if (threadIdx.x == 0) { out[2 * blockIdx.x] = least.key; out[2 * blockIdx.x + 1] = most.key; }
    """


@cf.kernel
class RowSums:
    """vLLM's layernorm reduction: BlockReduce<float, 1024> over a block of min(cols, 1024)
    threads, reducing blockDim.x valid items (mode 1: one more than the block has)."""

    x: cf.In[cf.float32]
    out: cf.Out[cf.float32]
    cols: cf.int32
    mode: cf.int32
    preamble = "#include <cub/block/block_reduce.cuh>"
    body = """
    using BR = cub::BlockReduce<float, 1024>;
    __shared__ typename BR::TempStorage ts;
    float v = 0.f;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) v += x[blockIdx.x * cols + i];
    float r = BR(ts).Sum(v, blockDim.x + mode);
    if (threadIdx.x == 0) out[blockIdx.x] = r;
    """


@pytest.mark.parametrize("check", [False, True])
def test_key_value_pairs_and_a_reduction_in_a_block_smaller_than_its_template(check):
    x = np.random.default_rng(3).permutation(128).astype(np.float32)
    keys = np.zeros(4, np.int32)
    ArgExtremes(x, keys, grid=2, device="cpu", check=check)
    rows = x.reshape(2, 64)
    np.testing.assert_array_equal(keys, np.stack([rows.argmin(1), rows.argmax(1)], 1).ravel())
    x = np.random.default_rng(4).integers(0, 9, 4000).astype(np.float32)
    for block in (256, 200, 1024):
        sums = np.zeros(4, np.float32)
        RowSums(x, sums, 1000, 0, grid=4, block=block, device="cpu", check=check)
        np.testing.assert_array_equal(sums, x.reshape(4, 1000).sum(1))


def test_a_reduction_of_more_items_than_the_block_has_is_refused():
    with pytest.raises(cf.LaunchError, match=r"cub::BlockReduce at RowSums\.body, line 5 reduces num_valid = 257 items, but "
                       r"the block has 256 threads"):  # fmt: skip
        RowSums(np.ones(1000, np.float32), np.zeros(1, np.float32), 1000, 1, grid=1, block=256, device="cpu")


PADDED_AND_CARVED = r"""
#include <cub/block/block_load.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_store.cuh>
template <int B>
__global__ void padded_argmax(const float* x, long long* out) {  // (PyTorch3D's farthest-point sampling)
    using BR = cub::BlockReduce<cub::KeyValuePair<long long, float>, B>;
    __shared__ typename BR::TempStorage temp;
    cub::KeyValuePair<long long, float> kv(threadIdx.x, x[threadIdx.x]);
    long long at = BR(temp).Reduce(kv, cub::ArgMax()).key;
    if (threadIdx.x == 0) out[0] = at;
}
typedef cub::BlockLoad<float, 128, 4, cub::BLOCK_LOAD_WARP_TRANSPOSE> LoadT;
typedef cub::BlockStore<float, 128, 4, cub::BLOCK_STORE_WARP_TRANSPOSE> StoreT;
__global__ void sizes(int* out) {
    out[0] = sizeof(LoadT::TempStorage), out[1] = alignof(LoadT::TempStorage);
    out[2] = sizeof(StoreT::TempStorage), out[3] = alignof(StoreT::TempStorage);
}
__global__ void carved(const float* x, float* y) {  // (causal-conv1d: a uint4 ring after the TempStorage)
    extern __shared__ char smem_[];
    auto& load = reinterpret_cast<LoadT::TempStorage&>(smem_);
    uint4* ring = reinterpret_cast<uint4*>(smem_ + sizeof(LoadT::TempStorage));
    float v[4];
    LoadT(load).Load(x, v);
    __syncthreads();
    ring[threadIdx.x] = reinterpret_cast<uint4&>(v);
    __syncthreads();
    uint4 w = ring[(threadIdx.x + 1) % 128];
    for (int i = 0; i < 4; ++i) y[4 * threadIdx.x + i] = reinterpret_cast<const float*>(&w)[i];
}
"""


def _from_source(name, **annotations):
    return cf.kernel(type("K", (), {"__annotations__": annotations, "name": name, "source": PADDED_AND_CARVED}))


@pytest.mark.parametrize("check", [False, True])
def test_a_reduction_of_a_padded_pair_and_a_temp_storage_carved_from_dynamic_shared_memory(check):
    """A KeyValuePair<long long, float> has 4 bytes of padding, which CUB's slot keeps whole (three warps);
    CUB's BlockLoad and BlockStore TempStorage have its size and alignment, so what follows it is aligned."""
    x = np.random.default_rng(3).random(512).astype(np.float32)
    out = np.zeros(1, np.int64)
    _from_source("padded_argmax<96>", x=cf.In[cf.float32], out=cf.Out[cf.int64])(x, out, grid=1, block=96, device="cpu",
                                                                                  check=check)  # fmt: skip
    assert out[0] == np.argmax(x[:96])
    sizes = np.zeros(4, np.int32)
    _from_source("sizes", out=cf.Out[cf.int32])(sizes, grid=1, block=1, device="cpu", check=check)
    assert list(sizes) == [2048, 16, 2064, 16]  # (CUB's own, compiled for the host by nvcc)
    y = np.zeros(512, np.float32)
    _from_source("carved", x=cf.In[cf.float32], y=cf.Out[cf.float32])(x, y, grid=1, block=128, shared_mem=2048 + 128 * 16,
                                                                       device="cpu", check=check)  # fmt: skip
    np.testing.assert_array_equal(y, np.roll(x.reshape(128, 4), -1, axis=0).ravel())
