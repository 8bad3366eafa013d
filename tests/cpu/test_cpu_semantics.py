"""CUDA C++ semantics on the CPU backend: barriers, shared memory, atomics, module variables,
types, printf and math, and the faults and refusals that leave the process working. Each test
launches a real kernel with device="cpu" and checks it against NumPy or exact values."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cuforge as cf

RNG = np.random.default_rng(2028)

# ---------------------------------------------------------------- barriers and shared memory


@cf.kernel
class BlockSum:
    """The shared-memory tree reduction: one element per thread, a sum per block."""

    x: cf.In[cf.float32]
    sums: cf.Out[cf.float32]
    n: cf.int64
    grid = "n"
    block = 256
    body = """
    __shared__ float s[256];
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) sums[blockIdx.x] = s[0];
    """


def test_shared_memory_tree_reduction():
    n = 2**16
    x = RNG.integers(-1000, 1000, n).astype(np.float32)  # integer sums: exact in any order
    sums = np.zeros(n // 256, np.float32)
    BlockSum(x, sums, n, device="cpu")
    np.testing.assert_array_equal(sums, x.reshape(-1, 256).sum(axis=1))


@cf.kernel
class SyncVotes:
    """__syncthreads_count/_and/_or, as every thread of the block sees them."""

    pred: cf.In[cf.int32]
    out: cf.Out[cf.int32]
    n: cf.int64
    block = 96
    body = """
    long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    int p = pred[t];
    out[0 * n + t] = __syncthreads_count(p);
    out[1 * n + t] = __syncthreads_and(p);
    out[2 * n + t] = __syncthreads_or(p);
    out[3 * n + t] = __syncthreads_count(!p);
    """


def test_syncthreads_count_and_or():
    blocks = 5
    pred = (RNG.integers(0, 2, (blocks, 96)) * RNG.integers(1, 5, (blocks, 96))).astype(np.int32)
    pred[1] = 3  # every predicate holds
    pred[2] = 0  # none does
    pred[3] = 0
    pred[3, 95] = 1  # only the last thread's
    out = np.zeros((4, blocks * 96), np.int32)
    SyncVotes(pred.ravel(), out, blocks * 96, grid=blocks, device="cpu")
    got = out.reshape(4, blocks, 96)
    count = (pred != 0).sum(axis=1)
    for row, want in enumerate([count, count == 96, count > 0, 96 - count]):
        assert (got[row] == np.asarray(want, np.int32)[:, None]).all(), row


@cf.kernel
class Scan:
    """An inclusive scan per block (Hillis-Steele), repeated `rounds` times: barriers inside
    loops whose trip count is the same for every thread."""

    x: cf.Array[cf.int32]
    rounds: cf.int32
    block = 256
    body = """
    __shared__ int buf[2][256];
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    unsigned t = threadIdx.x;
    int v = x[i];
    for (int r = 0; r < rounds; ++r) {
        int cur = 0;
        buf[cur][t] = v;
        __syncthreads();
        for (unsigned offset = 1; offset < blockDim.x; offset *= 2) {
            buf[1 - cur][t] = buf[cur][t] + (t >= offset ? buf[cur][t - offset] : 0);
            cur = 1 - cur;
            __syncthreads();
        }
        v = buf[cur][t];
        __syncthreads();
    }
    x[i] = v;
    """


def test_barriers_inside_uniform_loops():
    x = RNG.integers(-50, 50, (4, 256)).astype(np.int32)
    want = x.copy()
    for _ in range(3):
        want = np.cumsum(want, axis=1, dtype=np.int32)
    Scan(x.ravel(), 3, grid=4, device="cpu")
    np.testing.assert_array_equal(x, want)


@cf.kernel
class MatMul:
    """c = a @ b with two 16x16 shared tiles."""

    a: cf.In[cf.float32]
    b: cf.In[cf.float32]
    c: cf.Out[cf.float32]
    m: cf.int32
    k: cf.int32
    n: cf.int32
    block = (16, 16)
    body = """
    __shared__ float ta[16][16];
    __shared__ float tb[16][16];
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < k; k0 += 16) {
        ta[threadIdx.y][threadIdx.x] = a[row * k + k0 + threadIdx.x];
        tb[threadIdx.y][threadIdx.x] = b[(k0 + threadIdx.y) * n + col];
        __syncthreads();
        for (int j = 0; j < 16; ++j) acc += ta[threadIdx.y][j] * tb[j][threadIdx.x];
        __syncthreads();
    }
    c[row * n + col] = acc;
    """


def test_tiled_matmul_with_two_shared_tiles():
    m, k, n = 48, 64, 80
    a = RNG.integers(-8, 8, (m, k)).astype(np.float32)  # small integers: exact sums
    b = RNG.integers(-8, 8, (k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    MatMul(a, b, c, m, k, n, grid=(n // 16, m // 16), device="cpu")
    np.testing.assert_array_equal(c, a @ b)


@cf.kernel
class Reverse:
    """Each block reverses its part in dynamic shared memory, and says where that memory is."""

    x: cf.Array[cf.float32]
    aligned: cf.Out[cf.int32]
    body = """
    extern __shared__ float s[];
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    s[threadIdx.x] = x[i];
    __syncthreads();
    x[i] = s[blockDim.x - 1 - threadIdx.x];
    if (threadIdx.x == 0) aligned[blockIdx.x] = (uintptr_t)s % 16 == 0;
    """


@pytest.mark.parametrize("block", [32, 100, 1024])
def test_dynamic_shared_memory_and_its_alignment(block):
    x = RNG.standard_normal((6, block)).astype(np.float32)
    want = x[:, ::-1].copy()
    aligned = np.zeros(6, np.int32)
    Reverse(x.ravel(), aligned, grid=6, block=block, shared_mem=4 * block, device="cpu")
    np.testing.assert_array_equal(x, want)
    assert aligned.tolist() == [1] * 6


# Shared memory declared with an alignment its type lacks, every way CUDA code spells one, then
# read and written as float4 (an aligned vector access on the CPU as on a GPU): the static array
# after a 4-byte one, so that only the asked alignment puts it on 16 bytes.
ALIGNED_SHARED = [
    "__shared__ __align__(16) float tile[64];",
    "__shared__ float __align__(16) tile[64];",
    "__shared__ alignas(16) float tile[64];",
    "__shared__ __attribute__((aligned(16))) float tile[64];",
    "__shared__ __align__(sizeof(float4)) float tile[64];",
    "extern __shared__ __align__(sizeof(float4)) unsigned char raw[]; float* tile = reinterpret_cast<float*>(raw);",
    "extern __shared__ __align__((16)) unsigned char raw[]; float* tile = reinterpret_cast<float*>(raw);",
    "extern __shared__ __attribute__((aligned(16))) unsigned char raw[]; float* tile = reinterpret_cast<float*>(raw);",
    "extern __shared__ __attribute__((aligned(4 * 4))) float tile[];",
    # declared through a macro whose `;` comes at its use (TensorFlow's GPU_DYNAMIC_SHARED_MEM_DECL)
    "#define SHARED_DECL(ALIGN, TYPE, NAME) extern __shared__ __align__(ALIGN) TYPE NAME[]\n"
    "SHARED_DECL(sizeof(float4), unsigned char, raw); float* tile = reinterpret_cast<float*>(raw);",
    "#define TILE_DECL __shared__ __align__(16) float tile[64]\nTILE_DECL;",
    # dynamic shared memory viewed whole as an object (causal-conv1d's reinterpret_cast<TempStorage&>(smem_))
    "extern __shared__ __align__(16) unsigned char raw[]; float (&tile)[64] = reinterpret_cast<float (&)[64]>(raw);",
    "struct Tile { float v[64]; }; extern __shared__ __align__(16) char raw[]; float* tile = reinterpret_cast<Tile&>(raw).v;",
    "__shared__ float tile[64];",  # (no alignment asked: a shared array of 16 bytes or more is at a multiple of 16, as on a GPU)
]


@pytest.mark.parametrize("check", [False, True])
@pytest.mark.parametrize("declaration", ALIGNED_SHARED)
def test_shared_memory_declared_with_an_alignment_takes_vector_accesses(declaration, check):
    Rows = cf.kernel(type("AlignedRows", (), {
        "__annotations__": {"x": cf.In[cf.float32], "y": cf.Out[cf.float32]},
        "block": 16,
        "body": f"""
        __shared__ int flag;
        {declaration}
        if (threadIdx.x == 0) flag = 1;
        reinterpret_cast<float4*>(tile)[threadIdx.x] = reinterpret_cast<const float4*>(x)[threadIdx.x];
        __syncthreads();
        reinterpret_cast<float4*>(y)[threadIdx.x] = reinterpret_cast<const float4*>(tile)[15 - threadIdx.x];
        """,
    }))  # fmt: skip
    if not check:
        Rows.compile(arch="sm_90")  # (valid CUDA: NVRTC builds it)
    x = RNG.standard_normal(64).astype(np.float32)
    y = np.zeros(64, np.float32)
    Rows(x, y, grid=1, shared_mem=256, device="cpu", check=check)
    np.testing.assert_array_equal(y.reshape(16, 4), x.reshape(16, 4)[::-1])


@cf.kernel
class SharedTypesDefinedInPlace:
    """__shared__ declarations of a type they define (an anonymous union, a named struct, an array
    of it): one object for the block, as on a GPU, not one per thread."""

    x: cf.In[cf.int32]
    out: cf.Out[cf.int32]
    block = 32
    body = """
    __shared__ union { int as_int[32]; float as_float[32]; } u;
    __shared__ struct Pair { int a; int b; } pairs[32], last;
    int t = threadIdx.x;
    u.as_int[t] = x[t];
    pairs[t].a = t;
    pairs[t].b = 2 * x[t];
    if (t == 31) last = pairs[t];
    __syncthreads();
    out[t] = u.as_int[31 - t] + pairs[31 - t].b + 1000 * last.a;
    """


@pytest.mark.parametrize("check", [False, True])
def test_shared_declarations_of_types_they_define_are_the_block_s(check):
    x = np.arange(32, dtype=np.int32) * 3
    out = np.zeros(32, np.int32)
    SharedTypesDefinedInPlace(x, out, grid=1, device="cpu", check=check)
    np.testing.assert_array_equal(out, 3 * x[::-1] + 31000)


@cf.kernel
class SharedPair:
    """Two __shared__ arrays of one kernel, and a __shared__ array in a __device__ function."""

    x: cf.In[cf.int32]
    out: cf.Out[cf.int64]
    block = 128
    preamble = """
    __device__ int mirrored(int v) {
        __shared__ int staged[128];
        staged[threadIdx.x] = v;
        __syncthreads();
        int r = staged[blockDim.x - 1 - threadIdx.x];
        __syncthreads();
        return r;
    }
    """
    body = """
    __shared__ int squares[128];
    __shared__ long long scaled[128];
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    int v = x[i];
    squares[threadIdx.x] = v * v;
    scaled[threadIdx.x] = 1000000000LL * v;
    __syncthreads();
    unsigned other = (threadIdx.x + 1) % blockDim.x;
    out[i] = squares[other] + scaled[other] + mirrored(v);
    """


def test_two_shared_arrays_and_shared_in_a_device_function():
    x = RNG.integers(-1000, 1000, (3, 128)).astype(np.int32)
    out = np.zeros((3, 128), np.int64)
    SharedPair(x.ravel(), out, grid=3, device="cpu")
    v = x.astype(np.int64)
    other = np.roll(v, -1, axis=1)
    np.testing.assert_array_equal(out, other * other + 1_000_000_000 * other + v[:, ::-1])


@cf.kernel
class Rotate:
    """A family: `__shared__ T s[N]` per instantiation."""

    T = cf.typeparam(cf.float64, cf.int16)
    N = cf.intparam(64, 32)
    x: cf.Array[T]
    block = "N"
    body = """
    __shared__ T s[N];
    long long i = blockIdx.x * (long long)N + threadIdx.x;
    s[threadIdx.x] = x[i];
    __syncthreads();
    x[i] = s[(threadIdx.x + 1) % N] + s[threadIdx.x];
    """


@pytest.mark.parametrize("ctype, dtype, n", [(cf.float64, np.float64, 64), (cf.int16, np.int16, 32)])
def test_template_shared_array_per_instantiation(ctype, dtype, n):
    x = RNG.integers(-100, 100, (3, n)).astype(dtype)
    want = np.roll(x, -1, axis=1) + x
    Rotate[ctype, n](x.ravel(), grid=3, device="cpu")
    np.testing.assert_array_equal(x, want)


_BLOCK_SUM = """
template <typename T> __device__ T block_sum(T v) {
    static __shared__ T partial[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffff, v, m);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    v = threadIdx.x < blockDim.x / 32 ? partial[lane] : (T)0;
    for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffff, v, m);
    return v;
}
"""


@cf.kernel
class HelperSumOnly:
    """A Megatron-style block sum whose `static __shared__` partials live in a template helper."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    preamble = _BLOCK_SUM
    body = "float s = block_sum<float>(x[blockIdx.x * 64 + threadIdx.x]); if (threadIdx.x == 0) y[blockIdx.x] = s;"


@cf.kernel
class HelperSumAfterOwn:
    """The same helper after a __shared__ variable of the kernel's own: another library's layout."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    preamble = _BLOCK_SUM
    body = """
    __shared__ float scale;
    if (threadIdx.x == 0) scale = 2.f;
    __syncthreads();
    float s = block_sum<float>(x[blockIdx.x * 64 + threadIdx.x]) * scale;
    if (threadIdx.x == 0) y[blockIdx.x] = s;
    """


@pytest.mark.parametrize("check", [False, True])
def test_a_static_shared_array_in_a_template_helper_is_each_librarys_own(check):
    """Two kernels' libraries with the same inline helper: GCC made its static local one object
    for the process (STB_GNU_UNIQUE), so the second library used the first's place in shared
    memory (a wrong sum unchecked, a false out-of-bounds report checked)."""
    x = RNG.random(128).astype(np.float32)
    for kernel, factor in ((HelperSumOnly, 1), (HelperSumAfterOwn, 2)):
        y = np.zeros(2, np.float32)
        kernel(x, y, grid=2, device="cpu", check=check)
        np.testing.assert_allclose(y, factor * x.reshape(2, 64).sum(axis=1), rtol=1e-5)


# ---------------------------------------------------------------- atomics


@cf.kernel
class Atomics:
    """A shared-memory histogram merged into a global one, a float sum of integers, a lock-free
    max through atomicCAS, and atomicInc's wrap-around."""

    x: cf.In[cf.int32]
    hist: cf.Array[cf.uint32]
    total: cf.Array[cf.float32]
    biggest: cf.Array[cf.int32]
    ring: cf.Array[cf.uint32]
    n: cf.int64
    grid = "n"
    block = 256
    body = """
    __shared__ unsigned bins[256];
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    bins[threadIdx.x] = 0;
    __syncthreads();
    if (i < n) {
        int v = x[i];
        atomicAdd(&bins[v & 255], 1u);
        atomicAdd(total, float(v & 7));
        int seen = *biggest;
        while (v > seen) {
            int was = atomicCAS(biggest, seen, v);
            if (was == seen) break;
            seen = was;
        }
        atomicInc(ring, 9u);
    }
    __syncthreads();
    if (bins[threadIdx.x]) atomicAdd(&hist[threadIdx.x], bins[threadIdx.x]);
    """


@pytest.fixture(scope="module")
def atomics():
    n = 100_000
    x = RNG.integers(0, 2**31 - 1, n).astype(np.int32)
    hist = np.zeros(256, np.uint32)
    total = np.zeros(1, np.float32)
    biggest = np.full(1, -1, np.int32)
    ring = np.zeros(1, np.uint32)
    Atomics(x, hist, total, biggest, ring, n, device="cpu")
    return x, hist, total, biggest, ring


def test_shared_then_global_histogram(atomics):
    x, hist, *_ = atomics
    np.testing.assert_array_equal(hist, np.bincount(x & 255, minlength=256))


def test_float_atomic_add_of_integers_is_exact(atomics):
    x, _, total, *_ = atomics
    assert total[0] == float((x & 7).sum())  # under 2**24: every partial sum is exact


def test_atomic_cas_max(atomics):
    x, _, _, biggest, _ = atomics
    assert biggest[0] == x.max()


def test_atomic_inc_wraps_past_its_limit(atomics):
    x, *_, ring = atomics
    assert ring[0] == len(x) % 10  # atomicInc(p, 9) counts 0..9 then back to 0


# ---------------------------------------------------------------- module variables

MODULE_SOURCE = """
__constant__ int table[4] = {3, 5, 7, 11};
__device__ long long stash[4];
extern "C" __global__ void put(const int* x, long long* y) {
    stash[threadIdx.x] = (long long)x[threadIdx.x] * table[threadIdx.x];
    y[threadIdx.x] = stash[threadIdx.x] + 1;
}
extern "C" __global__ void take(long long* y) { y[threadIdx.x] = stash[threadIdx.x]; }
"""


@cf.kernel
class Put:
    x: cf.In[cf.int32]
    y: cf.Out[cf.int64]
    name = "put"
    block = 4
    source = MODULE_SOURCE


@cf.kernel
class Take:
    y: cf.Out[cf.int64]
    name = "take"
    block = 4
    source = MODULE_SOURCE


def test_constant_array_initialised_in_the_source_and_a_device_variable():
    y = np.zeros(4, np.int64)
    Put(np.array([1, -2, 3, 1000], np.int32), y, device="cpu")
    assert y.tolist() == [4, -9, 22, 11001]


def test_kernels_of_one_source_share_device_variables():
    y = np.zeros(4, np.int64)
    Put(np.array([1, -2, 3, 1000], np.int32), np.zeros(4, np.int64), device="cpu")
    Take(y, device="cpu")  # one source, one program: the same stash (as on the GPU and CuPy's RawModule)
    assert y.tolist() == [3, -10, 21, 11000]


def test_set_global_and_get_global_on_the_cpu():
    y = np.zeros(4, np.int64)
    Put.set_global("table", np.array([2, 4, 6, 8], np.int32), device="cpu")
    Put(np.array([1, 1, 1, 1], np.int32), y, device="cpu")
    assert y.tolist() == [3, 5, 7, 9]
    assert Put.get_global("stash", np.int64, device="cpu").tolist() == [2, 4, 6, 8]


@cf.kernel
class StaticTable:
    """The CUDA samples' module variables, declared static (quasirandomGenerator's c_Table)."""

    y: cf.Out[cf.uint32]
    block = 12
    preamble = "static __constant__ unsigned int c_Table[3][4];\nstatic __device__ unsigned int calls;"
    body = "y[threadIdx.x] = c_Table[threadIdx.x / 4][threadIdx.x % 4]; if (threadIdx.x == 0) atomicAdd(&calls, 1u);"


def test_static_module_variables_are_found_by_name():
    StaticTable.set_global("c_Table", np.arange(12, dtype=np.uint32) * 3, device="cpu")
    StaticTable.set_global("calls", np.uint32(0), device="cpu")
    y = np.zeros(12, np.uint32)
    StaticTable(y, device="cpu")
    assert y.tolist() == list(range(0, 36, 3))
    assert StaticTable.get_global("calls", np.uint32, device="cpu")[0] == 1


# ---------------------------------------------------------------- types, printf, math


@cf.kernel
class Saxpy4:
    a: cf.float32
    x: cf.In[cf.vector(cf.float32, 4)]
    y: cf.Array[cf.vector(cf.float32, 4)]
    n4: cf.int64
    grid = "n4"
    block = 64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n4) { float4 v = x[i], w = y[i];
                  y[i] = make_float4(a * v.x + w.x, a * v.y + w.y, a * v.z + w.z, a * v.w + w.w); }
    """


def test_float4_arrays():
    x = RNG.integers(-100, 100, (1000, 4)).astype(np.float32)
    y = RNG.integers(-100, 100, (1000, 4)).astype(np.float32)
    want = np.float32(2.5) * x + y
    Saxpy4(2.5, x, y, 1000, device="cpu")
    np.testing.assert_array_equal(y, want)


@cf.kernel
class HalfOps:
    x: cf.In[cf.float16]
    y: cf.In[cf.float16]
    out: cf.Out[cf.float16]
    n: cf.int64
    grid = "n"
    block = 128
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] * y[i] + x[i];
    """


def test_half_arithmetic_rounds_as_numpy_float16():
    x = RNG.uniform(-4, 4, 3000).astype(np.float16)
    y = RNG.uniform(-4, 4, 3000).astype(np.float16)
    out = np.zeros(3000, np.float16)
    HalfOps(x, y, out, 3000, device="cpu")
    np.testing.assert_array_equal(out, x * y + x)  # each operation rounded to half, as NumPy does


@cf.kernel
class CMul:
    x: cf.In[cf.complex64]
    y: cf.Array[cf.complex64]
    n: cf.int64
    grid = "n"
    block = 64
    body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] * y[i] + 1.0f;"


def test_complex_multiply():
    x = (RNG.integers(-50, 50, 500) + 1j * RNG.integers(-50, 50, 500)).astype(np.complex64)
    y = (RNG.integers(-50, 50, 500) + 1j * RNG.integers(-50, 50, 500)).astype(np.complex64)
    want = x * y + 1
    CMul(x, y, 500, device="cpu")
    np.testing.assert_array_equal(y, want)  # integer parts: exact


@cf.kernel
class Maths:
    x: cf.In[cf.float32]
    out: cf.Out[cf.float32]
    n: cf.int64
    grid = "n"
    block = 64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        out[0 * n + i] = expf(v);
        out[1 * n + i] = sinf(v);
        out[2 * n + i] = sqrtf(fabsf(v));
        out[3 * n + i] = fmaf(v, v, 1.0f);
        if (i == 0) printf("Maths: block %d thread %d of %d sees %.2f\\n", blockIdx.x, threadIdx.x, blockDim.x, v);
    }
    """


def test_math_functions_and_printf(capfd):
    x = RNG.uniform(-5, 5, 300).astype(np.float32)
    out = np.zeros((4, 300), np.float32)
    Maths(x, out, 300, device="cpu")
    np.testing.assert_allclose(out[0], np.exp(x), rtol=2e-7)
    np.testing.assert_allclose(out[1], np.sin(x), rtol=2e-7, atol=1e-7)
    np.testing.assert_array_equal(out[2], np.sqrt(np.abs(x)))  # correctly rounded, as on the GPU
    np.testing.assert_array_equal(out[3], (x.astype(np.float64) ** 2 + 1).astype(np.float32))  # one rounding
    assert capfd.readouterr().out == f"Maths: block 0 thread 0 of 64 sees {x[0]:.2f}\n"


@cf.kernel
class Bits:
    x: cf.In[cf.uint32]
    out: cf.Out[cf.int32]
    n: cf.int64
    grid = "n"
    block = 64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) { out[2 * i] = __popc(x[i]); out[2 * i + 1] = __clz(int(x[i])); }
    """


def test_popc_and_clz():
    x = RNG.integers(0, 2**32, 500, dtype=np.uint64).astype(np.uint32)
    x[:3] = [0, 1, 0xFFFFFFFF]
    out = np.zeros((500, 2), np.int32)
    Bits(x, out, 500, device="cpu")
    assert out[:, 0].tolist() == [bin(int(v)).count("1") for v in x]
    assert out[:, 1].tolist() == [32 - int(v).bit_length() for v in x]


# ---------------------------------------------------------------- compile options

SCALED_BODY = """
long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
if (i < n) y[i] = SCALE * x[i];
#ifdef NEGATE
if (i < n) y[i] = -y[i];
#endif
"""


@cf.kernel
class Scaled:
    x: cf.In[cf.int32]
    y: cf.Out[cf.int32]
    n: cf.int64
    options = cf.CompileOptions(defines={"SCALE": 5})
    body = SCALED_BODY


@cf.kernel
class ScaledNegated:
    x: cf.In[cf.int32]
    y: cf.Out[cf.int32]
    n: cf.int64
    options = cf.CompileOptions(defines={"SCALE": "(2 + 1)", "NEGATE": None})
    body = SCALED_BODY


def test_defines_with_and_without_a_value():
    x = RNG.integers(-1000, 1000, 300).astype(np.int32)
    y = np.zeros_like(x)
    Scaled(x, y, x.size, grid=3, block=128, device="cpu")
    np.testing.assert_array_equal(y, 5 * x)
    ScaledNegated(x, y, x.size, grid=3, block=128, device="cpu")
    np.testing.assert_array_equal(y, -3 * x)


@cf.kernel
class ArchGuarded:
    """Code under #if __CUDA_ARCH__ >= 700 (as cuda-samples write it), with CCCL headers that read
    __CUDA_ARCH__ themselves: the CPU build is sm_90's, and CCCL stays in its host mode."""

    x: cf.In[cf.int32]
    y: cf.Out[cf.int32]
    arch: cf.Out[cf.int32]
    n: cf.int64
    preamble = """#include <cuda/std/numeric>
#include <cuda/cmath>
#include <cuda/memory>
#include <cuda/std/__utility/typeid.h>
#include <cuda_fp16.h>
#include <cooperative_groups.h>"""
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
#if __CUDA_ARCH__ >= 700
    if (i < n) y[i] = cuda::std::gcd(x[i], 12) + 1000 * cuda::ceil_div(x[i], 4);
#endif
#if defined(__CUDA_ARCH__) && defined(CUFORGE_CPU)
    if (i == 0) { arch[0] = __CUDA_ARCH__; arch[1] = CUFORGE_CPU; }
#endif
"""


def test_cuda_arch_is_sm_90_s_and_cccl_headers_build_with_it():
    x = RNG.integers(1, 1000, 300).astype(np.int32)
    y, arch = np.zeros_like(x), np.zeros(2, np.int32)
    ArchGuarded(x, y, arch, x.size, grid=3, block=128, device="cpu")
    np.testing.assert_array_equal(y, np.gcd(x, 12) + 1000 * ((x + 3) // 4))
    assert arch.tolist() == [900, 1]


# ---------------------------------------------------------------- faults and refusals


@cf.kernel
class Faulty:
    """mode 0 runs well; 1 a divergent barrier; 2 a warp function some lanes never reach;
    3 a failed assert; 4 a write through a wild pointer; 5 __trap() and 6 __assertfail() (what
    CUDA's assert calls on a device) in thread 37 of block 1."""

    mode: cf.int32
    out: cf.Array[cf.int32]
    block = 64
    body = """
    unsigned t = threadIdx.x;
    long long i = blockIdx.x * (long long)blockDim.x + t;
    if (mode == 1) { if (t < 16) __syncthreads(); }
    if (mode == 2) { if (t % 32 < 8) out[i] = __shfl_sync(0xffffffffu, (int)t, 0); }
    if (mode == 3) {
        assert(out[i] >= 0);
    }
    if (mode == 4) ((int*)16)[t] = 1;
    if (mode == 5 && i == 64 + 37) __trap();
    if (mode == 6 && i == 64 + 37) __assertfail("mode != 6", __FILE__, __LINE__, "Faulty", 1);
    out[i] += 1;
    """


def runs_well() -> None:
    """The process goes on: a good launch of the same kernel afterwards."""
    out = np.arange(64, dtype=np.int32)
    Faulty(0, out, grid=1, device="cpu")
    assert out.tolist() == list(range(1, 65))


def test_divergent_barrier_is_a_launch_error():
    with pytest.raises(
        cf.LaunchError,
        match=r"Faulty \(grid=.*\) on the CPU: block \(0, 0, 0\): threads \[0-15\] wait at the __syncthreads at "
        r"Faulty.body, line \d+, which threads \[16-63\] exited without reaching",
    ):
        Faulty(1, np.zeros(64, np.int32), grid=1, device="cpu", check=True)
    runs_well()


def test_warp_function_some_lanes_never_reach():
    with pytest.raises(
        cf.LaunchError,
        match=r"Faulty .* block \(0, 0, 0\): thread 8 \(lane 8\) exited without reaching the __shfl_sync that "
        r"lanes 0x000000ff of its warp wait at \(mask 0xffffffff\) at Faulty.body, line 4;",
    ):
        Faulty(2, np.zeros(64, np.int32), grid=1, device="cpu")
    runs_well()


def test_failed_assert_is_a_device_fault():
    out = np.zeros(128, np.int32)
    out[64 + 37] = -1
    with pytest.raises(
        cf.DeviceFaultError,
        match=r"Faulty .* on the CPU: assert\(out\[i\] >= 0\) failed at Faulty\.body, line 6, in block \(1, 0, 0\), "
        r"thread \(37, 0, 0\)",
    ):
        Faulty(3, out, grid=2, device="cpu")
    runs_well()


def test_wild_pointer_write_is_a_device_fault():
    with pytest.raises(cf.DeviceFaultError, match=r"Faulty faulted on the CPU .*segmentation fault.* at address 0x10"):
        Faulty(4, np.zeros(64, np.int32), grid=1, device="cpu")
    runs_well()


@cf.kernel
class FaultsAt:
    """Thread (tx, ty) of block (bx, by) writes through a null pointer; sync = 1 takes a path with
    a barrier (the threads are not a plain loop then)."""

    out: cf.Array[cf.int32]
    bx: cf.int32
    by: cf.int32
    tx: cf.int32
    ty: cf.int32
    sync: cf.int32
    body = """
    long long b = blockIdx.x + (long long)gridDim.x * blockIdx.y;
    long long i = b * blockDim.x * blockDim.y + threadIdx.y * blockDim.x + threadIdx.x;
    if (sync) { __syncthreads(); }
    if (blockIdx.x == bx && blockIdx.y == by && threadIdx.x == tx && threadIdx.y == ty) ((volatile int*)0)[i] = 1;
    out[i] = 1;
    """


@cf.kernel
class FaultsAtPlainly:
    """FaultsAt with no barrier anywhere in its source: its threads run as a vectorizable loop."""

    out: cf.Array[cf.int32]
    bx: cf.int32
    by: cf.int32
    body = """
    long long b = blockIdx.x + (long long)gridDim.x * blockIdx.y;
    long long i = b * blockDim.x * blockDim.y + threadIdx.y * blockDim.x + threadIdx.x;
    if (blockIdx.x == bx && blockIdx.y == by && threadIdx.x == 7) ((volatile int*)0)[i] = 1;
    out[i] = 1;
    """


@pytest.mark.parametrize("grid, at", [((4096, 1), (2048, 0)), ((400, 1), (399, 0)), ((8, 1), (5, 0)), ((64, 40), (3, 37))])
def test_a_fault_names_its_block_and_thread(grid, at):
    n = grid[0] * grid[1] * 32
    with pytest.raises(cf.DeviceFaultError, match=rf"segmentation fault.* in block \({at[0]}, {at[1]}, 0\)\. "):
        # (unchecked: a checked build never runs its threads as the plain loop this is about)
        FaultsAtPlainly(np.zeros(n, np.int32), at[0], at[1], grid=grid, block=32, device="cpu", check=False)
    for sync in (0, 1):  # the same source, on the loop of threads and on fibers
        with pytest.raises(cf.DeviceFaultError, match=rf" in block \({at[0]}, {at[1]}, 0\), thread \(3, 2, 0\)\. "):
            FaultsAt(np.zeros(n, np.int32), at[0], at[1], 3, 2, sync, grid=grid, block=(8, 4), device="cpu")
    runs_well()


@pytest.mark.parametrize(
    "mode, what",
    [(5, r"__trap\(\) called at Faulty\.body, line 9"), (6, r"assert\(mode != 6\) failed at Faulty\.body, line 10")],
    ids=["trap", "assertfail"],
)
def test_trap_ends_the_launch_with_a_device_fault(mode, what):
    with pytest.raises(
        cf.DeviceFaultError,
        match=rf"Faulty \(grid=\(2, 1, 1\), block=\(64, 1, 1\)\) on the CPU: {what}, in block \(1, 0, 0\), "
        r"thread \(37, 0, 0\)$",
    ):
        Faulty(mode, np.zeros(128, np.int32), grid=2, device="cpu")
    runs_well()


@cf.kernel
class Breaks:
    """No barrier: its threads run as the plain loop (the other path __trap must leave)."""

    out: cf.Array[cf.int32]
    at: cf.int64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i == at) __brkpt();
    out[i] = 1;
    """


def test_brkpt_in_a_plain_loop_is_a_device_fault():
    with pytest.raises(cf.DeviceFaultError, match=r"Breaks .* on the CPU: __brkpt\(\) called at Breaks\.body, line 2, in "
                       r"block \(2, 0, 0\), thread \(5, 0, 0\)$"):  # fmt: skip
        Breaks(np.zeros(128, np.int32), 2 * 32 + 5, grid=4, block=32, device="cpu")
    out = np.zeros(128, np.int32)
    Breaks(out, -1, grid=4, block=32, device="cpu")
    assert (out == 1).all()


class DeviceMemory:
    """Memory a GPU library would hand over: known by __cuda_array_interface__ only."""

    def __init__(self, n: int) -> None:
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "<i4", "data": (0x7F0000000000, False),
                                         "version": 3, "strides": None}  # fmt: skip


def test_device_memory_is_refused_with_the_fix():
    with pytest.raises(
        cf.ArgumentTypeError,
        match=r"Faulty: argument 'out' expects Array\[int32\], got a cai array in GPU memory, but the launch runs on "
        r"the CPU; pass host memory: copy it to a NumPy array first",
    ):
        Faulty(0, DeviceMemory(64), grid=1, device="cpu")
    runs_well()


def test_wrong_dtype_is_refused_before_anything_runs():
    out = np.zeros(64, np.int32)
    with pytest.raises(cf.ArgumentTypeError, match=r"Faulty: argument 'out' expects Array\[int32\], got .*float64"):
        Faulty(0, np.zeros(64, np.float64), grid=1, device="cpu")
    with pytest.raises(cf.ArgumentTypeError, match=r"HalfOps: argument 'x' expects In\[float16\], got .*float32"):
        HalfOps(np.zeros(4, np.float32), np.zeros(4, np.float16), np.zeros(4, np.float16), 4, device="cpu")
    assert not out.any()
    runs_well()


@cf.kernel
class InlinePtx:
    x: cf.Array[cf.uint32]
    body = """
    unsigned lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    x[threadIdx.x] = lane;
    """


@cf.kernel
class CubSort:
    x: cf.Array[cf.int32]
    block = 128
    preamble = "#include <cub/block/block_radix_sort.cuh>"
    body = """
    using Sort = cub::BlockRadixSort<int, 128, 1>;
    __shared__ typename Sort::TempStorage tmp;
    int key[1] = {x[threadIdx.x]};
    Sort(tmp).Sort(key);
    x[threadIdx.x] = key[0];
    """


@pytest.mark.parametrize(
    "kernel, construct, where",
    [(InlinePtx, r"inline PTX \(asm\)", r'InlinePtx\.body, line 2: asm\("mov\.u32 %0, %%laneid;" : "=r"\(lane\)\);'),
     (CubSort, r"CUB device code other than cub::BlockReduce, BlockScan, BlockLoad, BlockStore, WarpReduce, "
      r"WarpScan, KeyValuePair, ArgMin and ArgMax",
      r"line \d+")],  # (the rendered preamble has no #line of its own)
    ids=["asm", "cub"],
)  # fmt: skip
def test_constructs_the_cpu_cannot_run_are_refused_at_compile(kernel, construct, where):
    with pytest.raises(cf.CompileError, match=rf"{kernel.__name__}: {construct} cannot run on the CPU \({where}\); "
                       r"launch it on a GPU with device='cuda'"):  # fmt: skip
        kernel(np.zeros(128, kernel.signature.params[0].type.dtype.numpy), grid=1, device="cpu")
    runs_well()


@cf.kernel
class PackedDots:
    """__dp4a and __dp2a_lo/_hi (sm_61's packed-integer dot products; ggml's quantized dots use
    them), signed and unsigned, on ints and on char4; and __builtin_assume, which GCC lacks."""

    a: cf.In[cf.int32]
    b: cf.In[cf.int32]
    out: cf.Out[cf.int32]
    body = """
    int i = threadIdx.x;
    __builtin_assume(i >= 0);
    out[6 * i + 0] = __dp4a(a[i], b[i], 7);
    out[6 * i + 1] = (int)__dp4a((unsigned)a[i], (unsigned)b[i], 7u);
    out[6 * i + 2] = __dp2a_lo(a[i], b[i], -3);
    out[6 * i + 3] = __dp2a_hi(a[i], b[i], -3);
    out[6 * i + 4] = (int)__dp2a_hi((unsigned)a[i], (unsigned)b[i], 5u);
    out[6 * i + 5] = __dp4a(*reinterpret_cast<const char4*>(&a[i]), *reinterpret_cast<const char4*>(&b[i]), 0);
    """


def packed_dots_inputs():
    rng = np.random.default_rng(3)
    return tuple(rng.integers(-(2**31), 2**31, 64, dtype=np.int64).astype(np.int32) for _ in range(2))


def test_packed_integer_dot_products_against_numpy():
    a, b = packed_dots_inputs()
    out = np.zeros((64, 6), np.int32)
    PackedDots(a, b, out.ravel(), grid=1, block=64, device="cpu")
    sa, sb = (v.view(np.int8).reshape(64, 4).astype(np.int64) for v in (a, b))
    ua, ub = (v.view(np.uint8).reshape(64, 4).astype(np.int64) for v in (a, b))
    ha, uha = a.view(np.int16).reshape(64, 2).astype(np.int64), a.view(np.uint16).reshape(64, 2).astype(np.int64)

    def wrap(v):
        return ((v + 2**31) % 2**32 - 2**31).astype(np.int32)

    np.testing.assert_array_equal(out[:, 0], wrap((sa * sb).sum(1) + 7))
    np.testing.assert_array_equal(out[:, 1], wrap((ua * ub).sum(1) + 7))
    np.testing.assert_array_equal(out[:, 2], wrap(ha[:, 0] * sb[:, 0] + ha[:, 1] * sb[:, 1] - 3))
    np.testing.assert_array_equal(out[:, 3], wrap(ha[:, 0] * sb[:, 2] + ha[:, 1] * sb[:, 3] - 3))
    np.testing.assert_array_equal(out[:, 4], wrap(uha[:, 0] * ub[:, 2] + uha[:, 1] * ub[:, 3] + 5))
    np.testing.assert_array_equal(out[:, 5], wrap((sa * sb).sum(1)))


@cf.kernel
class SpecialFunctions:
    """The inverse error functions, the normal distribution's, the modified Bessel functions of
    order 0 and 1 (CUDA's math API; the CPU computes them in long double), and __tanhf."""

    x: cf.In[cf.float64]
    out: cf.Out[cf.float64]
    n: cf.int32
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double v = x[i];
    out[8 * i + 0] = erfinv(v);
    out[8 * i + 1] = erfcinv(v + 1.0);
    out[8 * i + 2] = normcdf(4 * v);
    out[8 * i + 3] = normcdfinv((v + 1.0) / 2.0);
    out[8 * i + 4] = cyl_bessel_i0(20 * v);
    out[8 * i + 5] = cyl_bessel_i1(20 * v);
    out[8 * i + 6] = erfinvf((float)v);
    out[8 * i + 7] = __tanhf((float)v);
    """


def test_special_functions_invert_python_s_erf_and_sum_the_bessel_series():
    import math

    v = np.concatenate([np.linspace(-0.999999, 0.999999, 101), [1e-12, -1e-7, 0.9999999999, -0.99999999]])
    out = np.zeros((v.size, 8))
    SpecialFunctions(v, out.ravel(), v.size, grid=2, block=64, device="cpu")
    erf, erfc = np.vectorize(math.erf), np.vectorize(math.erfc)

    def bessel(order, x):
        q, term = x * x / 4, (x / 2 if order else 1.0)
        total, k = term, 1
        while abs(term) > abs(total) * 1e-18:
            term *= q / (k * (k + order))
            total, k = total + term, k + 1
        return total

    np.testing.assert_allclose(erf(out[:, 0]), v, rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(erfc(out[:, 1]), v + 1, rtol=1e-14)
    np.testing.assert_allclose(out[:, 2], 0.5 * erfc(-4 * v / math.sqrt(2)), rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(0.5 * erfc(-out[:, 3] / math.sqrt(2)), (v + 1) / 2, rtol=1e-13)
    np.testing.assert_allclose(out[:, 4], [bessel(0, 20 * t) for t in v], rtol=1e-14)
    np.testing.assert_allclose(out[:, 5], [bessel(1, 20 * t) for t in v], rtol=1e-14, atol=1e-300)
    vf = v.astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(erf(out[:, 6]), vf, rtol=2e-7, atol=1e-30)
    np.testing.assert_allclose(out[:, 7], np.tanh(vf), atol=2e-7)


@cf.kernel
class Fp8RoundTrip:
    """<cuda_fp8.h>'s e4m3 and e5m2, each float converted and back (its constructor saturates)."""

    x: cf.In[cf.float32]
    e4m3: cf.Out[cf.float32]
    e5m2: cf.Out[cf.float32]
    preamble = "#include <cuda_fp8.h>"
    body = """
    int i = threadIdx.x;
    e4m3[i] = float(__nv_fp8_e4m3(x[i]));
    e5m2[i] = float(__nv_fp8_e5m2(x[i]));
    """


FP8_INPUTS = np.array([0.0, 1.0, -1.5, 3.14159, 100.0, 500.0, 1e-3, -0.0625, 448.0, 1000.0, 57344.0, 1e5], np.float32)


@pytest.mark.parametrize("check", [False, True])
def test_fp8_conversions_round_and_saturate(check):
    e4m3, e5m2 = np.zeros(12, np.float32), np.zeros(12, np.float32)
    Fp8RoundTrip(FP8_INPUTS, e4m3, e5m2, grid=1, block=12, device="cpu", check=check)
    np.testing.assert_array_equal(e4m3, [0, 1, -1.5, 3.25, 96, 448, 2**-9, -0.0625, 448, 448, 448, 448])
    np.testing.assert_array_equal(e5m2, [0, 1, -1.5, 3, 96, 512, 2**-10, -0.0625, 448, 1024, 57344, 57344])


@cf.kernel
class PipelineCopy:
    """<cuda_pipeline_primitives.h>'s copy into shared memory, and the address-space predicates."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 32
    preamble = "#include <cuda_pipeline_primitives.h>"
    body = """
    __shared__ float s[32];
    float mine;
    int i = threadIdx.x;
    __pipeline_memcpy_async(&s[i], &x[i], sizeof(float));
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    y[i] = s[31 - i] + 100.f * __isShared(&s[i]) + 1000.f * __isGlobal(&x[i]) + 10000.f * __isLocal(&mine);
    """


@pytest.mark.parametrize("check", [False, True])
def test_pipeline_primitives_copy_and_the_address_space_predicates(check):
    x = np.arange(32, dtype=np.float32)
    y = np.zeros(32, np.float32)
    PipelineCopy(x, y, grid=1, device="cpu", check=check)
    np.testing.assert_array_equal(y, x[::-1] + 11100)


@cf.kernel
class StagedPipeline:
    """Two batches of cp.async copies, the second zero-filled (zfill = size): the first waited for
    with __pipeline_wait_prior(1) and read, then the second; mode 1 reads before any wait."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    mode: cf.int32
    block = 64
    preamble = "#include <cuda_pipeline.h>"
    body = """
    __shared__ float s[2][64];
    int t = threadIdx.x;
    __pipeline_memcpy_async(&s[0][t], &x[t], 4); __pipeline_commit();
    __pipeline_memcpy_async(&s[1][t], &x[64 + t], 4, 4); __pipeline_commit();
    if (mode == 0) __pipeline_wait_prior(1);
    __syncthreads();
    float a = s[0][63 - t];
    __pipeline_wait_prior(0);
    __syncthreads();
    y[t] = a + s[1][(t + 1) % 64];
    """


@cf.kernel
class UnwaitedCopies:
    """Mode 1 issues a copy into s and never waits for it; mode 0 writes s itself, then waits for
    a copy into r: a copy the last launch left must not land in this one's shared memory."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    mode: cf.int32
    block = 32
    preamble = "#include <cuda_pipeline_primitives.h>"
    body = """
    __shared__ float s[32], r[32];
    int t = threadIdx.x;
    if (mode == 1) { __pipeline_memcpy_async(&s[t], &x[t], 4); __pipeline_commit(); y[t] = 0.f; return; }
    s[t] = 7.f;
    __pipeline_memcpy_async(&r[t], &x[t], 4); __pipeline_commit(); __pipeline_wait_prior(0);
    __syncthreads();
    y[t] = s[t] + r[(t + 1) % 32];
    """


@pytest.mark.parametrize("check", [False, True])
def test_a_copy_never_waited_for_does_not_outlive_its_launch(check):
    x = np.arange(32, dtype=np.float32) + 100
    y = np.zeros(32, np.float32)
    for _ in range(3):
        UnwaitedCopies(x, y, 1, grid=1, device="cpu", check=check)
        UnwaitedCopies(x, y, 0, grid=1, device="cpu", check=check)
        np.testing.assert_array_equal(y, 7 + np.roll(x, -1))


def test_pipeline_copies_complete_at_their_wait():
    x = np.arange(128, dtype=np.float32)
    for check in (False, True):
        y = np.zeros(64, np.float32)
        StagedPipeline(x, y, 0, grid=1, device="cpu", check=check)
        np.testing.assert_array_equal(y, x[:64][::-1])
    with pytest.raises(cf.UninitializedReadError, match=r"__shared__ variable 's'.* at StagedPipeline\.body, line 7: "):
        StagedPipeline(x, np.zeros(64, np.float32), 1, grid=1, device="cpu", check=True)


SIMD_TWO = ["__vadd", "__vsub", "__vaddss", "__vsubss", "__vaddus", "__vsubus", "__vabsdiffs", "__vabsdiffu", "__vavgu",
             "__vhaddu", "__vmaxs", "__vmaxu", "__vmins", "__vminu", "__vcmpeq", "__vcmpne", "__vcmpges", "__vcmpgeu",
             "__vcmpgts", "__vcmpgtu", "__vcmples", "__vcmpleu", "__vcmplts", "__vcmpltu", "__vseteq", "__vsetne",
             "__vsetges", "__vsetgeu", "__vsetgts", "__vsetgtu", "__vsetles", "__vsetleu", "__vsetlts", "__vsetltu",
             "__vsads", "__vsadu"]  # fmt: skip
SIMD_ONE = ["__vabs", "__vabsss", "__vneg", "__vnegss"]
SIMD_CALLS = [f"{name}{w}(a[i], b[i])" for name in SIMD_TWO for w in "24"] + [
    f"{name}{w}(a[i])" for name in SIMD_ONE for w in "24"
]


@cf.kernel
class SimdVideo:
    """CUDA's SIMD video intrinsics, each on every pair of inputs (column k: SIMD_CALLS[k])."""

    a: cf.In[cf.uint32]
    b: cf.In[cf.uint32]
    out: cf.Out[cf.uint32]
    n: cf.int32
    body = "int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;\n" + "\n".join(
        f"out[{k} * n + i] = {call};" for k, call in enumerate(SIMD_CALLS)
    )


def simd_inputs():
    rng = np.random.default_rng(0)
    a, b = (rng.integers(0, 2**32, 256, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    a[:8] = [0x80808080, 0x7F7F7F7F, 0, 0xFFFFFFFF, 0x80007FFF, 0x01020304, 0x80FF7F01, 0x8000]
    b[:8] = [0x80808080, 0x80808080, 0xFFFFFFFF, 1, 0x7FFF8000, 0x04030201, 0x7F0180FF, 0x8000]
    return a, b


def test_simd_video_intrinsics_lane_by_lane():
    a, b = simd_inputs()
    out = np.zeros((len(SIMD_CALLS), 256), np.uint32)
    SimdVideo(a, b, out.ravel(), 256, grid=4, block=64, device="cpu")
    got = dict(zip(SIMD_CALLS, out))
    sa, sb = a.view(np.int8).reshape(256, 4).astype(np.int64), b.view(np.int8).reshape(256, 4).astype(np.int64)
    ua, ub = a.view(np.uint8).reshape(256, 4).astype(np.int64), b.view(np.uint8).reshape(256, 4).astype(np.int64)

    def pack(lanes):
        return (lanes.astype(np.int64) & 0xFF).astype(np.uint8).view(np.uint32).ravel()

    np.testing.assert_array_equal(got["__vadd4(a[i], b[i])"], pack(ua + ub))
    np.testing.assert_array_equal(got["__vaddss4(a[i], b[i])"], pack(np.clip(sa + sb, -128, 127)))
    np.testing.assert_array_equal(got["__vsubus4(a[i], b[i])"], pack(np.clip(ua - ub, 0, 255)))
    np.testing.assert_array_equal(got["__vabsdiffs4(a[i], b[i])"], pack(np.abs(sa - sb)))
    np.testing.assert_array_equal(got["__vavgu4(a[i], b[i])"], pack((ua + ub + 1) >> 1))
    np.testing.assert_array_equal(got["__vcmpgts4(a[i], b[i])"], pack(np.where(sa > sb, 255, 0)))
    np.testing.assert_array_equal(got["__vsetltu4(a[i], b[i])"], pack((ua < ub).astype(np.int64)))
    np.testing.assert_array_equal(got["__vsadu4(a[i], b[i])"], np.abs(ua - ub).sum(axis=1).astype(np.uint32))
    np.testing.assert_array_equal(got["__vabsss4(a[i])"], pack(np.minimum(np.abs(sa), 127)))
    np.testing.assert_array_equal(got["__vneg4(a[i])"], pack(-ua))


# ---------------------------------------------------------------- DPX and directed roundings
DPX_THREE = [f"__vi{op}_{t}" for op in ("max3", "min3", "addmax", "addmin") for t in ("s32", "u32", "s16x2", "u16x2")] + [
    f"__vi{op}_{t}_relu" for op in ("max3", "min3", "addmax", "addmin") for t in ("s32", "s16x2")]  # fmt: skip
DPX_TWO = [f"__vi{op}_{t}_relu" for op in ("max", "min") for t in ("s32", "s16x2")]
DPX_CALLS = [f"{f}(a[i], b[i], c[i])" for f in DPX_THREE] + [f"{f}(a[i], b[i])" for f in DPX_TWO]
DPX_WINNERS = [f"__vib{op}_{t}" for op in ("max", "min") for t in ("s32", "u32", "s16x2", "u16x2")]


@cf.kernel
class Dpx:
    """sm_90's DPX functions (emulated on older GPUs) on every triple of inputs: row k of `out` is
    DPX_CALLS[k], then each of DPX_WINNERS' result and predicates (low bit lo, next hi)."""

    a: cf.In[cf.uint32]
    b: cf.In[cf.uint32]
    c: cf.In[cf.uint32]
    out: cf.Out[cf.uint32]
    n: cf.int32
    body = "int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;\nbool hi = false, lo = false;\n" + "\n".join(
        f"out[{k} * n + i] = (unsigned)({call});" for k, call in enumerate(DPX_CALLS)
    ) + "\n" + "\n".join(
        f"out[{len(DPX_CALLS) + 2 * k} * n + i] = (unsigned){f}(({'int' if f.endswith('s32') else 'unsigned'})a[i], "
        f"({'int' if f.endswith('s32') else 'unsigned'})b[i], {'&lo' if f.endswith('32') else '&hi, &lo'}); "
        f"out[{len(DPX_CALLS) + 2 * k + 1} * n + i] = lo + 2 * hi; hi = lo = false;"
        for k, f in enumerate(DPX_WINNERS)
    )  # fmt: skip


def dpx_inputs():
    rng = np.random.default_rng(1)
    a, b, c = (rng.integers(0, 2**32, 256, dtype=np.uint64).astype(np.uint32) for _ in range(3))
    a[:6] = [0x80000000, 0x7FFFFFFF, 0xFFFF8000, 0x00017FFF, 5, 0xFFFFFFFF]
    b[:6] = [0xFFFFFFFF, 1, 0x80000001, 0x00010001, 5, 0]
    c[:6] = [0x80000000, 0x80000000, 0, 0x80008000, 5, 0x7FFF7FFF]
    return a, b, c


def _dpx_model(name, a, b, c):
    """What DPX function `name` gives, lane by lane in Python integers."""
    op, kind = name[4:].split("_", 1)
    relu, kind = kind.endswith("_relu"), kind.replace("_relu", "")
    bits, signed = (32, kind == "s32") if kind.endswith("32") else (16, kind == "s16x2")

    def lanes(x):
        out = [(int(x) >> (bits * k)) & ((1 << bits) - 1) for k in range(32 // bits)]
        return [v - (1 << bits) if signed and v >> (bits - 1) else v for v in out]

    def wrap(v):
        v &= (1 << bits) - 1
        return v - (1 << bits) if signed and v >> (bits - 1) else v

    res = []
    for x, y, z in zip(lanes(a), lanes(b), lanes(c)):
        r = {"max3": max(x, y, z), "min3": min(x, y, z), "addmax": max(wrap(x + y), z), "addmin": min(wrap(x + y), z),
             "max": max(x, y), "min": min(x, y)}[op]  # fmt: skip
        res.append(max(r, 0) if relu else r)
    return sum((v & ((1 << bits) - 1)) << (bits * k) for k, v in enumerate(res))


def test_dpx_functions_lane_by_lane():
    a, b, c = dpx_inputs()
    rows = len(DPX_CALLS) + 2 * len(DPX_WINNERS)
    out = np.zeros((rows, 256), np.uint32)
    Dpx(a, b, c, out.ravel(), 256, grid=4, block=64, device="cpu")
    for call, got in zip(DPX_CALLS, out):
        want = [_dpx_model(call.split("(")[0], *abc) for abc in zip(a, b, c)]
        np.testing.assert_array_equal(got, np.array(want, np.uint64).astype(np.uint32), err_msg=call)
    for k, f in enumerate(DPX_WINNERS):
        got, preds = out[len(DPX_CALLS) + 2 * k], out[len(DPX_CALLS) + 2 * k + 1]
        best = "max" if "max" in f else "min"
        want = [_dpx_model(f"__vi{best}_{f.split('_', 3)[3]}", x, y, 0) for x, y in zip(a, b)]
        np.testing.assert_array_equal(got, np.array(want, np.uint64).astype(np.uint32), err_msg=f)
        kind = f.split("_", 3)[3]
        bits, signed = (32, kind == "s32") if kind.endswith("32") else (16, kind == "s16x2")
        for lane in range(32 // bits):

            def val(x, lane=lane, bits=bits, signed=signed):
                v = (int(x) >> (bits * lane)) & ((1 << bits) - 1)
                return v - (1 << bits) if signed and v >> (bits - 1) else v

            won = [(val(x) >= val(y)) if best == "max" else (val(x) <= val(y)) for x, y in zip(a, b)]
            np.testing.assert_array_equal((preds >> lane) & 1, np.array(won, np.uint32), err_msg=f"{f} lane {lane}")


ROUNDED = ["add", "sub", "mul", "div", "rcp", "sqrt", "fma"]


def _rounded_calls(prefix, fma):
    calls = []
    for op in ROUNDED:
        for mode in ("rz", "ru", "rd"):
            args = {"rcp": "a[i]", "sqrt": "a[i]", "fma": "a[i], b[i], c[i]"}.get(op, "a[i], b[i]")
            calls.append(f"{fma if op == 'fma' else prefix + op}_{mode}({args})")
    return calls


FLOAT_ROUNDED, DOUBLE_ROUNDED = _rounded_calls("__f", "__fmaf"), _rounded_calls("__d", "__fma")


def _directed_kernel(name, ctype, calls):
    """Each arithmetic intrinsic with a directed rounding on every triple of inputs (row k of
    `out`: calls[k])."""
    body = "int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;\n" + "\n".join(
        f"out[{k} * n + i] = {call};" for k, call in enumerate(calls)
    )
    return cf.kernel(type(name, (), {"__annotations__": {"a": cf.In[ctype], "b": cf.In[ctype], "c": cf.In[ctype],
                                                         "out": cf.Out[ctype], "n": cf.int32}, "body": body}))  # fmt: skip


DIRECTED = {np.float32: _directed_kernel("DirectedRoundingFloat", cf.float32, FLOAT_ROUNDED),
            np.float64: _directed_kernel("DirectedRoundingDouble", cf.float64, DOUBLE_ROUNDED)}  # fmt: skip


def rounding_inputs(dtype):
    rng = np.random.default_rng(7)
    a, b, c = ((rng.standard_normal(96) * 4.0 ** rng.integers(-6, 6, 96)).astype(dtype) for _ in range(3))
    a, b = np.abs(a), b  # (sqrt's operand is a)
    tiny = np.finfo(dtype).tiny
    a[:4] = [tiny, 3, 1, np.finfo(dtype).max]  # a subnormal product, exact cases, an overflowing sum
    b[:4] = [dtype(0.75), 1, 3, np.finfo(dtype).max]
    c[:4] = [0, -3, 1e-3, 0]
    return a, b, c


def _exact(v):
    from fractions import Fraction

    return Fraction(float(v))


def _exact_round(q, dtype, mode):
    """The value of `dtype` that rational q rounds to toward zero (rz), up (ru) or down (rd)."""
    big = np.finfo(dtype).max
    if q > _exact(big):
        return dtype(np.inf) if mode == "ru" else big
    if q < -_exact(big):
        return dtype(-np.inf) if mode == "rd" else -big
    v = dtype(float(q))
    while _exact(v) > q:
        v = np.nextafter(v, dtype(-np.inf))
    while np.nextafter(v, dtype(np.inf)) <= big and _exact(np.nextafter(v, dtype(np.inf))) <= q:
        v = np.nextafter(v, dtype(np.inf))
    down = v  # the largest value <= q
    up = down if _exact(down) == q else np.nextafter(down, dtype(np.inf))
    return {"rd": down, "ru": up, "rz": down if q >= 0 else up}[mode]


def _rounded_want(call, a, b, c, dtype):
    op, mode = call.split("(")[0].rsplit("_", 1)
    op = "fma" if "fma" in op else op[3:]
    x, y, z = _exact(a), _exact(b), _exact(c)
    if op == "sqrt":  # the largest value whose square is <= a, or the smallest whose square is >= a
        v = dtype(np.sqrt(a))
        while _exact(v) ** 2 > x:
            v = np.nextafter(v, dtype(-np.inf))
        while _exact(np.nextafter(v, dtype(np.inf))) ** 2 <= x:
            v = np.nextafter(v, dtype(np.inf))
        return v if _exact(v) ** 2 == x or mode != "ru" else np.nextafter(v, dtype(np.inf))
    q = {"add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y, "div": lambda: x / y, "rcp": lambda: 1 / x,
         "fma": lambda: x * y + z}[op]()  # fmt: skip
    return _exact_round(q, dtype, mode)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_directed_rounding_intrinsics_are_exact(dtype):
    calls = FLOAT_ROUNDED if dtype == np.float32 else DOUBLE_ROUNDED
    a, b, c = rounding_inputs(dtype)
    out = np.zeros((len(calls), len(a)), dtype)
    DIRECTED[dtype](a, b, c, out.ravel(), len(a), grid=2, block=48, device="cpu")
    for call, got in zip(calls, out):
        want = np.array([_rounded_want(call, *abc, dtype) for abc in zip(a, b, c)], dtype)
        np.testing.assert_array_equal(got, want, err_msg=call)


@cf.kernel
class NotInlined:
    """__noinline__ as CUDA code writes it, and as libstdc++ writes it (GCC 13's <string> and
    <memory>, which libcu++ headers bring in): both build."""

    y: cf.Out[cf.float32]
    preamble = """
    #include <cuda/std/functional>
    __device__ __noinline__ float twice(float v) { return 2 * v; }
    __device__ __attribute__((__noinline__)) float thrice(float v) { return 3 * v; }
    """
    body = "y[threadIdx.x] = cuda::std::plus<float>{}(twice(threadIdx.x), thrice(1.f));  // (__noinline__ in a comment)"


@pytest.mark.parametrize("check", [False, True])
def test_noinline_as_a_specifier_and_as_an_attribute_name(check):
    y = np.zeros(4, np.float32)
    NotInlined(y, grid=1, block=4, device="cpu", check=check)
    np.testing.assert_array_equal(y, 2 * np.arange(4) + 3)


@cf.kernel
class UndefinedTable:
    y: cf.Out[cf.float32]
    preamble = "extern __device__ float table[16];"
    body = "y[threadIdx.x] = table[threadIdx.x];"


def test_a_symbol_declared_and_never_defined_is_a_compile_error_naming_it():
    with pytest.raises(cf.CompileError, match=r"UndefinedTable: its CPU build could not be loaded: .*undefined symbol: "
                       r"table; 'undefined symbol' names a function or variable declared, and defined in none of the "
                       r"sources this build compiled: define it"):  # fmt: skip
        UndefinedTable(np.zeros(4, np.float32), grid=1, block=4, device="cpu")
    runs_well()


@cf.kernel
class LookAlikes:
    """Names like the refused calls' that are not the C library's: a member, a comment, a string."""

    out: cf.Out[cf.int32]
    preamble = "struct Door { __device__ int exit(int v) const { return v + 1; } };"
    body = """
    int i = threadIdx.x;
    Door d;  // abort() or exit(1) here would end the process
    const char* s = "throw std::terminate()";
    out[i] = d.exit(i) + (s[0] == 't');
    """


def test_names_like_the_refused_calls_are_not_refused():
    out = np.zeros(32, np.int32)
    LookAlikes(out, grid=1, block=32, device="cpu")
    assert out.tolist() == [i + 2 for i in range(32)]


# ---------------------------------------------------------------- what would end the process

# Run in a child process: a regression here ends the process rather than failing a test. Each
# case prints one JSON line: [its name, the exception's type (or "ok"), its message (or the output's sum)].
CHILD = textwrap.dedent(
    """
    import json, sys, numpy as np, cuforge as cf
    cases = json.loads(sys.argv[1])
    for name, preamble, body in cases:
        K = cf.kernel(type(name, (), {"__annotations__": {"x": cf.Array[cf.int32]}, "preamble": preamble,
                                      "body": body, "block": 64}))
        x = np.zeros(128, np.int32)
        x[64 + 5] = 1
        try:
            K(x, grid=2, device="cpu")
            print(json.dumps([name, "ok", int(x.sum())]), flush=True)
        except cf.CuforgeError as e:
            print(json.dumps([name, type(e).__name__, str(e)]), flush=True)
    """
)
ASSERT_BODY = "long long i = blockIdx.x * 64LL + threadIdx.x;\nassert(x[i] == 0);\nx[i] += 1;"
# (<cassert> and <assert.h>, which NVRTC cannot open, are refused at compile: test_host_headers_...)
ASSERT_HEADERS = {"cuda_std": "<cuda/std/cassert>"}
ENDS_PROCESS = {"abort": "abort();", "exit": "exit(3);", "std_exit": "::std::exit(0);", "Exit": "_Exit(1);",
                "quick_exit": "quick_exit(0);", "terminate": "std::terminate();", "builtin_trap": "__builtin_trap();",
                "raise": "raise(15);", "kill": "kill(0, 0);", "pthread_exit": "pthread_exit(nullptr);",
                "throw": "throw 1;"}  # fmt: skip
# libcu++'s host path throws where its device path calls __trap() (an empty optional's value()),
# in the plain loop and on fibers (after a barrier)
THROWS_BODY = "long long i = blockIdx.x * 64LL + threadIdx.x;\ncuda::std::optional<int> o;\nif (x[i] == 0) o = 1;\n"
THROWS_BODY += "x[i] = o.value();"
THROWS = {"plain": THROWS_BODY, "fibers": "__syncthreads();\n" + THROWS_BODY}


@pytest.fixture(scope="module")
def child_results(tmp_path_factory) -> dict[str, list]:
    cases = [[f"Assert_{k}", f"#include {h}", ASSERT_BODY] for k, h in ASSERT_HEADERS.items()]
    cases += [[f"NoAssert_{k}", f"#define NDEBUG\n#include {h}", ASSERT_BODY] for k, h in ASSERT_HEADERS.items()]
    cases += [[f"Ends_{k}", "", f"x[threadIdx.x] = 1;\nif (threadIdx.x == 3) {{ {c} }}"] for k, c in ENDS_PROCESS.items()]
    cases += [[f"Throws_{k}", "#include <cuda/std/optional>", b] for k, b in THROWS.items()]
    env = {**os.environ, "CUFORGE_CACHE_DIR": str(tmp_path_factory.mktemp("cuforge-cache")), "CUFORGE_DEVICE": "cpu"}
    run = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cases)], capture_output=True, text=True, env=env,
                         timeout=300)  # fmt: skip
    results = {line[0]: line for line in map(json.loads, run.stdout.splitlines())}
    assert run.returncode == 0 and len(results) == len(cases), (run.returncode, run.stdout[-2000:], run.stderr[-2000:])
    return results


@pytest.mark.parametrize("header", ASSERT_HEADERS)
def test_assert_raises_whatever_assert_header_the_source_includes(child_results, header):
    name, kind, message = child_results[f"Assert_{header}"]
    assert kind == "DeviceFaultError", message
    assert re.fullmatch(rf"{name} \(grid=\(2, 1, 1\), block=\(64, 1, 1\)\) on the CPU: assert\(x\[i\] == 0\) failed at "
                        rf"{name}\.body, line 2, in block \(1, 0, 0\), thread \(5, 0, 0\)", message)  # fmt: skip


@pytest.mark.parametrize("header", ASSERT_HEADERS)
def test_ndebug_before_an_assert_header_turns_assert_off(child_results, header):
    assert child_results[f"NoAssert_{header}"][1:] == ["ok", 128 + 1]  # every thread went past it


@pytest.mark.parametrize("case", ENDS_PROCESS)
def test_calls_that_would_end_the_process_are_refused_at_compile(child_results, case):
    name, kind, message = child_results[f"Ends_{case}"]
    call = ENDS_PROCESS[case]
    what = ("throw: device code does not support exception handling" if case == "throw"
            else re.escape(call[: call.index("(")]) + r"\(\) is a host function, which device code cannot call")  # fmt: skip
    assert kind == "CompileError", message
    assert re.fullmatch(rf"{name}: {what} \(NVRTC refuses it too\), and on the CPU it would end \(or hang\) the Python process "
                        rf"\({name}\.body, line 2: if \(threadIdx\.x == 3\) \{{ {re.escape(call)} \}}\); to end the "
                        r"launch with an error, call __trap\(\) or assert\(condition\), which raise DeviceFaultError",
                        message)  # fmt: skip


@pytest.mark.parametrize("path", THROWS)
def test_an_exception_from_library_code_is_a_device_fault(child_results, path):
    name, kind, message = child_results[f"Throws_{path}"]
    assert kind == "DeviceFaultError", message
    assert re.fullmatch(rf"{name} \(grid=\(2, 1, 1\), block=\(64, 1, 1\)\) on the CPU: a C\+\+ exception \(bad optional "
                        r"access\) left the kernel's code in block \(1, 0, 0\), thread \(5, 0, 0\); on a GPU, the library's "
                        r"device code ends the launch with __trap\(\) there", message)  # fmt: skip


@cf.kernel
class AggregatedIncrement:
    """The warp-primitives blog's aggregated atomic, inside a divergent branch: __activemask()
    there is the branch's lanes, on a GPU and on the CPU."""

    ctr: cf.Array[cf.int32]
    out: cf.Out[cf.int32]
    body = """
    int i = threadIdx.x;
    if (i % 2 == 0) {
        unsigned mask = __activemask();
        int leader = __ffs(mask) - 1, res = 0;
        if ((threadIdx.x % 32) == leader) res = atomicAdd(ctr, __popc(mask));
        res = __shfl_sync(mask, res, leader);
        out[i] = res + __popc(mask & ((1u << (threadIdx.x % 32)) - 1));
    }
    """


@pytest.mark.parametrize("check", [False, True])
def test_activemask_in_a_divergent_branch_is_the_branch_s_lanes(check):
    ctr, out = np.zeros(1, np.int32), np.full(64, -1, np.int32)
    AggregatedIncrement(ctr, out, grid=1, block=64, device="cpu", check=check)
    assert ctr[0] == 32
    np.testing.assert_array_equal(np.sort(out[::2]), np.arange(32))  # (each even thread a slot of its own)
    assert (out[1::2] == -1).all()


@pytest.mark.parametrize(
    "include, header, instead",
    [("#include <cassert>", "cassert", "<cuda/std/cassert>"), ("#include <assert.h>", "assert.h", "<cuda/std/cassert>"),
     ("#include <float.h>", "float.h", "<cuda/std/cfloat>"), ("  #  include <climits>", "climits", "<cuda/std/climits>"),
     ("#include <stdio.h>", "stdio.h", "nothing: device code's printf needs no header")],
)  # fmt: skip
def test_host_headers_nvrtc_cannot_open_are_refused_on_the_cpu_too(include, header, instead):
    """What NVRTC refuses, the CPU build refuses too: a CPU test must not pass for a kernel that
    cannot compile for a GPU (NVRTC: 'cannot open source file')."""

    @cf.kernel
    class HostHeader:
        x: cf.Array[cf.float32]
        preamble = include
        body = "x[threadIdx.x] = 1.0f;"

    with pytest.raises(cf.CompileError, match=rf"HostHeader: <{re.escape(header)}> is a host header that NVRTC cannot "
                                              rf"open, .* include {re.escape(instead)}$"):  # fmt: skip
        HostHeader(np.zeros(4, np.float32), grid=1, block=4, device="cpu")
    with pytest.raises(cf.CompileError, match="cannot open source file"):
        HostHeader.compile(arch="sm_90")


def test_a_bare_infinity_is_refused_as_nvrtc_refuses_it():
    @cf.kernel
    class BareInfinity:
        x: cf.Array[cf.float32]
        body = "x[threadIdx.x] = INFINITY;"

    with pytest.raises(cf.CompileError, match=r"BareInfinity: INFINITY is a macro of the host's <math.h>.*CUDART_INF_F"):
        BareInfinity(np.zeros(4, np.float32), grid=1, block=4, device="cpu")
    with pytest.raises(cf.CompileError, match='identifier "INFINITY" is undefined'):
        BareInfinity.compile(arch="sm_90")

    @cf.kernel
    class NamedInfinity:
        x: cf.Array[cf.float32]
        preamble = "#include <math_constants.h>"
        body = "x[threadIdx.x] = CUDART_INF_F;"

    x = np.zeros(4, np.float32)
    NamedInfinity(x, grid=1, block=4, device="cpu")
    assert np.isinf(x).all()
