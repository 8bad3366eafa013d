"""A fourth corpus, correct kernels (none may be flagged): each written as a public GPU project
writes it (named in its note), using what the earlier corpora did not: ballot-computed and
partial-warp masks, __match_any_sync and __reduce_*_sync, cooperative-groups tiles, votes,
labeled partitions and cg::memcpy_async, libcu++ (cuda::atomic_ref release/acquire between blocks
and between warps, cuda::std containers), __half and __half2 atomics and shuffles, unions and
carved dynamic shared memory, 64 KiB of dynamic shared memory, clusters' distributed shared memory
and ``source=`` templates. `test_cpu_check_probe4.py` runs them checked and unchecked against NumPy."""

from __future__ import annotations

import numpy as np

import cuforge as cf

from .check_corpus_more import COOP
from .check_corpus_more import _rand as R
from .check_probe_correct import Correct

CORRECT: dict[str, Correct] = {}


# 1 ---------------------------------------------------------------- ballot-computed mask, partial warp, discard out-of-range reads
@cf.kernel
class BallotMaskPartialWarp:
    x: cf.In[cf.float32]
    out: cf.Array[cf.float32]
    n: cf.int32
    block = 64
    body = """
    const int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
    const unsigned mask = __ballot_sync(0xffffffffu, i < n);
    if (i < n) {
        const int cnt = __popc(mask);                 // active lanes are 0..cnt-1
        float v = x[i];
        for (int o = 16; o > 0; o >>= 1) {
            float t = __shfl_down_sync(mask, v, o);
            if (lane + o < cnt) v += t;
        }
        if (lane == 0) atomicAdd(out, v);
    }
    """


CORRECT["BallotMaskPartialWarp"] = Correct(
    BallotMaskPartialWarp,
    lambda: ((R(100), np.zeros(1, np.float32), 100), {"grid": 2}),
    lambda a: [(a[1][0], a[0].sum())],
    "CUDA samples reduce7 / PaddlePaddle CINN partial-warp shuffle with ballot mask (https://github.com/PaddlePaddle/CINN/pull/938)",
)


# 2 ---------------------------------------------------------------- tiled_partition<4> shfl_xor groups
@cf.kernel
class Tile4GroupSums:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    preamble = COOP
    body = """
    cg::thread_block b = cg::this_thread_block();
    cg::thread_block_tile<4> q = cg::tiled_partition<4>(b);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    v += q.shfl_xor(v, 1);
    v += q.shfl_xor(v, 2);
    if (q.thread_rank() == 0) y[i / 4] = v;
    """


CORRECT["Tile4GroupSums"] = Correct(
    Tile4GroupSums,
    lambda: ((R(128), np.zeros(32, np.float32)), {"grid": 2}),
    lambda a: [(a[1], a[0].reshape(32, 4).sum(1))],
    "FAISS/cuML quad (4-lane) group reductions via cooperative groups",
)


# 3 ---------------------------------------------------------------- cg::memcpy_async into shared, cg::wait
@cf.kernel
class CgMemcpyAsyncStage:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    preamble = COOP + "\n#include <cooperative_groups/memcpy_async.h>\n"
    body = """
    __shared__ float tile[64];
    cg::thread_block block = cg::this_thread_block();
    cg::memcpy_async(block, tile, x + blockIdx.x * 64, sizeof(float) * 64);
    cg::wait(block);
    y[blockIdx.x * 64 + threadIdx.x] = tile[63 - threadIdx.x] * 2.f;
    """


CORRECT["CgMemcpyAsyncStage"] = Correct(
    CgMemcpyAsyncStage,
    lambda: ((R(128), np.zeros(128, np.float32)), {"grid": 2}),
    lambda a: [(a[1], (a[0].reshape(2, 64)[:, ::-1] * 2).ravel())],
    "CUDA Programming Guide cg::memcpy_async staging (used by CUTLASS-lite / cuML kernels)",
)


# 4 ---------------------------------------------------------------- cuda::atomic_ref release/acquire between blocks (cooperative: co-resident)
@cf.kernel
class AtomicRefFlagHandoff:
    x: cf.In[cf.float32]
    data: cf.Array[cf.float32]
    flag: cf.Array[cf.int32]
    y: cf.Out[cf.float32]
    cooperative = True
    block = 32
    preamble = "#include <cuda/atomic>\n"
    body = """
    cuda::atomic_ref<int, cuda::thread_scope_device> f(flag[0]);
    if (blockIdx.x == 0) {
        data[threadIdx.x] = x[threadIdx.x] * 3.f;
        __syncthreads();
        if (threadIdx.x == 0) f.store(1, cuda::memory_order_release);
    } else {
        if (threadIdx.x == 0) { while (f.load(cuda::memory_order_acquire) == 0) __nanosleep(100); }
        __syncthreads();
        y[(blockIdx.x - 1) * 32 + threadIdx.x] = data[threadIdx.x] + blockIdx.x;
    }
    """


CORRECT["AtomicRefFlagHandoff"] = Correct(
    AtomicRefFlagHandoff,
    lambda: ((R(32), np.zeros(32, np.float32), np.zeros(1, np.int32), np.zeros(96, np.float32)), {"grid": 4}),
    lambda a: [(a[3], np.concatenate([a[0] * 3 + b for b in (1, 2, 3)]))],
    "libcu++ cuda::atomic_ref release/acquire flag (CCCL docs; decoupled look-back style handoff)",
)


# 5 ---------------------------------------------------------------- __syncwarp(mask) in a partial warp, shared-memory reduction
@cf.kernel
class SyncwarpMaskPartial:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 32
    body = """
    __shared__ float s[32];
    const int lane = threadIdx.x, i = blockIdx.x * 32 + lane;
    const unsigned mask = __ballot_sync(0xffffffffu, i < n);
    if (i < n) {
        const int cnt = __popc(mask);
        s[lane] = x[i];
        __syncwarp(mask);
        for (int o = 16; o > 0; o >>= 1) {
            float t = (lane < o && lane + o < cnt) ? s[lane + o] : 0.f;
            __syncwarp(mask);
            if (lane < o) s[lane] += t;
            __syncwarp(mask);
        }
        if (lane == 0) y[blockIdx.x] = s[0];
    }
    """


CORRECT["SyncwarpMaskPartial"] = Correct(
    SyncwarpMaskPartial,
    lambda: ((R(80), np.zeros(3, np.float32), 80), {"grid": 3}),
    lambda a: [(a[1], np.add.reduceat(a[0], [0, 32, 64]))],
    "onnxruntime BlockReduce fix with __syncwarp(mask) (https://github.com/microsoft/onnxruntime/pull/14475)",
)


# 6 ---------------------------------------------------------------- __match_any_sync grouping, leader atomics (cuDF groupby style)
@cf.kernel
class MatchAnyGroupCount:
    keys: cf.In[cf.int32]
    hist: cf.Array[cf.int32]
    n: cf.int32
    block = 64
    body = """
    const int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
    const unsigned active = __ballot_sync(0xffffffffu, i < n);
    if (i < n) {
        const int k = keys[i];
        const unsigned peers = __match_any_sync(active, k);
        const int leader = __ffs(peers) - 1;
        if (lane == leader) atomicAdd(&hist[k], __popc(peers));
    }
    """


def _mk():
    return (np.random.default_rng(7).integers(0, 6, 90).astype(np.int32), np.zeros(6, np.int32), 90), {"grid": 2}


CORRECT["MatchAnyGroupCount"] = Correct(
    MatchAnyGroupCount,
    _mk,
    lambda a: [(a[1], np.bincount(a[0], minlength=6))],
    "warp-aggregated atomics by key with __match_any_sync (NVIDIA 'Using CUDA warp-level primitives', cuDF groupby)",
)


# 7 ---------------------------------------------------------------- __reduce_add_sync / __reduce_max_sync
@cf.kernel
class ReduceSyncInts:
    x: cf.In[cf.uint32]
    sums: cf.Out[cf.uint32]
    maxs: cf.Out[cf.uint32]
    block = 64
    body = """
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = x[i];
    unsigned s = __reduce_add_sync(0xffffffffu, v);
    unsigned m = __reduce_max_sync(0xffffffffu, v);
    if ((threadIdx.x & 31) == 0) { sums[i / 32] = s; maxs[i / 32] = m; }
    """


CORRECT["ReduceSyncInts"] = Correct(
    ReduceSyncInts,
    lambda: (
        (np.random.default_rng(8).integers(0, 1000, 128).astype(np.uint32), np.zeros(4, np.uint32), np.zeros(4, np.uint32)),
        {"grid": 2},
    ),
    lambda a: [(a[1], a[0].reshape(4, 32).sum(1)), (a[2], a[0].reshape(4, 32).max(1))],
    "sm_80 redux.sync warp reductions (CUDA samples reduce7 int path)",
)


# 8 ---------------------------------------------------------------- 64 KiB dynamic shared memory (opt-in on sm_90), 2 carved arrays
@cf.kernel
class DynSmem64KiB:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 256
    shared_mem = 65536
    body = """
    extern __shared__ float4 smem4[];
    float* a = reinterpret_cast<float*>(smem4);          // 8192 floats
    float* b = a + 8192;                                 // 8192 floats
    for (int k = threadIdx.x; k < 8192; k += blockDim.x) { a[k] = x[blockIdx.x * 8192 + k]; b[k] = 0.f; }
    __syncthreads();
    for (int k = threadIdx.x; k < 8192; k += blockDim.x) b[8191 - k] = a[k] + 1.f;
    __syncthreads();
    for (int k = threadIdx.x; k < 8192; k += blockDim.x) y[blockIdx.x * 8192 + k] = b[k];
    """


CORRECT["DynSmem64KiB"] = Correct(
    DynSmem64KiB,
    lambda: ((R(16384), np.zeros(16384, np.float32)), {"grid": 2}),
    lambda a: [(a[1], (a[0].reshape(2, 8192)[:, ::-1] + 1).ravel())],
    "FlashAttention/CUTLASS kernels opting into >48 KiB dynamic shared memory",
)


# 9 ---------------------------------------------------------------- template over __half with name expression
@cf.kernel
class ScaleHalfTemplate:
    x: cf.In[cf.float16]
    y: cf.Out[cf.float16]
    s: cf.float32
    n: cf.int32
    name = "scale_kernel<__half>"
    block = 64
    source = r"""
#include <cuda_fp16.h>
template <typename T> struct Acc { using type = float; };
template <typename T>
__device__ __forceinline__ float to_f(T v) { return static_cast<float>(v); }
template <> __device__ __forceinline__ float to_f<__half>(__half v) { return __half2float(v); }

template <typename T>
__global__ void scale_kernel(const T* __restrict__ x, T* __restrict__ y, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        typename Acc<T>::type v = to_f(x[i]) * s;
        y[i] = __float2half_rn(v);
    }
}
"""


CORRECT["ScaleHalfTemplate"] = Correct(
    ScaleHalfTemplate,
    lambda: ((R(100).astype(np.float16), np.zeros(100, np.float16), 0.5, 100), {"grid": 2}),
    lambda a: [(a[1], (a[0].astype(np.float32) * 0.5).astype(np.float16))],
    "PyTorch/ggml templated fp16 kernels instantiated by name expression",
)


# 10 ---------------------------------------------------------------- can_vectorize: float4 only when the pointer is 16-byte aligned
@cf.kernel
class CanVectorizeFallback:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    body = """
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const bool aligned = (reinterpret_cast<unsigned long long>(x) % 16 == 0) && (reinterpret_cast<unsigned long long>(y) % 16 == 0);
    if (aligned) {
        const int n4 = n / 4;
        if (tid < n4) {
            float4 v = __ldg(reinterpret_cast<const float4*>(x) + tid);
            v.x *= 2.f; v.y *= 2.f; v.z *= 2.f; v.w *= 2.f;
            reinterpret_cast<float4*>(y)[tid] = v;
        }
        if (tid == 0) for (int k = n4 * 4; k < n; ++k) y[k] = 2.f * x[k];
    } else {
        for (int k = tid; k < n; k += blockDim.x * gridDim.x) y[k] = 2.f * x[k];
    }
    """


def _cv():
    base = R(130)
    xb = base[1:]  # 4 bytes past an aligned base: not 16-aligned
    yb = np.zeros(130, np.float32)[1:]
    return (xb, yb, 129), {"grid": 1}


CORRECT["CanVectorizeFallback"] = Correct(
    CanVectorizeFallback,
    _cv,
    lambda a: [(a[1], a[0] * 2)],
    "PyTorch memory::can_vectorize_up_to alignment check before float4 (aten/src/ATen/native/cuda/MemoryAccess.cuh)",
)


# 11 ---------------------------------------------------------------- __half2 / __half atomics
@cf.kernel
class HalfAtomics:
    x: cf.In[cf.float16]
    out2: cf.Array[cf.float16]
    out1: cf.Out[cf.float16]
    block = 64
    body = """
    __shared__ __half acc;
    if (threadIdx.x == 0) acc = __float2half(0.f);
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    __half2 v = __halves2half2(x[i], __float2half(1.f));
    atomicAdd(reinterpret_cast<__half2*>(out2), v);
    atomicAdd(&acc, __float2half(1.f));
    __syncthreads();
    if (threadIdx.x == 0) out1[blockIdx.x] = acc;
    """


def _ha():
    x = (np.random.default_rng(9).integers(0, 4, 128) / 4).astype(np.float16)
    return (x, np.zeros(2, np.float16), np.zeros(2, np.float16)), {"grid": 2}


CORRECT["HalfAtomics"] = Correct(
    HalfAtomics,
    _ha,
    lambda a: [(a[1], [a[0].astype(np.float32).sum(), 128.0]), (a[2], [64.0, 64.0])],
    "atomicAdd(__half2*) for fp16 index_add/embedding backward (PyTorch fastAtomicAdd)",
)


# 12 ---------------------------------------------------------------- CUB-style TempStorage union reused across phases
@cf.kernel
class TempStorageUnion:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    cnt: cf.Out[cf.int32]
    block = 64
    preamble = """
    union TempStorage { float reduce[64]; struct { int flags[64]; int total; } scan; };
    """
    body = """
    __shared__ TempStorage temp;
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    temp.reduce[t] = x[i];
    __syncthreads();
    for (int o = 32; o > 0; o >>= 1) { if (t < o) temp.reduce[t] += temp.reduce[t + o]; __syncthreads(); }
    float mean = temp.reduce[0] / 64.f;
    __syncthreads();                                   // phase 2 reuses the same bytes as ints
    temp.scan.flags[t] = x[i] > mean ? 1 : 0;
    __syncthreads();
    if (t == 0) { int s = 0; for (int k = 0; k < 64; ++k) s += temp.scan.flags[k]; temp.scan.total = s; }
    __syncthreads();
    y[i] = x[i] - mean;
    if (t == 0) cnt[blockIdx.x] = temp.scan.total;
    """


def _tsu_exp(a):
    x = a[0].reshape(2, 64)
    m = x.mean(1, keepdims=True)
    return [(a[1], (x - m).ravel()), (a[2], (x > m).sum(1))]


CORRECT["TempStorageUnion"] = Correct(
    TempStorageUnion,
    lambda: ((R(128), np.zeros(128, np.float32), np.zeros(2, np.int32)), {"grid": 2}),
    _tsu_exp,
    "CUB TempStorage unions reused between BlockReduce and BlockScan phases (cub::BlockRadixSort etc.)",
)


# 13 ---------------------------------------------------------------- shared bitset with atomicOr
@cf.kernel
class SharedBitsetAtomicOr:
    x: cf.In[cf.int32]
    y: cf.Out[cf.int32]
    block = 128
    body = """
    __shared__ unsigned bits[4];
    int t = threadIdx.x;
    if (t < 4) bits[t] = 0u;
    __syncthreads();
    int v = x[blockIdx.x * 128 + t];              // values 0..127
    atomicOr(&bits[v >> 5], 1u << (v & 31));
    __syncthreads();
    if (t == 0) y[blockIdx.x] = __popc(bits[0]) + __popc(bits[1]) + __popc(bits[2]) + __popc(bits[3]);
    """


def _bs():
    return (np.random.default_rng(10).integers(0, 128, 256).astype(np.int32), np.zeros(2, np.int32)), {"grid": 2}


CORRECT["SharedBitsetAtomicOr"] = Correct(
    SharedBitsetAtomicOr,
    _bs,
    lambda a: [(a[1], [len(set(a[0][:128])), len(set(a[0][128:]))])],
    "cuDF/cuGraph distinct-count bitsets in shared memory via atomicOr",
)


# 14 ---------------------------------------------------------------- cooperative Jacobi, grid-stride over grid.thread_rank, uniform syncs
@cf.kernel
class CoopJacobiGridRank:
    a: cf.Array[cf.float32]
    b: cf.Array[cf.float32]
    n: cf.int32
    iters: cf.int32
    cooperative = True
    block = 32
    preamble = COOP
    body = """
    cg::grid_group grid = cg::this_grid();
    float* src = a; float* dst = b;
    for (int it = 0; it < iters; ++it) {
        for (unsigned long long i = grid.thread_rank(); i < (unsigned long long)n; i += grid.size()) {
            float l = i > 0 ? src[i - 1] : src[i];
            float r = i + 1 < (unsigned long long)n ? src[i + 1] : src[i];
            dst[i] = 0.5f * src[i] + 0.25f * (l + r);
        }
        grid.sync();
        float* t = src; src = dst; dst = t;
    }
    """


def _jac_exp(a):
    x = R(200)
    for _ in range(4):
        left = np.r_[x[0], x[:-1]]
        right = np.r_[x[1:], x[-1]]
        x = 0.5 * x + 0.25 * (left + right)
    return [(a[0], x)]


CORRECT["CoopJacobiGridRank"] = Correct(
    CoopJacobiGridRank,
    lambda: ((R(200), np.zeros(200, np.float32), 200, 4), {"grid": 4}),
    _jac_exp,
    "cooperative groups grid.sync Jacobi/heat stencil (CUDA samples conjugateGradientMultiBlockCG style)",
)


# 15 ---------------------------------------------------------------- last block via __syncthreads_or on the ticket, volatile partial reads
@cf.kernel
class LastBlockSyncOr:
    x: cf.In[cf.float32]
    partial: cf.Array[cf.float32]
    count: cf.Array[cf.uint32]
    total: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * 64 + t];
    __syncthreads();
    for (int o = 32; o > 0; o >>= 1) { if (t < o) s[t] += s[t + o]; __syncthreads(); }
    unsigned ticket = 0;
    if (t == 0) {
        partial[blockIdx.x] = s[0];
        __threadfence();
        ticket = atomicAdd(&count[0], 1u);
    }
    int last = __syncthreads_or(t == 0 && ticket == gridDim.x - 1);
    if (last && t == 0) {
        const volatile float* p = partial;
        float sum = 0.f;
        for (int b = 0; b < gridDim.x; ++b) sum += p[b];
        total[0] = sum;
        count[0] = 0;
    }
    """


CORRECT["LastBlockSyncOr"] = Correct(
    LastBlockSyncOr,
    lambda: ((R(512), np.zeros(8, np.float32), np.zeros(1, np.uint32), np.zeros(1, np.float32)), {"grid": 8}),
    lambda a: [(a[3][0], a[0].sum()), (a[2][0], 0)],
    "CUDA samples threadFenceReduction with __syncthreads_or for the amLast broadcast",
)


# 16 ---------------------------------------------------------------- labeled_partition by key + cg::reduce
@cf.kernel
class LabeledPartitionReduce:
    keys: cf.In[cf.int32]
    v: cf.In[cf.float32]
    sums: cf.Array[cf.float32]
    block = 32
    preamble = COOP + "\n#include <cooperative_groups/reduce.h>\n"
    body = """
    auto warp = cg::tiled_partition<32>(cg::this_thread_block());
    int i = blockIdx.x * 32 + threadIdx.x;
    int k = keys[i];
    auto g = cg::labeled_partition(warp, k);
    float s = cg::reduce(g, v[i], cg::plus<float>());
    if (g.thread_rank() == 0) atomicAdd(&sums[k], s);
    """


def _lp():
    return (np.random.default_rng(11).integers(0, 5, 64).astype(np.int32), R(64), np.zeros(5, np.float32)), {"grid": 2}


CORRECT["LabeledPartitionReduce"] = Correct(
    LabeledPartitionReduce,
    _lp,
    lambda a: [(a[2], np.bincount(a[0], a[1], minlength=5))],
    "cooperative groups labeled_partition segmented reduction (CUDA 11 CG docs)",
)


# 17 ---------------------------------------------------------------- inclusive warp scan with __shfl_up_sync, ints
@cf.kernel
class WarpScanShflUp:
    x: cf.In[cf.int32]
    y: cf.Out[cf.int32]
    block = 64
    body = """
    int lane = threadIdx.x & 31, i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = x[i];
    #pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        int t = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += t;
    }
    y[i] = v;
    """


CORRECT["WarpScanShflUp"] = Correct(
    WarpScanShflUp,
    lambda: ((np.random.default_rng(12).integers(0, 9, 128).astype(np.int32), np.zeros(128, np.int32)), {"grid": 2}),
    lambda a: [(a[1], np.cumsum(a[0].reshape(4, 32), axis=1).ravel())],
    "CUB WarpScanShfl / CUDA samples shfl_scan",
)


# 18 ---------------------------------------------------------------- PyTorch-style extern __shared__ __align__(sizeof(T)) unsigned char
@cf.kernel
class AlignSizeofSmem:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    name = "reverse_block<float>"
    block = 64
    shared_mem = 256
    source = r"""
template <typename scalar_t>
__global__ void reverse_block(const scalar_t* __restrict__ x, scalar_t* __restrict__ y) {
    extern __shared__ __align__(sizeof(scalar_t)) unsigned char my_smem[];
    scalar_t* s = reinterpret_cast<scalar_t*>(my_smem);
    s[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
    __syncthreads();
    y[blockIdx.x * blockDim.x + threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}
"""


CORRECT["AlignSizeofSmem"] = Correct(
    AlignSizeofSmem,
    lambda: ((R(128), np.zeros(128, np.float32)), {"grid": 2}),
    lambda a: [(a[1], a[0].reshape(2, 64)[:, ::-1].ravel())],
    "PyTorch ATen SoftMax.cu/Embedding: extern __shared__ __align__(sizeof(scalar_t)) unsigned char smem[]",
)


# 19 ----------------------------------------------------------------- cuda::atomic_ref between the warps of a block
@cf.kernel
class AtomicRefBlockScopeWarps:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    preamble = "#include <cuda/atomic>\n"
    body = """
    __shared__ float data[32];
    __shared__ int ready;
    int t = threadIdx.x;
    if (t == 0) ready = 0;
    __syncthreads();
    cuda::atomic_ref<int, cuda::thread_scope_block> r(ready);
    if (t < 32) {
        data[t] = 3.f * x[blockIdx.x * 32 + t];
        __syncwarp();
        if (t == 0) r.store(1, cuda::memory_order_release);
    } else {
        while (r.load(cuda::memory_order_acquire) == 0) __nanosleep(10);
        y[blockIdx.x * 32 + t - 32] = data[t - 32];
    }
    """


CORRECT["AtomicRefBlockScopeWarps"] = Correct(
    AtomicRefBlockScopeWarps,
    lambda: ((R(64), np.zeros(64, np.float32)), {"grid": 2}),
    lambda a: [(a[1], a[0] * 3)],
    "producer/consumer warps with libcu++ cuda::atomic_ref<thread_scope_block> release/acquire (CUTLASS/FlashAttention-3 warp specialisation style)",
)


# 20 ----------------------------------------------------------------- functor and lambda in device code
@cf.kernel
class DeviceLambdaFunctor:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    preamble = """
    template <typename F>
    __device__ __forceinline__ void elementwise(const float* in, float* out, int n, F f) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = f(in[i]);
    }
    struct Gelu { __device__ float operator()(float v) const { return 0.5f * v * (1.f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v))); } };
    """
    body = """
    const float scale = 2.f;
    elementwise(x, y, n, [=] (float v) { return Gelu()(v) * scale; });
    """


def _gelu(a):
    v = a[0].astype(np.float64)
    return [(a[1], 2 * 0.5 * v * (1 + np.tanh(0.7978845608 * (v + 0.044715 * v**3))))]


CORRECT["DeviceLambdaFunctor"] = Correct(
    DeviceLambdaFunctor,
    lambda: ((R(100), np.zeros(100, np.float32), 100), {"grid": 2}),
    _gelu,
    "PyTorch gpu_kernel-style functor + lambda in device code",
)


# 21 ----------------------------------------------------------------- libcu++ cuda::std containers in device code
@cf.kernel
class LibcuxxInDevice:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    rows: cf.int32
    block = 32
    preamble = (
        "#include <cuda/std/limits>\n#include <cuda/std/array>\n#include <cuda/std/utility>\n#include <cuda/std/algorithm>\n"
    )
    body = """
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    cuda::std::array<float, 4> v{};
    for (int k = 0; k < 4; ++k) v[k] = x[r * 4 + k];
    float m = -cuda::std::numeric_limits<float>::infinity();
    for (float e : v) m = cuda::std::max(m, e);
    cuda::std::pair<float, int> best{m, 0};
    for (int k = 0; k < 4; ++k) if (v[k] == m) { best.second = k; break; }
    y[r] = best.first + best.second;
    """


CORRECT["LibcuxxInDevice"] = Correct(
    LibcuxxInDevice,
    lambda: ((R(64 * 4), np.zeros(64, np.float32), 64), {"grid": 2}),
    lambda a: [(a[1], a[0].reshape(64, 4).max(1) + a[0].reshape(64, 4).argmax(1))],
    "libcu++ cuda::std::array / numeric_limits / pair in device code (cuDF, CCCL users)",
)


# 22 ----------------------------------------------------------------- dynamic shared memory: byte flags, then an aligned float4 region
@cf.kernel
class DynCarveAlignedBytes:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    shared_mem = staticmethod(lambda block: 80 + block[0] * 4 * 4)
    body = """
    extern __shared__ unsigned char smem[];
    unsigned char* flags = smem;                                   // 65 byte flags
    size_t off = (65 + 15) & ~size_t(15);                          // align the float4 part to 16
    float4* vec = reinterpret_cast<float4*>(smem + off);
    int t = threadIdx.x;
    flags[t] = x[blockIdx.x * 64 + t] > 0.5f;
    if (t == 0) flags[64] = 1;
    vec[t] = make_float4(x[blockIdx.x * 64 + t], 1.f, 2.f, 3.f);
    __syncthreads();
    float4 v = vec[63 - t];
    y[blockIdx.x * 64 + t] = (flags[63 - t] + flags[64]) * v.x + v.y + v.z + v.w;
    """


def _dca(a):
    x = a[0].reshape(2, 64)[:, ::-1]
    return [(a[1], (((x > 0.5) + 1) * x + 6).ravel())]


CORRECT["DynCarveAlignedBytes"] = Correct(
    DynCarveAlignedBytes,
    lambda: ((R(128), np.zeros(128, np.float32)), {"grid": 2}),
    _dca,
    "dynamic shared memory carved into byte flags and an aligned float4 region (CUB/cuDF temp storage carving)",
)


# 23 ----------------------------------------------------------------- thread_block_tile<16> votes
@cf.kernel
class TileVoteMethods:
    x: cf.In[cf.float32]
    y: cf.Out[cf.int32]
    block = 64
    preamble = COOP
    body = """
    auto tile = cg::tiled_partition<16>(cg::this_thread_block());
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool p = x[i] > 0.5f;
    unsigned b = tile.ballot(p);
    int any = tile.any(p), all = tile.all(p);
    unsigned same = tile.match_any((int)(x[i] * 4.f));
    if (tile.thread_rank() == 0) y[i / 16] = __popc(b) * 100 + any * 10 + all + 0 * __popc(same);
    """


def _tv(a):
    p = (a[0] > 0.5).reshape(8, 16)
    return [(a[1], p.sum(1) * 100 + p.any(1) * 10 + p.all(1))]


CORRECT["TileVoteMethods"] = Correct(
    TileVoteMethods,
    lambda: ((R(128), np.zeros(8, np.int32)), {"grid": 2}),
    _tv,
    "thread_block_tile<16>::ballot/any/all/match_any (CG vote API)",
)


# 24 ----------------------------------------------------------------- cluster histogram in distributed shared memory
@cf.kernel
class ClusterDsmemHistogram:
    x: cf.In[cf.int32]
    hist: cf.Array[cf.int32]
    cluster = (2, 1, 1)
    block = 64
    preamble = COOP
    body = """
    cg::cluster_group cluster = cg::this_cluster();
    __shared__ int bins[16];
    int t = threadIdx.x;
    if (t < 16) bins[t] = 0;
    cluster.sync();
    int v = x[blockIdx.x * 64 + t];                 // 0..31: bins 0-15 live in rank 0, 16-31 in rank 1
    int* dst = cluster.map_shared_rank(bins, v / 16);
    atomicAdd(dst + (v % 16), 1);
    cluster.sync();
    if (t < 16) atomicAdd(&hist[cluster.block_rank() * 16 + t], bins[t]);
    """


def _cl():
    return (np.random.default_rng(14).integers(0, 32, 256).astype(np.int32), np.zeros(32, np.int32)), {"grid": 4}


CORRECT["ClusterDsmemHistogram"] = Correct(
    ClusterDsmemHistogram,
    _cl,
    lambda a: [(a[1], np.bincount(a[0], minlength=32))],
    "CUDA programming guide distributed shared memory histogram (clusters, map_shared_rank)",
)


# 25 ----------------------------------------------------------------- __half2 shuffle reduction
@cf.kernel
class Half2ShuffleReduce:
    x: cf.In[cf.float16]
    y: cf.Out[cf.float32]
    block = 32
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    __half2 v = reinterpret_cast<const __half2*>(x)[i];
    for (int o = 16; o > 0; o >>= 1) v = __hadd2(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (threadIdx.x == 0) { float2 f = __half22float2(v); y[blockIdx.x] = f.x + f.y; }
    """


def _h2():
    x = (np.random.default_rng(15).integers(0, 8, 128) / 8).astype(np.float16)
    return (x, np.zeros(2, np.float32)), {"grid": 2}


CORRECT["Half2ShuffleReduce"] = Correct(
    Half2ShuffleReduce,
    _h2,
    lambda a: [(a[1], a[0].astype(np.float32).reshape(2, 64).sum(1))],
    "__half2 warp shuffles (llama.cpp warp_reduce_sum(half2), FlashAttention)",
)


# 26 ----------------------------------------------------------------- one buffer passed as In and Out, each thread its own element
@cf.kernel
class InPlaceSameIndex:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.f * x[i] + 1.f;
    """


def _inplace():
    buf = R(200)
    return (buf, buf, 200), {"grid": 4}


CORRECT["InPlaceSameIndex"] = Correct(
    InPlaceSameIndex,
    _inplace,
    lambda a: [(a[1], 2 * R(200) + 1)],
    "in-place elementwise op (x and out the same tensor: PyTorch's out= aliasing an input, each element read then written by one thread)",
)


# 27, 28 ------------------------------------------------------------- warps of one block hand data over through global memory,
# the consumer spinning without __nanosleep (an atomic poll, a volatile poll), the others waiting at __syncwarp
WARP_HANDOFF = """
    int t = threadIdx.x;
    if (t < 32) {
        if (t == 0) { while (%s) ; }
        __syncwarp();
        out[blockIdx.x * 32 + t] = data[blockIdx.x * 32 + t] + 1.f;
    } else {
        data[blockIdx.x * 32 + t - 32] = 2.f * x[blockIdx.x * 32 + t - 32];
        __threadfence_block();
        __syncwarp();
        if (t == 32) atomicExch(&flag[blockIdx.x], 1);
    }
"""


@cf.kernel
class WarpHandoffAtomicSpin:
    x: cf.In[cf.float32]
    data: cf.Array[cf.float32]
    flag: cf.Array[cf.int32]
    out: cf.Out[cf.float32]
    block = 64
    body = WARP_HANDOFF % "atomicAdd(&flag[blockIdx.x], 0) == 0"


@cf.kernel
class WarpHandoffVolatileSpin:
    x: cf.In[cf.float32]
    data: cf.Array[cf.float32]
    flag: cf.Array[cf.int32]
    out: cf.Out[cf.float32]
    block = 64
    body = WARP_HANDOFF % "((volatile int*)flag)[blockIdx.x] == 0"


def _handoff():
    return (R(64), np.zeros(64, np.float32), np.zeros(2, np.int32), np.zeros(64, np.float32)), {"grid": 2}


# (the volatile spin runs checked only: an unchecked launch does not see a volatile load, and spins on it
# for ever; test_cpu_check_probe4.py)
CORRECT["WarpHandoffAtomicSpin"] = Correct(
    WarpHandoffAtomicSpin,
    _handoff,
    lambda a: [(a[3], 2 * R(64) + 1)],
    "warp-specialised producer and consumer in one block through global memory, the consumer spinning without "
    "__nanosleep (CUTLASS/FlashAttention-3 style pipelines; the CPU must let the producer run)",
)
