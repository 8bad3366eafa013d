"""A third corpus, correct kernels (none may be flagged): written the way projects write them (CUB-style
reductions, cooperative groups, SpMV, softmax, scans, queues), to find what a checker wrongly flags.
`test_cpu_check_probe.py` runs them checked and unchecked against NumPy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

import cuforge as cf

from .check_corpus_more import COOP
from .check_corpus_more import _rand as R

COOP_REDUCE = COOP + "\n#include <cooperative_groups/reduce.h>"


class Correct(NamedTuple):
    kernel: Any
    args: Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]
    expected: Callable[[tuple[Any, ...]], list[tuple[Any, Any]]]
    note: str = ""


# 1 ------------------------------------------------------------------ CUB-style block reduce
@cf.kernel
class CubBlockReduce:
    x: cf.In[cf.float32]
    out: cf.Out[cf.float32]
    n: cf.int32
    block = 128
    body = """
    __shared__ float warp_sums[32];
    int t = threadIdx.x, lane = t & 31, wid = t >> 5;
    int i = blockIdx.x * blockDim.x + t;
    float v = i < n ? x[i] : 0.f;
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (lane == 0) warp_sums[wid] = v;
    __syncthreads();
    if (wid == 0) {
        v = lane < (blockDim.x >> 5) ? warp_sums[lane] : 0.f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (lane == 0) out[blockIdx.x] = v;
    }
    """


def _cub_args():
    return (R(1000), np.zeros(8, np.float32), 1000), {"grid": 8}


def _cub_exp(a):
    x = np.r_[a[0], np.zeros(24, np.float32)]
    return [(a[1], x.reshape(8, 128).sum(1))]


# 2 ------------------------------------------------------------------ CUB TempStorage struct in shared memory
@cf.kernel
class CubTempStorageStruct:
    """CUB-style: a TempStorage struct holding the per-warp partials and the block's total,
    different threads writing different members."""

    x: cf.In[cf.float32]
    out: cf.Out[cf.float32]
    n: cf.int32
    block = 128
    preamble = """
    struct TempStorage { float warp_aggregates[4]; float block_aggregate; int valid_warps; };
    """
    body = """
    __shared__ TempStorage temp;
    int t = threadIdx.x, lane = t & 31, wid = t >> 5;
    int i = blockIdx.x * blockDim.x + t;
    float v = i < n ? x[i] : 0.f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) temp.warp_aggregates[wid] = v;
    if (t == 32) temp.valid_warps = 4;
    __syncthreads();
    if (t == 0) {
        float s = 0.f;
        for (int w = 0; w < temp.valid_warps; ++w) s += temp.warp_aggregates[w];
        temp.block_aggregate = s;
    }
    __syncthreads();
    if (i < n) out[i] = x[i] / temp.block_aggregate;
    """


def _ts_args():
    return (R(300), np.zeros(300, np.float32), 300), {"grid": 3}


def _ts_exp(a):
    x = np.r_[a[0], np.zeros(84, np.float32)].reshape(3, 128)
    return [(a[1], (x / x.sum(1, keepdims=True)).ravel()[:300])]


# 3 ------------------------------------------------------------------ cg tiled_partition<16> + cg::reduce
@cf.kernel
class CgTile16Reduce:
    x: cf.In[cf.float32]
    tiles: cf.Out[cf.float32]
    total: cf.Array[cf.float32]
    n: cf.int32
    block = 64
    preamble = COOP_REDUCE
    body = """
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<16> tile = cg::tiled_partition<16>(block);
    int i = blockIdx.x * blockDim.x + block.thread_rank();
    float v = i < n ? x[i] : 0.f;
    for (int o = tile.size() / 2; o > 0; o >>= 1) v += tile.shfl_down(v, o);
    if (tile.thread_rank() == 0) tiles[i / 16] = v;
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    float w = cg::reduce(warp, i < n ? x[i] : 0.f, cg::plus<float>());
    if (warp.thread_rank() == 0) atomicAdd(total, w);
    block.sync();
    """


def _t16_args():
    return (R(200), np.zeros(16, np.float32), np.zeros(1, np.float32), 200), {"grid": 4}


def _t16_exp(a):
    x = np.r_[a[0], np.zeros(56, np.float32)]
    return [(a[1], x.reshape(16, 16).sum(1)), (a[2][0], a[0].sum())]


# 4 ------------------------------------------------------------------ coalesced_threads in a divergent branch
@cf.kernel
class CoalescedFilter:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    count: cf.Array[cf.int32]
    n: cf.int32
    block = 64
    preamble = COOP
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > 0.3f) {
        cg::coalesced_group g = cg::coalesced_threads();
        int base;
        if (g.thread_rank() == 0) base = atomicAdd(count, (int)g.size());
        base = g.shfl(base, 0);
        y[base + g.thread_rank()] = x[i];
    }
    """


def _coal_args():
    return (R(150), np.zeros(150, np.float32), np.zeros(1, np.int32), 150), {"grid": 3}


def _coal_exp(a):
    c = int(a[2][0])
    sel = np.sort(a[0][a[0] > 0.3])
    return [(c, len(sel)), (np.sort(a[1][:c]), sel)]


# 5 ------------------------------------------------------------------ cooperative grid-stride + grid.sync
@cf.kernel
class CoopGridStrideNormalize:
    x: cf.In[cf.float32]
    partial: cf.Array[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    cooperative = True
    block = 64
    preamble = COOP
    body = """
    cg::grid_group grid = cg::this_grid();
    cg::thread_block block = cg::this_thread_block();
    __shared__ float s[64];
    float acc = 0.f;
    for (int i = grid.thread_rank(); i < n; i += grid.size()) acc += x[i];
    s[threadIdx.x] = acc;
    block.sync();
    for (int k = 32; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        block.sync();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
    grid.sync();
    float tot = 0.f;
    for (int b = 0; b < gridDim.x; ++b) tot += partial[b];
    for (int i = grid.thread_rank(); i < n; i += grid.size()) y[i] = x[i] / tot;
    """


def _cgs_args():
    return (R(500), np.zeros(3, np.float32), np.zeros(500, np.float32), 500), {"grid": 3}


def _cgs_exp(a):
    return [(a[2], a[0] / a[0].sum())]


# 6 ------------------------------------------------------------------ warp-per-row CSR SpMV
@cf.kernel
class CsrSpmvVector:
    rowptr: cf.In[cf.int32]
    cols: cf.In[cf.int32]
    vals: cf.In[cf.float32]
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    rows: cf.int32
    block = 128
    body = """
    int gw = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x & 31;
    if (gw < rows) {
        float sum = 0.f;
        for (int j = __ldg(&rowptr[gw]) + lane; j < __ldg(&rowptr[gw + 1]); j += 32)
            sum += vals[j] * __ldg(&x[cols[j]]);
        for (int o = 16; o > 0; o >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, o);
        if (lane == 0) y[gw] = sum;
    }
    """


def _csr():
    rng = np.random.default_rng(3)
    rows, ncols = 37, 80
    dense = np.where(rng.random((rows, ncols)) < 0.4, rng.random((rows, ncols)), 0).astype(np.float32)
    dense[5] = 0
    rp = np.r_[0, np.cumsum((dense != 0).sum(1))].astype(np.int32)
    c = np.nonzero(dense)[1].astype(np.int32)
    v = dense[dense != 0].astype(np.float32)
    x = R(ncols, seed=4)
    return dense, rp, c, v, x


def _csr_args():
    _, rp, c, v, x = _csr()
    return (rp, c, v, x, np.zeros(37, np.float32), 37), {"grid": 10}


def _csr_exp(a):
    dense = _csr()[0]
    return [(a[4], dense @ a[3])]


# 7 ------------------------------------------------------------------ softmax, warp per row, Out read back
@cf.kernel
class WarpSoftmax:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    rows: cf.int32
    cols: cf.int32
    block = 64
    body = """
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;
    float m = -3.402823466e+38f;
    for (int j = lane; j < cols; j += 32) m = fmaxf(m, xr[j]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float s = 0.f;
    for (int j = lane; j < cols; j += 32) { float e = __expf(xr[j] - m); yr[j] = e; s += e; }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    float inv = 1.f / s;
    for (int j = lane; j < cols; j += 32) yr[j] *= inv;
    """


def _sm_args():
    return (R(7 * 50), np.zeros(7 * 50, np.float32), 7, 50), {"grid": 4}


def _sm_exp(a):
    x = a[0].reshape(7, 50)
    e = np.exp(x - x.max(1, keepdims=True))
    return [(a[1], (e / e.sum(1, keepdims=True)).ravel())]


# 8 ------------------------------------------------------------------ layernorm with Megatron's blockReduceSum (static __shared__ in a device fn)
@cf.kernel
class LayerNormBlockReduce:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    cols: cf.int32
    block = 96
    preamble = """
    template <typename T> __inline__ __device__ T warpReduceSum(T val) {
        for (int mask = 16; mask > 0; mask >>= 1) val += __shfl_xor_sync(0xffffffff, val, mask, 32);
        return val;
    }
    template <typename T> __inline__ __device__ T blockReduceSum(T val) {
        static __shared__ T shared[32];
        int lane = threadIdx.x & 0x1f;
        int wid = threadIdx.x >> 5;
        val = warpReduceSum<T>(val);
        if (lane == 0) shared[wid] = val;
        __syncthreads();
        val = (threadIdx.x < (blockDim.x / 32.f)) ? shared[lane] : (T)(0.0f);
        val = warpReduceSum<T>(val);
        return val;
    }
    """
    body = """
    __shared__ float s_mean, s_var;
    const float* xr = x + (size_t)blockIdx.x * cols;
    float local = 0.f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) local += xr[j];
    float mean = blockReduceSum<float>(local);
    if (threadIdx.x == 0) s_mean = mean / cols;
    __syncthreads();
    float lv = 0.f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) { float d = xr[j] - s_mean; lv += d * d; }
    float var = blockReduceSum<float>(lv);
    if (threadIdx.x == 0) s_var = rsqrtf(var / cols + 1e-5f);
    __syncthreads();
    for (int j = threadIdx.x; j < cols; j += blockDim.x) y[(size_t)blockIdx.x * cols + j] = (xr[j] - s_mean) * s_var;
    """


def _ln_args():
    return (R(5 * 300), np.zeros(5 * 300, np.float32), 300), {"grid": 5}


def _ln_exp(a):
    x = a[0].reshape(5, 300).astype(np.float64)
    m = x.mean(1, keepdims=True)
    v = ((x - m) ** 2).mean(1, keepdims=True)
    return [(a[1], ((x - m) / np.sqrt(v + 1e-5)).ravel())]


# 9 ------------------------------------------------------------------ radix digit histogram + block scan of 16 digits
@cf.kernel
class RadixDigitHistScan:
    keys: cf.In[cf.uint32]
    counts: cf.Out[cf.int32]
    offsets: cf.Out[cf.int32]
    n: cf.int32
    shift: cf.int32
    block = 128
    body = """
    __shared__ int hist[16];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    if (t < 16) hist[t] = 0;
    __syncthreads();
    if (i < n) atomicAdd(&hist[(keys[i] >> shift) & 15u], 1);
    __syncthreads();
    if (t < 16) {
        int c = hist[t], v = c;
        for (int d = 1; d < 16; d <<= 1) {
            int up = __shfl_up_sync(0x0000ffffu, v, d);
            if (t >= d) v += up;
        }
        counts[blockIdx.x * 16 + t] = c;
        offsets[blockIdx.x * 16 + t] = v - c;
    }
    """


def _rad_args():
    k = np.random.default_rng(5).integers(0, 2**32, 300, dtype=np.uint32)
    return (k, np.zeros(48, np.int32), np.zeros(48, np.int32), 300, 4), {"grid": 3}


def _rad_exp(a):
    d = (a[0] >> 4) & 15
    d = np.r_[d, np.full(84, 99)].reshape(3, 128)
    c = np.stack([np.bincount(r[r < 16], minlength=16) for r in d])
    return [(a[1], c.ravel()), (a[2], (np.cumsum(c, 1) - c).ravel())]


# 10 ----------------------------------------------------------------- stream compaction: ballot/popc + atomicAdd on a global counter
@cf.kernel
class BallotCompact:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    count: cf.Array[cf.int32]
    n: cf.int32
    block = 96
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
    bool keep = i < n && x[i] > 0.5f;
    unsigned b = __ballot_sync(0xffffffffu, keep);
    if (b == 0) return;
    int leader = __ffs(b) - 1;
    int base = 0;
    if (lane == leader) base = atomicAdd(count, __popc(b));
    base = __shfl_sync(0xffffffffu, base, leader);
    if (keep) y[base + __popc(b & ((1u << lane) - 1))] = x[i];
    """


def _bc_args():
    return (R(250), np.zeros(250, np.float32), np.zeros(1, np.int32), 250), {"grid": 3}


def _bc_exp(a):
    c = int(a[2][0])
    sel = np.sort(a[0][a[0] > 0.5])
    return [(c, len(sel)), (np.sort(a[1][:c]), sel)]


# 11 ----------------------------------------------------------------- transpose 32x8 with padded tile, non-square
@cf.kernel
class TransposeCoalesced32x8:
    src: cf.In[cf.float32]
    dst: cf.Out[cf.float32]
    w: cf.int32
    h: cf.int32
    block = (32, 8)
    body = """
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < w && y + j < h) tile[threadIdx.y + j][threadIdx.x] = src[(y + j) * w + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < h && y + j < w) dst[(y + j) * h + x] = tile[threadIdx.x][threadIdx.y + j];
    """


def _tr_args():
    return (R(70 * 50), np.zeros(70 * 50, np.float32), 50, 70), {"grid": (2, 3)}


def _tr_exp(a):
    return [(a[1], a[0].reshape(70, 50).T.ravel())]


# 12 ----------------------------------------------------------------- 2-D 9-point stencil, halo + corners, clamped borders
@cf.kernel
class Stencil9Halo:
    src: cf.In[cf.float32]
    dst: cf.Out[cf.float32]
    w: cf.int32
    h: cf.int32
    block = (16, 16)
    body = """
    __shared__ float s[18][18];
    int tx = threadIdx.x, ty = threadIdx.y;
    int gx = blockIdx.x * 16 + tx, gy = blockIdx.y * 16 + ty;
    #define AT(X, Y) src[min(max((Y), 0), h - 1) * w + min(max((X), 0), w - 1)]
    s[ty + 1][tx + 1] = AT(gx, gy);
    if (tx == 0) s[ty + 1][0] = AT(gx - 1, gy);
    if (tx == 15) s[ty + 1][17] = AT(gx + 1, gy);
    if (ty == 0) s[0][tx + 1] = AT(gx, gy - 1);
    if (ty == 15) s[17][tx + 1] = AT(gx, gy + 1);
    if (tx == 0 && ty == 0) s[0][0] = AT(gx - 1, gy - 1);
    if (tx == 15 && ty == 0) s[0][17] = AT(gx + 1, gy - 1);
    if (tx == 0 && ty == 15) s[17][0] = AT(gx - 1, gy + 1);
    if (tx == 15 && ty == 15) s[17][17] = AT(gx + 1, gy + 1);
    #undef AT
    __syncthreads();
    if (gx < w && gy < h) {
        float acc = 0.f;
        for (int dy = 0; dy < 3; ++dy)
            for (int dx = 0; dx < 3; ++dx) acc += s[ty + dy][tx + dx];
        dst[gy * w + gx] = acc / 9.f;
    }
    """


def _st_args():
    return (R(29 * 37), np.zeros(29 * 37, np.float32), 37, 29), {"grid": (3, 2)}


def _st_exp(a):
    x = np.pad(a[0].reshape(29, 37), 1, mode="edge")
    acc = sum(x[dy : dy + 29, dx : dx + 37] for dy in range(3) for dx in range(3)) / 9
    return [(a[1], acc.ravel())]


# 13 ----------------------------------------------------------------- double-buffered tiled GEMM with register blocking
@cf.kernel
class GemmDoubleBuffer:
    A: cf.In[cf.float32]
    B: cf.In[cf.float32]
    C: cf.Out[cf.float32]
    M: cf.int32
    N: cf.int32
    K: cf.int32
    block = (16, 8)
    body = """
    __shared__ float As[2][16][16];
    __shared__ float Bs[2][16][16];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row0 = blockIdx.y * 16 + ty, row1 = row0 + 8, col = blockIdx.x * 16 + tx;
    float acc0 = 0.f, acc1 = 0.f;
    int tiles = (K + 15) / 16;
    auto load = [&](int buf, int t) {
        int k = t * 16 + tx;
        As[buf][ty][tx] = (row0 < M && k < K) ? A[row0 * K + k] : 0.f;
        As[buf][ty + 8][tx] = (row1 < M && k < K) ? A[row1 * K + k] : 0.f;
        int kb = t * 16 + ty;
        Bs[buf][ty][tx] = (kb < K && col < N) ? B[kb * N + col] : 0.f;
        Bs[buf][ty + 8][tx] = (kb + 8 < K && col < N) ? B[(kb + 8) * N + col] : 0.f;
    };
    load(0, 0);
    __syncthreads();
    for (int t = 0; t < tiles; ++t) {
        int cur = t & 1;
        if (t + 1 < tiles) load(cur ^ 1, t + 1);
        #pragma unroll
        for (int k = 0; k < 16; ++k) {
            float b = Bs[cur][k][tx];
            acc0 += As[cur][ty][k] * b;
            acc1 += As[cur][ty + 8][k] * b;
        }
        __syncthreads();
    }
    if (col < N) {
        if (row0 < M) C[row0 * N + col] = acc0;
        if (row1 < M) C[row1 * N + col] = acc1;
    }
    """


def _gm_args():
    return (R(37 * 53), R(53 * 45, seed=1), np.zeros(37 * 45, np.float32), 37, 45, 53), {"grid": (3, 3)}


def _gm_exp(a):
    return [(a[2], (a[0].reshape(37, 53).astype(np.float64) @ a[1].reshape(53, 45)).ravel())]


# 14 ----------------------------------------------------------------- atomicCAS loop on doubles (pre-sm60 atomicAdd)
@cf.kernel
class AtomicAddDoubleCAS:
    x: cf.In[cf.float64]
    out: cf.Array[cf.float64]
    n: cf.int32
    block = 64
    preamble = """
    __device__ double atomicAddD(double* address, double val) {
        unsigned long long int* address_as_ull = (unsigned long long int*)address;
        unsigned long long int old = *address_as_ull, assumed;
        do {
            assumed = old;
            old = atomicCAS(address_as_ull, assumed, __double_as_longlong(val + __longlong_as_double(assumed)));
        } while (assumed != old);
        return __longlong_as_double(old);
    }
    __device__ float atomicMinF(float* addr, float v) {
        int* p = (int*)addr;
        int old = *p;
        while (v < __int_as_float(old)) {
            int assumed = old;
            old = atomicCAS(p, assumed, __float_as_int(v));
            if (old == assumed) break;
        }
        return __int_as_float(old);
    }
    """
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAddD(&out[0], x[i]);
        atomicMinF((float*)&out[1], (float)x[i]);
    }
    """


def _cas_args():
    x = np.random.default_rng(6).random(300)
    out = np.zeros(2, np.float64)
    out[1:2].view(np.float32)[0] = 10.0
    return (x, out, 300), {"grid": 5}


def _cas_exp(a):
    return [(a[1][0], a[0].sum()), (a[1][1:2].view(np.float32)[0], np.float32(a[0].min()))]


# 15 ----------------------------------------------------------------- lock-free work queue (atomicAdd head), persistent blocks
@cf.kernel
class WorkQueuePersistent:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    head: cf.Array[cf.int32]
    nchunks: cf.int32
    n: cf.int32
    block = 64
    body = """
    __shared__ int s_item;
    while (true) {
        if (threadIdx.x == 0) s_item = atomicAdd(head, 1);
        __syncthreads();
        int item = s_item;
        if (item >= nchunks) break;
        int i = item * blockDim.x + threadIdx.x;
        if (i < n) y[i] = 2.f * x[i] + 1.f;
        __syncthreads();
    }
    """


def _wq_args():
    return (R(1000), np.zeros(1000, np.float32), np.zeros(1, np.int32), 16, 1000), {"grid": 3}


def _wq_exp(a):
    return [(a[1], 2 * a[0] + 1)]


# 16 ----------------------------------------------------------------- threadFenceReduction: last block reads all partials, resets counter
@cf.kernel
class LastBlockThreadFence:
    x: cf.In[cf.float32]
    partial: cf.Out[cf.float32]
    count: cf.Array[cf.uint32]
    total: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    body = """
    __shared__ float s[64];
    __shared__ bool amLast;
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    s[t] = i < n ? x[i] : 0.f;
    __syncthreads();
    for (int k = 32; k > 0; k >>= 1) { if (t < k) s[t] += s[t + k]; __syncthreads(); }
    if (t == 0) {
        partial[blockIdx.x] = s[0];
        __threadfence();
        unsigned ticket = atomicInc(&count[0], gridDim.x);
        amLast = (ticket == gridDim.x - 1);
    }
    __syncthreads();
    if (amLast) {
        float v = 0.f;
        for (int b = t; b < gridDim.x; b += 64) v += partial[b];
        s[t] = v;
        __syncthreads();
        for (int k = 32; k > 0; k >>= 1) { if (t < k) s[t] += s[t + k]; __syncthreads(); }
        if (t == 0) { total[0] = s[0]; count[0] = 0; }
    }
    """


def _lb_args():
    return (R(5000), np.zeros(79, np.float32), np.zeros(1, np.uint32), np.zeros(1, np.float32), 5000), {"grid": 79}


def _lb_exp(a):
    return [(a[3][0], a[0].sum()), (a[2][0], 0), (a[1], np.r_[a[0], np.zeros(56, np.float32)].reshape(79, 64).sum(1))]


# 17 ----------------------------------------------------------------- float4 __ldg loads, float4 stores into Out, scalar tail
@cf.kernel
class Float4LdgTail:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int n4 = n / 4;
    const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x);
    float4* __restrict__ y4 = reinterpret_cast<float4*>(y);
    for (int k = i; k < n4; k += gridDim.x * blockDim.x) {
        float4 v = __ldg(&x4[k]);
        v.x *= 3.f; v.y *= 3.f; v.z *= 3.f; v.w *= 3.f;
        y4[k] = v;
    }
    for (int k = n4 * 4 + i; k < n; k += gridDim.x * blockDim.x) y[k] = 3.f * __ldg(&x[k]);
    """


def _f4_args():
    return (R(1003), np.zeros(1003, np.float32), 1003), {"grid": 2}


def _f4_exp(a):
    return [(a[1], 3 * a[0])]


# 18 ----------------------------------------------------------------- volatile warp-synchronous reduction, NVIDIA's Volta-safe form
@cf.kernel
class VolatileWarpReduceVolta:
    x: cf.In[cf.float32]
    out: cf.Out[cf.float32]
    n: cf.int32
    block = 256
    preamble = """
    __device__ void warpReduce(volatile float* sdata, unsigned tid) {
        float v = sdata[tid];
        v += sdata[tid + 32]; __syncwarp(); sdata[tid] = v; __syncwarp();
        v += sdata[tid + 16]; __syncwarp(); sdata[tid] = v; __syncwarp();
        v += sdata[tid + 8];  __syncwarp(); sdata[tid] = v; __syncwarp();
        v += sdata[tid + 4];  __syncwarp(); sdata[tid] = v; __syncwarp();
        v += sdata[tid + 2];  __syncwarp(); sdata[tid] = v; __syncwarp();
        v += sdata[tid + 1];  __syncwarp(); sdata[tid] = v;
    }
    """
    body = """
    __shared__ float sdata[256];
    unsigned tid = threadIdx.x, i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
    float s = 0.f;
    if (i < n) s = x[i];
    if (i + blockDim.x < n) s += x[i + blockDim.x];
    sdata[tid] = s;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 32; k >>= 1) {
        if (tid < k) sdata[tid] += sdata[tid + k];
        __syncthreads();
    }
    if (tid < 32) warpReduce(sdata, tid);
    if (tid == 0) out[blockIdx.x] = sdata[0];
    """


def _vw_args():
    return (R(1500), np.zeros(3, np.float32), 1500), {"grid": 3}


def _vw_exp(a):
    return [(a[1], np.r_[a[0], np.zeros(36, np.float32)].reshape(3, 512).sum(1))]


# 19 ----------------------------------------------------------------- bit tricks
@cf.kernel
class BitTricks:
    x: cf.In[cf.uint32]
    y: cf.Out[cf.int32]
    r: cf.Out[cf.uint32]
    n: cf.int32
    block = 64
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned v = x[i];
        y[i] = __popc(v) * 100 + __ffs(v) + (v ? __clz(v) : 0) * 10000;
        r[i] = __brev(v) ^ __byte_perm(v, 0, 0x0123);
    }
    """


def _bt_args():
    k = np.random.default_rng(7).integers(0, 2**32, 131, dtype=np.uint32)
    k[3] = 0
    return (k, np.zeros(131, np.int32), np.zeros(131, np.uint32), 131), {"grid": 3}


def _bt_exp(a):
    x = a[0].astype(np.uint64)
    pop = np.array([bin(int(v)).count("1") for v in x])
    ffs = np.array([(int(v) & -int(v)).bit_length() for v in x])
    clz = np.array([32 - int(v).bit_length() if v else 0 for v in x])
    brev = np.array([int(f"{int(v):032b}"[::-1], 2) for v in x], np.uint64)
    bswap = a[0].byteswap().astype(np.uint64)
    return [(a[1], pop * 100 + ffs + clz * 10000), (a[2], (brev ^ bswap).astype(np.uint32))]


# 20 ----------------------------------------------------------------- template helpers in the preamble, block scan (Hillis-Steele, double buffer)
@cf.kernel
class TemplatedBlockScan:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 128
    preamble = """
    template <int BLOCK, typename T>
    __device__ T blockInclusiveScan(T v, T (*buf)[BLOCK]) {
        int t = threadIdx.x, pin = 0;
        buf[0][t] = v;
        __syncthreads();
        for (int d = 1; d < BLOCK; d <<= 1) {
            int pout = 1 - pin;
            T s = buf[pin][t];
            if (t >= d) s += buf[pin][t - d];
            buf[pout][t] = s;
            __syncthreads();
            pin = pout;
        }
        return buf[pin][t];
    }
    """
    body = """
    __shared__ float buf[2][128];
    int i = blockIdx.x * 128 + threadIdx.x;
    float v = blockInclusiveScan<128, float>(i < n ? x[i] : 0.f, buf);
    if (i < n) y[i] = v;
    """


def _sc_args():
    return (R(300), np.zeros(300, np.float32), 300), {"grid": 3}


def _sc_exp(a):
    x = np.r_[a[0], np.zeros(84, np.float32)].reshape(3, 128)
    return [(a[1], np.cumsum(x, 1).ravel()[:300])]


# 21 ----------------------------------------------------------------- dynamic shared memory carved into float / int / byte-flag arrays
@cf.kernel
class DynamicCarveFlags:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    body = """
    extern __shared__ float smem[];
    float* vals = smem;
    int* idx = reinterpret_cast<int*>(vals + blockDim.x);
    unsigned char* flag = reinterpret_cast<unsigned char*>(idx + blockDim.x);
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    vals[t] = i < n ? x[i] : 0.f;
    idx[t] = blockDim.x - 1 - t;
    flag[t] = (i < n && x[i] > 0.5f) ? 1 : 0;
    __syncthreads();
    int j = idx[t];
    if (i < n) y[i] = flag[j] ? vals[j] : -vals[j];
    """


def _dc_args():
    return (R(100), np.zeros(100, np.float32), 100), {"grid": 2, "shared_mem": 64 * 9}


def _dc_exp(a):
    x = np.r_[a[0], np.zeros(28, np.float32)].reshape(2, 64)[:, ::-1]
    return [(a[1], np.where(x > 0.5, x, -x).ravel()[:100])]


# 22 ----------------------------------------------------------------- struct of arrays in shared memory, different threads per member
@cf.kernel
class SharedStructMembers:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    preamble = """
    struct Stats { float sum; float maxv; int argmax; int count; };
    """
    body = """
    __shared__ Stats st;
    __shared__ float s[64];
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    s[t] = x[i];
    __syncthreads();
    if (t == 0) { float a = 0.f; for (int k = 0; k < 64; ++k) a += s[k]; st.sum = a; }
    if (t == 32) { float m = s[0]; int am = 0; for (int k = 1; k < 64; ++k) if (s[k] > m) { m = s[k]; am = k; } st.maxv = m; st.argmax = am; }
    if (t == 63) st.count = 64;
    __syncthreads();
    y[i] = s[t] / st.sum * st.count + (t == st.argmax ? st.maxv : 0.f);
    """


def _ss_args():
    return (R(128), np.zeros(128, np.float32)), {"grid": 2}


def _ss_exp(a):
    x = a[0].reshape(2, 64)
    r = x / x.sum(1, keepdims=True) * 64
    r[np.arange(2), x.argmax(1)] += x.max(1)
    return [(a[1], r.ravel())]


# 23 ----------------------------------------------------------------- __shfl_sync broadcast + __any_sync / __all_sync early exit
@cf.kernel
class AnyAllEarlyExit:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
    float v = i < n ? x[i] : 0.f;
    float first = __shfl_sync(0xffffffffu, v, 0);
    if (__all_sync(0xffffffffu, v < 2.f) && !__any_sync(0xffffffffu, v > 0.99f)) {
        if (i < n) y[i] = v - first;
        return;
    }
    if (i < n) y[i] = v + first + (float)lane;
    """


def _aa_args():
    x = R(150)
    x[40] = 0.995  # warp 1 takes the slow path
    return (x, np.zeros(150, np.float32), 150), {"grid": 3}


def _aa_exp(a):
    x = np.r_[a[0], np.zeros(42, np.float32)].reshape(-1, 32)
    first = x[:, :1]
    slow = (x > 0.99).any(1, keepdims=True)
    lane = np.arange(32)[None, :]
    r = np.where(slow, x + first + lane, x - first)
    return [(a[1], r.ravel()[:150])]


# 24 ----------------------------------------------------------------- shared memory written before every read in a non-obvious order
@cf.kernel
class ReverseOrderFill:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    body = """
    __shared__ float s[128];
    int t = threadIdx.x, base = blockIdx.x * 128;
    // each thread fills two elements: a bit-reversed one, then its mirror (all 128 covered)
    int a = __brev(t) >> 26;           // bit reversal of 6 bits: a permutation of 0..63
    s[127 - a] = base + 127 - a < n ? x[base + 127 - a] : 0.f;
    s[a] = base + a < n ? x[base + a] : 0.f;
    __syncthreads();
    if (base + t < n) y[base + t] = s[t] + s[127 - t];
    if (base + 64 + t < n) y[base + 64 + t] = s[64 + t] - s[63 - t];
    """


def _ro_args():
    return (R(200), np.zeros(200, np.float32), 200), {"grid": 2}


def _ro_exp(a):
    x = np.r_[a[0], np.zeros(56, np.float32)].reshape(2, 128)
    lo = x[:, :64] + x[:, ::-1][:, :64]
    hi = x[:, 64:] - x[:, :64][:, ::-1]
    return [(a[1], np.c_[lo, hi].ravel()[:200])]


# 25 ----------------------------------------------------------------- warp-aggregated atomic via __activemask + __match_any_sync (NVIDIA blog)
@cf.kernel
class ActiveMaskAggInc:
    x: cf.In[cf.float32]
    y: cf.Out[cf.int32]
    count: cf.Array[cf.int32]
    n: cf.int32
    block = 64
    preamble = """
    __device__ int atomicAggInc(int* ptr) {
        unsigned mask = __match_any_sync(__activemask(), (unsigned long long)ptr);
        int leader = __ffs(mask) - 1, lane = threadIdx.x & 31;
        int res;
        if (lane == leader) res = atomicAdd(ptr, __popc(mask));
        res = __shfl_sync(mask, res, leader);
        return res + __popc(mask & ((1u << lane) - 1));
    }
    """
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > 0.5f) y[atomicAggInc(count)] = i;
    """


def _am_args():
    return (R(150), np.full(150, -1, np.int32), np.zeros(1, np.int32), 150), {"grid": 3}


def _am_exp(a):
    c = int(a[2][0])
    sel = np.nonzero(a[0] > 0.5)[0]
    return [(c, len(sel)), (np.sort(a[1][:c]), sel)]


# 26 ----------------------------------------------------------------- chained scan across blocks: volatile flag + __threadfence (StreamScan)
@cf.kernel
class ChainedScanVolatileFlag:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    carry: cf.Array[cf.float32]
    flags: cf.Array[cf.int32]
    ticket: cf.Array[cf.int32]
    n: cf.int32
    block = 64
    body = """
    __shared__ int s_bid;
    __shared__ float s[64];
    __shared__ float s_prefix;
    int t = threadIdx.x;
    if (t == 0) s_bid = atomicAdd(ticket, 1);
    __syncthreads();
    int bid = s_bid, i = bid * 64 + t;
    s[t] = i < n ? x[i] : 0.f;
    __syncthreads();
    for (int d = 1; d < 64; d <<= 1) {
        float v = t >= d ? s[t - d] : 0.f;
        __syncthreads();
        s[t] += v;
        __syncthreads();
    }
    if (t == 0) {
        float prefix = 0.f;
        if (bid > 0) {
            while (((volatile int*)flags)[bid - 1] == 0) { }
            __threadfence();
            prefix = ((volatile float*)carry)[bid - 1];
        }
        carry[bid] = prefix + s[63];
        __threadfence();
        ((volatile int*)flags)[bid] = 1;
        s_prefix = prefix;
    }
    __syncthreads();
    if (i < n) y[i] = s[t] + s_prefix;
    """


def _cs_args():
    return (R(300), np.zeros(300, np.float32), np.zeros(5, np.float32), np.zeros(5, np.int32), np.zeros(1, np.int32), 300), {
        "grid": 5
    }


def _cs_exp(a):
    return [(a[1], np.cumsum(a[0].astype(np.float64)))]


# 27 ----------------------------------------------------------------- last block updates a parameter every block read (fence, ticket, fence)
@cf.kernel
class LastBlockUpdatesScale:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    scale: cf.Array[cf.float32]
    amax: cf.Array[cf.float32]
    count: cf.Array[cf.int32]
    n: cf.int32
    block = 64
    preamble = """
    __device__ float atomicMaxPos(float* a, float v) { return __int_as_float(atomicMax((int*)a, __float_as_int(v))); }
    """
    body = """
    __shared__ bool last;
    int i = blockIdx.x * 64 + threadIdx.x;
    float s = scale[0];
    if (i < n) { y[i] = x[i] * s; atomicMaxPos(amax, fabsf(x[i])); }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(count, 1) == gridDim.x - 1;
    __syncthreads();
    if (last && threadIdx.x == 0) {
        __threadfence();
        scale[0] = 1.f / atomicAdd(amax, 0.f);
    }
    """


def _ls_args():
    return (
        R(300),
        np.zeros(300, np.float32),
        np.full(1, 2.0, np.float32),
        np.zeros(1, np.float32),
        np.zeros(1, np.int32),
        300,
    ), {"grid": 5}


def _ls_exp(a):
    return [(a[1], 2 * a[0]), (a[2][0], 1 / a[0].max())]


# 28 ----------------------------------------------------------------- unaligned memcpy of a double out of a byte stream
@cf.kernel
class ByteStreamDoubles:
    buf: cf.In[cf.uint8]
    y: cf.Out[cf.float64]
    n: cf.int32
    block = 32
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        double d;
        memcpy(&d, buf + 2 + 9 * i, sizeof(double));   // after a header byte, records of 1 tag byte + 8 bytes, packed
        y[i] = d * 2.0;
    }
    """


def _bs_args():
    v = np.random.default_rng(8).random(40)
    rec = np.zeros((40, 9), np.uint8)
    rec[:, 1:] = v.view(np.uint8).reshape(40, 8)
    buf = np.r_[np.uint8(7), rec.ravel()].astype(np.uint8)
    return (buf, np.zeros(40, np.float64), 40), {"grid": 2}


def _bs_exp(a):
    v = np.random.default_rng(8).random(40)
    return [(a[1], 2 * v)]


# 29 ----------------------------------------------------------------- complex array scaled through an interleaved float view
@cf.kernel
class ComplexAsFloats:
    z: cf.Array[cf.complex64]
    s: cf.float32
    n: cf.int32
    block = 64
    body = """
    float* f = reinterpret_cast<float*>(z);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < 2 * n) f[i] *= s;
    """


def _cx_args():
    z = (R(50) + 1j * R(50, seed=1)).astype(np.complex64)
    return (z, 3.0, 50), {"grid": 2}


def _cx_exp(a):
    z = (R(50) + 1j * R(50, seed=1)).astype(np.complex64)
    return [(a[0], 3 * z)]


# 30 ----------------------------------------------------------------- float2 shared array, .x and .y written by different threads
@cf.kernel
class Float2SplitWriters:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float2 p[32];
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    if (t < 32) p[t].x = x[i]; else p[t - 32].y = x[i];
    __syncthreads();
    if (t < 32) y[blockIdx.x * 32 + t] = p[t].x * p[t].y;
    """


def _f2_args():
    return (R(128), np.zeros(64, np.float32)), {"grid": 2}


def _f2_exp(a):
    x = a[0].reshape(2, 2, 32)
    return [(a[1], (x[:, 0] * x[:, 1]).ravel())]


# 32 ----------------------------------------------------------------- CUDA samples SharedMemory<T> helper, T = short (int-declared extern array)
@cf.kernel
class SharedMemoryHelperShort:
    x: cf.In[cf.int16]
    y: cf.Out[cf.int32]
    n: cf.int32
    block = 64
    preamble = """
    template <class T> struct SharedMemory {
        __device__ inline operator T*() { extern __shared__ int __smem[]; return (T*)__smem; }
    };
    """
    body = """
    short* sdata = SharedMemory<short>();
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    sdata[t] = i < n ? x[i] : 0;
    __syncthreads();
    int acc = 0;
    if (t == 0) { for (int k = 0; k < 64; ++k) acc += sdata[k]; y[blockIdx.x] = acc; }
    """


def _sh_args():
    return (np.arange(100, dtype=np.int16), np.zeros(2, np.int32), 100), {"grid": 2, "shared_mem": 128}


def _sh_exp(a):
    return [(a[1], np.array([sum(range(64)), sum(range(64, 100))]))]


# 33 ----------------------------------------------------------------- tiled_partition<16> exchange through shared memory with tile.sync()
@cf.kernel
class Tile16SharedExchange:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    preamble = COOP
    body = """
    __shared__ float buf[64];
    cg::thread_block_tile<16> tile = cg::tiled_partition<16>(cg::this_thread_block());
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    int base = t - tile.thread_rank();
    float acc = 0.f;
    for (int it = 0; it < 3; ++it) {
        buf[t] = x[i] * (it + 1);
        tile.sync();
        acc += buf[base + (tile.thread_rank() + 1) % 16];
        tile.sync();
    }
    y[i] = acc;
    """


def _t16x_args():
    return (R(128), np.zeros(128, np.float32)), {"grid": 2}


def _t16x_exp(a):
    x = a[0].reshape(-1, 16)
    return [(a[1], (6 * np.roll(x, -1, axis=1)).ravel())]


# 34 ----------------------------------------------------------------- grid-stride with int64 index, reading Out back after writing (same thread)
@cf.kernel
class GridStrideOutReadBack:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    sums: cf.Array[cf.float32]
    n: cf.int64
    block = 64
    body = """
    float local = 0.f;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        y[i] = x[i] * x[i];
        local += y[i];
        y[i] = sqrtf(y[i]);
    }
    for (int o = 16; o > 0; o >>= 1) local += __shfl_down_sync(0xffffffffu, local, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(sums, local);
    """


def _gs_args():
    return (R(1001), np.zeros(1001, np.float32), np.zeros(1, np.float32), 1001), {"grid": 3}


def _gs_exp(a):
    return [(a[1], a[0]), (a[2][0], (a[0].astype(np.float64) ** 2).sum())]


# 35 ----------------------------------------------------------------- histogram with per-block shared bins merged to global with atomics
@cf.kernel
class SharedHistMergeAtomic:
    x: cf.In[cf.uint8]
    hist: cf.Array[cf.uint32]
    n: cf.int32
    block = 96
    body = """
    __shared__ unsigned int h[64];
    for (int b = threadIdx.x; b < 64; b += blockDim.x) h[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&h[x[i] >> 2], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 64; b += blockDim.x)
        if (h[b]) atomicAdd(&hist[b], h[b]);
    """


def _hm_args():
    return (np.random.default_rng(9).integers(0, 256, 2001).astype(np.uint8), np.zeros(64, np.uint32), 2001), {"grid": 4}


def _hm_exp(a):
    return [(a[1], np.bincount(a[0] >> 2, minlength=64))]


CORRECT = {
    "cub block reduce": Correct(CubBlockReduce, _cub_args, _cub_exp),
    "cub TempStorage struct": Correct(CubTempStorageStruct, _ts_args, _ts_exp, "struct element = one shadow cell?"),
    "cg tile16 + cg::reduce": Correct(CgTile16Reduce, _t16_args, _t16_exp),
    "coalesced_threads filter": Correct(CoalescedFilter, _coal_args, _coal_exp),
    "coop grid-stride normalize": Correct(CoopGridStrideNormalize, _cgs_args, _cgs_exp),
    "csr spmv vector": Correct(CsrSpmvVector, _csr_args, _csr_exp),
    "warp softmax": Correct(WarpSoftmax, _sm_args, _sm_exp),
    "layernorm blockReduceSum": Correct(LayerNormBlockReduce, _ln_args, _ln_exp),
    "radix digit hist + scan": Correct(RadixDigitHistScan, _rad_args, _rad_exp),
    "ballot compaction": Correct(BallotCompact, _bc_args, _bc_exp),
    "transpose 32x8": Correct(TransposeCoalesced32x8, _tr_args, _tr_exp),
    "stencil 9pt halo corners": Correct(Stencil9Halo, _st_args, _st_exp),
    "gemm double buffer": Correct(GemmDoubleBuffer, _gm_args, _gm_exp),
    "atomicCAS double add / float min": Correct(AtomicAddDoubleCAS, _cas_args, _cas_exp),
    "work queue persistent": Correct(WorkQueuePersistent, _wq_args, _wq_exp),
    "last block threadfence": Correct(LastBlockThreadFence, _lb_args, _lb_exp),
    "float4 ldg tail": Correct(Float4LdgTail, _f4_args, _f4_exp),
    "volatile warp reduce volta": Correct(VolatileWarpReduceVolta, _vw_args, _vw_exp),
    "bit tricks": Correct(BitTricks, _bt_args, _bt_exp),
    "templated block scan": Correct(TemplatedBlockScan, _sc_args, _sc_exp),
    "dynamic carve with byte flags": Correct(DynamicCarveFlags, _dc_args, _dc_exp, "byte array carved from extern float[]"),
    "shared struct members": Correct(SharedStructMembers, _ss_args, _ss_exp, "struct element = one shadow cell?"),
    "any/all early exit": Correct(AnyAllEarlyExit, _aa_args, _aa_exp),
    "reverse order fill": Correct(ReverseOrderFill, _ro_args, _ro_exp),
    "activemask agg inc": Correct(ActiveMaskAggInc, _am_args, _am_exp),
    "chained scan volatile flag": Correct(ChainedScanVolatileFlag, _cs_args, _cs_exp, "fence-fence sync via volatile flag"),
    "last block updates scale": Correct(LastBlockUpdatesScale, _ls_args, _ls_exp, "write after other blocks' reads"),
    "byte stream memcpy double": Correct(ByteStreamDoubles, _bs_args, _bs_exp, "memcpy -> unaligned 8-byte load on CPU"),
    "complex as floats": Correct(ComplexAsFloats, _cx_args, _cx_exp, "complex64 element = one shadow cell"),
    "float2 split writers": Correct(Float2SplitWriters, _f2_args, _f2_exp, "float2 element = one shadow cell"),
    "SharedMemory<short> helper": Correct(SharedMemoryHelperShort, _sh_args, _sh_exp, "extern int[] used as short[]"),
    "tile16 shared exchange": Correct(Tile16SharedExchange, _t16x_args, _t16x_exp),
    "grid-stride Out read back": Correct(GridStrideOutReadBack, _gs_args, _gs_exp),
    "shared hist merge atomic": Correct(SharedHistMergeAtomic, _hm_args, _hm_exp),
}


# 36 ----------------------------------------------------------------- __syncthreads_or-driven iterative relaxation (uniform trip count)
@cf.kernel
class SyncOrRelaxation:
    x: cf.In[cf.int32]
    y: cf.Out[cf.int32]
    block = 64
    body = """
    __shared__ int lab[64];
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    lab[t] = x[i];
    __syncthreads();
    bool changed = true;
    while (__syncthreads_or(changed)) {
        int m = lab[t];
        if (t > 0) m = min(m, lab[t - 1]);
        if (t < 63) m = min(m, lab[t + 1]);
        __syncthreads();
        changed = m < lab[t];
        lab[t] = m;
    }
    y[i] = lab[t];
    """


def _so_args():
    return (np.random.default_rng(10).integers(0, 1000, 128).astype(np.int32), np.zeros(128, np.int32)), {"grid": 2}


def _so_exp(a):
    return [(a[1], np.repeat(a[0].reshape(2, 64).min(1), 64))]


# 37 ----------------------------------------------------------------- global spinlock (atomicCAS/atomicExch) around a plain critical section
@cf.kernel
class GlobalSpinlockAccumulate:
    x: cf.In[cf.float32]
    acc: cf.Array[cf.float32]
    lock: cf.Array[cf.int32]
    block = 32
    body = """
    float v = x[blockIdx.x * 32 + threadIdx.x];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) {
        while (atomicCAS(lock, 0, 1) != 0) { }
        __threadfence();
        acc[0] += v;
        acc[1] = fmaxf(acc[1], v);
        __threadfence();
        atomicExch(lock, 0);
    }
    """


def _sl_args():
    return (R(256), np.zeros(2, np.float32), np.zeros(1, np.int32)), {"grid": 8}


def _sl_exp(a):
    s = a[0].reshape(8, 32).sum(1)
    return [(a[1][0], s.sum()), (a[1][1], s.max())]


# 38 ----------------------------------------------------------------- half-warp per row SpMV, per-half masks, odd row count
@cf.kernel
class HalfWarpRowDot:
    a: cf.In[cf.float32]
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    rows: cf.int32
    cols: cf.int32
    block = 64
    body = """
    int t = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
    int row = t / 16, sub = lane & 15;
    unsigned half = 0xffffu << (lane & 16);
    if (row < rows) {
        float s = 0.f;
        for (int j = sub; j < cols; j += 16) s += a[row * cols + j] * x[j];
        for (int o = 8; o > 0; o >>= 1) s += __shfl_down_sync(half, s, o, 16);
        if (sub == 0) y[row] = s;
    }
    """


def _hw_args():
    return (R(11 * 40), R(40, seed=2), np.zeros(11, np.float32), 11, 40), {"grid": 3}


def _hw_exp(a):
    return [(a[2], a[0].reshape(11, 40) @ a[1])]


# 39 ----------------------------------------------------------------- warp-specialised producer/consumer in shared memory, volatile flag, fences both sides
@cf.kernel
class WarpProducerConsumer:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float data[32];
    __shared__ volatile int ready;
    int t = threadIdx.x, lane = t & 31;
    if (t == 0) ready = 0;
    __syncthreads();
    if (t < 32) {
        data[lane] = 2.f * x[blockIdx.x * 32 + lane];
        __syncwarp();
        __threadfence_block();
        if (lane == 0) ready = 1;
    } else {
        while (ready == 0) __nanosleep(32);
        __threadfence_block();
        y[blockIdx.x * 32 + lane] = data[lane] + 1.f;
    }
    """


def _pc_args():
    return (R(64), np.zeros(64, np.float32)), {"grid": 2}


def _pc_exp(a):
    return [(a[1], 2 * a[0] + 1)]


# 40 ----------------------------------------------------------------- in-place square transpose, one block per tile pair
@cf.kernel
class InPlaceTransposeTilePairs:
    m: cf.Array[cf.float32]
    n: cf.int32
    block = (16, 16)
    body = """
    __shared__ float a[16][17], b[16][17];
    int bx = blockIdx.x, by = blockIdx.y;
    if (bx > by) return;                 // the block (by, bx) with bx <= by owns both tiles
    int tx = threadIdx.x, ty = threadIdx.y;
    int r1 = by * 16 + ty, c1 = bx * 16 + tx, r2 = bx * 16 + ty, c2 = by * 16 + tx;
    if (r1 < n && c1 < n) a[ty][tx] = m[r1 * n + c1];
    if (r2 < n && c2 < n) b[ty][tx] = m[r2 * n + c2];
    __syncthreads();
    if (r2 < n && c2 < n) m[r2 * n + c2] = a[tx][ty];
    if (bx != by || true) { __syncthreads(); }
    if (r1 < n && c1 < n) m[r1 * n + c1] = b[tx][ty];
    """


def _ip_args():
    return (R(40 * 40), 40), {"grid": (3, 3)}


def _ip_exp(a):
    return [(a[0], R(40 * 40).reshape(40, 40).T.ravel())]


# 41 ----------------------------------------------------------------- warp bitonic sort with shuffles, partial last warp discarded
@cf.kernel
class WarpBitonicShfl:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 32
    body = """
    int i = blockIdx.x * 32 + threadIdx.x, lane = threadIdx.x;
    float v = i < n ? x[i] : 3.0e38f;
    for (int k = 2; k <= 32; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1) {
            float o = __shfl_xor_sync(0xffffffffu, v, j);
            bool up = ((lane & k) == 0), lower = (lane & j) == 0;
            v = (lower == up) ? fminf(v, o) : fmaxf(v, o);
        }
    if (i < n) y[i] = v;
    """


def _wb_args():
    return (R(64), np.zeros(64, np.float32), 64), {"grid": 2}


def _wb_exp(a):
    return [(a[1], np.sort(a[0].reshape(2, 32), axis=1).ravel())]


CORRECT.update(
    {
        "syncthreads_or relaxation": Correct(SyncOrRelaxation, _so_args, _so_exp),
        "global spinlock": Correct(GlobalSpinlockAccumulate, _sl_args, _sl_exp),
        "half-warp row dot": Correct(HalfWarpRowDot, _hw_args, _hw_exp),
        "warp producer/consumer volatile": Correct(WarpProducerConsumer, _pc_args, _pc_exp, "volatile flag, fences both sides"),
        "in-place transpose tile pairs": Correct(InPlaceTransposeTilePairs, _ip_args, _ip_exp),
        "warp bitonic shfl": Correct(WarpBitonicShfl, _wb_args, _wb_exp),
    }
)


# Local variables declared without an initializer and written before every read (the checker
# follows them: a read before a write would be reported)
@cf.kernel
class LocalsWrittenFirst:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    preamble = """
    template <class T> __device__ T dot4(const T* a) { T acc; acc = a[0] * a[0]; for (int k = 1; k < 4; ++k) acc += a[k] * a[k]; return acc; }
    """
    body = """
    __shared__ float tile[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v, r[4];
    if (i < n) v = x[i]; else v = 0.f;
    for (int k = 0; k < 4; ++k) r[k] = v + k;
    float s, c;
    sincosf(v, &s, &c);
    float2 z;
    z.x = s; z.y = c;
    tile[threadIdx.x] = v;
    __syncthreads();
    float total;
    total = 0.f;
    for (int k = 0; k < 4; ++k) { float t; t = tile[(threadIdx.x + k) % 64]; total += t; }
    if (i < n) y[i] = dot4(r) + (z.x * z.x + z.y * z.y) + total;
    """


def _lw_args():
    return (R(100), np.zeros(100, np.float32), 100), {"grid": 2}


def _lw_exp(a):
    x = np.r_[a[0], np.zeros(28, np.float32)].astype(np.float64)
    r = x[:, None] + np.arange(4)
    tiles = x.reshape(2, 64)
    total = sum(np.roll(tiles, -k, axis=1) for k in range(4)).ravel()
    return [(a[1], ((r * r).sum(1) + 1.0 + total)[:100])]


CORRECT["locals written before read"] = Correct(LocalsWrittenFirst, _lw_args, _lw_exp)
