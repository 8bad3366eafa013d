"""A third corpus, buggy kernels (each must be reported with one of its kinds): bug patterns seen in
projects' fixes. `test_cpu_check_probe.py` runs them checked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

import cuforge as cf

from .check_corpus_more import COOP
from .check_corpus_more import _rand as R
from .check_corpus_more import _xy as xy
from .check_corpus_more import _xyn as xyn


class Buggy(NamedTuple):
    kernel: Any
    args: Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]
    errors: tuple  # accepted error classes (first = the expected one)
    line: int  # expected line of the body (0: none / any)
    note: str = ""


@cf.kernel
class SoftmaxRowGuardGT:
    """Warp-per-row softmax with `if (row > rows) return;` (should be >=)."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    rows: cf.int32
    cols: cf.int32
    block = 64
    body = """
    int row = blockIdx.x * 2 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row > rows) return;
    float m = -3.402823466e+38f;
    for (int j = lane; j < cols; j += 32) m = fmaxf(m, x[row * cols + j]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    for (int j = lane; j < cols; j += 32) y[row * cols + j] = __expf(x[row * cols + j] - m);
    """


@cf.kernel
class MatmulNoLeadingSync:
    """Tiled matmul whose loop lacks the __syncthreads() between the tile loads and the products."""

    A: cf.In[cf.float32]
    B: cf.In[cf.float32]
    C: cf.Out[cf.float32]
    n: cf.int32
    block = (16, 16)
    body = """
    __shared__ float As[16][16], Bs[16][16];
    int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    float acc = 0.f;
    for (int t = 0; t < n / 16; ++t) {
        As[ty][tx] = A[row * n + t * 16 + tx];
        Bs[ty][tx] = B[(t * 16 + ty) * n + col];
        for (int k = 0; k < 16; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[row * n + col] = acc;
    """


@cf.kernel
class WarpLoopReduceNoSyncwarp:
    """The last-warp loop `for (o = 16..1) if (t < o) s[t] += s[t + o];` with no __syncwarp (pre-Volta style)."""

    x: cf.In[cf.float32]
    out: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * 64 + t];
    __syncthreads();
    if (t < 32) {
        s[t] += s[t + 32];
        for (int o = 16; o > 0; o >>= 1) if (t < o) s[t] += s[t + o];
    }
    if (t == 0) out[blockIdx.x] = s[0];
    """


@cf.kernel
class SyncInConvergenceLoop:
    """Each thread iterates until its own value converges, with a __syncthreads in the loop."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float s[64];
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    float v = x[i] * 10.f;
    while (v > 1.f) {
        s[t] = v;
        __syncthreads();
        v = 0.5f * s[t];
    }
    y[i] = v;
    """


@cf.kernel
class Tile16MaskOnFullWarp:
    """A half-warp xor shuffle (mask 0xffff) called by all 32 lanes."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 32
    body = """
    int i = blockIdx.x * 32 + threadIdx.x;
    float v = x[i];
    for (int o = 8; o > 0; o >>= 1) v += __shfl_xor_sync(0x0000ffffu, v, o, 16);
    y[i] = v;
    """


@cf.kernel
class InPlaceScanSingleBarrier:
    """Hillis-Steele scan in place, one barrier per step (GPU Gems 39's first version)."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float s[64];
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    s[t] = x[i];
    __syncthreads();
    for (int d = 1; d < 64; d <<= 1) {
        if (t >= d) s[t] += s[t - d];
        __syncthreads();
    }
    y[i] = s[t];
    """


@cf.kernel
class TicketBeforePartial:
    """Last-block reduction that takes its ticket before storing its partial."""

    x: cf.In[cf.float32]
    partial: cf.Out[cf.float32]
    count: cf.Array[cf.uint32]
    total: cf.Out[cf.float32]
    block = 32
    body = """
    __shared__ bool amLast;
    int t = threadIdx.x;
    float v = x[blockIdx.x * 32 + t];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (t == 0) {
        unsigned ticket = atomicInc(&count[0], gridDim.x);
        __threadfence();
        partial[blockIdx.x] = v;
        amLast = ticket == gridDim.x - 1;
    }
    __syncthreads();
    if (amLast && t == 0) {
        float s = 0.f;
        for (int b = 0; b < gridDim.x; ++b) s += partial[b];
        total[0] = s;
    }
    """


@cf.kernel
class CompactPlainCounter:
    """Stream compaction with a non-atomic read-modify-write of the global counter."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    count: cf.Array[cf.int32]
    n: cf.int32
    block = 64
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > 0.5f) {
        int pos = count[0];
        count[0] = pos + 1;
        y[pos] = x[i];
    }
    """


@cf.kernel
class UnsignedWrapIndex:
    """A backward difference with an unsigned index: i - 1 wraps to 4294967295 at i == 0."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    body = """
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (unsigned)n) y[i] = x[i] - x[i - 1u];
    """


@cf.kernel
class UninitRegisterAccumulator:
    """Row sums with an accumulator never set to zero (a register)."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    cols: cf.int32
    block = 32
    body = """
    int row = blockIdx.x * 32 + threadIdx.x;
    float acc;
    for (int j = 0; j < cols; ++j) acc += x[row * cols + j];
    y[row] = acc;
    """


@cf.kernel
class UninitLocalArray:
    """Per-thread histogram in a local array, never zeroed."""

    x: cf.In[cf.int32]
    y: cf.Out[cf.int32]
    block = 32
    body = """
    int h[4];
    int i = blockIdx.x * 32 + threadIdx.x;
    for (int k = 0; k < 8; ++k) h[x[i * 8 + k] & 3]++;
    y[i] = h[0] * 1000 + h[1] * 100 + h[2] * 10 + h[3];
    """


@cf.kernel
class Float4RowMisaligned:
    """Vectorised row loads with float4 where cols (50) is not a multiple of 4."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    cols: cf.int32
    block = 32
    body = """
    const float4* r = reinterpret_cast<const float4*>(x + blockIdx.x * cols);
    float s = 0.f;
    for (int j = threadIdx.x; j < cols / 4; j += 32) { float4 v = r[j]; s += v.x + v.y + v.z + v.w; }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (threadIdx.x == 0) y[blockIdx.x] = s;
    """


@cf.kernel
class Half2OddOffset:
    """half2 loads from an fp16 row at an odd element offset."""

    x: cf.In[cf.float16]
    y: cf.Out[cf.float32]
    cols: cf.int32
    block = 32
    body = """
    const __half2* r = reinterpret_cast<const __half2*>(x + blockIdx.x * cols);
    __half2 v = r[threadIdx.x];
    y[blockIdx.x * 32 + threadIdx.x] = __low2float(v) + __high2float(v);
    """


@cf.kernel
class SharedFlagNoBarrier:
    """Thread 0 decides a shared flag; the others read it with no barrier."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ int skip;
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    if (t == 0) skip = x[blockIdx.x * 64] > 0.5f;
    if (skip) y[i] = 0.f; else y[i] = x[i];
    """


@cf.kernel
class PaddedTileFlatIndex:
    """A tile declared [32][32] indexed as if padded to 33 columns."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = (32, 8)
    body = """
    __shared__ float tile[32][32];
    float* tp = &tile[0][0];
    int tx = threadIdx.x, ty = threadIdx.y;
    for (int j = 0; j < 32; j += 8) tp[(ty + j) * 33 + tx] = x[(ty + j) * 32 + tx];
    __syncthreads();
    for (int j = 0; j < 32; j += 8) y[(ty + j) * 32 + tx] = tp[tx * 33 + ty + j];
    """


@cf.kernel
class CoopSyncthreadsForGridSync:
    """A cooperative kernel that uses __syncthreads() where grid.sync() is needed."""

    x: cf.In[cf.float32]
    partial: cf.Array[cf.float32]
    y: cf.Out[cf.float32]
    cooperative = True
    block = 32
    preamble = COOP
    body = """
    float v = x[blockIdx.x * 32 + threadIdx.x];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) partial[blockIdx.x] = v;
    __syncthreads();
    float tot = 0.f;
    for (int b = 0; b < gridDim.x; ++b) tot += partial[b];
    y[blockIdx.x * 32 + threadIdx.x] = x[blockIdx.x * 32 + threadIdx.x] / tot;
    """


@cf.kernel
class BlockReduceTwiceNoSync:
    """Megatron-style blockReduceSum called twice back to back (sum, then sum of squares): the
    second call's lane-0 store into shared[wid] races with the first call's reads."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    cols: cf.int32
    block = 128
    preamble = """
    __device__ float warpSum(float v) { for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffff, v, m); return v; }
    __device__ float blockReduceSum(float val) {
        static __shared__ float shared[32];
        int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
        val = warpSum(val);
        if (lane == 0) shared[wid] = val;
        __syncthreads();
        val = (threadIdx.x < blockDim.x / 32) ? shared[lane] : 0.f;
        return warpSum(val);
    }
    """
    body = """
    const float* xr = x + blockIdx.x * cols;
    float s = 0.f, q = 0.f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) { s += xr[j]; q += xr[j] * xr[j]; }
    s = blockReduceSum(s);
    q = blockReduceSum(q);
    float mean = s / cols, rstd = rsqrtf(q / cols - mean * mean + 1e-5f);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) y[blockIdx.x * cols + j] = (xr[j] - mean) * rstd;
    """


@cf.kernel
class HaloRightUnclamped:
    """A 2-D stencil whose right halo load is not clamped at the border."""

    src: cf.In[cf.float32]
    dst: cf.Out[cf.float32]
    w: cf.int32
    h: cf.int32
    block = (16, 16)
    body = """
    __shared__ float s[16][17];
    int tx = threadIdx.x, ty = threadIdx.y, gx = blockIdx.x * 16 + tx, gy = blockIdx.y * 16 + ty;
    s[ty][tx] = src[gy * w + gx];
    if (tx == 15) s[ty][16] = src[gy * w + gx + 1];
    __syncthreads();
    dst[gy * w + gx] = s[ty][tx + 1] - s[ty][tx];
    """


@cf.kernel
class SharedCounterZeroNoBarrier:
    """A block-local compaction counter zeroed by thread 0 with no barrier before the atomics."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.int32]
    block = 64
    body = """
    __shared__ int cnt;
    if (threadIdx.x == 0) cnt = 0;
    if (x[blockIdx.x * 64 + threadIdx.x] > 0.5f) atomicAdd(&cnt, 1);
    __syncthreads();
    if (threadIdx.x == 0) y[blockIdx.x] = cnt;
    """


@cf.kernel
class TileShflInBranch:
    """A tile's shfl_down inside a branch only 20 lanes take."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 32
    preamble = COOP
    body = """
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(cg::this_thread_block());
    int i = blockIdx.x * 32 + threadIdx.x;
    float v = x[i];
    if (tile.thread_rank() < 20) v += tile.shfl_down(v, 1);
    y[i] = v;
    """


@cf.kernel
class StructMemberUninit:
    """A shared struct of which only one member is written; another is read."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    preamble = """
    struct Stats { float sum; float scale; };
    """
    body = """
    __shared__ Stats st;
    if (threadIdx.x == 0) st.sum = x[blockIdx.x * 64];
    __syncthreads();
    y[blockIdx.x * 64 + threadIdx.x] = x[blockIdx.x * 64 + threadIdx.x] * st.scale + st.sum;
    """


@cf.kernel
class Col2ImPlainScatter:
    """col2im-style scatter: overlapping windows accumulated with plain += across blocks."""

    cols: cf.In[cf.float32]
    img: cf.Array[cf.float32]
    n: cf.int32
    block = 32
    body = """
    int p = blockIdx.x * 32 + threadIdx.x;   // a window start
    if (p < n - 2)
        for (int k = 0; k < 3; ++k) img[p + k] += cols[p * 3 + k];
    """


@cf.kernel
class ScanPrevBufferRead:
    """A ping-pong Hillis-Steele scan that reads from the buffer it writes in the same step (pout used for both)."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float buf[2][64];
    int t = threadIdx.x, i = blockIdx.x * 64 + t, pout = 0, pin = 1;
    buf[pout][t] = x[i];
    __syncthreads();
    for (int d = 1; d < 64; d <<= 1) {
        pout = 1 - pout; pin = 1 - pout;
        buf[pout][t] = buf[pin][t];
        if (t >= d) buf[pout][t] += buf[pout][t - d];
        __syncthreads();
    }
    y[i] = buf[pout][t];
    """


@cf.kernel
class VolatileFlagNoFence:
    """Chained scan publishing carry then a volatile flag with no __threadfence between."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    carry: cf.Array[cf.float32]
    flags: cf.Array[cf.int32]
    ticket: cf.Array[cf.int32]
    block = 32
    body = """
    __shared__ int s_bid;
    if (threadIdx.x == 0) s_bid = atomicAdd(ticket, 1);
    __syncthreads();
    int bid = s_bid, t = threadIdx.x;
    float v = x[bid * 32 + t];
    for (int o = 1; o < 32; o <<= 1) { float u = __shfl_up_sync(0xffffffffu, v, o); if (t >= o) v += u; }
    float prefix = 0.f;
    if (bid > 0) {
        while (((volatile int*)flags)[bid - 1] == 0) { }
        prefix = ((volatile float*)carry)[bid - 1];
    }
    if (t == 31) { carry[bid] = prefix + v; ((volatile int*)flags)[bid] = 1; }
    y[bid * 32 + t] = v + prefix;
    """


@cf.kernel
class OutNeighbourPrefix:
    """A 'prefix' computed in place in Out by reading the left neighbour's output."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    int i = blockIdx.x * 64 + threadIdx.x;
    y[i] = x[i] + (threadIdx.x > 0 ? y[i - 1] : 0.f);
    """


@cf.kernel
class DynamicSharedLaunchTooSmallCarve:
    """Carves vals[blockDim] + idx[blockDim] from dynamic shared memory sized for floats only."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    extern __shared__ unsigned char raw[];
    float* vals = reinterpret_cast<float*>(raw);
    int* idx = reinterpret_cast<int*>(vals + blockDim.x);
    int t = threadIdx.x;
    vals[t] = x[blockIdx.x * 64 + t];
    idx[t] = 63 - t;
    __syncthreads();
    y[blockIdx.x * 64 + t] = vals[idx[t]];
    """


@cf.kernel
class TileNeighbourAcrossTiles:
    """Tile-of-16 exchange through shared memory that reads lane+1 without wrapping inside the tile:
    lane 15 reads lane 16's slot, ordered only by its own tile's sync."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 32
    preamble = COOP
    body = """
    __shared__ float buf[33];
    cg::thread_block_tile<16> tile = cg::tiled_partition<16>(cg::this_thread_block());
    int t = threadIdx.x;
    if (t == 0) buf[32] = 0.f;
    __syncthreads();
    buf[t] = x[blockIdx.x * 32 + t];
    tile.sync();
    y[blockIdx.x * 32 + t] = buf[t + 1];
    """


def _sm_rows():
    return (R(7 * 50), np.zeros(7 * 50, np.float32), 7, 50), {"grid": 4}


def _mm():
    return (R(32 * 32), R(32 * 32, seed=1), np.zeros(32 * 32, np.float32), 32), {"grid": (2, 2)}


def _tb():
    return (R(128), np.zeros(4, np.float32), np.zeros(1, np.uint32), np.zeros(1, np.float32)), {"grid": 4}


def _cp():
    return (R(200), np.zeros(200, np.float32), np.zeros(1, np.int32), 200), {"grid": 4}


def _stencil():
    return (R(32 * 32), np.zeros(32 * 32, np.float32), 32, 32), {"grid": (2, 2)}


def _vf():
    return (R(128), np.zeros(128, np.float32), np.zeros(4, np.float32), np.zeros(4, np.int32), np.zeros(1, np.int32)), {"grid": 4}


BUGGY = {
    "softmax row > rows": Buggy(SoftmaxRowGuardGT, _sm_rows, (cf.OutOfBoundsError,), 4),
    "matmul no leading sync": Buggy(MatmulNoLeadingSync, _mm, (cf.UninitializedReadError, cf.RaceError), 7),
    "warp loop reduce no syncwarp": Buggy(
        WarpLoopReduceNoSyncwarp, xy(128, 2, grid=2), (cf.RaceError, cf.UninitializedReadError), 6
    ),
    "sync in convergence loop": Buggy(SyncInConvergenceLoop, xy(128, grid=2), (cf.BarrierMisuseError,), 0),
    "half mask on full warp": Buggy(Tile16MaskOnFullWarp, xy(64, grid=2), (cf.WarpMisuseError,), 0),
    "in-place scan single barrier": Buggy(InPlaceScanSingleBarrier, xy(128, grid=2), (cf.RaceError,), 6),
    "ticket before partial": Buggy(TicketBeforePartial, _tb, (cf.RaceError, cf.UninitializedReadError), 0),
    "compaction plain counter": Buggy(CompactPlainCounter, _cp, (cf.RaceError,), 0),
    "unsigned wrap index": Buggy(UnsignedWrapIndex, xyn(100, grid=2), (cf.OutOfBoundsError, cf.DeviceFaultError), 0),
    "uninit register accumulator": Buggy(
        UninitRegisterAccumulator,
        lambda: ((R(64 * 5), np.zeros(64, np.float32), 5), {"grid": 2}),
        (cf.UninitializedReadError,),
        3,
    ),
    "uninit local array": Buggy(
        UninitLocalArray,
        lambda: ((np.arange(512, dtype=np.int32), np.zeros(64, np.int32)), {"grid": 2}),
        (cf.UninitializedReadError,),
        3,
    ),
    "float4 row misaligned": Buggy(
        Float4RowMisaligned, lambda: ((R(4 * 50), np.zeros(4, np.float32), 50), {"grid": 4}), (cf.MisalignedAccessError,), 3
    ),
    "half2 odd offset": Buggy(
        Half2OddOffset,
        lambda: ((R(2 * 65).astype(np.float16), np.zeros(64, np.float32), 65), {"grid": 2}),
        (cf.MisalignedAccessError,),
        2,
    ),
    "shared flag no barrier": Buggy(SharedFlagNoBarrier, xy(128, grid=2), (cf.UninitializedReadError, cf.RaceError), 4),
    "padded tile flat index": Buggy(PaddedTileFlatIndex, xy(1024, grid=1), (cf.OutOfBoundsError,), 4),
    "coop __syncthreads for grid.sync": Buggy(
        CoopSyncthreadsForGridSync,
        lambda: ((R(128), np.zeros(4, np.float32), np.zeros(128, np.float32)), {"grid": 4}),
        (cf.RaceError,),
        0,
    ),
    "blockReduceSum twice no sync": Buggy(
        BlockReduceTwiceNoSync,
        lambda: ((R(2 * 300), np.zeros(2 * 300, np.float32), 300), {"grid": 2}),
        (cf.RaceError, cf.UninitializedReadError),
        0,
    ),
    "halo right unclamped": Buggy(HaloRightUnclamped, _stencil, (cf.OutOfBoundsError,), 4),
    "shared counter zero no barrier": Buggy(
        SharedCounterZeroNoBarrier,
        lambda: ((R(128), np.zeros(2, np.int32)), {"grid": 2}),
        (cf.RaceError, cf.UninitializedReadError),
        3,
    ),
    "tile shfl in branch": Buggy(TileShflInBranch, xy(64, grid=2), (cf.WarpMisuseError,), 0),
    "struct member uninit": Buggy(StructMemberUninit, xy(128, grid=2), (cf.UninitializedReadError,), 4, "struct = one cell"),
    "col2im plain scatter": Buggy(
        Col2ImPlainScatter, lambda: ((R(3 * 100), np.zeros(100, np.float32), 100), {"grid": 4}), (cf.RaceError,), 3
    ),
    "scan reads buffer it writes": Buggy(ScanPrevBufferRead, xy(128, grid=2), (cf.RaceError, cf.UninitializedReadError), 8),
    "volatile flag no fence": Buggy(VolatileFlagNoFence, _vf, (cf.RaceError,), 0, "unsure: volatile store w/o fence"),
    "Out neighbour prefix": Buggy(OutNeighbourPrefix, xy(128, grid=2), (cf.UninitializedReadError, cf.RaceError), 2),
    "dynamic carve too small": Buggy(
        DynamicSharedLaunchTooSmallCarve, xy(128, grid=2, shared_mem=64 * 4), (cf.OutOfBoundsError,), 6
    ),
    "tile16 neighbour across tiles": Buggy(
        TileNeighbourAcrossTiles, xy(64, grid=2), (cf.RaceError, cf.UninitializedReadError), 8
    ),
}


@cf.kernel
class SpinlockNoFence:
    """Global spinlock whose critical section is not fenced (release with a plain store)."""

    x: cf.In[cf.float32]
    acc: cf.Array[cf.float32]
    lock: cf.Array[cf.int32]
    block = 32
    body = """
    float v = x[blockIdx.x * 32 + threadIdx.x];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) {
        while (atomicCAS(lock, 0, 1) != 0) { }
        acc[0] += v;
        atomicExch(lock, 0);
    }
    """


@cf.kernel
class HalfWarpRowFullMask:
    """Half-warp per row with a full-warp mask: with an odd row count, the last warp's upper half skips the shuffle."""

    a: cf.In[cf.float32]
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    rows: cf.int32
    cols: cf.int32
    block = 64
    body = """
    int t = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
    int row = t / 16, sub = lane & 15;
    if (row < rows) {
        float s = 0.f;
        for (int j = sub; j < cols; j += 16) s += a[row * cols + j] * x[j];
        for (int o = 8; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o, 16);
        if (sub == 0) y[row] = s;
    }
    """


@cf.kernel
class GemmDoubleBufferNoSync:
    """Double-buffered tiles with the loop's barrier removed: the next tile is stored into the buffer
    that slower threads still read."""

    A: cf.In[cf.float32]
    B: cf.In[cf.float32]
    C: cf.Out[cf.float32]
    n: cf.int32
    block = (16, 16)
    body = """
    __shared__ float As[2][16][16], Bs[2][16][16];
    int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    As[0][ty][tx] = A[row * n + tx];
    Bs[0][ty][tx] = B[ty * n + col];
    __syncthreads();
    float acc = 0.f;
    for (int t = 0; t < n / 16; ++t) {
        int cur = t & 1;
        if (t + 1 < n / 16) {
            As[cur ^ 1][ty][tx] = A[row * n + (t + 1) * 16 + tx];
            Bs[cur ^ 1][ty][tx] = B[((t + 1) * 16 + ty) * n + col];
        }
        for (int k = 0; k < 16; ++k) acc += As[cur][ty][k] * Bs[cur][k][tx];
    }
    C[row * n + col] = acc;
    """


@cf.kernel
class Float2FieldsMisaligned:
    """Interleaved complex data read through a float2 pointer at an odd float offset, by fields."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 32
    body = """
    const float2* z = reinterpret_cast<const float2*>(x + 1);
    int i = blockIdx.x * 32 + threadIdx.x;
    y[i] = z[i].x * z[i].x + z[i].y * z[i].y;
    """


@cf.kernel
class SyncOrEarlyBreak:
    """An iterative loop on __syncthreads_or from which converged threads break before the barrier."""

    x: cf.In[cf.int32]
    y: cf.Out[cf.int32]
    block = 64
    body = """
    __shared__ int lab[64];
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    lab[t] = x[i];
    bool changed = true;
    while (__syncthreads_or(changed)) {
        int m = lab[t];
        if (t > 0) m = min(m, lab[t - 1]);
        if (t < 63) m = min(m, lab[t + 1]);
        __syncthreads();
        changed = m < lab[t];
        lab[t] = m;
        if (!changed) break;
    }
    y[i] = lab[t];
    """


@cf.kernel
class TempStorageTooFewWarps:
    """CUB-like TempStorage sized for 4 warps, used by a block of 8 warps: warp 4's partial lands on
    the next member (inside the struct)."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 256
    preamble = """
    struct TempStorage { float warp_sums[4]; float scratch[8]; float total; };
    """
    body = """
    __shared__ TempStorage ts;
    int t = threadIdx.x, lane = t & 31, wid = t >> 5;
    float v = x[blockIdx.x * 256 + t];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (lane == 0) ts.warp_sums[wid] = v;
    __syncthreads();
    if (t == 0) { float s = 0.f; for (int w = 0; w < 8; ++w) s += ts.warp_sums[w]; y[blockIdx.x] = s; }
    """


BUGGY.update(
    {
        "spinlock no fence": Buggy(
            SpinlockNoFence, lambda: ((R(256), np.zeros(1, np.float32), np.zeros(1, np.int32)), {"grid": 8}), (cf.RaceError,), 5
        ),
        "half-warp row full mask": Buggy(
            HalfWarpRowFullMask,
            lambda: ((R(11 * 40), R(40, seed=2), np.zeros(11, np.float32), 11, 40), {"grid": 3}),
            (cf.WarpMisuseError,),
            0,
        ),
        "double buffer gemm no loop sync": Buggy(
            GemmDoubleBufferNoSync,
            lambda: ((R(48 * 48), R(48 * 48, seed=1), np.zeros(48 * 48, np.float32), 48), {"grid": (3, 3)}),
            (cf.RaceError, cf.UninitializedReadError),
            0,
        ),
        "float2 fields misaligned": Buggy(
            Float2FieldsMisaligned,
            xy(160, 64, grid=2),
            (cf.MisalignedAccessError,),
            3,
            "unsure: nvcc emits ld.v2 for both fields",
        ),
        "syncthreads_or early break": Buggy(
            SyncOrEarlyBreak,
            lambda: ((np.random.default_rng(10).integers(0, 1000, 128).astype(np.int32), np.zeros(128, np.int32)), {"grid": 2}),
            (cf.BarrierMisuseError, cf.RaceError),
            0,
        ),
        "TempStorage too few warps": Buggy(
            TempStorageTooFewWarps, xy(512, 2, grid=2), (cf.OutOfBoundsError,), 5, "overflow inside a struct"
        ),
    }
)


@cf.kernel
class UninitLocalTimesZero:
    """A bias never set, scaled by zero: the right answer on the CPU, and on a GPU unless the
    garbage is a NaN or an infinity."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 32
    body = """
    int i = blockIdx.x * 32 + threadIdx.x;
    float bias;
    y[i] = x[i] + 0.f * bias;
    """


BUGGY["uninit local times zero"] = Buggy(UninitLocalTimesZero, xy(64, grid=2), (cf.UninitializedReadError,), 3)


@cf.kernel
class TileRowOverflow:
    """A forward difference along a 16x16 shared tile's rows without the edge guard: the last column
    reads the next row's first element, inside the array (on a GPU a wrong value, no fault)."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = (16, 16)
    body = """
    __shared__ float tile[16][16];
    int tx = threadIdx.x, ty = threadIdx.y, i = (blockIdx.x * 16 + ty) * 16 + tx;
    tile[ty][tx] = x[i];
    __syncthreads();
    if (ty < 15) y[i] = tile[ty][tx + 1] - tile[ty][tx];
    """


BUGGY["tile row overflow into the next row"] = Buggy(TileRowOverflow, xy(512, grid=2), (cf.OutOfBoundsError,), 5)
