"""More kernels for the checked CPU launch (tests/cpu/test_cpu_check_more.py): a probe of the
checker's breadth, written as public projects write them (CUDA samples' reductions, transposes,
histograms, scans and stencils, llm.c-style layernorm and softmax, CUB-style warp reductions,
CUTLASS-style tiles, cooperative kernels).

``BUGGY_MORE``: each case is a kernel with one bug, the arguments that show it, the error a checked
launch must raise (a read of shared memory that another thread writes later with no barrier between
is reported, on the CPU's schedule, as the uninitialised read it is there, not as a race) and the line of the body it must name (0: the message names no line, as a warp
or barrier report). ``CORRECT_MORE``: kernels a checker might wrongly flag, each with what it must
compute (checked and unchecked alike). ``MISSED`` and ``FLAGGED`` say which cases the checker gets
wrong today, and why: their tests are strict xfails, so that fixing the checker turns them green.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import cuforge as cf

from .check_corpus import Buggy, Correct

Args = Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]

COOP = "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;"


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random(shape, dtype=np.float32)


def _xy(n: int, m: int | None = None, **launch: Any) -> Args:
    return lambda: ((_rand(n), np.zeros(n if m is None else m, np.float32)), launch)


def _xyn(n: int, m: int | None = None, **launch: Any) -> Args:
    return lambda: ((_rand(n), np.zeros(n if m is None else m, np.float32), n), launch)


# ================================================================ buggy: out of bounds


@cf.kernel
class ReduceGuardLE:
    """A block reduction whose load guard is `i <= n`: reads x[n] in the last block."""

    x: cf.In[cf.float32]
    out: cf.Array[cf.float32]
    n: cf.int32
    block = 128
    body = """
    __shared__ float s[128];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t] = (i <= n) ? x[i] : 0.f;
    __syncthreads();
    for (int k = 64; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) atomicAdd(out, s[0]);
    """


@cf.kernel
class TransposeSwappedGuard:
    """The CUDA samples' tiled transpose, its write guard testing the input's bounds instead of the
    output's: harmless for square matrices, out of bounds for a 24x40 one."""

    src: cf.In[cf.float32]
    dst: cf.Out[cf.float32]
    w: cf.int32
    h: cf.int32
    block = (16, 16)
    body = """
    __shared__ float tile[16][17];
    int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = 0.f;
    if (x < w && y < h) tile[threadIdx.y][threadIdx.x] = src[y * w + x];
    __syncthreads();
    x = blockIdx.y * 16 + threadIdx.x;
    y = blockIdx.x * 16 + threadIdx.y;
    if (x < w && y < h)
        dst[y * h + x] = tile[threadIdx.x][threadIdx.y];
    """


@cf.kernel
class HaloNoBounds:
    """A 1-D stencil through shared memory whose halo loads have no bounds check: x[-3] in block 0."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    body = """
    __shared__ float s[64 + 6];
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    s[t + 3] = i < n ? x[i] : 0.f;
    if (t < 3) {
        s[t] = x[i - 3];
        s[t + 64 + 3] = i + 64 < n ? x[i + 64] : 0.f;
    }
    __syncthreads();
    if (i < n) y[i] = s[t] + s[t + 1] + s[t + 2] + s[t + 3] + s[t + 4] + s[t + 5] + s[t + 6];
    """


@cf.kernel
class GammaLut:
    """A 256-entry __constant__ lookup table indexed by (int)(x * 256): x == 1.0 indexes entry 256."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    preamble = """
    __constant__ float lut[256];
    """
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int q = (int)(x[i] * 256.f);
        y[i] = lut[q];
    }
    """


def _gamma_args() -> tuple[tuple[Any, ...], dict[str, Any]]:
    x = _rand(100)
    x[37] = 1.0
    return (x, np.zeros(100, np.float32), 100), {}


@cf.kernel
class DeviceBiasOOB:
    """A `__device__` bias table of 16 entries read by a block of 32 threads."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 32
    preamble = """
    __device__ float bias[16] = {0.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 10.f, 11.f, 12.f, 13.f, 14.f, 15.f};
    """
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i] + bias[threadIdx.x];
    """


@cf.kernel
class DynamicTooSmall:
    """A kernel that carves two arrays of blockDim floats from dynamic shared memory, launched with
    room for one."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    extern __shared__ float smem[];
    float* a = smem;
    float* b = smem + blockDim.x;
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    a[t] = x[i];
    b[t] = 2.f * x[i];
    __syncthreads();
    y[i] = a[blockDim.x - 1 - t] + b[t];
    """


@cf.kernel
class SharedStencil2DEdge:
    """A 2-D shared tile without a halo; each thread reads its right neighbour tile[ty][tx + 1]:
    within the array for all rows but the last, past its end for the last thread."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = (16, 16)
    body = """
    __shared__ float tile[16][16];
    int tx = threadIdx.x, ty = threadIdx.y;
    int i = (blockIdx.y * 16 + ty) * 16 * gridDim.x + blockIdx.x * 16 + tx;
    tile[ty][tx] = x[i];
    __syncthreads();
    y[i] = tile[ty][tx + 1] - tile[ty][tx];
    """


@cf.kernel
class SharedNegativeIndex:
    """A backward difference through shared memory that forgets thread 0: s[-1], just below the
    array and just past the one declared before it."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float w[64];
    __shared__ float s[64];
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    w[t] = 1.f;
    s[t] = x[i];
    __syncthreads();
    y[i] = w[t] * (s[t] - s[t - 1]);
    """


@cf.kernel
class Float4StoreMisaligned:
    """Stores float4s to y + 2: 8 bytes past a 16-byte boundary."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 32
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 v = reinterpret_cast<const float4*>(x)[i];
    reinterpret_cast<float4*>(y + 2)[i] = v;
    """


@cf.kernel
class Float2OddOffset:
    """Reads complex numbers as float2 from an interleaved array at an odd float offset."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 32
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float2 c = reinterpret_cast<const float2*>(x + 1)[i];
    y[i] = c.x * c.x + c.y * c.y;
    """


@cf.kernel
class VectorTail:
    """A float4-vectorized scale whose guard checks the vector's first element only: for n = 1002,
    the last vector reads x[1000..1003]."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    body = """
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v * 4 < n) {
        float4 a = reinterpret_cast<const float4*>(x)[v];
        a.x *= 2.f; a.y *= 2.f; a.z *= 2.f; a.w *= 2.f;
        reinterpret_cast<float4*>(y)[v] = a;
    }
    """


@cf.kernel
class MatMulNoTileGuard:
    """A tiled matmul (n not a multiple of 16) whose tile loads have no bounds check."""

    a: cf.In[cf.float32]
    b: cf.In[cf.float32]
    c: cf.Out[cf.float32]
    n: cf.int32
    block = (16, 16)
    body = """
    __shared__ float ta[16][16], tb[16][16];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    float acc = 0.f;
    for (int s = 0; s < n; s += 16) {
        ta[ty][tx] = a[row * n + s + tx];
        tb[ty][tx] = b[(s + ty) * n + col];
        __syncthreads();
        for (int k = 0; k < 16; ++k) acc += ta[ty][k] * tb[k][tx];
        __syncthreads();
    }
    if (row < n && col < n) c[row * n + col] = acc;
    """


@cf.kernel
class SoftmaxRowLE:
    """A row softmax, one block per row, whose column loops run to `j <= cols`."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    cols: cf.int32
    block = 32
    body = """
    const float* row = x + blockIdx.x * cols;
    float m = -3.402823466e38f;
    for (int j = threadIdx.x; j <= cols; j += blockDim.x) m = fmaxf(m, row[j]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
    float sum = 0.f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) sum += expf(row[j] - m);
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffff, sum, o);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) y[blockIdx.x * cols + j] = expf(row[j] - m) / sum;
    """


@cf.kernel
class HistogramBinPastEnd:
    """A shared-memory histogram whose bin is (int)(x * 16): x == 1.0 lands in bin 16, one past."""

    x: cf.In[cf.float32]
    hist: cf.Array[cf.int32]
    n: cf.int32
    block = 64
    body = """
    __shared__ int h[16];
    int t = threadIdx.x;
    if (t < 16) h[t] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&h[(int)(x[i] * 16.f)], 1);
    __syncthreads();
    if (t < 16) atomicAdd(&hist[t], h[t]);
    """


def _hist_args() -> tuple[tuple[Any, ...], dict[str, Any]]:
    x = _rand(256)
    x[200] = 1.0
    return (x, np.zeros(16, np.int32), 256), {"grid": 2}


@cf.kernel
class BitonicNotPow2:
    """A global bitonic merge step launched over n = 96 elements: partner i ^ j reaches past n."""

    a: cf.Array[cf.float32]
    j: cf.int32
    k: cf.int32
    block = 32
    body = """
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned p = i ^ j;
    if (p > i) {
        bool up = (i & k) == 0;
        float ai = a[i], ap = a[p];
        if ((ai > ap) == up) { a[i] = ap; a[p] = ai; }
    }
    """


@cf.kernel
class LayerNormRowsNoGuard:
    """llm.c-style layernorm, one warp per row, 4 rows per block; the grid rounds rows up and no
    thread checks `row < N`."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    N: cf.int32
    C: cf.int32
    block = (32, 4)
    body = """
    int row = blockIdx.x * blockDim.y + threadIdx.y;
    const float* xr = x + row * C;
    float s = 0.f;
    for (int c = threadIdx.x; c < C; c += 32) s += xr[c];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
    float mean = s / C, v = 0.f;
    for (int c = threadIdx.x; c < C; c += 32) v += (xr[c] - mean) * (xr[c] - mean);
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    float rstd = rsqrtf(v / C + 1e-5f);
    for (int c = threadIdx.x; c < C; c += 32) y[row * C + c] = (xr[c] - mean) * rstd;
    """


@cf.kernel
class ScanExclusiveShift:
    """Makes an exclusive scan from an inclusive one by reading incl[i - 1]: index -1 at i == 0."""

    incl: cf.In[cf.float32]
    excl: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        excl[i] = incl[i - 1];
    """


# ================================================================ buggy: uninitialised reads


@cf.kernel
class SharedHistNotZeroed:
    """A shared-memory histogram that no thread zeroes before the atomics add into it."""

    x: cf.In[cf.int32]
    hist: cf.Array[cf.int32]
    n: cf.int32
    block = 64
    body = """
    __shared__ int h[16];
    int t = threadIdx.x;
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&h[x[i] & 15], 1);
    __syncthreads();
    if (t < 16) atomicAdd(&hist[t], h[t]);
    """


@cf.kernel
class AtomicIntoOut:
    """Sums with atomicAdd into an Out[...] argument nobody zeroed (undefined on a GPU)."""

    x: cf.In[cf.float32]
    total: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(total, x[i]);
    """


@cf.kernel
class ReductionPaddingUninit:
    """A tree reduction that loads `if (i < n) s[t] = x[i];` with no else: the last block's tail of
    s is never written and is summed."""

    x: cf.In[cf.float32]
    out: cf.Array[cf.float32]
    n: cf.int32
    block = 64
    body = """
    __shared__ float s[64];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    if (i < n) s[t] = x[i];
    __syncthreads();
    for (int k = 32; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) atomicAdd(out, s[0]);
    """


@cf.kernel
class RowMaxIntoOut:
    """Keeps a running row maximum in an Out[...] argument: the first fmaxf reads it unwritten."""

    x: cf.In[cf.float32]
    rmax: cf.Out[cf.float32]
    rows: cf.int32
    cols: cf.int32
    block = 32
    body = """
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    for (int c = 0; c < cols; ++c)
        rmax[r] = fmaxf(rmax[r], x[r * cols + c]);
    """


@cf.kernel
class DoubleBufferNoPrologue:
    """A double-buffered pipeline whose prologue fills buffer 1 instead of buffer 0."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    steps: cf.int32
    block = 32
    body = """
    __shared__ float buf[2][32];
    int t = threadIdx.x;
    buf[1][t] = x[t];
    __syncthreads();
    float acc = 0.f;
    for (int s = 0; s < steps; ++s) {
        int cur = s & 1;
        if (s + 1 < steps) buf[cur ^ 1][t] = x[(s + 1) * 32 + t];
        acc += buf[cur][31 - t];
        __syncthreads();
    }
    y[blockIdx.x * 32 + t] = acc;
    """


@cf.kernel
class DynamicHalfWritten:
    """Launched with dynamic shared memory for two floats per thread, writes only the first half
    and reads both."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    extern __shared__ float s[];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t] = x[i];
    __syncthreads();
    y[i] = s[t] + s[t + blockDim.x];
    """


@cf.kernel
class StencilCornersUnloaded:
    """A 2-D 3x3 stencil with a halo of 1: the loads fill the centre and the four edges but not the
    corners, which the loop reads (their weights are zero: the result is right)."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    w: cf.int32
    h: cf.int32
    block = (16, 16)
    preamble = """
    __constant__ float wts[3][3] = { {0.f, 0.25f, 0.f}, {0.25f, 0.f, 0.25f}, {0.f, 0.25f, 0.f} };
    __device__ inline float at(const float* x, int w, int h, int c, int r) {
        c = c < 0 ? 0 : c >= w ? w - 1 : c;
        r = r < 0 ? 0 : r >= h ? h - 1 : r;
        return x[r * w + c];
    }
    """
    body = """
    __shared__ float s[18][18];
    int tx = threadIdx.x, ty = threadIdx.y;
    int c = blockIdx.x * 16 + tx, r = blockIdx.y * 16 + ty;
    s[ty + 1][tx + 1] = at(x, w, h, c, r);
    if (tx == 0) s[ty + 1][0] = at(x, w, h, c - 1, r);
    if (tx == 15) s[ty + 1][17] = at(x, w, h, c + 1, r);
    if (ty == 0) s[0][tx + 1] = at(x, w, h, c, r - 1);
    if (ty == 15) s[17][tx + 1] = at(x, w, h, c, r + 1);
    __syncthreads();
    float acc = 0.f;
    for (int dy = 0; dy < 3; ++dy)
        for (int dx = 0; dx < 3; ++dx) acc += wts[dy][dx] * s[ty + dy][tx + dx];
    y[r * w + c] = acc;
    """


@cf.kernel
class SharedSumNotZeroed:
    """Each warp's leader adds its warp sum into a __shared__ accumulator no thread set to zero."""

    x: cf.In[cf.float32]
    out: cf.Out[cf.float32]
    block = 128
    body = """
    __shared__ float total;
    int t = threadIdx.x;
    float v = x[blockIdx.x * 128 + t];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if ((t & 31) == 0) atomicAdd(&total, v);
    __syncthreads();
    if (t == 0) out[blockIdx.x] = total;
    """


# ================================================================ buggy: races


@cf.kernel
class TransposeNoSync:
    """The tiled transpose without the __syncthreads between the tile's load and its transposed read."""

    src: cf.In[cf.float32]
    dst: cf.Out[cf.float32]
    n: cf.int32
    block = (16, 16)
    body = """
    __shared__ float tile[16][17];
    int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = src[y * n + x];
    x = blockIdx.y * 16 + threadIdx.x;
    y = blockIdx.x * 16 + threadIdx.y;
    dst[y * n + x] = tile[threadIdx.x][threadIdx.y];
    """


@cf.kernel
class ReduceNoLoopSync:
    """A tree reduction with the barrier after the load but none inside the loop."""

    x: cf.In[cf.float32]
    out: cf.Array[cf.float32]
    block = 64
    body = """
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * 64 + t];
    __syncthreads();
    for (int k = 32; k > 0; k >>= 1)
        if (t < k) s[t] += s[t + k];
    if (t == 0) atomicAdd(out, s[0]);
    """


@cf.kernel
class VolatileWarpReduce:
    """The CUDA samples' reduce4: the last warp unrolled on a volatile pointer, no __syncwarp (a race
    since Volta's independent thread scheduling)."""

    x: cf.In[cf.float32]
    out: cf.Out[cf.float32]
    block = 128
    body = """
    __shared__ float s[128];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * 128 + t];
    __syncthreads();
    if (t < 64) s[t] += s[t + 64];
    __syncthreads();
    if (t < 32) {
        volatile float* vs = s;
        vs[t] += vs[t + 32];
        vs[t] += vs[t + 16];
        vs[t] += vs[t + 8];
        vs[t] += vs[t + 4];
        vs[t] += vs[t + 2];
        vs[t] += vs[t + 1];
    }
    if (t == 0) out[blockIdx.x] = s[0];
    """


@cf.kernel
class GlobalHistPlainIncrement:
    """A global histogram incremented with a plain `hist[b]++`."""

    x: cf.In[cf.int32]
    hist: cf.Array[cf.int32]
    n: cf.int32
    block = 64
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) hist[x[i] & 7]++;
    """


@cf.kernel
class SharedHistPlainIncrement:
    """A shared histogram incremented with `h[b] += 1` instead of atomicAdd."""

    x: cf.In[cf.int32]
    hist: cf.Array[cf.int32]
    n: cf.int32
    block = 64
    body = """
    __shared__ int h[8];
    int t = threadIdx.x;
    if (t < 8) h[t] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + t;
    if (i < n) h[x[i] & 7] += 1;
    __syncthreads();
    if (t < 8) atomicAdd(&hist[t], h[t]);
    """


@cf.kernel
class LastBlockNoFence:
    """threadFenceReduction without the __threadfence between the partial's store and the ticket."""

    x: cf.In[cf.float32]
    partial: cf.Array[cf.float32]
    count: cf.Array[cf.uint32]
    total: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float s[64];
    __shared__ bool last;
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * 64 + t];
    __syncthreads();
    for (int k = 32; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) {
        partial[blockIdx.x] = s[0];
        unsigned ticket = atomicInc(&count[0], gridDim.x);
        last = ticket == gridDim.x - 1;
    }
    __syncthreads();
    if (last && t == 0) {
        float acc = 0.f;
        for (unsigned b = 0; b < gridDim.x; ++b) acc += partial[b];
        total[0] = acc;
        count[0] = 0;
    }
    """


def _last_block_args() -> tuple[tuple[Any, ...], dict[str, Any]]:
    return (_rand(640), np.zeros(10, np.float32), np.zeros(1, np.uint32), np.zeros(1, np.float32)), {"grid": 10}


@cf.kernel
class GridStrideBlockStride:
    """A grid-stride loop whose stride is blockDim.x, not blockDim.x * gridDim.x: every block walks
    the rest of the array, each element updated by several blocks at once. (Were it a plain store
    of the same value, each block's write would leave the same bytes: that is not reported.)"""

    x: cf.In[cf.float32]
    y: cf.Array[cf.float32]
    n: cf.int32
    block = 64
    body = """
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x)
        y[i] += 2.f * x[i];
    """


@cf.kernel
class SplitKPlainStore:
    """A split-K matrix-vector product: each of the K-split blocks stores its partial into y[row]
    with a plain store instead of an atomicAdd."""

    a: cf.In[cf.float32]
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    rows: cf.int32
    cols: cf.int32
    block = 32
    body = """
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int k0 = blockIdx.y * (cols / gridDim.y), k1 = k0 + cols / gridDim.y;
    if (row >= rows) return;
    float acc = 0.f;
    for (int k = k0; k < k1; ++k) acc += a[row * cols + k] * x[k];
    y[row] = acc;
    """


@cf.kernel
class InPlaceJacobi:
    """A Jacobi sweep done in place on one array: each thread reads its neighbours while they write."""

    u: cf.Array[cf.float32]
    n: cf.int32
    block = 64
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i > 0 && i < n - 1)
        u[i] = 0.5f * (u[i - 1] + u[i + 1]);
    """


@cf.kernel
class ReadBeforeBarrier:
    """Thread 0 sums the block's shared array before the __syncthreads that would order the loads."""

    x: cf.In[cf.float32]
    out: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * 64 + t];
    if (t == 0) {
        float acc = 0.f;
        for (int k = 0; k < 64; ++k) acc += s[k];
        out[blockIdx.x] = acc;
    }
    __syncthreads();
    """


@cf.kernel
class MatMulNoTrailingSync:
    """The tiled matmul without the second __syncthreads: the next step's tile load overwrites
    elements other threads still read."""

    a: cf.In[cf.float32]
    b: cf.In[cf.float32]
    c: cf.Out[cf.float32]
    n: cf.int32
    block = (16, 16)
    body = """
    __shared__ float ta[16][16], tb[16][16];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    float acc = 0.f;
    for (int s = 0; s < n; s += 16) {
        ta[ty][tx] = a[row * n + s + tx];
        tb[ty][tx] = b[(s + ty) * n + col];
        __syncthreads();
        for (int k = 0; k < 16; ++k) acc += ta[ty][k] * tb[k][tx];
    }
    c[row * n + col] = acc;
    """


def _matmul_args(n: int) -> Args:
    return lambda: ((_rand(n * n, seed=1), _rand(n * n, seed=2), np.zeros(n * n, np.float32), n),
                    {"grid": (-(-n // 16), -(-n // 16))})  # fmt: skip


@cf.kernel
class WarpExchangeNoSyncwarp:
    """Swaps neighbours' values through shared memory within a warp, with no __syncwarp between the
    store and the load."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 32
    body = """
    __shared__ float s[32];
    int lane = threadIdx.x, i = blockIdx.x * 32 + lane;
    s[lane] = x[i];
    y[i] = s[lane ^ 1];
    """


@cf.kernel
class LayerNormMeanNoSync:
    """Thread 0 publishes the row mean in shared memory; the others read it with no barrier between."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    C: cf.int32
    block = 64
    body = """
    __shared__ float s[64];
    __shared__ float mean;
    int t = threadIdx.x;
    const float* xr = x + blockIdx.x * C;
    float acc = 0.f;
    for (int c = t; c < C; c += 64) acc += xr[c];
    s[t] = acc;
    __syncthreads();
    if (t == 0) {
        float m = 0.f;
        for (int k = 0; k < 64; ++k) m += s[k];
        mean = m / C;
    }
    for (int c = t; c < C; c += 64) y[blockIdx.x * C + c] = xr[c] - mean;
    """


@cf.kernel
class ShiftLeftInPlace:
    """Shifts a shared array left in place, reading s[t + 1] and storing s[t] with no barrier
    between: right on the CPU's schedule (thread t runs before t + 1), a write-after-read race."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float s[65];
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    s[t] = x[i];
    if (t == 0) s[64] = 0.f;
    __syncthreads();
    float v = s[t + 1];
    s[t] = v;
    __syncthreads();
    y[i] = s[t];
    """


@cf.kernel
class CooperativeNoGridSync:
    """A cooperative two-phase kernel that forgot the grid.sync(): each block reads its neighbour's slice."""

    x: cf.In[cf.float32]
    tmp: cf.Array[cf.float32]
    y: cf.Out[cf.float32]
    cooperative = True
    grid = 4
    block = 32
    preamble = COOP
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tmp[i] = 2.f * x[i];
    int j = (i + blockDim.x) % (gridDim.x * blockDim.x);
    y[i] = tmp[j];
    """


@cf.kernel
class ZeroThenAtomicAcrossBlocks:
    """Block 0 zeroes the accumulator with a plain store while the other blocks already atomicAdd
    into it: nothing orders the store before another block's atomic."""

    x: cf.In[cf.float32]
    total: cf.Array[cf.float32]
    block = 64
    body = """
    int t = threadIdx.x;
    if (blockIdx.x == 0 && t == 0) total[0] = 0.f;
    __syncthreads();
    atomicAdd(total, x[blockIdx.x * 64 + t]);
    """


@cf.kernel
class SharedHistMergeNoBarrier:
    """A shared histogram whose merge into global memory follows the atomics without the
    __syncthreads: a thread reads a bin other threads are still adding to."""

    x: cf.In[cf.int32]
    hist: cf.Array[cf.int32]
    n: cf.int32
    block = 64
    body = """
    __shared__ int h[16];
    int t = threadIdx.x;
    if (t < 16) h[t] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + t;
    if (i < n) atomicAdd(&h[x[i] & 15], 1);
    if (t < 16) atomicAdd(&hist[t], h[t]);
    """


@cf.kernel
class OutWrittenAcrossBlocksNoSync:
    """Writes y[i], then reads y[i + 64], which the next block writes (not cooperative: no order)."""

    x: cf.In[cf.float32]
    y: cf.Array[cf.float32]
    z: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i] * x[i];
    __syncthreads();
    z[i] = y[i] + (i + 64 < n ? y[i + 64] : 0.f);
    """


# ================================================================ buggy: warp and barrier misuse


@cf.kernel
class XorHalfMask:
    """A butterfly all-reduce over a full warp with the mask of a half-warp."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 32
    body = """
    int i = blockIdx.x * 32 + threadIdx.x;
    float v = x[i];
    for (int o = 8; o > 0; o >>= 1) v += __shfl_xor_sync(0x0000ffff, v, o, 16);
    y[i] = v;
    """


@cf.kernel
class BallotInBranch:
    """A full-mask __ballot_sync inside a branch only some lanes take (a stream-compaction count)."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.int32]
    block = 32
    body = """
    int i = blockIdx.x * 32 + threadIdx.x;
    int c = 0;
    if (x[i] > 0.25f) {
        unsigned b = __ballot_sync(0xffffffff, x[i] > 0.5f);
        c = __popc(b);
    }
    y[i] = c;
    """


@cf.kernel
class BarrierInStridedLoop:
    """A block-strided loop with barriers inside: for n not a multiple of the block, threads run
    different trip counts and reach different numbers of barriers."""

    x: cf.In[cf.float32]
    out: cf.Array[cf.float32]
    n: cf.int32
    block = 64
    body = """
    __shared__ float s[64];
    int t = threadIdx.x;
    float acc = 0.f;
    for (int i = t; i < n; i += blockDim.x) {
        s[t] = x[i];
        __syncthreads();
        acc += s[(t + 1) & 63];
        __syncthreads();
    }
    atomicAdd(out, acc);
    """


@cf.kernel
class GridSyncSkipped:
    """A cooperative kernel whose grid.sync() only the blocks with work reach."""

    x: cf.In[cf.float32]
    tmp: cf.Array[cf.float32]
    y: cf.Out[cf.float32]
    nblocks_used: cf.int32
    cooperative = True
    grid = 4
    block = 32
    preamble = COOP
    body = """
    cg::grid_group g = cg::this_grid();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (blockIdx.x < nblocks_used) {
        tmp[i] = 2.f * x[i];
        g.sync();
        y[i] = tmp[(i + 32) % (nblocks_used * 32)];
    }
    """


@cf.kernel
class EarlyReturnBeforeBarrier:
    """Out-of-range threads return before a __syncthreads the others wait at."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    body = """
    __shared__ float s[64];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    if (i >= n) return;
    s[t] = x[i];
    __syncthreads();
    y[i] = s[t] + s[t ^ 1];
    """


@cf.kernel
class BarriersInBothBranches:
    """A __syncthreads in each arm of a branch: as many barriers either way, but not the same
    barrier (undefined on a GPU: the two halves of the block do not meet)."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float s[64];
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    if (t < 32) {
        s[t] = x[i];
        __syncthreads();
    } else {
        s[t] = -x[i];
        __syncthreads();
    }
    y[i] = s[63 - t];
    """


@cf.kernel
class PartialWarpFullMask:
    """A full-mask shuffle reduction in a block of 48 threads: the mask names lanes 48-63 of the
    second warp, which do not exist (their values are undefined)."""

    x: cf.In[cf.float32]
    out: cf.Out[cf.float32]
    block = 48
    body = """
    int t = threadIdx.x;
    float v = x[blockIdx.x * 48 + t];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if ((t & 31) == 0) out[blockIdx.x * 2 + t / 32] = v;
    """


@cf.kernel
class PartialWarpGuardedReduce:
    """A full-mask shuffle reduction in a block of 48 threads that adds only the lanes that exist:
    the lanes past the block are read (their values undefined) and discarded."""

    x: cf.In[cf.float32]
    out: cf.Out[cf.float32]
    block = 48
    body = """
    int t = threadIdx.x, lane = t & 31, here = min(32, 48 - (t & ~31));
    float v = x[blockIdx.x * 48 + t];
    for (int o = 16; o > 0; o >>= 1) {
        float other = __shfl_down_sync(0xffffffff, v, o);
        if (lane + o < here) v += other;
    }
    if (lane == 0) out[blockIdx.x * 2 + t / 32] = v;
    """


@cf.kernel
class SyncwarpInHalf:
    """A __syncwarp() (full mask) called only by the low half of the warp inside a branch."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 32
    body = """
    __shared__ float s[32];
    int lane = threadIdx.x, i = blockIdx.x * 32 + lane;
    s[lane] = x[i];
    __syncthreads();
    if (lane < 16) {
        s[lane] += s[lane + 16];
        __syncwarp();
    }
    y[i] = s[lane & 15];
    """


@cf.kernel
class DataDependentBarrierLoop:
    """A refinement loop with a barrier whose trip count depends on each thread's own data."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 32
    body = """
    __shared__ float s[32];
    int t = threadIdx.x, i = blockIdx.x * 32 + t;
    float v = x[i];
    while (v > 0.1f) {
        v *= 0.5f;
        s[t] = v;
        __syncthreads();
    }
    y[i] = v;
    """


@cf.kernel
class SyncthreadsCountInBranch:
    """__syncthreads_count inside a branch only the threads with data take."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.int32]
    n: cf.int32
    block = 64
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int c = __syncthreads_count(x[i] > 0.5f);
        y[i] = c;
    }
    """


@cf.kernel
class ShuffleMaskFromBallotOutsideBranch:
    """Builds the mask of the lanes with data with __ballot_sync, then calls a full-mask shuffle
    inside the branch instead of the ballot's mask."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 32
    body = """
    int i = blockIdx.x * 32 + threadIdx.x;
    unsigned m = __ballot_sync(0xffffffff, i < n);
    if (i < n) {
        float v = x[i];
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
        if ((threadIdx.x & 31) == 0) y[blockIdx.x] = v + 0.f * (float)m;
    }
    """


BUGGY_MORE: dict[str, Buggy] = {
    # out of bounds
    "reduce guard i <= n": Buggy(ReduceGuardLE, lambda: ((_rand(200), np.zeros(1, np.float32), 200), {"grid": 2}),
                                 cf.OutOfBoundsError, 3, r"parameter 'x' .*index 200, outside its extent of 200"),
    "transpose swapped guard": Buggy(TransposeSwappedGuard, lambda: ((_rand(40 * 24), np.zeros(40 * 24, np.float32), 24, 40),
                                                                    {"grid": (2, 3)}),
                                     cf.OutOfBoundsError, 9, r"write of 4 bytes: parameter 'dst'"),
    "halo without bounds": Buggy(HaloNoBounds, _xyn(200), cf.OutOfBoundsError, 5,
                                 r"parameter 'x' .*index -3, outside its extent of 200"),
    "constant LUT index 256": Buggy(GammaLut, _gamma_args, cf.OutOfBoundsError, 4,
                                    r"module variable 'lut', index 1024, outside its extent of 1024"),
    "__device__ bias table": Buggy(DeviceBiasOOB, _xy(64), cf.OutOfBoundsError, 2,
                                   r"module variable 'bias', index 64, outside its extent of 64"),
    "dynamic shared too small": Buggy(DynamicTooSmall, _xy(128, shared_mem=64 * 4), cf.OutOfBoundsError, 6,
                                      r"dynamic shared memory .*index 64, outside its extent of 64"),
    "2-D shared tile right edge": Buggy(SharedStencil2DEdge, _xy(32 * 32, grid=(2, 2)), cf.OutOfBoundsError, 6,
                                        r"__shared__ variable 'tile', index 256, outside its extent of 256"),
    "shared index -1": Buggy(SharedNegativeIndex, _xy(128), cf.OutOfBoundsError, 7,
                             r"__shared__ variable 's', index -1, outside its extent of 64"),
    "misaligned float4 store": Buggy(Float4StoreMisaligned, _xy(128, 136, grid=1), cf.MisalignedAccessError, 3,
                                     r"misaligned write of a float4 "),
    "misaligned float2 load": Buggy(Float2OddOffset, _xy(128, 32, grid=1), cf.MisalignedAccessError, 2,
                                    r"misaligned access to a float2 "),
    "float4 tail past n": Buggy(VectorTail, lambda: ((_rand(1002), np.zeros(1002, np.float32), 1002), {"grid": 4}),
                                cf.OutOfBoundsError, 3, r"parameter 'x' .*outside its extent of 1002"),
    "matmul tiles unguarded": Buggy(MatMulNoTileGuard, _matmul_args(40), cf.OutOfBoundsError, 7,
                                    r"parameter 'b' .*outside its extent of 1600"),
    "softmax j <= cols": Buggy(SoftmaxRowLE, lambda: ((_rand(4 * 50), np.zeros(4 * 50, np.float32), 50), {"grid": 4}),
                               cf.OutOfBoundsError, 3, r"parameter 'x' .*index 200, outside its extent of 200"),
    "histogram bin 16 of 16": Buggy(HistogramBinPastEnd, _hist_args, cf.OutOfBoundsError, 6,
                                    r"__shared__ variable 'h', index 16, outside its extent of 16"),
    "bitonic partner past n": Buggy(BitonicNotPow2, lambda: ((_rand(96), 64, 128), {"grid": 3}), cf.OutOfBoundsError, 5,
                                    r"parameter 'a' .*outside its extent of 96"),
    "layernorm rows unguarded": Buggy(LayerNormRowsNoGuard, lambda: ((_rand(10 * 64), np.zeros(10 * 64, np.float32), 10, 64),
                                                                    {"grid": 3}),
                                      cf.OutOfBoundsError, 4, r"parameter 'x' .*index 640, outside its extent of 640"),
    "exclusive scan incl[i - 1]": Buggy(ScanExclusiveShift, _xyn(100), cf.OutOfBoundsError, 3,
                                        r"parameter 'incl' .*index -1, outside its extent of 100"),
    # uninitialised reads
    "shared histogram not zeroed": Buggy(SharedHistNotZeroed, lambda: ((np.arange(256, dtype=np.int32), np.zeros(16, np.int32),
                                                                        256), {"grid": 2}),
                                         cf.UninitializedReadError, 4, r"__shared__ variable 'h'"),
    "atomicAdd into Out": Buggy(AtomicIntoOut, lambda: ((_rand(100), np.zeros(1, np.float32), 100), {"grid": 2}),
                                cf.UninitializedReadError, 2, r"parameter 'total' \(Out\[float32\]\), index 0"),
    "reduction tail never loaded": Buggy(ReductionPaddingUninit, lambda: ((_rand(100), np.zeros(1, np.float32), 100),
                                                                          {"grid": 2}),
                                         cf.UninitializedReadError, 6, r"__shared__ variable 's', index (3[6-9]|[4-6]\d)"),
    "running max in Out": Buggy(RowMaxIntoOut, lambda: ((_rand(8 * 5), np.zeros(8, np.float32), 8, 5), {"grid": 1}),
                                cf.UninitializedReadError, 4, r"parameter 'rmax' \(Out\[float32\]\), index 0"),
    "double buffer prologue fills the wrong buffer": Buggy(DoubleBufferNoPrologue, lambda: ((_rand(32 * 4), np.zeros(32, np.float32),
                                                                                               4), {"grid": 1}),
                                                           cf.UninitializedReadError, 9, r"__shared__ variable 'buf', index \d+ \(extent 64\)"),
    "dynamic shared half written": Buggy(DynamicHalfWritten, _xy(128, shared_mem=2 * 64 * 4), cf.UninitializedReadError, 5,
                                         r"dynamic shared memory .*index (6[4-9]|[7-9]\d|1[0-2]\d) \(extent 128\)"),
    "stencil corners unloaded": Buggy(StencilCornersUnloaded, lambda: ((_rand(32 * 32), np.zeros(32 * 32, np.float32), 32, 32),
                                                                       {"grid": (2, 2)}),
                                      cf.UninitializedReadError, 12, r"__shared__ variable 's', index (0|17|306|323) \(extent 324\)"),
    "shared accumulator not zeroed": Buggy(SharedSumNotZeroed, _xy(256, 2, grid=2), cf.UninitializedReadError, 5,
                                           r"__shared__ variable 'total'"),
    # races
    "transpose without the barrier": Buggy(TransposeNoSync, lambda: ((_rand(32 * 32), np.zeros(32 * 32, np.float32), 32),
                                                                     {"grid": (2, 2)}),
                                           cf.UninitializedReadError, 6, r"__shared__ variable 'tile'"),
    "reduction loop without barriers": Buggy(ReduceNoLoopSync, _xy(128, 1, grid=2), cf.RaceError, 6,
                                             r"__shared__ variable 's'"),
    "volatile warp reduce without __syncwarp": Buggy(VolatileWarpReduce, _xy(256, 2, grid=2), cf.RaceError, 0,
                                                     r"__shared__ variable 's'"),
    "global histogram hist[b]++": Buggy(GlobalHistPlainIncrement, lambda: ((np.arange(128, dtype=np.int32), np.zeros(8, np.int32),
                                                                            128), {"grid": 2}),
                                        cf.RaceError, 2, r"parameter 'hist'"),
    "shared histogram h[b] += 1": Buggy(SharedHistPlainIncrement, lambda: ((np.arange(128, dtype=np.int32), np.zeros(8, np.int32),
                                                                            128), {"grid": 2}),
                                        cf.RaceError, 6, r"__shared__ variable 'h'"),
    "last block without __threadfence": Buggy(LastBlockNoFence, _last_block_args, cf.RaceError, 18,
                                              r"parameter 'partial' .*in different blocks"),
    "grid-stride loop strides by blockDim": Buggy(GridStrideBlockStride, _xyn(256, grid=4), cf.RaceError, 2,
                                                  r"parameter 'y' .*in different blocks"),
    "split-K plain store": Buggy(SplitKPlainStore, lambda: ((_rand(32 * 64), _rand(64), np.zeros(32, np.float32), 32, 64),
                                                            {"grid": (1, 4)}),
                                 cf.RaceError, 6, r"parameter 'y' .*in different blocks"),
    "in-place Jacobi": Buggy(InPlaceJacobi, lambda: ((_rand(256), 256), {"grid": 4}), cf.RaceError, 3, r"parameter 'u'"),
    "shared read before the barrier": Buggy(ReadBeforeBarrier, _xy(128, 2, grid=2), cf.UninitializedReadError, 6,
                                            r"__shared__ variable 's'"),
    "matmul without the trailing barrier": Buggy(MatMulNoTrailingSync, _matmul_args(32), cf.RaceError, 9,
                                                 r"__shared__ variable 't[ab]'"),
    "warp exchange without __syncwarp": Buggy(WarpExchangeNoSyncwarp, _xy(64), cf.UninitializedReadError, 4, r"__shared__ variable 's'"),
    "layernorm mean published without a barrier": Buggy(LayerNormMeanNoSync, lambda: ((_rand(2 * 100), np.zeros(2 * 100, np.float32),
                                                                                       100), {"grid": 2}),
                                                        cf.UninitializedReadError, 14, r"__shared__ variable 'mean'"),
    "in-place shift left (right on the CPU)": Buggy(ShiftLeftInPlace, _xy(128), cf.RaceError, 7, r"__shared__ variable 's'"),
    "cooperative without grid.sync": Buggy(CooperativeNoGridSync, lambda: ((_rand(128), np.zeros(128, np.float32),
                                                                            np.zeros(128, np.float32)), {}),
                                           cf.RaceError, 0, r"parameter 'tmp' .*in different blocks"),
    "plain zeroing vs other blocks' atomics": Buggy(ZeroThenAtomicAcrossBlocks, lambda: ((_rand(256), np.ones(1, np.float32)),
                                                                                        {"grid": 4}),
                                                    cf.RaceError, 0, r"parameter 'total'"),
    "shared histogram merged without a barrier": Buggy(SharedHistMergeNoBarrier, lambda: ((np.arange(128, dtype=np.int32),
                                                                                            np.zeros(16, np.int32), 128),
                                                                                           {"grid": 2}),
                                                       cf.RaceError, 6, r"__shared__ variable 'h'.* atomically updates it, and "
                                                                            r"thread \(0, 0, 0\) of block \(0, 0, 0\) read it"),
    "reads the next block's output": Buggy(OutWrittenAcrossBlocksNoSync, lambda: ((_rand(256), np.zeros(256, np.float32),
                                                                                   np.zeros(256, np.float32), 256), {"grid": 4}),
                                           cf.RaceError, 0, r"parameter 'y' .*in different blocks"),
    # warp and barrier misuse
    "xor shuffle with a half-warp mask": Buggy(XorHalfMask, _xy(64), cf.WarpMisuseError, 0, r"leaves its own lane out"),
    "ballot in a divergent branch": Buggy(BallotInBranch, lambda: ((_rand(64), np.zeros(64, np.int32)), {}),
                                          cf.WarpMisuseError, 0, r"__ballot_sync"),
    "barrier in a strided loop": Buggy(BarrierInStridedLoop, lambda: ((_rand(100), np.zeros(1, np.float32), 100), {"grid": 1}),
                                       cf.BarrierMisuseError, 0, r"__syncthreads"),
    "grid.sync skipped by some blocks": Buggy(GridSyncSkipped, lambda: ((_rand(128), np.zeros(128, np.float32),
                                                                         np.zeros(128, np.float32), 3), {}),
                                              cf.BarrierMisuseError, 0, r"sync"),
    "early return before __syncthreads": Buggy(EarlyReturnBeforeBarrier, _xyn(100), cf.BarrierMisuseError, 0,
                                               r"__syncthreads"),
    "a barrier in each arm of a branch": Buggy(BarriersInBothBranches, _xy(128), cf.BarrierMisuseError, 0, r"__syncthreads"),
    "full mask in a partial warp": Buggy(PartialWarpFullMask, _xy(96, 4, grid=2), cf.WarpMisuseError, 3,
                                         r"__shfl_down_sync read lanes .*parameter 'out'"),
    "__syncwarp in half a warp": Buggy(SyncwarpInHalf, _xy(64), cf.WarpMisuseError, 0, r"__syncwarp"),
    "barrier loop with data-dependent trips": Buggy(DataDependentBarrierLoop, _xy(64), cf.BarrierMisuseError, 0,
                                                    r"__syncthreads"),
    "__syncthreads_count in a branch": Buggy(SyncthreadsCountInBranch, lambda: ((_rand(100), np.zeros(100, np.int32), 100), {}),
                                             cf.BarrierMisuseError, 0, r"__syncthreads"),
    "full-mask shuffle inside the guard": Buggy(ShuffleMaskFromBallotOutsideBranch, _xyn(40, 2, grid=2), cf.WarpMisuseError,
                                                0, r"__shfl_down_sync"),
}  # fmt: skip


# ================================================================ correct kernels


@cf.kernel
class AtomicMaxFloatCAS:
    """A float atomicMax built on an atomicCAS loop (each block's max, then the grid's)."""

    x: cf.In[cf.float32]
    out: cf.Array[cf.float32]
    n: cf.int32
    block = 64
    preamble = """
    __device__ float atomicMaxFloat(float* addr, float v) {
        int* p = (int*)addr;
        int old = *p, assumed;
        do {
            assumed = old;
            if (__int_as_float(assumed) >= v) break;
            old = atomicCAS(p, assumed, __float_as_int(v));
        } while (old != assumed);
        return __int_as_float(old);
    }
    """
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicMaxFloat(out, x[i]);
    """


@cf.kernel
class PerWarpHistogram:
    """256-bin histogram with one shared sub-histogram per warp (strided zeroing and merge)."""

    x: cf.In[cf.uint8]
    hist: cf.Array[cf.uint32]
    n: cf.int32
    block = 128
    body = """
    __shared__ unsigned h[4][256];
    int t = threadIdx.x, warp = t / 32;
    for (int j = t; j < 4 * 256; j += blockDim.x) (&h[0][0])[j] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&h[warp][x[i]], 1u);
    __syncthreads();
    for (int b = t; b < 256; b += blockDim.x) {
        unsigned s = h[0][b] + h[1][b] + h[2][b] + h[3][b];
        if (s) atomicAdd(&hist[b], s);
    }
    """


@cf.kernel
class ButterflyAllReduce:
    """A full-mask __shfl_xor_sync butterfly: every lane gets the warp's sum."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    y[i] = v;
    """


@cf.kernel
class VolatileWarpReduceSynced:
    """reduce4's last warp on a volatile pointer, with a __syncwarp between each step (read, sync,
    write, sync)."""

    x: cf.In[cf.float32]
    out: cf.Out[cf.float32]
    block = 128
    body = """
    __shared__ float s[128];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * 128 + t];
    __syncthreads();
    if (t < 64) s[t] += s[t + 64];
    __syncthreads();
    if (t < 32) {
        volatile float* vs = s;
        for (int o = 32; o > 0; o >>= 1) {
            float v = vs[t] + vs[t + o];
            __syncwarp();
            vs[t] = v;
            __syncwarp();
        }
    }
    if (t == 0) out[blockIdx.x] = s[0];
    """


@cf.kernel
class DoubleBuffered1D:
    """A 1-D double-buffered pipeline: load step s + 1 while step s is consumed, one barrier a step."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    steps: cf.int32
    block = 32
    body = """
    __shared__ float buf[2][32];
    int t = threadIdx.x;
    buf[0][t] = x[t];
    __syncthreads();
    float acc = 0.f;
    for (int s = 0; s < steps; ++s) {
        int cur = s & 1;
        if (s + 1 < steps) buf[cur ^ 1][t] = x[(s + 1) * 32 + t];
        acc += buf[cur][31 - t];
        __syncthreads();
    }
    y[t] = acc;
    """


@cf.kernel
class LastBlockAtomicAdd:
    """threadFenceReduction with an atomicAdd ticket and __syncthreads_or to elect the last block."""

    x: cf.In[cf.float32]
    partial: cf.Array[cf.float32]
    count: cf.Array[cf.int32]
    total: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * 64 + t];
    __syncthreads();
    for (int k = 32; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    int mine = 0;
    if (t == 0) {
        partial[blockIdx.x] = s[0];
        __threadfence();
        mine = atomicAdd(&count[0], 1) == (int)gridDim.x - 1;
    }
    if (__syncthreads_or(mine)) {
        float acc = 0.f;
        for (int b = t; b < (int)gridDim.x; b += 64) acc += partial[b];
        s[t] = acc;
        __syncthreads();
        if (t == 0) {
            float all = 0.f;
            for (int k = 0; k < 64; ++k) all += s[k];
            total[0] = all;
        }
    }
    """


@cf.kernel
class CoopNormalize:
    """A cooperative normalisation: each block's partial sum, grid.sync, every thread reads all
    partials and scales its element."""

    x: cf.In[cf.float32]
    partial: cf.Array[cf.float32]
    y: cf.Out[cf.float32]
    cooperative = True
    grid = 4
    block = 32
    preamble = COOP
    body = """
    cg::grid_group g = cg::this_grid();
    cg::thread_block b = cg::this_thread_block();
    __shared__ float s[32];
    int t = threadIdx.x, i = blockIdx.x * 32 + t;
    s[t] = x[i];
    b.sync();
    if (t == 0) {
        float acc = 0.f;
        for (int k = 0; k < 32; ++k) acc += s[k];
        partial[blockIdx.x] = acc;
    }
    g.sync();
    float total = 0.f;
    for (int k = 0; k < (int)gridDim.x; ++k) total += partial[k];
    y[i] = x[i] / total;
    """


@cf.kernel
class DynamicTwoArrays:
    """Dynamic shared memory carved into a float array and an int array after it."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    extern __shared__ float smem[];
    float* vals = smem;
    int* idx = reinterpret_cast<int*>(smem + blockDim.x);
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    vals[t] = x[i];
    idx[t] = blockDim.x - 1 - t;
    __syncthreads();
    y[i] = vals[idx[t]];
    """


@cf.kernel
class InPlaceAffine:
    """An in-place update of an Array[...] argument, each thread reading and writing its own elements."""

    a: cf.Array[cf.float32]
    n: cf.int32
    block = 64
    body = """
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float v = a[i];
        a[i] = v * v + 2.f * a[i] + 1.f;
    }
    """


@cf.kernel
class LdgAndRestrict:
    """Reads through __ldg and __restrict__ pointers."""

    x: cf.In[cf.float32]
    w: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    body = """
    const float* __restrict__ xp = x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __ldg(xp + i) * __ldg(&w[i % 4]);
    """


@cf.kernel
class AlignedFloat4WithTail:
    """float4 loads and stores of an aligned array, the tail n % 4 handled by scalar code."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    body = """
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    int nv = n / 4;
    if (v < nv) {
        float4 a = reinterpret_cast<const float4*>(x)[v];
        a.x += 1.f; a.y += 1.f; a.z += 1.f; a.w += 1.f;
        reinterpret_cast<float4*>(y)[v] = a;
    } else if (v == nv) {
        for (int i = nv * 4; i < n; ++i) y[i] = x[i] + 1.f;
    }
    """


@cf.kernel
class BlellochScan:
    """A work-efficient (Blelloch) exclusive scan of one 128-element block, barriers in both sweeps."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float s[128];
    int t = threadIdx.x, base = blockIdx.x * 128;
    s[2 * t] = x[base + 2 * t];
    s[2 * t + 1] = x[base + 2 * t + 1];
    int offset = 1;
    for (int d = 64; d > 0; d >>= 1) {
        __syncthreads();
        if (t < d) {
            int ai = offset * (2 * t + 1) - 1, bi = offset * (2 * t + 2) - 1;
            s[bi] += s[ai];
        }
        offset <<= 1;
    }
    if (t == 0) s[127] = 0.f;
    for (int d = 1; d < 128; d <<= 1) {
        offset >>= 1;
        __syncthreads();
        if (t < d) {
            int ai = offset * (2 * t + 1) - 1, bi = offset * (2 * t + 2) - 1;
            float v = s[ai];
            s[ai] = s[bi];
            s[bi] += v;
        }
    }
    __syncthreads();
    y[base + 2 * t] = s[2 * t];
    y[base + 2 * t + 1] = s[2 * t + 1];
    """


def _exclusive_scan(x: np.ndarray, block: int) -> np.ndarray:
    rows = x.reshape(-1, block)
    return (np.cumsum(rows, axis=1) - rows).ravel()


@cf.kernel
class TemplatedWarpReduce:
    """A templated device function (warp reduction by functor) used for sums and maxima."""

    x: cf.In[cf.float32]
    sums: cf.Out[cf.float32]
    maxs: cf.Out[cf.float32]
    block = 32
    preamble = """
    struct Add { template <typename T> __device__ T operator()(T a, T b) const { return a + b; } };
    struct Max { template <typename T> __device__ T operator()(T a, T b) const { return a > b ? a : b; } };
    template <typename T, typename Op>
    __device__ __forceinline__ T warp_reduce(T v, Op op) {
        for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffff, v, o));
        return v;
    }
    """
    body = """
    float v = x[blockIdx.x * 32 + threadIdx.x];
    float s = warp_reduce(v, Add());
    float m = warp_reduce(v, Max());
    if (threadIdx.x == 0) { sums[blockIdx.x] = s; maxs[blockIdx.x] = m; }
    """


@cf.kernel
class EarlyReturnStencil:
    """Out-of-range threads return early; the rest read neighbours (clamped) with no barrier."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float l = x[i > 0 ? i - 1 : 0], r = x[i < n - 1 ? i + 1 : n - 1];
    y[i] = 0.25f * l + 0.5f * x[i] + 0.25f * r;
    """


@cf.kernel
class StructArgMax:
    """An arg-max reduction over a __shared__ array of structs {float value; int index;}."""

    x: cf.In[cf.float32]
    best: cf.Out[cf.int32]
    block = 64
    preamble = """
    struct Pair { float v; int i; };
    """
    body = """
    __shared__ Pair s[64];
    int t = threadIdx.x, g = blockIdx.x * 64 + t;
    s[t].v = x[g];
    s[t].i = g;
    __syncthreads();
    for (int k = 32; k > 0; k >>= 1) {
        if (t < k && s[t + k].v > s[t].v) s[t] = s[t + k];
        __syncthreads();
    }
    if (t == 0) best[blockIdx.x] = s[0].i;
    """


@cf.kernel
class TiledPartitionReduce:
    """A cooperative_groups reduction: tiled_partition<32>, the tile's shfl_down, one atomic per tile."""

    x: cf.In[cf.float32]
    out: cf.Array[cf.float32]
    n: cf.int32
    block = 128
    preamble = COOP
    body = """
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.f;
    for (int o = tile.size() / 2; o > 0; o /= 2) v += tile.shfl_down(v, o);
    if (tile.thread_rank() == 0) atomicAdd(out, v);
    """


@cf.kernel
class WarpAggregatedAtomics:
    """Stream compaction with warp-aggregated atomics (NVIDIA's blog): coalesced_threads() inside
    the branch, the leader's atomicAdd broadcast with the group's shfl."""

    x: cf.In[cf.float32]
    out: cf.Out[cf.float32]
    count: cf.Array[cf.int32]
    n: cf.int32
    block = 64
    preamble = COOP
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > 0.5f) {
        cg::coalesced_group g = cg::coalesced_threads();
        int base;
        if (g.thread_rank() == 0) base = atomicAdd(&count[0], (int)g.size());
        base = g.shfl(base, 0);
        out[base + g.thread_rank()] = x[i];
    }
    """


@cf.kernel
class OutWrittenThenReadInBlock:
    """Softmax over one block's row through global memory: each thread writes exp() into the Out
    array, a __syncthreads, then thread t reads its neighbours' elements back."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float s[64];
    int t = threadIdx.x, base = blockIdx.x * 64;
    float e = expf(x[base + t]);
    y[base + t] = e;
    __syncthreads();
    if (t == 0) {
        float sum = 0.f;
        for (int k = 0; k < 64; ++k) sum += y[base + k];
        s[0] = sum;
    }
    __syncthreads();
    y[base + t] = y[base + t] / s[0];
    """


@cf.kernel
class PaddedTransposeNonSquare:
    """The CUDA samples' padded transpose (tile[32][33], 32x8 threads each copying four rows) with
    correct guards on a 40x72 matrix."""

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


@cf.kernel
class SharedBitonicSort:
    """The CUDA samples' bitonic sort of one 128-element block in shared memory."""

    a: cf.Array[cf.float32]
    block = 128
    body = """
    __shared__ float s[128];
    unsigned t = threadIdx.x;
    s[t] = a[blockIdx.x * 128 + t];
    __syncthreads();
    for (unsigned k = 2; k <= 128; k <<= 1) {
        for (unsigned j = k >> 1; j > 0; j >>= 1) {
            unsigned p = t ^ j;
            if (p > t) {
                bool up = (t & k) == 0;
                float u = s[t], v = s[p];
                if ((u > v) == up) { s[t] = v; s[p] = u; }
            }
            __syncthreads();
        }
    }
    a[blockIdx.x * 128 + t] = s[t];
    """


@cf.kernel
class NBodyFloat3:
    """An all-pairs n-body step over positions stored as float3 (12-byte elements), tiled through
    shared memory."""

    pos: cf.In[cf.float32]
    acc: cf.Out[cf.float32]
    n: cf.int32
    block = 32
    body = """
    __shared__ float3 sh[32];
    const float3* p = reinterpret_cast<const float3*>(pos);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float3 me = p[i];
    float3 a = make_float3(0.f, 0.f, 0.f);
    for (int tile = 0; tile < n; tile += 32) {
        sh[threadIdx.x] = p[tile + threadIdx.x];
        __syncthreads();
        for (int j = 0; j < 32; ++j) {
            float3 q = sh[j];
            float dx = q.x - me.x, dy = q.y - me.y, dz = q.z - me.z;
            float inv = rsqrtf(dx * dx + dy * dy + dz * dz + 0.01f);
            float s = inv * inv * inv;
            a.x += dx * s; a.y += dy * s; a.z += dz * s;
        }
        __syncthreads();
    }
    reinterpret_cast<float3*>(acc)[i] = a;
    """


def _nbody(pos: np.ndarray) -> np.ndarray:
    p = pos.reshape(-1, 3).astype(np.float64)
    d = p[None, :, :] - p[:, None, :]
    inv = 1 / np.sqrt((d**2).sum(-1) + 0.01)
    return (d * (inv**3)[..., None]).sum(1).ravel()


@cf.kernel
class SpinFlagProducerConsumer:
    """Warp 1 waits on a volatile shared flag that warp 0 sets after its data and a __threadfence_block."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float data[32];
    __shared__ int ready;
    int t = threadIdx.x;
    if (t == 0) ready = 0;
    __syncthreads();
    if (t < 32) {
        data[t] = 3.f * x[blockIdx.x * 32 + t];
        __syncwarp();
        if (t == 0) { __threadfence_block(); atomicExch(&ready, 1); }
    } else {
        while (atomicAdd(&ready, 0) == 0) __nanosleep(10);
        __threadfence_block();
        y[blockIdx.x * 32 + t - 32] = data[t - 32];
    }
    """


@cf.kernel
class SpinFlagBeforeData:
    """SpinFlagProducerConsumer with the flag set before the data: its fence and atomicExch release nothing."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float data[32];
    __shared__ int ready;
    int t = threadIdx.x;
    if (t == 0) ready = 0;
    __syncthreads();
    if (t < 32) {
        if (t == 0) { __threadfence_block(); atomicExch(&ready, 1); }
        data[t] = 3.f * x[blockIdx.x * 32 + t];
    } else {
        while (atomicAdd(&ready, 0) == 0) __nanosleep(10);
        __threadfence_block();
        y[blockIdx.x * 32 + t - 32] = data[t - 32];
    }
    """


@cf.kernel
class SpinFlagWithoutFence:
    """SpinFlagProducerConsumer without the producer's __threadfence_block: a relaxed atomicExch orders nothing."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float data[32];
    __shared__ int ready;
    int t = threadIdx.x;
    if (t == 0) ready = 0;
    __syncthreads();
    if (t < 32) {
        data[t] = 3.f * x[blockIdx.x * 32 + t];
        __syncwarp();
        if (t == 0) atomicExch(&ready, 1);
    } else {
        while (atomicAdd(&ready, 0) == 0) __nanosleep(10);
        __threadfence_block();
        y[blockIdx.x * 32 + t - 32] = data[t - 32];
    }
    """


def _ints(n: int, hi: int, seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, hi, n).astype(np.int32)


def _bytes(n: int) -> np.ndarray:
    return np.random.default_rng(4).integers(0, 256, n).astype(np.uint8)


def _float3(n: int) -> np.ndarray:
    return (np.random.default_rng(6).random(3 * n, dtype=np.float32) * 4).astype(np.float32)


def _compacted(a: tuple[Any, ...]) -> list[tuple[Any, Any]]:
    kept = a[0][a[0] > 0.5]
    got = np.sort(a[1][: a[2][0]])
    return [(a[2][0], kept.size), (got, np.sort(kept))]


CORRECT_MORE: dict[str, Correct] = {
    "atomicCAS float max": Correct(
        AtomicMaxFloatCAS, lambda: ((_rand(500), np.full(1, -1, np.float32), 500), {}),
        lambda a: [(a[1][0], a[0].max())]),
    "per-warp shared histograms": Correct(
        PerWarpHistogram, lambda: ((_bytes(3000), np.zeros(256, np.uint32), 3000), {"grid": 4}),
        lambda a: [(a[1], np.bincount(a[0], minlength=256))]),
    "xor butterfly all-reduce": Correct(
        ButterflyAllReduce, lambda: ((_rand(128), np.zeros(128, np.float32)), {}),
        lambda a: [(a[1], np.repeat(a[0].reshape(4, 32).sum(1), 32))]),
    "volatile warp reduce with __syncwarp": Correct(
        VolatileWarpReduceSynced, lambda: ((_rand(256), np.zeros(2, np.float32)), {"grid": 2}),
        lambda a: [(a[1], a[0].reshape(2, 128).sum(1))]),
    "1-D double buffering": Correct(
        DoubleBuffered1D, lambda: ((_rand(32 * 5), np.zeros(32, np.float32), 5), {"grid": 1}),
        lambda a: [(a[1], a[0].reshape(5, 32)[:, ::-1].sum(0))]),
    "last block by atomicAdd and __syncthreads_or": Correct(
        LastBlockAtomicAdd, lambda: ((_rand(640), np.zeros(10, np.float32), np.zeros(1, np.int32), np.zeros(1, np.float32)),
                                     {"grid": 10}),
        lambda a: [(a[3][0], a[0].sum()), (a[1], a[0].reshape(10, 64).sum(1))]),
    "cooperative normalisation": Correct(
        CoopNormalize, lambda: ((_rand(128), np.zeros(4, np.float32), np.zeros(128, np.float32)), {}),
        lambda a: [(a[2], a[0] / a[0].sum())]),
    "dynamic shared, two arrays": Correct(
        DynamicTwoArrays, lambda: ((_rand(128), np.zeros(128, np.float32)), {"shared_mem": 64 * 8}),
        lambda a: [(a[1], a[0].reshape(2, 64)[:, ::-1].ravel())]),
    "in-place Array update": Correct(
        InPlaceAffine, lambda: ((_rand(300), 300), {"grid": 2}),
        lambda a: [(a[0], (_rand(300) + 1) ** 2)]),
    "__ldg and __restrict__": Correct(
        LdgAndRestrict, lambda: ((_rand(100), _rand(4, seed=1), np.zeros(100, np.float32), 100), {}),
        lambda a: [(a[2], a[0] * np.tile(a[1], 25))]),
    "aligned float4 with a scalar tail": Correct(
        AlignedFloat4WithTail, lambda: ((_rand(1002), np.zeros(1002, np.float32), 1002), {"grid": 4}),
        lambda a: [(a[1], a[0] + 1)]),
    "Blelloch scan": Correct(
        BlellochScan, lambda: ((_rand(256), np.zeros(256, np.float32)), {"grid": 2}),
        lambda a: [(a[1], _exclusive_scan(a[0], 128))]),
    "templated warp reduce": Correct(
        TemplatedWarpReduce, lambda: ((_rand(64), np.zeros(2, np.float32), np.zeros(2, np.float32)), {"grid": 2}),
        lambda a: [(a[1], a[0].reshape(2, 32).sum(1)), (a[2], a[0].reshape(2, 32).max(1))]),
    "early return, no barrier after": Correct(
        EarlyReturnStencil, lambda: ((_rand(100), np.zeros(100, np.float32), 100), {"grid": 2}),
        lambda a: [(a[1], 0.25 * np.r_[a[0][0], a[0][:-1]] + 0.5 * a[0] + 0.25 * np.r_[a[0][1:], a[0][-1]])]),
    "struct in shared memory": Correct(
        StructArgMax, lambda: ((_rand(128), np.zeros(2, np.int32)), {"grid": 2}),
        lambda a: [(a[1], a[0].reshape(2, 64).argmax(1) + np.array([0, 64]))]),
    "tiled_partition reduction": Correct(
        TiledPartitionReduce, lambda: ((_rand(500), np.zeros(1, np.float32), 500), {}),
        lambda a: [(a[1][0], a[0].sum())]),
    "warp-aggregated atomics (coalesced_threads)": Correct(
        WarpAggregatedAtomics, lambda: ((_rand(200), np.zeros(200, np.float32), np.zeros(1, np.int32), 200), {}),
        _compacted),
    "Out written then read back in the block": Correct(
        OutWrittenThenReadInBlock, lambda: ((_rand(128), np.zeros(128, np.float32)), {"grid": 2}),
        lambda a: [(a[1], (np.exp(a[0].reshape(2, 64)) / np.exp(a[0].reshape(2, 64)).sum(1, keepdims=True)).ravel())]),
    "padded transpose, 40x72": Correct(
        PaddedTransposeNonSquare, lambda: ((_rand(72 * 40), np.zeros(72 * 40, np.float32), 40, 72), {"grid": (2, 3)}),
        lambda a: [(a[1], a[0].reshape(72, 40).T.ravel())]),
    "bitonic sort in shared memory": Correct(
        SharedBitonicSort, lambda: ((_rand(256),), {"grid": 2}),
        lambda a: [(a[0], np.sort(_rand(256).reshape(2, 128), axis=1).ravel())]),
    "n-body over float3": Correct(
        NBodyFloat3, lambda: ((_float3(64), np.zeros(3 * 64, np.float32), 64), {"grid": 2}),
        lambda a: [(a[1], _nbody(a[0]))]),
    "flag set by atomicExch, polled by atomics": Correct(
        SpinFlagProducerConsumer, lambda: ((_rand(64), np.zeros(64, np.float32)), {"grid": 2}),
        lambda a: [(a[1], 3 * a[0])]),
}  # fmt: skip


# ---------------------------------------------------------------- a second round


@cf.kernel
class BroadcastThenOverwrite:
    """Every thread reads the block's pivot s[0]; thread 5 then overwrites it in the same barrier
    interval (a write-after-read race with many readers)."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float s[64];
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    s[t] = x[i];
    __syncthreads();
    float pivot = s[0];
    if (t == 5) s[0] = 0.f;
    y[i] = x[i] - pivot;
    """


_OUTSIDE_MASK_BODY = """
    int i = blockIdx.x * 32 + threadIdx.x;
    unsigned m = __ballot_sync(0xffffffff, i < n);
    if (i < n) {
        float v = x[i];
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(m, v, o);
        if (threadIdx.x == 0) y[blockIdx.x] = %s;
    }
    """


@cf.kernel
class ShuffleFromOutsideMask:
    """A reduction over the lanes with data whose mask is right (a ballot of i < n) but whose
    __shfl_down_sync reads lanes outside that mask: their values are undefined."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 32
    body = _OUTSIDE_MASK_BODY % "v"


@cf.kernel
class MisalignedDouble:
    """Reads doubles from a float array at an odd float offset."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float64]
    block = 32
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = reinterpret_cast<const double*>(x + 1)[i];
    """


@cf.kernel
class SyncwarpForSyncthreads:
    """Four warps store their sums; a __syncwarp (not __syncthreads) before warp 0 reads all four."""

    x: cf.In[cf.float32]
    out: cf.Out[cf.float32]
    block = 128
    body = """
    __shared__ float ws[4];
    int t = threadIdx.x;
    float v = x[blockIdx.x * 128 + t];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if ((t & 31) == 0) ws[t / 32] = v;
    __syncwarp();
    if (t == 0) out[blockIdx.x] = ws[0] + ws[1] + ws[2] + ws[3];
    """


@cf.kernel
class ManySyncwarps:
    """A warp-synchronous loop of 128 steps, two __syncwarp()s each, between lane 0's store of the
    base and the other lanes' read of it."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 32
    body = """
    __shared__ float base;
    __shared__ float buf[32];
    int lane = threadIdx.x, i = blockIdx.x * 32 + lane;
    if (lane == 0) base = x[blockIdx.x * 32];
    float acc = 0.f;
    for (int k = 0; k < 128; ++k) {
        buf[lane] = x[i] * (float)(k & 3);
        __syncwarp();
        acc += buf[lane ^ 1];
        __syncwarp();
    }
    y[i] = acc + base;
    """


@cf.kernel
class CoopPingPong:
    """A cooperative kernel of three phases over one scratch array: write, grid.sync, read a
    neighbour's, grid.sync, overwrite, grid.sync, read again."""

    x: cf.In[cf.float32]
    tmp: cf.Array[cf.float32]
    y: cf.Out[cf.float32]
    cooperative = True
    grid = 4
    block = 32
    preamble = COOP
    body = """
    cg::grid_group g = cg::this_grid();
    int i = blockIdx.x * blockDim.x + threadIdx.x, n = gridDim.x * blockDim.x;
    tmp[i] = x[i];
    g.sync();
    float a = tmp[(i + 32) % n];
    g.sync();
    tmp[i] = 2.f * a;
    g.sync();
    y[i] = tmp[(i + n - 32) % n];
    """


BUGGY_MORE.update({
    "pivot overwritten while read": Buggy(BroadcastThenOverwrite, _xy(128), cf.RaceError, 6, r"__shared__ variable 's', index 0"),
    "shuffle reads lanes outside its mask": Buggy(ShuffleFromOutsideMask, _xyn(40, 2, grid=2), cf.WarpMisuseError, 5,
                                                  r"__shfl_down_sync read lanes .*parameter 'y'"),
    "misaligned double load": Buggy(MisalignedDouble, lambda: ((_rand(130), np.zeros(32, np.float64)), {"grid": 1}),
                                    cf.MisalignedAccessError, 2, r"misaligned read of a double "),
    "__syncwarp where __syncthreads is needed": Buggy(SyncwarpForSyncthreads, _xy(256, 2, grid=2), cf.RaceError, 7,
                                                      r"__shared__ variable 'ws'"),
    "flag set before the data": Buggy(SpinFlagBeforeData, lambda: ((_rand(64), np.zeros(64, np.float32)), {"grid": 2}),
                                      cf.RaceError, 12, r"__shared__ variable 'data'"),
    "flag set by atomicExch without a fence": Buggy(SpinFlagWithoutFence, lambda: ((_rand(64), np.zeros(64, np.float32)),
                                                                                    {"grid": 2}),
                                                    cf.RaceError, 13, r"__shared__ variable 'data'"),
})  # fmt: skip

CORRECT_MORE.update({
    "256 __syncwarp()s between a store and a read": Correct(
        ManySyncwarps, lambda: ((_rand(64), np.zeros(64, np.float32)), {"grid": 2}),
        lambda a: [(a[1], 192 * a[0].reshape(2, 16, 2)[:, :, ::-1].ravel() + np.repeat(a[0][::32], 32))]),
    "cooperative ping-pong over one array": Correct(
        CoopPingPong, lambda: ((_rand(128), np.zeros(128, np.float32), np.zeros(128, np.float32)), {}),
        lambda a: [(a[2], 2 * a[0])]),
    "partial-warp reduction discarding the lanes past the block": Correct(
        PartialWarpGuardedReduce, lambda: ((_rand(96), np.zeros(4, np.float32)), {"grid": 2}),
        lambda a: [(a[1], np.add.reduceat(a[0], [0, 32, 48, 80]))]),
})  # fmt: skip


# ---------------------------------------------------------------- correct: parts of an element, flags (a probe's finds)
@cf.kernel
class StructMembersByTwoWarps:
    """CUB-style temporary storage: a struct in shared memory whose members two warps write."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    preamble = "struct Stats { float sum; int count; };"
    body = """
    __shared__ Stats st;
    int t = threadIdx.x;
    if (t == 0) st.sum = x[blockIdx.x * 64];
    if (t == 32) st.count = 64;
    __syncthreads();
    y[blockIdx.x * 64 + t] = x[blockIdx.x * 64 + t] * st.sum + st.count;
    """


@cf.kernel
class Float2HalvesByTwoWarps:
    """A float2 pair in shared memory whose halves two warps fill."""

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


@cf.kernel
class BytesCarvedFromFloats:
    """Byte flags carved from dynamic shared memory declared as floats, one per thread."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    extern __shared__ float smem[];
    unsigned char* flag = reinterpret_cast<unsigned char*>(smem + blockDim.x);
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    smem[t] = x[i];
    flag[t] = x[i] > 0.5f;
    __syncthreads();
    y[i] = flag[63 - t] ? smem[63 - t] : 0.f;
    """


@cf.kernel
class ComplexScaledAsFloats:
    """A complex64 array scaled through a float pointer: each thread one part."""

    z: cf.Array[cf.complex64]
    s: cf.float32
    block = 64
    body = "float* f = reinterpret_cast<float*>(z); f[blockIdx.x * 64 + threadIdx.x] *= s;"


@cf.kernel
class LastBlockRewritesWhatAllRead:
    """Every block reads a scale; the last one (fence, then a ticket) writes its next value."""

    x: cf.In[cf.float32]
    scale: cf.Array[cf.float32]
    count: cf.Array[cf.int32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ bool last;
    int i = blockIdx.x * 64 + threadIdx.x;
    float s = scale[0];
    y[i] = x[i] * s;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(count, 1) == gridDim.x - 1;
    __syncthreads();
    if (last && threadIdx.x == 0) { __threadfence(); scale[0] = 2.f * s; }
    """


@cf.kernel
class VolatileFlagBetweenWarps:
    """Warp 0 publishes its data and sets a volatile flag after a fence; warp 1 polls it."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ volatile int ready;
    __shared__ float data[32];
    int t = threadIdx.x;
    if (t == 0) ready = 0;
    __syncthreads();
    if (t < 32) { data[t] = x[blockIdx.x * 32 + t]; __syncwarp(); __threadfence_block(); if (t == 0) ready = 1; }
    else { while (ready == 0) __nanosleep(32); __threadfence_block(); y[blockIdx.x * 32 + t - 32] = data[t - 32]; }
    """


@cf.kernel
class ChainedScanVolatileFlags:
    """A chained scan (StreamScan): each block waits for its predecessor's volatile flag, then
    reads its carry; blocks take their order from a ticket."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    carry: cf.Array[cf.float32]
    flags: cf.Array[cf.int32]
    ticket: cf.Array[cf.int32]
    block = 32
    body = """
    __shared__ int s_bid;
    int t = threadIdx.x;
    if (t == 0) s_bid = atomicAdd(ticket, 1);
    __syncthreads();
    int bid = s_bid;
    float v = x[bid * 32 + t];
    for (int o = 1; o < 32; o <<= 1) { float u = __shfl_up_sync(0xffffffffu, v, o); if (t >= o) v += u; }
    float prefix = 0.f;
    if (bid > 0) {
        while (((volatile int*)flags)[bid - 1] == 0) { }
        __threadfence();
        prefix = carry[bid - 1];
    }
    if (t == 31) { carry[bid] = prefix + v; __threadfence(); ((volatile int*)flags)[bid] = 1; }
    y[bid * 32 + t] = v + prefix;
    """


def _chained_scan_args() -> tuple[tuple[Any, ...], dict[str, Any]]:
    x = _rand(256)
    return (x, np.zeros(256, np.float32), np.zeros(8, np.float32), np.zeros(8, np.int32), np.zeros(1, np.int32)), {"grid": 8}


def _last_block_scale_args() -> tuple[tuple[Any, ...], dict[str, Any]]:
    return (_rand(256), np.full(1, 1.5, np.float32), np.zeros(1, np.int32), np.zeros(256, np.float32)), {"grid": 4}


CORRECT_MORE.update({
    "struct members written by two warps": Correct(
        StructMembersByTwoWarps, _xy(128, grid=2), lambda a: [(a[1], a[0] * np.repeat(a[0][::64], 64) + 64)]),
    "float2 halves filled by two warps": Correct(
        Float2HalvesByTwoWarps, _xy(128, 64, grid=2),
        lambda a: [(a[1], (a[0].reshape(2, 2, 32)[:, 0] * a[0].reshape(2, 2, 32)[:, 1]).ravel())]),
    "byte flags carved from float shared memory": Correct(
        BytesCarvedFromFloats, _xy(128, grid=2, shared_mem=64 * 5),
        lambda a: [(a[1], np.where(a[0] > 0.5, a[0], 0).reshape(2, 64)[:, ::-1].ravel())]),
    "complex64 scaled through a float pointer": Correct(
        ComplexScaledAsFloats, lambda: ((np.arange(64, dtype=np.complex64) * (1 + 2j), np.float32(3.0)), {"grid": 2}),
        lambda a: [(a[0], np.arange(64, dtype=np.complex64) * (3 + 6j))]),
    "last block rewrites what every block read": Correct(
        LastBlockRewritesWhatAllRead, _last_block_scale_args, lambda a: [(a[3], 1.5 * a[0]), (a[1], np.float32([3.0]))]),
    "volatile flag between warps": Correct(
        VolatileFlagBetweenWarps, _xy(64, grid=2), lambda a: [(a[1], a[0])]),
    "chained scan over volatile flags": Correct(
        ChainedScanVolatileFlags, _chained_scan_args, lambda a: [(a[1], np.cumsum(a[0], dtype=np.float64))]),
})  # fmt: skip



def _outside_mask_stored(name: str, doc: str, out: Any, store: str, preamble: str = "") -> Any:
    """ShuffleFromOutsideMask with its sum stored otherwise (``store``: of ``v``)."""
    fields = {"__doc__": doc, "__annotations__": {"x": cf.In[cf.float32], "y": cf.Out[out], "n": cf.int32},
              "block": 32, "preamble": preamble, "body": _OUTSIDE_MASK_BODY % store}  # fmt: skip
    return cf.kernel(type(name, (), fields))


ShuffleOutsideMaskToHalf = _outside_mask_stored(
    "ShuffleOutsideMaskToHalf", "The sum stored as a __half (PaddlePaddle CINN's reduce into a float16 output): the "
    "conversion makes every NaN the one NaN of __half, without its mark.", cf.float16, "__float2half(v)",
    "#include <cuda_fp16.h>")
ShuffleOutsideMaskToInt = _outside_mask_stored(
    "ShuffleOutsideMaskToInt", "The sum rounded to an integer (a histogram's bin): an integer has no NaN.", cf.int32,
    "__float2int_rn(v * 100.f)")


@cf.kernel
class ShuffleInsideMaskToHalf:
    """The lanes with data add only what lanes with data hold (the lanes outside the mask are
    read and discarded), and the sum is stored as a __half; another output holds a NaN the
    caller put there, which the kernel leaves alone."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float16]
    keep: cf.Array[cf.float16]
    n: cf.int32
    block = 32
    preamble = "#include <cuda_fp16.h>"
    body = """
    int i = blockIdx.x * 32 + threadIdx.x;
    unsigned m = __ballot_sync(0xffffffff, i < n);
    if (i < n) {
        float v = x[i];
        int lanes = min(32, n - (int)blockIdx.x * 32);
        for (int o = 16; o > 0; o >>= 1) {
            float other = __shfl_down_sync(m, v, o);
            if ((int)threadIdx.x + o < lanes) v += other;
        }
        if (threadIdx.x == 0) y[blockIdx.x] = __float2half(v);
    }
    """


_REDUCE_OUTSIDE_MASK_BODY = """
    int i = blockIdx.x * 32 + threadIdx.x;
    unsigned m = __ballot_sync(0xffffffff, i < n);
    if (i < n) {
        %(t)s v = x[i];
        for (int o = 16; o > 0; o >>= 1) { %(t)s other = __shfl_down_sync(m, v, o); %(step)s }
        if (threadIdx.x == 0) { y[blockIdx.x] = v; %(also)s }
    }
    """
# (the lanes with data in the block: the step that reads lane threadIdx.x + o discards the others)
_WITH_DATA = "if ((int)threadIdx.x + o < min(32, n - (int)blockIdx.x * 32))"


def _reduce_outside_mask(name: str, doc: str, dtype: Any, step: str, also: str = "") -> Any:
    """A partial-warp reduction of ``x`` into ``y`` over ``dtype`` (``step``: of ``v`` and
    ``other``); ``also``: more of lane 0's work, with ``total``."""
    t = "int" if dtype is cf.int32 else "float"
    fields = {"__doc__": doc, "__annotations__": {"x": cf.In[dtype], "y": cf.Out[dtype], "n": cf.int32, "total": cf.Array[dtype]},
              "block": 32, "body": _REDUCE_OUTSIDE_MASK_BODY % {"t": t, "step": step, "also": also}}  # fmt: skip
    return cf.kernel(type(name, (), fields))


MaxShuffleOutsideMask = _reduce_outside_mask(
    "MaxShuffleOutsideMask", "A block's maximum over the lanes with data (PaddlePaddle CINN's partial-warp reduce, with "
    "max): fmaxf returns the other number where one is a NaN, so a NaN standing for the undefined lane would be "
    "dropped.", cf.float32, "v = fmaxf(v, other);")
MaxShuffleInsideMask = _reduce_outside_mask(
    "MaxShuffleInsideMask", "The same maximum taking only lanes with data (the lanes outside the mask are read and "
    "discarded), through fmaxf and CUDA's max(float, float).", cf.float32,
    _WITH_DATA + " v = (o & 1) ? max(v, other) : fmaxf(v, other);")


IntShuffleOutsideMask = _reduce_outside_mask(
    "IntShuffleOutsideMask", "A histogram's partial-warp count (an int has no NaN to carry the mark): the sum takes "
    "the lanes outside the ballot's mask too.", cf.int32, "v += other;")
CompareShuffleOutsideMask = _reduce_outside_mask(
    "CompareShuffleOutsideMask", "A partial-warp maximum by a comparison, which drops a NaN.", cf.float32,
    "v = other > v ? other : v;")
IntShuffleInsideMask = _reduce_outside_mask(
    "IntShuffleInsideMask", "The lanes with data add only what lanes with data hold (the others are read and "
    "discarded); printf prints once.", cf.int32, _WITH_DATA + " v += other;", 'printf("block %d: %d\\n", blockIdx.x, v);')
IntShuffleOutsideMaskAtomic = _reduce_outside_mask(
    "IntShuffleOutsideMaskAtomic", "Lanes outside the mask read and discarded, the block's count added to a total "
    "with an atomic (a launch with atomics is not rerun).", cf.int32, _WITH_DATA + " v += other;",
    "atomicAdd(total, v);")


def _float_maxima_args() -> tuple[tuple[Any, ...], dict[str, Any]]:
    return (_rand(40), np.zeros(2, np.float32), 40, np.zeros(1, np.float32)), {"grid": 2}


def _int_counts_args() -> tuple[tuple[Any, ...], dict[str, Any]]:
    x = np.arange(40, dtype=np.int32) % 7 + 1
    return (x, np.zeros(2, np.int32), 40, np.zeros(1, np.int32)), {"grid": 2}


@cf.kernel
class TileRangesSentinel:
    """3D Gaussian splatting's identifyTileRanges (taming-3dgs #22): a key whose tile is the invalid
    0xFFFFFFFF writes ranges[0xFFFFFFFF], 32 GiB past the array, where another array may lie."""

    keys: cf.In[cf.uint64]
    ranges: cf.Array[cf.vector(cf.uint32, 2)]
    counts: cf.Array[cf.float32]
    n: cf.int32
    block = 32
    body = """
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    unsigned tile = (unsigned)(keys[idx] >> 32);
    if (idx == 0 || tile != (unsigned)(keys[idx - 1] >> 32)) ranges[tile].x = idx;
    """


def _sentinel_args() -> tuple[tuple[Any, ...], dict[str, Any]]:
    keys = np.uint64(0xFFFFFFFF) << np.uint64(32) | np.arange(3, dtype=np.uint64)  # (only the invalid tile)
    return (keys, np.zeros((16, 2), np.uint32), np.zeros(1000, np.float32), 3), {"grid": 1}


@cf.kernel
class VectorLoadOfAView:
    """TransformerEngine's RMSNorm (PR #886): 16-byte loads, "pointers are always 16-byte aligned",
    but the input is a view that starts 4 bytes into a larger buffer."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 32
    body = """
    float4 v = reinterpret_cast<const float4*>(x)[threadIdx.x];
    y[threadIdx.x] = v.x + v.y + v.z + v.w;
    """


@cf.kernel
class LaneMaskByShift:
    """Blender Cycles' lane mask: 0xFFFFFFFF >> (32 - lane) shifts by 32 at lane 0 (a GPU gives 0,
    the CPU all ones)."""

    x: cf.In[cf.int32]
    y: cf.Out[cf.int32]
    block = 32
    body = """
    unsigned lane = threadIdx.x % 32, below = 0xFFFFFFFFu >> (32 - lane);
    y[threadIdx.x] = __popc(__ballot_sync(0xFFFFFFFFu, x[threadIdx.x] != 0) & below);
    """


def _half_sums_args() -> tuple[tuple[Any, ...], dict[str, Any]]:
    x = np.random.default_rng(5).integers(0, 8, 40).astype(np.float32)  # (sums exact in a __half)
    return (x, np.zeros(2, np.float16), np.full(2, np.nan, np.float16), 40), {"grid": 2}


BUGGY_MORE.update({
    "shuffle outside its mask, stored as a half": Buggy(
        ShuffleOutsideMaskToHalf, lambda: ((_rand(40), np.zeros(2, np.float16), 40), {"grid": 2}), cf.WarpMisuseError, 5,
        r"__shfl_down_sync read lanes .*parameter 'y'"),
    "max reduction over lanes outside its mask": Buggy(
        MaxShuffleOutsideMask, _float_maxima_args, cf.WarpMisuseError, 5,
        r"__shfl_down_sync read lanes .*parameter 'y'"),
    "integer sum over lanes outside its mask": Buggy(
        IntShuffleOutsideMask, _int_counts_args, cf.WarpMisuseError, 5,
        r"__shfl_down_sync read lanes .*such a value decided parameter 'y' \(Out\[int32\]\), element 1 \(two more runs"),
    "maximum by a comparison over lanes outside its mask": Buggy(
        CompareShuffleOutsideMask, _float_maxima_args, cf.WarpMisuseError, 5,
        r"__shfl_down_sync read lanes .*such a value decided parameter 'y'"),
    "a sentinel index 32 GiB past the array, near another": Buggy(
        TileRangesSentinel, _sentinel_args, cf.OutOfBoundsError, 4, r"parameter 'ranges' \(Array\[uint32x2\]\), index 4294967295, "),
    "a 16-byte load from a view 4 bytes into its buffer": Buggy(
        VectorLoadOfAView, lambda: ((np.zeros(129, np.float32)[1:], np.zeros(32, np.float32)), {"grid": 1}),
        cf.MisalignedAccessError, 1, r"float4"),
    "a shift by 32": Buggy(
        LaneMaskByShift, lambda: ((np.ones(32, np.int32), np.zeros(32, np.int32)), {"grid": 1}), cf.KernelCheckError, 1,
        r"undefined behaviour: a shift of a 32-bit unsigned int by 32 in thread \(0, 0, 0\)"),
    "shuffle outside its mask, made an integer": Buggy(
        ShuffleOutsideMaskToInt, lambda: ((_rand(40), np.zeros(2, np.int32), 40), {"grid": 2}), cf.WarpMisuseError, 5,
        r"__shfl_down_sync read lanes .*a conversion to 'int'"),
})  # fmt: skip

CORRECT_MORE.update({
    "integer sums over lanes with data, outside ones read and discarded": Correct(
        IntShuffleInsideMask, _int_counts_args, lambda a: [(a[1], [a[0][:32].sum(), a[0][32:].sum()])]),
    "the same, the counts added with an atomic": Correct(
        IntShuffleOutsideMaskAtomic, _int_counts_args, lambda a: [(a[1], [a[0][:32].sum(), a[0][32:].sum()]),
                                                                   (a[3], [a[0].sum()])]),
    "max over lanes with data, outside ones read and discarded": Correct(
        MaxShuffleInsideMask, _float_maxima_args,
        lambda a: [(a[1], np.float32([a[0][:32].max(), a[0][32:].max()]))]),
    "lanes outside the mask read and discarded, stored as a half": Correct(
        ShuffleInsideMaskToHalf, _half_sums_args,
        lambda a: [(a[1].astype(np.float32), np.float32([a[0][:32].sum(), a[0][32:].sum()])), (np.isnan(a[2]), True)]),
})  # fmt: skip


ASYNC = COOP + "\n#include <cooperative_groups/memcpy_async.h>"


@cf.kernel
class AsyncCopyBarrierNoWait:
    """NVIDIA Fuser's cp.async staging (PR #3438): the copy into shared memory is followed by a
    block barrier but no wait; a barrier does not wait for an asynchronous copy."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    preamble = ASYNC
    body = """
    __shared__ __align__(16) float s[64];
    cg::thread_block block = cg::this_thread_block();
    cg::memcpy_async(block, s, x + blockIdx.x * 64, sizeof(float) * 64);
    block.sync();
    y[blockIdx.x * 64 + threadIdx.x] = s[63 - threadIdx.x];
    """


@cf.kernel
class AsyncCopyNewestStage:
    """Two stages in flight, wait_prior<1> (only the older is complete), and the newer one read."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    preamble = ASYNC
    body = """
    __shared__ __align__(16) float s[2][64];
    cg::thread_block block = cg::this_thread_block();
    cg::memcpy_async(block, s[0], x, sizeof(float) * 64);
    cg::memcpy_async(block, s[1], x + 64, sizeof(float) * 64);
    cg::wait_prior<1>(block);
    y[threadIdx.x] = s[0][threadIdx.x] + s[1][63 - threadIdx.x];
    cg::wait(block);
    """


@cf.kernel
class AsyncCopyDoubleBuffered:
    """Correct: the CUDA guide's double-buffered tiles, the next tile's copy issued before the
    current one is waited for with wait_prior<1>, the last with wait."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    tiles: cf.int32
    block = 64
    preamble = ASYNC
    body = """
    __shared__ __align__(16) float s[2][64];
    cg::thread_block block = cg::this_thread_block();
    float acc = 0.f;
    cg::memcpy_async(block, s[0], x, sizeof(float) * 64);
    for (int k = 0; k < tiles; ++k) {
        if (k + 1 < tiles) {
            cg::memcpy_async(block, s[(k + 1) % 2], x + (k + 1) * 64, sizeof(float) * 64);
            cg::wait_prior<1>(block);
        } else {
            cg::wait(block);
        }
        acc += s[k % 2][63 - threadIdx.x];
        block.sync();
    }
    y[threadIdx.x] = acc;
    """


@cf.kernel
class AsyncCopyBackToGlobal:
    """Correct: a tile staged with memcpy_async and its wait, doubled, and stored back to global
    memory with memcpy_async and no wait (CUDA copies at once between such memories)."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    preamble = ASYNC
    body = """
    __shared__ __align__(16) float s[64];
    cg::thread_block block = cg::this_thread_block();
    cg::memcpy_async(block, s, x + blockIdx.x * 64, sizeof(float) * 64);
    cg::wait(block);
    s[threadIdx.x] *= 2.f;
    block.sync();
    cg::memcpy_async(block, y + blockIdx.x * 64, s, sizeof(float) * 64);
    """


@cf.kernel
class AsyncCopyPipelineWait:
    """Correct: cg::memcpy_async waited for with __pipeline_wait_prior(0) and a barrier, which is
    what CUDA's cg::wait is made of (one queue of copies for both)."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    preamble = ASYNC + "\n#include <cuda_pipeline.h>"
    body = """
    __shared__ __align__(16) float s[64];
    cg::thread_block block = cg::this_thread_block();
    cg::memcpy_async(block, s, x, sizeof(float) * 64);
    __pipeline_wait_prior(0);
    __syncthreads();
    y[threadIdx.x] = s[63 - threadIdx.x];
    """


@cf.kernel
class HistogramLastBlockNoFence:
    """Every block adds its elements to a 16-bin histogram with atomics, then the last block (by a
    ticket) sums the bins with plain reads; no __threadfence() before the ticket, so the other
    blocks' additions need not be visible (the last-block pattern of the CUDA samples'
    threadFenceReduction, without its fence)."""

    inp: cf.In[cf.uint32]
    n: cf.int32
    histogram: cf.Array[cf.uint32]
    counter: cf.Array[cf.uint32]
    total: cf.Out[cf.uint32]
    block = 64
    body = """
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&histogram[inp[i] >> 28], 1u);
    __syncthreads();
    __shared__ bool last;
    if (threadIdx.x == 0) last = atomicInc(&counter[0], gridDim.x - 1) == gridDim.x - 1;
    __syncthreads();
    if (last && threadIdx.x == 0) {
        unsigned s = 0;
        for (int b = 0; b < 16; ++b) s += histogram[b];
        total[0] = s;
    }
    """


def _histogram_args() -> tuple[tuple[Any, ...], dict[str, Any]]:
    v = np.random.default_rng(7).integers(0, 2**32, 1000, dtype=np.uint64).astype(np.uint32)
    return (v, 1000, np.zeros(16, np.uint32), np.zeros(1, np.uint32), np.zeros(1, np.uint32)), {"grid": 4}


BUGGY_MORE.update({
    "an asynchronous copy followed by a barrier, not its wait": Buggy(
        AsyncCopyBarrierNoWait, lambda: ((_rand(128), np.zeros(128, np.float32)), {"grid": 2}), cf.UninitializedReadError, 5,
        r"__shared__ variable 's'"),
    "a histogram every block adds to, summed by the last block without a fence": Buggy(
        HistogramLastBlockNoFence, _histogram_args, cf.RaceError, 9, r"parameter 'histogram'.* atomically updated"),
    "the newest of two asynchronous copies read after wait_prior<1>": Buggy(
        AsyncCopyNewestStage, lambda: ((_rand(128), np.zeros(64, np.float32)), {"grid": 1}), cf.UninitializedReadError, 6,
        r"__shared__ variable 's'"),
})  # fmt: skip

CORRECT_MORE.update({
    "double-buffered asynchronous copies, wait_prior<1> then wait": Correct(
        AsyncCopyDoubleBuffered, lambda: ((_rand(64 * 5), np.zeros(64, np.float32), 5), {"grid": 1}),
        lambda a: [(a[1], a[0].reshape(5, 64)[:, ::-1].sum(axis=0, dtype=np.float64))]),
    "a tile stored back to global memory with memcpy_async, no wait": Correct(
        AsyncCopyBackToGlobal, lambda: ((_rand(128), np.zeros(128, np.float32)), {"grid": 2}), lambda a: [(a[1], 2 * a[0])]),
    "memcpy_async waited for with __pipeline_wait_prior and a barrier": Correct(
        AsyncCopyPipelineWait, lambda: ((_rand(64), np.zeros(64, np.float32)), {"grid": 1}), lambda a: [(a[1], a[0][::-1])]),
})  # fmt: skip

# What the checker gets wrong today (name -> why): the tests of these cases are strict xfails.
MISSED: dict[str, str] = {}
FLAGGED: dict[str, str] = {}
