"""Kernels for the checked CPU launch (tests/cpu/test_cpu_check.py), written as users write them.

``BUGGY``: each case is a kernel with one bug, the arguments that show it, the error a checked
launch must raise and the line of the body it must name. ``CORRECT``: kernels none of which may
be flagged, each with its arguments and what it must compute (checked and unchecked alike).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

import cuforge as cf


class Buggy(NamedTuple):
    kernel: Any
    args: Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]
    error: type[cf.CuforgeError]
    line: int  # of the body
    match: str  # what else the message must say


class Correct(NamedTuple):
    kernel: Any
    args: Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]
    expected: Callable[[tuple[Any, ...]], list[tuple[Any, Any]]]  # (got, expected) pairs after the launch


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random(shape, dtype=np.float32)


# ---------------------------------------------------------------- out of bounds


@cf.kernel
class TileCopyEdge:
    """A 16x16-tiled copy whose row guard is off by one: harmless while the height is a
    multiple of 16 (no thread has y == h), out of bounds past the last row otherwise."""

    src: cf.In[cf.float32]
    dst: cf.Out[cf.float32]
    w: cf.int32
    h: cf.int32
    block = (16, 16)
    body = """
    int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
    if (x < w && y <= h)
        dst[y * w + x] = src[y * w + x];
    """


def _tile_edge(w: int, h: int) -> Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]:
    return lambda: ((_rand(h * w), np.zeros(h * w, np.float32), w, h), {"grid": (-(-w // 16), -(-h // 16))})


@cf.kernel
class StencilLeft:
    """A 3-point stencil that forgets the left edge: x[i - 1] at i == 0."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 128
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n - 1)
        y[i] = (x[i - 1] + x[i] + x[i + 1]) / 3.f;
    """


@cf.kernel
class SharedShift:
    """Reads its right neighbour's shared element, one past the tile for the last thread."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float tile[64];
    __shared__ float other[64];
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    tile[t] = x[i];
    other[t] = 0.f;
    __syncthreads();
    y[i] = tile[t + 1] - tile[t];
    """


@cf.kernel
class DynamicHalo:
    """Dynamic shared memory of one float per thread, written with a halo it has no room for."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 128
    body = """
    extern __shared__ float s[];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t + 1] = x[i];
    __syncthreads();
    y[i] = s[t + 1];
    """


@cf.kernel
class ConstantTaps:
    """A 4-tap filter in constant memory whose loop runs one tap too far."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 64
    preamble = "__constant__ float taps[4] = {0.1f, 0.2f, 0.3f, 0.4f};"
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i + 4 >= n) return;
    float acc = 0.f;
    for (int k = 0; k <= 4; ++k)
        acc += taps[k] * x[i + k];
    y[i] = acc;
    """


@cf.kernel
class Float4Misaligned:
    """float4 loads from x + 1: an address 4 bytes past a 16-byte boundary."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 32
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 v = reinterpret_cast<const float4*>(x + 1)[i];
    y[i] = v.x + v.y + v.z + v.w;
    """


# ---------------------------------------------------------------- uninitialised reads


@cf.kernel
class SharedTimesZero:
    """A shared element no thread writes, read (and multiplied by zero): the result looks right."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float s[65];
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    s[t] = x[i];
    __syncthreads();
    y[i] = s[t] + 0.f * s[t + 1];
    """


@cf.kernel
class AccumulateIntoOut:
    """Adds into an Out[...] argument, whose contents are undefined on a GPU."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    block = 128
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] += 2.f * x[i];
    """


@cf.kernel
class HalfLoadedReduction:
    """Loads half the block's shared array and reduces all of it."""

    x: cf.In[cf.float32]
    out: cf.Array[cf.float32]
    block = 128
    body = """
    __shared__ float s[256];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * 128 + t];
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) atomicAdd(out, s[0]);
    """


# ---------------------------------------------------------------- races


@cf.kernel
class NeighbourNoBarrier:
    """Reads its left neighbour's shared element with no __syncthreads: right on the CPU's schedule
    (thread t-1 ran first), a race on a GPU."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float s[64];
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    s[t] = x[i];
    float left = t > 0 ? s[t - 1] : 0.f;
    y[i] = s[t] + left;
    """


@cf.kernel
class WarpReduceNoSyncwarp:
    """A block reduction whose last warp runs warp-synchronously without __syncwarp (pre-Volta style)."""

    x: cf.In[cf.float32]
    out: cf.Array[cf.float32]
    block = 128
    body = """
    __shared__ float s[128];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * 128 + t];
    __syncthreads();
    for (int k = 64; k > 32; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t < 32) {
        s[t] += s[t + 32];
        s[t] += s[t + 16];
        s[t] += s[t + 8];
        s[t] += s[t + 4];
        s[t] += s[t + 2];
        s[t] += s[t + 1];
    }
    if (t == 0) atomicAdd(out, s[0]);
    """


@cf.kernel
class EveryBlockWritesTotal:
    """Each block stores its sum into total[0] with a plain store: blocks race."""

    x: cf.In[cf.float32]
    total: cf.Array[cf.float32]
    block = 64
    body = """
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * 64 + t];
    __syncthreads();
    if (t == 0) {
        float acc = 0.f;
        for (int k = 0; k < 64; ++k) acc += s[k];
        total[0] = total[0] + acc;
    }
    """


@cf.kernel
class CounterNoAtomic:
    """Counts positive values with a non-atomic increment of a shared counter."""

    x: cf.In[cf.float32]
    count: cf.Array[cf.int32]
    block = 64
    body = """
    __shared__ int c;
    int t = threadIdx.x;
    if (t == 0) c = 0;
    __syncthreads();
    if (x[blockIdx.x * 64 + t] > 0.5f) c = c + 1;
    __syncthreads();
    if (t == 0) atomicAdd(count, c);
    """


# ---------------------------------------------------------------- warp and barrier misuse


@cf.kernel
class ShuffleInHalfWarp:
    """A full-mask shuffle called by only half of each warp."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 32
    body = """
    int t = threadIdx.x, i = blockIdx.x * 32 + t;
    float v = x[i];
    if (t < 16)
        v += __shfl_down_sync(0xffffffff, v, 8);
    y[i] = v;
    """


@cf.kernel
class MaskLeavesLanesOut:
    """A shuffle every lane calls with a mask of the low half only."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 32
    body = """
    int t = threadIdx.x, i = blockIdx.x * 32 + t;
    float v = x[i];
    v += __shfl_xor_sync(0x0000ffff, v, 1);
    y[i] = v;
    """


@cf.kernel
class DivergentBarrier:
    """A __syncthreads inside a branch that only some threads take."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float s[64];
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    s[t] = x[i];
    if (x[i] > 0.5f)
        __syncthreads();
    y[i] = 2.f * s[t];
    """


def _xy(n: int, **launch: Any) -> Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]:
    return lambda: ((_rand(n), np.zeros(n, np.float32)), launch)


BUGGY: dict[str, Buggy] = {
    "tile edge off by one": Buggy(TileCopyEdge, _tile_edge(40, 24), cf.OutOfBoundsError, 3,
                                  r"read of 4 bytes: parameter 'src' \(In\[float32\]\), index 960, outside its extent of 960"),
    "negative index": Buggy(StencilLeft, lambda: ((_rand(300), np.zeros(300, np.float32), 300), {}), cf.OutOfBoundsError,
                            3, r"parameter 'x' .*index -1, outside its extent of 300 .*thread \(0, 0, 0\) of block \(0, 0, 0\)"),
    "shared past the tile": Buggy(SharedShift, _xy(128), cf.OutOfBoundsError, 7,
                                  r"__shared__ variable 'tile', index 64, outside its extent of 64 .*thread \(63, 0, 0\)"),
    "dynamic shared halo": Buggy(DynamicHalo, _xy(256, shared_mem=128 * 4), cf.OutOfBoundsError, 3,
                                 r"dynamic shared memory \('extern __shared__ float s\[\]'\), index 128, outside its "
                                 r"extent of 128"),
    "constant taps": Buggy(ConstantTaps, lambda: ((_rand(100), np.zeros(100, np.float32), 100), {}), cf.OutOfBoundsError,
                           5, r"module variable 'taps', index 16, outside its extent of 16"),
    "misaligned float4": Buggy(Float4Misaligned, lambda: ((_rand(256), np.zeros(32, np.float32)), {"grid": 1}),
                               cf.MisalignedAccessError, 2, r"misaligned access to a float4 \(aligned to 16 bytes\)"),
    "shared times zero": Buggy(SharedTimesZero, _xy(128), cf.UninitializedReadError, 5,
                               r"__shared__ variable 's', index 64 \(extent 65\)"),
    "accumulate into Out": Buggy(AccumulateIntoOut, lambda: ((_rand(200), np.zeros(200, np.float32), 200), {}),
                                 cf.UninitializedReadError, 3, r"parameter 'y' \(Out\[float32\]\), index 0"),
    "half-loaded reduction": Buggy(HalfLoadedReduction, lambda: ((_rand(256), np.zeros(1, np.float32)), {"grid": 2}),
                                   cf.UninitializedReadError, 6, r"__shared__ variable 's', index 1\d\d|2\d\d \(extent 256\)"),
    "neighbour without barrier": Buggy(NeighbourNoBarrier, _xy(128), cf.RaceError, 4,
                                       r"__shared__ variable 's', index 0 \(extent 64\): thread \(1, 0, 0\) of block "
                                       r"\(0, 0, 0\) reads it, and thread \(0, 0, 0\) of block \(0, 0, 0\) wrote it"),
    "warp-synchronous without __syncwarp": Buggy(WarpReduceNoSyncwarp, lambda: ((_rand(256), np.zeros(1, np.float32)),
                                                                                {"grid": 2}),
                                                 cf.RaceError, 10, r"__shared__ variable 's'"),
    "blocks store one total": Buggy(EveryBlockWritesTotal, lambda: ((_rand(256), np.zeros(1, np.float32)), {"grid": 4}),
                                    cf.RaceError, 8, r"parameter 'total' .*in different blocks"),
    "non-atomic shared counter": Buggy(CounterNoAtomic, lambda: ((np.ones(128, np.float32), np.zeros(1, np.int32)),
                                                                 {"grid": 2}),
                                       cf.RaceError, 5, r"__shared__ variable 'c'"),
    "shuffle in half a warp": Buggy(ShuffleInHalfWarp, _xy(64), cf.WarpMisuseError, 0, r"exited without reaching the "
                                    r"__shfl_down_sync"),
    "mask leaves lanes out": Buggy(MaskLeavesLanesOut, _xy(64), cf.WarpMisuseError, 0, r"mask 0x0000ffff at MaskLeavesLanesOut"
                                   r"\.body, line \d+, which leaves its own lane out"),
    "divergent barrier": Buggy(DivergentBarrier, _xy(128), cf.BarrierMisuseError, 0, r"__syncthreads"),
}  # fmt: skip


# ---------------------------------------------------------------- correct kernels


@cf.kernel
class Histograms:
    """A shared-memory histogram per block, merged into a global one with atomics."""

    x: cf.In[cf.int32]
    hist: cf.Array[cf.int32]
    n: cf.int32
    block = 128
    body = """
    __shared__ int local[16];
    int t = threadIdx.x;
    if (t < 16) local[t] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[x[i] & 15], 1);
    __syncthreads();
    if (t < 16) atomicAdd(&hist[t], local[t]);
    """


@cf.kernel
class WarpShuffleSum:
    """A full-mask shuffle reduction per warp, one atomic per warp."""

    x: cf.In[cf.float32]
    out: cf.Array[cf.float32]
    n: cf.int32
    block = 128
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
    """


@cf.kernel
class WarpSyncReduce:
    """The last warp's shared-memory reduction, warp-synchronous with __syncwarp between steps."""

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
        float v = s[t] + s[t + 32];
        for (int o = 16; o > 0; o >>= 1) {
            s[t] = v;
            __syncwarp();
            v += s[t + o];
            __syncwarp();
        }
        if (t == 0) out[blockIdx.x] = v;
    }
    """


@cf.kernel
class DoubleBufferedMatMul:
    """C = A B with 16x16 tiles, two tile buffers, one __syncthreads per step."""

    a: cf.In[cf.float32]
    b: cf.In[cf.float32]
    c: cf.Out[cf.float32]
    n: cf.int32
    block = (16, 16)
    body = """
    __shared__ float ta[2][16][16];
    __shared__ float tb[2][16][16];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    ta[0][ty][tx] = a[row * n + tx];
    tb[0][ty][tx] = b[ty * n + col];
    __syncthreads();
    float acc = 0.f;
    int steps = n / 16;
    for (int s = 0; s < steps; ++s) {
        int cur = s & 1;
        if (s + 1 < steps) {
            ta[cur ^ 1][ty][tx] = a[row * n + (s + 1) * 16 + tx];
            tb[cur ^ 1][ty][tx] = b[((s + 1) * 16 + ty) * n + col];
        }
        for (int k = 0; k < 16; ++k) acc += ta[cur][ty][k] * tb[cur][k][tx];
        __syncthreads();
    }
    c[row * n + col] = acc;
    """


@cf.kernel
class LastBlockSum:
    """Partial sums per block; the last block to finish (a __threadfence and an atomic counter)
    adds them up (the CUDA samples' threadFenceReduction)."""

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
        __threadfence();
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


@cf.kernel
class TwoPhase:
    """A cooperative kernel: each block writes its slice, the grid syncs, each block reads its
    neighbour's slice."""

    x: cf.In[cf.float32]
    tmp: cf.Array[cf.float32]
    y: cf.Out[cf.float32]
    cooperative = True
    grid = 4
    block = 32
    preamble = "#include <cooperative_groups.h>"
    body = """
    cooperative_groups::grid_group g = cooperative_groups::this_grid();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tmp[i] = 2.f * x[i];
    g.sync();
    int j = (i + blockDim.x) % (gridDim.x * blockDim.x);
    y[i] = tmp[j];
    """


@cf.kernel
class ReverseDynamic:
    """Reverses each block's slice through dynamic shared memory."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 64
    body = """
    extern __shared__ float s[];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t] = x[i];
    __syncthreads();
    y[i] = s[blockDim.x - 1 - t];
    """


@cf.kernel
class TreeReduce:
    """A shared-memory tree reduction per block, one atomic per block."""

    x: cf.In[cf.float32]
    out: cf.Array[cf.float32]
    n: cf.int32
    block = 256
    body = """
    __shared__ float s[256];
    int t = threadIdx.x, i = blockIdx.x * 256 + t;
    s[t] = i < n ? x[i] : 0.f;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) atomicAdd(out, s[0]);
    """


@cf.kernel
class TiledMatMul:
    """C = A B with 16x16 shared tiles (n a multiple of 16)."""

    a: cf.In[cf.float32]
    b: cf.In[cf.float32]
    c: cf.Out[cf.float32]
    n: cf.int32
    block = (16, 16)
    body = """
    __shared__ float ta[16][16];
    __shared__ float tb[16][16];
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
    c[row * n + col] = acc;
    """


@cf.kernel
class Saxpy:
    a: cf.float32
    x: cf.In[cf.float32]
    y: cf.Array[cf.float32]
    n: cf.int64
    block = 256
    body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i];"


def _matmul_args(kernel_n: int) -> Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]:
    n = kernel_n
    return lambda: ((_rand(n * n, seed=1), _rand(n * n, seed=2), np.zeros(n * n, np.float32), n),
                    {"grid": (n // 16, n // 16)})  # fmt: skip


def _matmul_expected(a: tuple[Any, ...]) -> list[tuple[Any, Any]]:
    n = a[3]
    return [(a[2].reshape(n, n), a[0].reshape(n, n) @ a[1].reshape(n, n))]


def _ints() -> np.ndarray:
    return np.random.default_rng(3).integers(0, 1000, 5000).astype(np.int32)


CORRECT: dict[str, Correct] = {
    "global and shared atomics": Correct(
        Histograms, lambda: ((_ints(), np.zeros(16, np.int32), 5000), {"grid": 8}),
        lambda a: [(a[1], np.bincount(a[0] & 15, minlength=16))]),
    "full-mask shuffles": Correct(
        WarpShuffleSum, lambda: ((_rand(1000), np.zeros(1, np.float32), 1000), {}),
        lambda a: [(a[1][0], a[0].sum())]),
    "warp-synchronous with __syncwarp": Correct(
        WarpSyncReduce, lambda: ((_rand(512), np.zeros(4, np.float32)), {"grid": 4}),
        lambda a: [(a[1], a[0].reshape(4, 128).sum(1))]),
    "double-buffered tiles": Correct(DoubleBufferedMatMul, _matmul_args(64), _matmul_expected),
    "last-block reduction": Correct(
        LastBlockSum, lambda: ((_rand(640), np.zeros(10, np.float32), np.zeros(1, np.uint32), np.zeros(1, np.float32)),
                               {"grid": 10}),
        lambda a: [(a[3][0], a[0].sum()), (a[2][0], 0)]),
    "cooperative two-phase": Correct(
        TwoPhase, lambda: ((_rand(128), np.zeros(128, np.float32), np.zeros(128, np.float32)), {}),
        lambda a: [(a[2], np.roll(2 * a[0], -32))]),
    "dynamic shared memory": Correct(
        ReverseDynamic, lambda: ((_rand(256), np.zeros(256, np.float32)), {"shared_mem": 64 * 4}),
        lambda a: [(a[1], a[0].reshape(4, 64)[:, ::-1].ravel())]),
    "tree reduction": Correct(
        TreeReduce, lambda: ((_rand(3000), np.zeros(1, np.float32), 3000), {}),
        lambda a: [(a[1][0], a[0].sum())]),
    "tiled matmul": Correct(TiledMatMul, _matmul_args(48), _matmul_expected),
    "tile copy, height a multiple of 16": Correct(
        TileCopyEdge, _tile_edge(40, 32), lambda a: [(a[1], a[0])]),
    "saxpy": Correct(
        Saxpy, lambda: ((2.0, _rand(1000), _rand(1000, seed=5), 1000), {}),
        lambda a: [(a[2], 2 * a[1] + _rand(1000, seed=5))]),
}  # fmt: skip
