"""A fourth corpus, buggy kernels (each must be reported with one of its kinds): each modelled on a
bug fixed in a public GPU project (named in its note, with the fix or issue where there is one), aimed
at what the earlier corpora did not cover: memory scopes (block-scope atomics and fences), 64-bit
atomics, aliased and overlapping arguments, device memcpy, cooperative groups, vector types (float4,
int4, uchar4, __half rows, float3), and ``source=`` kernels (templates instantiated by name, whose
lines are those of their own text); check_probe4_correct.py adds libcu++. `test_cpu_check_probe4.py`
runs them checked."""

from __future__ import annotations

import numpy as np

import cuforge as cf

from .check_corpus_more import COOP
from .check_corpus_more import _rand as R
from .check_probe_buggy import Buggy

BUGGY: dict[str, Buggy] = {}


# ---------------------------------------------------------------- out of bounds
@cf.kernel
class EmbeddingNegPadding:
    """Out of bounds: global (negative index)."""

    idx: cf.In[cf.int64]
    weight: cf.In[cf.float32]
    out: cf.Out[cf.float32]
    n: cf.int32
    padding_idx: cf.int64
    name = "embedding_fwd<float, 16>"
    block = (16, 4)
    source = r"""
template <typename T, int D>
__global__ void embedding_fwd(const long long* __restrict__ idx, const T* __restrict__ weight,
                              T* __restrict__ out, int n, long long padding_idx) {
    int row = blockIdx.x * blockDim.y + threadIdx.y;
    if (row >= n) return;
    const long long w = idx[row];
    for (int d = threadIdx.x; d < D; d += blockDim.x)
        out[row * D + d] = (w == padding_idx) ? T(0) : weight[w * D + d];
}
"""


def _emb():
    idx = np.array([0, 3, -1, 5, 2, 7, -1, 1], np.int64)  # -1: padding, kernel compares against V-1
    return (idx, R(8 * 16), np.zeros(8 * 16, np.float32), 8, 7), {"grid": 2}


BUGGY["EmbeddingNegPadding"] = Buggy(
    EmbeddingNegPadding,
    _emb,
    (cf.OutOfBoundsError,),
    9,
    "PyTorch embedding: negative padding_idx compared after normalisation to V-1 while idx still holds -1 (pattern of aten/src/ATen/native/cuda/Embedding.cu padding_idx fixes)",
)


@cf.kernel
class MaxPoolCeilNoClamp:
    """Out of bounds: global, only the last pooled row (size-dependent)."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    H: cf.int32
    W: cf.int32
    PH: cf.int32
    PW: cf.int32
    k: cf.int32
    s: cf.int32
    block = 32
    body = """
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= PH * PW) return;
    int pw = idx % PW, ph = idx / PW;
    int hstart = ph * s, wstart = pw * s;
    int hend = hstart + k, wend = wstart + k;   // ceil_mode: should be min(hstart + k, H) / min(wstart + k, W)
    float m = -3.402823466e+38f;
    for (int h = hstart; h < hend; ++h)
        for (int w = wstart; w < wend; ++w)
            m = fmaxf(m, x[h * W + w]);
    y[idx] = m;
    """


BUGGY["MaxPoolCeilNoClamp"] = Buggy(
    MaxPoolCeilNoClamp,
    lambda: ((R(49), np.zeros(16, np.float32), 7, 7, 4, 4, 2, 2), {"grid": 1}),
    (cf.OutOfBoundsError,),
    9,
    "torch/cunn SpatialMaxPooling ceil mode last window outside the image https://github.com/torch/cunn/pull/178",
)


@cf.kernel
class OnlineSoftmaxMDShared:
    """Out of bounds: static shared (struct array)."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    N: cf.int32
    name = "online_safe_softmax_f32_per_token_kernel<128>"
    block = 128
    source = r"""
#define WARP_SIZE 32
struct __align__(8) MD { float m; float d; };

template <const int kWarpSize = WARP_SIZE>
__device__ __forceinline__ MD warp_reduce_md_op(MD value) {
    unsigned int mask = 0xffffffff;
#pragma unroll
    for (int stride = kWarpSize >> 1; stride >= 1; stride >>= 1) {
        MD other;
        other.m = __shfl_xor_sync(mask, value.m, stride);
        other.d = __shfl_xor_sync(mask, value.d, stride);
        bool value_bigger = (value.m > other.m);
        MD bigger_m = value_bigger ? value : other;
        MD smaller_m = value_bigger ? other : value;
        value.d = bigger_m.d + smaller_m.d * __expf(smaller_m.m - bigger_m.m);
        value.m = bigger_m.m;
    }
    return value;
}

template <const int NUM_THREADS = 128>
__global__ void online_safe_softmax_f32_per_token_kernel(const float* x, float* y, int N) {
    int local_tid = threadIdx.x;
    int global_tid = blockIdx.x * NUM_THREADS + threadIdx.x;
    const int WARP_NUM = NUM_THREADS / WARP_SIZE;
    int warp_id = local_tid / WARP_SIZE;
    int lane_id = local_tid % WARP_SIZE;
    MD val;
    val.m = global_tid < N ? x[global_tid] : -3.402823466e+38f;
    val.d = global_tid < N ? 1.0f : 0.0f;
    __shared__ MD shared[WARP_NUM];
    MD res = warp_reduce_md_op<WARP_SIZE>(val);
    if (lane_id == 0) shared[warp_id] = res;
    __syncthreads();
    if (local_tid < WARP_SIZE) {
        MD block_res = shared[local_tid];
        block_res = warp_reduce_md_op<WARP_NUM>(block_res);
        if (local_tid == 0) shared[0] = block_res;
    }
    __syncthreads();
    MD final_res = shared[0];
    float d_total_inverse = __fdividef(1.0f, final_res.d);
    if (global_tid < N) y[global_tid] = __expf(x[global_tid] - final_res.m) * d_total_inverse;
}
"""


BUGGY["OnlineSoftmaxMDShared"] = Buggy(
    OnlineSoftmaxMDShared,
    lambda: ((R(512), np.zeros(512, np.float32), 512), {"grid": 4}),
    (cf.OutOfBoundsError,),
    37,
    "LeetCUDA online softmax shared[local_tid] past shared[WARP_NUM] https://github.com/xlite-dev/LeetCUDA/issues/409",
)


@cf.kernel
class ConstTensorInfoDims:
    """Out of bounds: __constant__ struct member array (inside the struct)."""

    src: cf.In[cf.float32]
    dst: cf.Out[cf.float32]
    n: cf.int32
    name = "strided_copy"
    block = 64
    source = r"""
#define MAX_DIMS 4
struct TensorInfo { int sizes[MAX_DIMS]; int strides[MAX_DIMS]; int dims; };
__constant__ TensorInfo c_info = {{2, 4, 4, 2}, {1, 2, 8, 32}, 4};

__device__ __forceinline__ int index_to_offset(int linear) {
    int offset = 0;
    for (int i = c_info.dims; i > 0; --i) {      // should run dims - 1 .. 0
        int cur = linear % c_info.sizes[i];
        linear /= c_info.sizes[i];
        offset += cur * c_info.strides[i];
    }
    return offset;
}

extern "C" __global__ void strided_copy(const float* __restrict__ src, float* __restrict__ dst, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[index_to_offset(i)];
}
"""


BUGGY["ConstTensorInfoDims"] = Buggy(
    ConstTensorInfoDims,
    lambda: ((R(64), np.zeros(64, np.float32), 64), {"grid": 1}),
    (cf.OutOfBoundsError,),
    9,
    "PyTorch IndexToOffset/OffsetCalculator dims loop off by one (pattern), __constant__ TensorInfo member array",
)


@cf.kernel
class DeviceNibbleLutSigned:
    """Out of bounds: __device__ array (negative index)."""

    qs: cf.In[cf.int8]
    y: cf.Out[cf.float32]
    d: cf.float32
    n: cf.int32
    block = 64
    preamble = """
    static __device__ const signed char kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    """
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const signed char q = qs[i];                         // packed nibbles read as signed bytes
        y[2 * i]     = d * kvalues_iq4nl[q & 0xf];
        y[2 * i + 1] = d * kvalues_iq4nl[q >> 4];       // q < 0: index -8..-1
    }
    """


def _nib():
    q = np.random.default_rng(1).integers(-128, 128, 128).astype(np.int8)
    return (q, np.zeros(256, np.float32), 0.5, 128), {"grid": 2}


BUGGY["DeviceNibbleLutSigned"] = Buggy(
    DeviceNibbleLutSigned,
    _nib,
    (cf.OutOfBoundsError,),
    5,
    "llama.cpp/ggml IQ4_NL dequant kvalues_iq4nl table indexed by a signed nibble (int8_t q >> 4)",
)


@cf.kernel
class HistogramGmemAccum:
    """Out of bounds: global (template source)."""

    inp: cf.In[cf.uint32]
    n: cf.int32
    out: cf.Out[cf.uint32]
    name = "histogram_gmem_accum<1024, 1, 256>"
    block = 256
    source = r"""
template <int NUM_PARTS, int ACTIVE_CHANNELS, int NUM_BINS>
__global__ void histogram_gmem_accum(const unsigned int* in, int n, unsigned int* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= ACTIVE_CHANNELS * NUM_BINS) return;   // output range
    unsigned int total = 0;
    for (int j = 0; j < n; j++)
        total += in[i + NUM_PARTS * j];            // partials are NUM_BINS * ACTIVE_CHANNELS apart
    out[i] = total;
}
"""


BUGGY["HistogramGmemAccum"] = Buggy(
    HistogramGmemAccum,
    lambda: ((np.random.default_rng(2).integers(0, 9, 4 * 256).astype(np.uint32), 4, np.zeros(256, np.uint32)), {"grid": 1}),
    (cf.OutOfBoundsError,),
    8,
    "HeCBench histogram-cuda histogram_gmem_accum https://github.com/ORNL/HeCBench/issues/267",
)


@cf.kernel
class LocalAccEpilogueOOB:
    """Out of bounds: local array."""

    A: cf.In[cf.float32]
    B: cf.In[cf.float32]
    C: cf.Out[cf.float32]
    M: cf.int32
    K: cf.int32
    block = 16
    body = """
    #define TM 4
    float acc[TM];
    for (int m = 0; m < TM; ++m) acc[m] = 0.f;
    int row0 = (blockIdx.x * blockDim.x + threadIdx.x) * TM;
    for (int k = 0; k < K; ++k) {
        float b = B[k];
        for (int m = 0; m < TM; ++m)
            if (row0 + m < M) acc[m] += A[(row0 + m) * K + k] * b;
    }
    for (int m = 0; m <= TM && row0 + m < M; ++m) C[row0 + m] = acc[m];
    """


BUGGY["LocalAccEpilogueOOB"] = Buggy(
    LocalAccEpilogueOOB,
    lambda: ((R(64 * 8), R(8, seed=1), np.zeros(64, np.float32), 64, 8), {"grid": 1}),
    (cf.OutOfBoundsError,),
    10,
    "register-tile epilogue off by one (LeetCUDA sgemm thread tile pattern)",
)


@cf.kernel
class DynSmemFloat4Bytes:
    """Out of bounds: dynamic shared (vector type)."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    shared_mem = staticmethod(lambda block: block[0] * 4)  # sized in floats, used as float4
    body = """
    extern __shared__ float4 s4[];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s4[t] = reinterpret_cast<const float4*>(x)[i];
    __syncthreads();
    reinterpret_cast<float4*>(y)[i] = s4[blockDim.x - 1 - t];
    """


BUGGY["DynSmemFloat4Bytes"] = Buggy(
    DynSmemFloat4Bytes,
    lambda: ((R(512), np.zeros(512, np.float32)), {"grid": 2}),
    (cf.OutOfBoundsError,),
    3,
    "popsift ori_par launched with the wrong dynamic shared size https://github.com/alicevision/popsift/pull/109",
)


@cf.kernel
class WindowSumHalo:
    """Out of bounds: global / uninit shared, tail block only."""

    A: cf.In[cf.float32]
    B: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    body = """
    #define RADIUS 3
    #define TPB 64
    __shared__ float temp[TPB + 2 * RADIUS];
    int out_index = blockDim.x * blockIdx.x + threadIdx.x;
    int in_index = out_index + RADIUS;
    int local_index = threadIdx.x + RADIUS;
    if (out_index < n) {
        temp[local_index] = A[in_index];
        if (threadIdx.x < RADIUS) {
            temp[local_index - RADIUS] = A[in_index - RADIUS];
            temp[local_index + TPB] = A[in_index + TPB];
        }
    }
    __syncthreads();
    if (out_index < n) {
        float sum = 0.f;
        for (int i = -RADIUS; i <= RADIUS; ++i) sum += temp[local_index + i];
        B[out_index] = sum;
    }
    """


BUGGY["WindowSumHalo"] = Buggy(
    WindowSumHalo,
    lambda: ((R(106), np.zeros(100, np.float32), 100), {"grid": 2}),
    (cf.OutOfBoundsError, cf.UninitializedReadError),
    0,
    "dlsys-course window_sum: halo loads guarded by out_index < n https://github.com/dlsys-course/examples/issues/1",
)

# ---------------------------------------------------------------- misaligned


@cf.kernel
class Float4PaddedSmemRow:
    """Misaligned float4 shared store."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 256
    body = """
    __shared__ float tile[32][33];                  // +1 column against bank conflicts
    int t = threadIdx.x, r = t / 8, c4 = t % 8;
    const float4* src = reinterpret_cast<const float4*>(x + blockIdx.x * 1024);
    float4 v = src[r * 8 + c4];
    *reinterpret_cast<float4*>(&tile[r][c4 * 4]) = v;
    __syncthreads();
    for (int k = 0; k < 4; ++k) {
        int c = c4 * 4 + k;
        y[blockIdx.x * 1024 + c * 32 + r] = tile[r][c];
    }
    """


BUGGY["Float4PaddedSmemRow"] = Buggy(
    Float4PaddedSmemRow,
    lambda: ((R(2048), np.zeros(2048, np.float32)), {"grid": 2}),
    (cf.MisalignedAccessError,),
    5,
    "padded smem tile [32][33] written with float4 (LeetCUDA/sgemm smem padding + vectorisation pattern)",
)


@cf.kernel
class Int4MemcpyTo8Aligned:
    """Misaligned int4 store."""

    src: cf.In[cf.float32]
    dst: cf.Array[cf.float32]
    n_pairs: cf.int32
    dst_off: cf.int32
    name = "copy_kv"
    block = 32
    source = r"""
template <int nbytes>
static __device__ __forceinline__ void ggml_cuda_memcpy_1(void* __restrict__ dst, const void* __restrict__ src) {
    if constexpr (nbytes == 16) {
        *(int4*)dst = *(const int4*)src;
    } else if constexpr (nbytes == 8) {
        *(int2*)dst = *(const int2*)src;
    }
}

extern "C" __global__ void copy_kv(const float* __restrict__ src_f, float* __restrict__ dst_f, int n_pairs, int dst_off) {
    const float2* src = reinterpret_cast<const float2*>(src_f);
    float2* dst = reinterpret_cast<float2*>(dst_f);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (2 * i + 1 < n_pairs) ggml_cuda_memcpy_1<16>(dst + dst_off + 2 * i, src + 2 * i);
}
"""


BUGGY["Int4MemcpyTo8Aligned"] = Buggy(
    Int4MemcpyTo8Aligned,
    lambda: ((R(128), np.zeros(160, np.float32), 64, 1), {"grid": 1}),
    (cf.MisalignedAccessError,),
    5,
    "ggml_cuda_memcpy_1 int4 copy into float2 (8-aligned) dst https://github.com/ggml-org/llama.cpp/pull/18799",
)


@cf.kernel
class HalfRowsVec8:
    """Misaligned float4 global load of __half rows."""

    x: cf.In[cf.float16]
    y: cf.Out[cf.float32]
    cols: cf.int32
    block = 4
    body = """
    int row = blockIdx.x, t = threadIdx.x;
    const __half* rowp = x + row * cols;
    float s = 0.f;
    if (t * 8 + 8 <= cols) {
        float4 raw = *reinterpret_cast<const float4*>(rowp + t * 8);   // 8 halves at once
        const __half2* h = reinterpret_cast<const __half2*>(&raw);
        for (int k = 0; k < 4; ++k) { float2 f = __half22float2(h[k]); s += f.x + f.y; }
    }
    if (t == 0) for (int c = (cols / 8) * 8; c < cols; ++c) s += __half2float(rowp[c]);
    y[row * 4 + t] = s;
    """


BUGGY["HalfRowsVec8"] = Buggy(
    HalfRowsVec8,
    lambda: ((R(4 * 36).astype(np.float16), np.zeros(16, np.float32), 36), {"grid": 4}),
    (cf.MisalignedAccessError,),
    5,
    "llama.cpp/FlashAttention 8-half vector loads on rows whose head size is not a multiple of 8 (pattern)",
)

# ---------------------------------------------------------------- uninitialised


@cf.kernel
class SoftmaxBufNoInit:
    """Uninitialised: dynamic shared."""

    x: cf.In[cf.float32]
    dst: cf.Out[cf.float32]
    ncols_par: cf.int32
    name = "soft_max_f32<0>"
    block = 64
    shared_mem = 128
    source = r"""
#include <math_constants.h>
#define WARP_SIZE 32
static __device__ __forceinline__ float warp_reduce_max(float x) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffff, x, offset, 32));
    return x;
}

template <int block_size_template>
static __global__ void soft_max_f32(const float* x, float* dst, const int ncols_par) {
    const int ncols = block_size_template == 0 ? ncols_par : block_size_template;
    const int tid = threadIdx.x;
    const int rowx = blockIdx.x;
    const int block_size = block_size_template == 0 ? blockDim.x : block_size_template;
    const int warp_id = threadIdx.x / WARP_SIZE;
    const int lane_id = threadIdx.x % WARP_SIZE;
    extern __shared__ float data_soft_max_f32[];
    float* buf_iw = data_soft_max_f32;
    float max_val = -CUDART_INF_F;
    for (int col0 = 0; col0 < ncols; col0 += block_size) {
        const int col = col0 + tid;
        if (ncols % block_size != 0 && col >= ncols) break;
        max_val = fmaxf(max_val, x[rowx * ncols + col]);
    }
    max_val = warp_reduce_max(max_val);
    if (block_size > WARP_SIZE) {
        if (lane_id == 0) buf_iw[warp_id] = max_val;
        __syncthreads();
        max_val = buf_iw[lane_id];
        max_val = warp_reduce_max(max_val);
    }
    for (int col0 = 0; col0 < ncols; col0 += block_size) {
        const int col = col0 + tid;
        if (ncols % block_size != 0 && col >= ncols) break;
        dst[rowx * ncols + col] = x[rowx * ncols + col] - max_val;
    }
}
"""


BUGGY["SoftmaxBufNoInit"] = Buggy(
    SoftmaxBufNoInit,
    lambda: ((R(4 * 100), np.zeros(400, np.float32), 100), {"grid": 4}),
    (cf.UninitializedReadError,),
    30,
    "llama.cpp soft_max_f32 buf_iw read for all 32 lanes without the -INFINITY init (ggml-cuda softmax.cu)",
)


@cf.kernel
class LfilterReadsOut:
    """Uninitialised: Out argument."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    a: cf.float32
    rows: cf.int32
    cols: cf.int32
    block = 32
    body = """
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float prev = y[c];                       // meant as the zero initial state: y comes from torch.empty
    for (int r = 0; r < rows; ++r) {
        float v = x[r * cols + c] + a * prev;
        y[r * cols + c] = v;
        prev = v;
    }
    """


BUGGY["LfilterReadsOut"] = Buggy(
    LfilterReadsOut,
    lambda: ((R(8 * 64), np.zeros(8 * 64, np.float32), 0.5, 8, 64), {"grid": 2}),
    (cf.UninitializedReadError,),
    3,
    "IIR/lfilter-style recursion reading the uninitialised output as state (torchaudio lfilter / torch.empty pattern)",
)


@cf.kernel
class ArgmaxAllNegInf:
    """Uninitialised: local int."""

    x: cf.In[cf.float32]
    idx: cf.Out[cf.int32]
    rows: cf.int32
    cols: cf.int32
    block = 32
    body = """
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    float best = -3.402823466e+38f;
    int arg;
    for (int j = 0; j < cols; ++j) {
        float v = x[row * cols + j];
        if (v > best) { best = v; arg = j; }
    }
    idx[row] = arg;
    """


def _argmax():
    x = R(8 * 16)
    x[3 * 16 : 4 * 16] = -np.inf
    return (x, np.zeros(8, np.int32), 8, 16), {"grid": 1}


BUGGY["ArgmaxAllNegInf"] = Buggy(
    ArgmaxAllNegInf,
    _argmax,
    (cf.UninitializedReadError,),
    9,
    "argmax over a row of all -inf leaves the index unset (PyTorch/ggml argmax -inf/NaN row fixes, pattern)",
)


@cf.kernel
class NBodyFloat3AccUninit:
    """Uninitialised: local float3."""

    pos: cf.In[cf.float32]
    acc_out: cf.Out[cf.float32]
    n: cf.int32
    block = 32
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float3 pi = make_float3(pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]);
    float3 acc;
    for (int j = 0; j < n; ++j) {
        float3 r = make_float3(pos[3 * j] - pi.x, pos[3 * j + 1] - pi.y, pos[3 * j + 2] - pi.z);
        float d2 = r.x * r.x + r.y * r.y + r.z * r.z + 0.01f;
        float inv = rsqrtf(d2), s = inv * inv * inv;
        acc.x += r.x * s; acc.y += r.y * s; acc.z += r.z * s;
    }
    acc_out[3 * i] = acc.x; acc_out[3 * i + 1] = acc.y; acc_out[3 * i + 2] = acc.z;
    """


BUGGY["NBodyFloat3AccUninit"] = Buggy(
    NBodyFloat3AccUninit,
    lambda: ((R(3 * 32), np.zeros(3 * 32, np.float32), 32), {"grid": 1}),
    (cf.UninitializedReadError,),
    9,
    "CUDA samples nbody bodyBodyInteraction accumulator (float3) not zeroed (pattern)",
)


@cf.kernel
class RakingGridPadUninit:
    """Uninitialised: static shared (padding)."""

    x: cf.In[cf.float32]
    partial: cf.Out[cf.float32]
    block = 64
    body = """
    // 13 raking threads x 5 elements = 65 slots for 64 inputs: the padding slot is never written
    __shared__ float raking_grid[65];
    int t = threadIdx.x;
    raking_grid[t] = x[blockIdx.x * 64 + t];
    __syncthreads();
    if (t < 13) {
        float s = 0.f;
        for (int k = 0; k < 5; ++k) s += raking_grid[t * 5 + k];
        partial[blockIdx.x * 13 + t] = s;
    }
    """


BUGGY["RakingGridPadUninit"] = Buggy(
    RakingGridPadUninit,
    lambda: ((R(128), np.zeros(26, np.float32)), {"grid": 2}),
    (cf.UninitializedReadError,),
    8,
    "CUB BlockScanRaking copies uninitialised padding https://github.com/NVIDIA/cub/pull/665",
)

# ---------------------------------------------------------------- races


@cf.kernel
class SsmScanNoLoopSync:
    """Shared WAR race across loop iterations."""

    B: cf.In[cf.float32]
    C: cf.In[cf.float32]
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    L: cf.int32
    name = "ssm_scan_f32<16>"
    block = 64
    source = r"""
template <int N>
__global__ void __launch_bounds__(64) ssm_scan_f32(const float* __restrict__ B, const float* __restrict__ C,
                                                   const float* __restrict__ x, float* __restrict__ y, const int L) {
    __shared__ float smemB[N];
    __shared__ float smemC[N];
    float state[N];
#pragma unroll
    for (int j = 0; j < N; j++) state[j] = 0.0f;
    for (int i = 0; i < L; i++) {
        if (threadIdx.x < N) {
            smemB[threadIdx.x] = B[i * N + threadIdx.x];
            smemC[threadIdx.x] = C[i * N + threadIdx.x];
        }
        __syncthreads();
        const float xi = x[i * blockDim.x + threadIdx.x];
        float sumf = 0.0f;
#pragma unroll
        for (int j = 0; j < N; j++) {
            state[j] = state[j] * 0.9f + smemB[j] * xi;
            sumf += state[j] * smemC[j];
        }
        y[i * blockDim.x + threadIdx.x] = sumf;
    }
}
"""


BUGGY["SsmScanNoLoopSync"] = Buggy(
    SsmScanNoLoopSync,
    lambda: ((R(4 * 16), R(4 * 16, seed=1), R(4 * 64, seed=2), np.zeros(4 * 64, np.float32), 4), {"grid": 1}),
    (cf.RaceError,),
    0,
    "llama.cpp ssm_scan_f32 missing inter-iteration __syncthreads https://github.com/ggml-org/llama.cpp/pull/23364",
)


@cf.kernel
class MmqIdsNoSyncwarp:
    """Warp race in shared (ordered only by shuffles)."""

    ids: cf.In[cf.int32]
    ids_dst: cf.Out[cf.int32]
    expert_bounds: cf.Out[cf.int32]
    n_tokens: cf.int32
    n_expert_used: cf.int32
    name = "mmq_ids_helper"
    block = 32
    source = r"""
#define WARP_SIZE 32
static __device__ __forceinline__ int warp_reduce_sum(int x) {
#pragma unroll
    for (int offset = WARP_SIZE / 2; offset > 0; offset >>= 1) x += __shfl_xor_sync(0xffffffff, x, offset, WARP_SIZE);
    return x;
}

extern "C" __global__ void mmq_ids_helper(const int* __restrict__ ids, int* __restrict__ ids_dst, int* __restrict__ expert_bounds,
                                          const int n_tokens, const int n_expert_used) {
    const int expert = blockIdx.x;
    __shared__ int store[128];
    int nex_prev = 0;
    int it_compact = 0;
    for (int it0 = 0; it0 < n_tokens; it0 += WARP_SIZE) {
        const int it = it0 + threadIdx.x;
        int iex_used = -1;
        if (it < n_tokens) {
            for (int iex = 0; iex < n_expert_used; ++iex) {
                const int expert_used = ids[it * n_expert_used + iex];
                nex_prev += expert_used < expert;
                if (expert_used == expert) iex_used = iex;
            }
        }
        const unsigned int m = __ballot_sync(0xffffffff, iex_used != -1);
        if (iex_used != -1) store[it_compact + __popc(m & ((1u << threadIdx.x) - 1))] = it * n_expert_used + iex_used;
        it_compact += __popc(m);
    }
    nex_prev = warp_reduce_sum(nex_prev);
    for (int itc = threadIdx.x; itc < it_compact; itc += WARP_SIZE) ids_dst[nex_prev + itc] = store[itc];
    if (threadIdx.x == 0) expert_bounds[expert] = nex_prev;
}
"""


def _mmq():
    rng = np.random.default_rng(5)
    ids = np.stack([rng.permutation(8)[:2] for _ in range(48)]).astype(np.int32).ravel()
    return (ids, np.zeros(96, np.int32), np.zeros(8, np.int32), 48, 2), {"grid": 8}


BUGGY["MmqIdsNoSyncwarp"] = Buggy(
    MmqIdsNoSyncwarp,
    _mmq,
    (cf.RaceError,),
    30,
    "llama.cpp mmq_ids_helper store[] read back with no __syncwarp https://github.com/ikawrakow/ik_llama.cpp/pull/2502 (upstream ggml-org/llama.cpp#28475)",
)


@cf.kernel
class OrtBlockReduceWarp0:
    """Intra-warp shared race, right answer on the sequential schedule."""

    x: cf.In[cf.float32]
    out: cf.Out[cf.float32]
    block = 128
    body = """
    __shared__ float data[128];
    int t = threadIdx.x;
    data[t] = x[blockIdx.x * 128 + t];
    __syncthreads();
    if (t < 4) {                                  // lane w of warp 0 reduces warp w's 32 values
        float s = 0.f;
        for (int k = 0; k < 32; ++k) s += data[t * 32 + k];
        data[t] = s;                              // lanes 1-3 overwrite data[1..3] while lane 0 may still read them
    }
    __syncthreads();
    if (t == 0) { float s = 0.f; for (int w = 0; w < 4; ++w) s += data[w]; out[blockIdx.x] = s; }
    """


BUGGY["OrtBlockReduceWarp0"] = Buggy(
    OrtBlockReduceWarp0,
    lambda: ((R(256), np.zeros(2, np.float32)), {"grid": 2}),
    (cf.RaceError,),
    0,
    "onnxruntime softmax BlockReduce write-before-read in warp 0 (needs __syncwarp) https://github.com/microsoft/onnxruntime/pull/14475",
)


@cf.kernel
class ScaleFromBlock0:
    """Global race between blocks."""

    x: cf.In[cf.float32]
    scale: cf.Array[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float smax[64];
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    if (blockIdx.x == 0) {                        // block 0 computes the per-tensor scale
        smax[t] = fabsf(x[t]);
        __syncthreads();
        for (int o = 32; o > 0; o >>= 1) { if (t < o) smax[t] = fmaxf(smax[t], smax[t + o]); __syncthreads(); }
        if (t == 0) scale[0] = 127.f / smax[0];
        __syncthreads();
    }
    y[i] = rintf(x[i] * scale[0]);                // other blocks: no grid-wide sync
    """


BUGGY["ScaleFromBlock0"] = Buggy(
    ScaleFromBlock0,
    lambda: ((R(256), np.zeros(1, np.float32), np.zeros(256, np.float32)), {"grid": 4}),
    (cf.RaceError,),
    0,
    "reduction + use fused into one kernel relying on __syncthreads across blocks https://github.com/PaddlePaddle/Paddle/pull/32596 , https://github.com/Oneflow-Inc/oneflow/pull/903",
)


@cf.kernel
class GlobalInPlaceScan:
    """Global race between threads of a block."""

    a: cf.Array[cf.float32]
    n: cf.int32
    block = 64
    body = """
    int t = threadIdx.x;
    for (int d = 1; d < n; d <<= 1) {
        if (t >= d && t < n) a[t] += a[t - d];     // in place: reads a[t - d] that thread t - d updates this step
        __syncthreads();
    }
    """


BUGGY["GlobalInPlaceScan"] = Buggy(
    GlobalInPlaceScan,
    lambda: ((R(64), 64), {"grid": 1}),
    (cf.RaceError,),
    3,
    "naive in-place Hillis-Steele scan in global memory (GPU Gems 3 ch. 39 double-buffer fix)",
)


@cf.kernel
class HashInsertPlainProbe:
    """Global race (threads and blocks)."""

    keys: cf.In[cf.int32]
    table: cf.Array[cf.int32]
    n: cf.int32
    cap: cf.int32
    block = 64
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int key = keys[i];
    unsigned h = ((unsigned)key * 2654435761u) % cap;
    while (true) {
        int cur = table[h];
        if (cur == -1) { table[h] = key; break; }     // should be atomicCAS(&table[h], -1, key)
        if (cur == key) break;
        h = (h + 1) % cap;
    }
    """


def _hash():
    keys = np.random.default_rng(3).integers(0, 40, 100).astype(np.int32)
    return (keys, np.full(128, -1, np.int32), 100, 128), {"grid": 2}


BUGGY["HashInsertPlainProbe"] = Buggy(
    HashInsertPlainProbe,
    _hash,
    (cf.RaceError,),
    0,
    "open-addressing insert with a plain check-then-store instead of atomicCAS (cuCollections/cuDF hash join pattern)",
)


@cf.kernel
class WarpScanVolatileNoSync:
    """Warp-synchronous race (volatile shared)."""

    x: cf.In[cf.int32]
    y: cf.Out[cf.int32]
    block = 64
    body = """
    __shared__ volatile int s[64];
    int t = threadIdx.x, lane = t & 31;
    s[t] = x[blockIdx.x * 64 + t];
    if (lane >= 1)  s[t] = s[t - 1] + s[t];
    if (lane >= 2)  s[t] = s[t - 2] + s[t];
    if (lane >= 4)  s[t] = s[t - 4] + s[t];
    if (lane >= 8)  s[t] = s[t - 8] + s[t];
    if (lane >= 16) s[t] = s[t - 16] + s[t];
    y[blockIdx.x * 64 + t] = s[t];
    """


BUGGY["WarpScanVolatileNoSync"] = Buggy(
    WarpScanVolatileNoSync,
    lambda: ((np.random.default_rng(4).integers(0, 10, 128).astype(np.int32), np.zeros(128, np.int32)), {"grid": 2}),
    (cf.RaceError,),
    0,
    "CUDPP/thrust scan_warp (volatile, pre-Volta warp-synchronous) without __syncwarp",
)

# ---------------------------------------------------------------- barrier / warp misuse


@cf.kernel
class WarpSpecializedSync:
    """Divergent __syncthreads (warp specialisation)."""

    w: cf.In[cf.float32]
    a: cf.In[cf.float32]
    out: cf.Out[cf.float32]
    prefetch: cf.Array[cf.int32]
    K: cf.int32
    name = "tinygemm"
    block = 192
    source = r"""
__device__ __forceinline__ bool elect_one_sync() { return (threadIdx.x & 31) == 0; }

extern "C" __global__ void __launch_bounds__(192) tinygemm(const float* __restrict__ w, const float* __restrict__ a,
                                                           float* __restrict__ out, int* prefetch, int K) {
    __shared__ float reduction_buffer[128];
    const int warp_id = threadIdx.x / 32;
    if (warp_id >= 4 && elect_one_sync()) {
        prefetch[blockIdx.x * 2 + (warp_id - 4)] = 1;   // stands for issuing the TMA loads
    } else if (warp_id < 4) {
        float acc = 0.f;
        for (int k = threadIdx.x; k < K; k += 128) acc += w[blockIdx.x * K + k] * a[k];
        reduction_buffer[threadIdx.x] = acc;
        __syncthreads();                                  // warps 4-5 never get here
        if (warp_id == 0) {
            float s = 0.f;
            for (int j = threadIdx.x; j < 128; j += 32) s += reduction_buffer[j];
            for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
            if (threadIdx.x == 0) out[blockIdx.x] = s;
        }
    }
}
"""


BUGGY["WarpSpecializedSync"] = Buggy(
    WarpSpecializedSync,
    lambda: ((R(4 * 256), R(256, seed=1), np.zeros(4, np.float32), np.zeros(8, np.int32), 256), {"grid": 4}),
    (cf.BarrierMisuseError,),
    0,
    "flashinfer tinygemm2 __syncthreads only in the compute warps' branch https://github.com/flashinfer-ai/flashinfer/pull/2996",
)


@cf.kernel
class Mx4GroupEarlyReturn:
    """Early return of whole warps before __syncthreads."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    total_elems: cf.int32
    block = (32, 4)
    body = """
    const int gid = blockIdx.x * blockDim.y + threadIdx.y;
    const int linear_tid = gid * 32 + threadIdx.x;
    if (linear_tid >= total_elems) return;          // whole trailing groups (whole warps) leave
    __shared__ float smem[4][32];
    smem[threadIdx.y][threadIdx.x] = fabsf(x[linear_tid]);
    __syncthreads();
    for (int o = 16; o > 0; o >>= 1) {
        if (threadIdx.x < o) smem[threadIdx.y][threadIdx.x] = fmaxf(smem[threadIdx.y][threadIdx.x], smem[threadIdx.y][threadIdx.x + o]);
        __syncthreads();
    }
    float amax = smem[threadIdx.y][0];
    int e = amax > 0.f ? (int)floorf(log2f(amax)) : 0;
    y[linear_tid] = ldexpf(x[linear_tid], -e);
    """


BUGGY["Mx4GroupEarlyReturn"] = Buggy(
    Mx4GroupEarlyReturn,
    lambda: ((R(192), np.zeros(192, np.float32), 192), {"grid": 2}),
    (cf.BarrierMisuseError,),
    0,
    "FBGEMM quantize_float_to_mx4_kernel early return of trailing groups before __syncthreads https://github.com/pytorch/FBGEMM/pull/5857",
)


@cf.kernel
class SgmvGridSyncImbalance:
    """grid.sync reached a different number of times by different blocks."""

    x: cf.In[cf.float32]
    w: cf.In[cf.float32]
    seg_start: cf.In[cf.int32]
    tmp: cf.Array[cf.float32]
    y: cf.Out[cf.float32]
    cooperative = True
    block = 32
    preamble = COOP
    body = """
    cg::grid_group grid = cg::this_grid();
    const int s_start = seg_start[blockIdx.x], s_end = seg_start[blockIdx.x + 1];
    const int steps = (s_end - s_start + 31) / 32;        // differs per segment
    for (int step = 0; step < steps; ++step) {
        int i = s_start + step * 32 + threadIdx.x;
        if (i < s_end) tmp[i] = x[i] * w[blockIdx.x];
        grid.sync();
        if (i < s_end) y[i] = tmp[i] + tmp[s_start];
    }
    """


BUGGY["SgmvGridSyncImbalance"] = Buggy(
    SgmvGridSyncImbalance,
    lambda: (
        (R(214), R(4, seed=1), np.array([0, 40, 140, 150, 214], np.int32), np.zeros(214, np.float32), np.zeros(214, np.float32)),
        {"grid": 4},
    ),
    (cf.BarrierMisuseError,),
    0,
    "punica/lorax sgmv_shrink grid.sync count differs per segment https://github.com/punica-ai/punica/pull/35",
)


@cf.kernel
class Reduce7SmallBlockMask:
    """Shuffle reads lanes outside its mask (float reaches output)."""

    g_idata: cf.In[cf.float32]
    g_odata: cf.Out[cf.float32]
    n: cf.uint32
    name = "reduce7<float, 32, true>"
    block = 32
    shared_mem = 4
    source = r"""
template <class T> struct SharedMemory {
    __device__ inline operator T *() { extern __shared__ int __smem[]; return (T *)__smem; }
    __device__ inline operator const T *() const { extern __shared__ int __smem[]; return (T *)__smem; }
};

template <class T>
__device__ __forceinline__ T warpReduceSum(unsigned int mask, T mySum) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) mySum += __shfl_down_sync(mask, mySum, offset);
    return mySum;
}

template <class T, unsigned int blockSize, bool nIsPow2>
__global__ void reduce7(const T* __restrict__ g_idata, T* __restrict__ g_odata, unsigned int n) {
    T* sdata = SharedMemory<T>();
    unsigned int tid = threadIdx.x;
    unsigned int gridSize = blockSize * gridDim.x;
    unsigned int maskLength = (blockSize & 31);
    maskLength = (maskLength > 0) ? (32 - maskLength) : maskLength;
    const unsigned int mask = (0xffffffff) >> maskLength;
    T mySum = 0;
    if (nIsPow2) {
        unsigned int i = blockIdx.x * blockSize * 2 + threadIdx.x;
        gridSize = gridSize << 1;
        while (i < n) {
            mySum += g_idata[i];
            if ((i + blockSize) < n) mySum += g_idata[i + blockSize];
            i += gridSize;
        }
    } else {
        unsigned int i = blockIdx.x * blockSize + threadIdx.x;
        while (i < n) { mySum += g_idata[i]; i += gridSize; }
    }
    mySum = warpReduceSum<T>(mask, mySum);
    if ((tid % warpSize) == 0) sdata[tid / warpSize] = mySum;
    __syncthreads();
    const unsigned int shmem_extent = (blockSize / warpSize) > 0 ? (blockSize / warpSize) : 1;
    const unsigned int ballot_result = __ballot_sync(mask, tid < shmem_extent);
    if (tid < shmem_extent) {
        mySum = sdata[tid];
        mySum = warpReduceSum<T>(ballot_result, mySum);
    }
    if (tid == 0) g_odata[blockIdx.x] = mySum;
}
"""


BUGGY["Reduce7SmallBlockMask"] = Buggy(
    Reduce7SmallBlockMask,
    lambda: ((R(256), np.zeros(4, np.float32), 256), {"grid": 4}),
    (cf.WarpMisuseError,),
    0,
    "CUDA samples reduction reduce7 with blockSize 32: warpReduceSum(ballot_result = 1) reads lanes outside the mask https://github.com/NVIDIA/cuda-samples/issues/398",
)


@cf.kernel
class ReduceByKeyFullMaskLoop:
    """Full-mask shuffle in a loop with per-lane trip count."""

    key: cf.In[cf.int32]
    v: cf.In[cf.float32]
    out: cf.Array[cf.float32]
    block = 32
    body = """
    const int lane = threadIdx.x & 31;
    const int k = key[blockIdx.x * 32 + threadIdx.x];
    const unsigned key_mask = __match_any_sync(0xffffffff, k);
    const int left = __ffs(key_mask) - 1;
    const int right = 32 - __clz(key_mask);
    const int run = right - left;
    int width = 1;
    while (width < run) width <<= 1;
    width >>= 1;
    float contribution = v[blockIdx.x * 32 + threadIdx.x];
    while (width) {                                   // trip count differs between runs
        const unsigned source_lane = lane + width;
        const float source_value = __shfl_sync(0xffffffff, contribution, source_lane);
        if (source_lane < right) contribution += source_value;
        width >>= 1;
    }
    if (lane == left) atomicAdd(&out[k], contribution);
    """


def _rbk():
    runs = [1, 3, 8, 20, 5, 5, 2, 20]
    key = np.repeat(np.arange(len(runs)), runs).astype(np.int32)
    return (key, R(64), np.zeros(8, np.float32)), {"grid": 2}


BUGGY["ReduceByKeyFullMaskLoop"] = Buggy(
    ReduceByKeyFullMaskLoop,
    _rbk,
    (cf.WarpMisuseError,),
    0,
    "arbor gpu::reduce_by_key full-mask shuffle in a per-run loop https://github.com/arbor-sim/arbor/issues/736 (fix https://github.com/arbor-sim/arbor/pull/737)",
)


@cf.kernel
class BallotGridStrideTail:
    """Ballot in loop, last iteration partial."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    count: cf.Array[cf.int32]
    n: cf.int32
    block = 64
    body = """
    const int lane = threadIdx.x & 31;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        const bool keep = x[i] > 0.5f;
        const unsigned m = __ballot_sync(0xffffffff, keep);   // lanes past n have left the loop
        int base = 0;
        if (lane == 0) base = atomicAdd(count, __popc(m));
        base = __shfl_sync(0xffffffff, base, 0);
        if (keep) y[base + __popc(m & ((1u << lane) - 1))] = x[i];
    }
    """


BUGGY["BallotGridStrideTail"] = Buggy(
    BallotGridStrideTail,
    lambda: ((R(200), np.zeros(200, np.float32), np.zeros(1, np.int32), 200), {"grid": 2}),
    (cf.WarpMisuseError,),
    0,
    "stream compaction with __ballot_sync in a grid-stride loop (cuStreamComp https://github.com/knotman90/cuStreamComp/pull/5 pattern)",
)


@cf.kernel
class CgReduceInBranch:
    """cg::reduce with missing lanes."""

    x: cf.In[cf.float32]
    out: cf.Array[cf.float32]
    n: cf.int32
    block = 64
    preamble = COOP + "\n#include <cooperative_groups/reduce.h>\n"
    body = """
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = cg::reduce(warp, x[i], cg::plus<float>());
        if (warp.thread_rank() == 0) atomicAdd(out, s);
    }
    """


BUGGY["CgReduceInBranch"] = Buggy(
    CgReduceInBranch,
    lambda: ((R(100), np.zeros(1, np.float32), 100), {"grid": 2}),
    (cf.WarpMisuseError,),
    0,
    "cg::reduce on a full tile inside the bounds guard (TVM/PaddlePaddle CINN warp reduce tail fixes, e.g. https://github.com/PaddlePaddle/CINN/pull/938)",
)


@cf.kernel
class ReduceAddSyncAfterReturn:
    """__reduce_add_sync with exited lanes."""

    bits: cf.In[cf.uint32]
    count: cf.Array[cf.uint32]
    n: cf.int32
    block = 32
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned c = __popc(bits[i]);
    unsigned total = __reduce_add_sync(0xffffffff, c);
    if ((threadIdx.x & 31) == 0) atomicAdd(count, total);
    """


BUGGY["ReduceAddSyncAfterReturn"] = Buggy(
    ReduceAddSyncAfterReturn,
    lambda: ((np.random.default_rng(6).integers(0, 2**31, 80).astype(np.uint32), np.zeros(1, np.uint32), 80), {"grid": 3}),
    (cf.WarpMisuseError,),
    0,
    "sm_80 __reduce_add_sync popcount after an early return (bitmask count pattern, cuDF null count)",
)


# ---------------------------------------------------------------- scopes, aliasing, device memcpy, more vector types
@cf.kernel
class AtomicAddBlockAcrossBlocks:
    """Global race: block-scope atomics from several blocks."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    count: cf.Array[cf.int32]
    n: cf.int32
    block = 64
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > 0.5f) {
        int pos = atomicAdd_block(&count[0], 1);      // block scope: not atomic w.r.t. other blocks
        y[pos] = x[i];
    }
    """


BUGGY["AtomicAddBlockAcrossBlocks"] = Buggy(
    AtomicAddBlockAcrossBlocks,
    lambda: ((R(256), np.zeros(256, np.float32), np.zeros(1, np.int32), 256), {"grid": 4}),
    (cf.RaceError,),
    3,
    "block-scoped atomic on a grid-wide counter (atomicAdd_block misuse; CUDA guide scope rules)",
)


@cf.kernel
class LastBlockFenceBlockScope:
    """Global race: wrong fence scope."""

    x: cf.In[cf.float32]
    partial: cf.Array[cf.float32]
    count: cf.Array[cf.uint32]
    total: cf.Out[cf.float32]
    block = 32
    body = """
    __shared__ bool amLast;
    int t = threadIdx.x;
    float v = x[blockIdx.x * 32 + t];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (t == 0) {
        partial[blockIdx.x] = v;
        __threadfence_block();                          // should be __threadfence(): other blocks read it
        unsigned ticket = atomicInc(&count[0], gridDim.x);
        amLast = ticket == gridDim.x - 1;
    }
    __syncthreads();
    if (amLast && t == 0) {
        float s = 0.f;
        for (int b = 0; b < gridDim.x; ++b) s += partial[b];
        total[0] = s;
    }
    """


BUGGY["LastBlockFenceBlockScope"] = Buggy(
    LastBlockFenceBlockScope,
    lambda: ((R(256), np.zeros(8, np.float32), np.zeros(1, np.uint32), np.zeros(1, np.float32)), {"grid": 8}),
    (cf.RaceError,),
    0,
    "threadFenceReduction with a block-scope fence (__threadfence_block for inter-block publication)",
)


@cf.kernel
class MemcpyTailChunk:
    """Out of bounds: through device memcpy."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 32
    body = """
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i < n) memcpy(y + i, x + i, 4 * sizeof(float));     // last chunk runs past n when n % 4 != 0
    """


BUGGY["MemcpyTailChunk"] = Buggy(
    MemcpyTailChunk,
    lambda: ((R(126), np.zeros(126, np.float32), 126), {"grid": 1}),
    (cf.OutOfBoundsError,),
    2,
    "device memcpy of fixed-size chunks at the tail (cuDF string/row copy, ggml_cuda_memcpy_1 memcpy path)",
)


@cf.kernel
class SharedRowPointerOOB:
    """Out of bounds: global through a pointer held in shared memory (last row only)."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    rows: cf.int32
    cols: cf.int32
    block = 64
    body = """
    __shared__ const float* rowp;
    if (threadIdx.x == 0) rowp = x + blockIdx.x * cols;
    __syncthreads();
    float v = rowp[threadIdx.x];                          // blockDim 64 > cols 50
    if (threadIdx.x < cols) y[blockIdx.x * cols + threadIdx.x] = v * 2.f;
    """


BUGGY["SharedRowPointerOOB"] = Buggy(
    SharedRowPointerOOB,
    lambda: ((R(4 * 50), np.zeros(4 * 50, np.float32), 4, 50), {"grid": 4}),
    (cf.OutOfBoundsError,),
    4,
    "row pointer broadcast through shared memory (llm.c/Megatron row kernels), read unguarded",
)


@cf.kernel
class Uchar4FromRGB:
    """Misaligned uchar4 load."""

    rgb: cf.In[cf.uint8]
    gray: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n - 1) {
        uchar4 p = *reinterpret_cast<const uchar4*>(rgb + 3 * i);     // packed RGB: 3-byte pixels
        gray[i] = 0.299f * p.x + 0.587f * p.y + 0.114f * p.z;
    }
    """


BUGGY["Uchar4FromRGB"] = Buggy(
    Uchar4FromRGB,
    lambda: ((np.random.default_rng(13).integers(0, 255, 3 * 64).astype(np.uint8), np.zeros(64, np.float32), 64), {"grid": 1}),
    (cf.MisalignedAccessError,),
    3,
    "OpenCV cuda RGB->gray reading packed 3-byte pixels as uchar4 (pattern)",
)


@cf.kernel
class Atomic64OnU32Array:
    """Misaligned 64-bit atomic."""

    x: cf.In[cf.uint32]
    counters: cf.Array[cf.uint32]
    block = 64
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // counters[0] is a 32-bit header, the 64-bit sum packed right after it
    atomicAdd(reinterpret_cast<unsigned long long*>(counters + 1), (unsigned long long)x[i]);
    """


BUGGY["Atomic64OnU32Array"] = Buggy(
    Atomic64OnU32Array,
    lambda: ((np.arange(128, dtype=np.uint32), np.zeros(4, np.uint32)), {"grid": 2}),
    (cf.MisalignedAccessError,),
    3,
    "64-bit atomic on a field packed at a 4-byte offset (FAISS/cuDF packed counters pattern)",
)


@cf.kernel
class ResidualAddOutFloat4:
    """Uninitialised: Out through float4."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 32
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 r = reinterpret_cast<const float4*>(x)[i];
    float4 o = reinterpret_cast<float4*>(y)[i];        // y += x, but y was never written (Out)
    o.x += r.x; o.y += r.y; o.z += r.z; o.w += r.w;
    reinterpret_cast<float4*>(y)[i] = o;
    """


BUGGY["ResidualAddOutFloat4"] = Buggy(
    ResidualAddOutFloat4,
    lambda: ((R(256), np.zeros(256, np.float32)), {"grid": 2}),
    (cf.UninitializedReadError,),
    3,
    "fused residual add reading an output allocated with torch.empty (llm.c residual_forward pattern)",
)


@cf.kernel
class SharedInitGlobalTid:
    """Uninitialised: static shared in blocks > 0."""

    scale: cf.In[cf.float32]
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float s_scale;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) s_scale = scale[0];           // should be threadIdx.x == 0: every block has its own copy
    __syncthreads();
    y[i] = x[i] * s_scale;
    """


BUGGY["SharedInitGlobalTid"] = Buggy(
    SharedInitGlobalTid,
    lambda: ((np.array([2.0], np.float32), R(256), np.zeros(256, np.float32)), {"grid": 4}),
    (cf.UninitializedReadError,),
    5,
    "shared broadcast initialised under the global index (only block 0)",
)


@cf.kernel
class LdgOfDataWrittenInKernel:
    """Non-coherent read-only load of data written during the kernel."""

    x: cf.In[cf.float32]
    tmp: cf.Array[cf.float32]
    y: cf.Out[cf.float32]
    cooperative = True
    block = 32
    preamble = COOP
    body = """
    cg::grid_group g = cg::this_grid();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tmp[i] = 2.f * x[i];
    g.sync();
    y[i] = __ldg(&tmp[(i + 32) % (gridDim.x * 32)]);   // read-only cache on data written by this kernel
    """


BUGGY["LdgOfDataWrittenInKernel"] = Buggy(
    LdgOfDataWrittenInKernel,
    lambda: ((R(128), np.zeros(128, np.float32), np.zeros(128, np.float32)), {"grid": 4}),
    (cf.KernelCheckError,),
    0,
    "__ldg / const __restrict__ on a buffer the same kernel writes (CUDA guide: read-only for the kernel's lifetime)",
)


@cf.kernel
class RestrictInPlaceAlias:
    """In and Out alias: race between threads through two names."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[n - 1 - i] * 0.5f;          // reverse; x is const __restrict__
    """


def _alias():
    a = R(128)
    return (a, a, 128), {"grid": 2}  # in place: x and y are the same buffer


BUGGY["RestrictInPlaceAlias"] = Buggy(
    RestrictInPlaceAlias,
    _alias,
    (cf.RaceError,),
    0,
    "in-place call of a kernel whose input is const __restrict__ (PyTorch in-place ops on restrict kernels / internal overlap checks)",
)


@cf.kernel
class ShiftOverlappingViews:
    """Partially overlapping arguments: race through two arrays."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + 1.f;                   // y overlaps x shifted by one element
    """


def _overlap():
    buf = R(129)
    return (buf[1:], buf[:-1], 128), {"grid": 2}


BUGGY["ShiftOverlappingViews"] = Buggy(
    ShiftOverlappingViews,
    _overlap,
    (cf.RaceError,),
    0,
    "torch 'unsupported operation: more than one element of the written-to tensor refers to a single memory location' (overlapping in/out)",
)


@cf.kernel
class WarpHandoffFlagBeforeData:
    """Global race: one warp hands data to another of its block, but sets the flag before writing it."""

    x: cf.In[cf.float32]
    data: cf.Array[cf.float32]
    flag: cf.Array[cf.int32]
    out: cf.Out[cf.float32]
    block = 64
    body = """
    int t = threadIdx.x;
    if (t < 32) {
        if (t == 0) { while (atomicAdd(&flag[0], 0) == 0) ; }
        __syncwarp();
        out[t] = data[t] + 1.f;
    } else {
        __syncwarp();
        if (t == 32) atomicExch(&flag[0], 1);
        data[t - 32] = 2.f * x[t - 32];
    }
    """


BUGGY["WarpHandoffFlagBeforeData"] = Buggy(
    WarpHandoffFlagBeforeData,
    lambda: ((R(32), np.zeros(32, np.float32), np.zeros(1, np.int32), np.zeros(32, np.float32)), {"grid": 1}),
    (cf.RaceError,),
    5,
    "producer warp publishing its flag before its data (the ordering bug of hand-written warp-specialised pipelines)",
)
