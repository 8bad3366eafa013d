"""Checked launches on the CPU backend (check=True, CUFORGE_CHECK=1): the corpus of
tests/cpu/check_corpus.py, each buggy kernel reported with the right kind and line, each correct
one not flagged and computing what it computes unchecked; and how checks are selected."""

from __future__ import annotations

import numpy as np
import pytest

import cuforge as cf
from cuforge import _config

from .check_corpus import BUGGY, CORRECT, Saxpy, TileCopyEdge
from .check_corpus_more import AsyncCopyBackToGlobal


def check_buggy(case):
    """A buggy case's checked launch raises its error, naming its kernel, line, block and thread."""
    args, launch = case.args()
    with pytest.raises(case.error, match=case.match) as info:
        case.kernel(*args, device="cpu", check=True, **launch)
    message = str(info.value)
    assert message.startswith(case.kernel.label)
    if case.line:
        assert f"{case.kernel.label}.body, line {case.line}: " in message
    assert "block (" in message and ("thread" in message or "lane" in message)


def check_correct(case):
    """A correct case's checked launch is not flagged and computes what NumPy and an unchecked one do."""
    checked, launch = case.args()
    plain, _ = case.args()
    case.kernel(*plain, device="cpu", check=False, **launch)
    case.kernel(*checked, device="cpu", check=True, **launch)
    for (got, want), (unchecked, _) in zip(case.expected(checked), case.expected(plain)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(got, unchecked, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", list(BUGGY))
def test_buggy_kernel_is_reported_with_its_kind_and_line(name):
    check_buggy(BUGGY[name])


@pytest.mark.parametrize("name", list(CORRECT))
def test_correct_kernel_is_not_flagged_and_matches_unchecked(name):
    check_correct(CORRECT[name])


def test_the_tile_edge_bug_shows_only_for_a_height_not_divisible_by_the_tile():
    for h, reported in ((32, False), (48, False), (40, True), (33, True)):
        src = np.ones(h * 24, np.float32)
        dst = np.zeros_like(src)
        grid = (2, -(-h // 16))
        if reported:
            with pytest.raises(cf.OutOfBoundsError, match=rf"index {h * 24}, outside its extent of {h * 24} "):
                TileCopyEdge(src, dst, 24, h, grid=grid, device="cpu", check=True)
        else:
            TileCopyEdge(src, dst, 24, h, grid=grid, device="cpu", check=True)
            assert (dst == 1).all()


def test_an_out_of_bounds_write_is_refused_before_it_happens_and_the_process_goes_on():
    Stores = cf.kernel(type("StoresPastEnd", (), {
        "__annotations__": {"y": cf.Out[cf.float32], "n": cf.int32},
        "block": 32,
        "body": "int i = blockIdx.x * blockDim.x + threadIdx.x; if (i <= n) y[i] = 7.f;",
    }))  # fmt: skip
    buffer = np.full(40, -1, np.float32)
    view = buffer[:32]  # the element past the view is the caller's, outside the kernel's array
    with pytest.raises(cf.OutOfBoundsError, match=r"out-of-bounds write of 4 bytes: parameter 'y' \(Out\[float32\]\), "
                                                  r"index 32, outside its extent of 32 .*StoresPastEnd.body, line 1"):  # fmt: skip
        Stores(view, 32, grid=2, device="cpu", check=True)
    assert buffer[32] == -1 and (buffer[33:] == -1).all()
    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    Saxpy(3.0, x, y, 64, device="cpu", check=True)  # the next launch runs
    assert (y == 3).all()


@pytest.mark.parametrize("n", [64, 1 << 16])
def test_an_index_past_an_array_is_that_arrays_whether_the_next_array_is_adjacent_or_far(n):
    """An index past one array is that array's (refused before it is read), never the next
    one's, whether the next one starts right after it in the caller's memory or far away."""
    Reads = cf.kernel(type("ReadsPastEnd", (), {
        "__annotations__": {"x": cf.In[cf.float32], "y": cf.Array[cf.float32], "z": cf.Out[cf.float32], "n": cf.int32},
        "block": 64,
        "body": "int i = blockIdx.x * blockDim.x + threadIdx.x; if (i <= n) z[i] = x[i] + (i < n ? y[i] : 0.f);",
    }))  # fmt: skip
    adjacent = np.zeros(2 * n + 16, np.float32)
    z = np.zeros(n + 1, np.float32)
    for x, y in ((adjacent[:n], adjacent[n:2 * n]), (np.zeros(n, np.float32), np.zeros(n, np.float32))):
        y[:] = 5  # (adjacent: x's element n is y's element 0)
        with pytest.raises(cf.OutOfBoundsError, match=rf"out-of-bounds read of 4 bytes: parameter 'x' \(In\[float32\]\), "
                                                      rf"index {n}, outside its extent of {n} "):  # fmt: skip
            Reads(x, y, z, n, grid=-(-(n + 1) // 64), device="cpu", check=True)
    assert (adjacent[2 * n:] == 0).all()


def test_aliased_arguments_share_one_copy():
    x = np.arange(1000, dtype=np.float32)
    Saxpy(1.0, x, x, 1000, device="cpu", check=True)  # y = x + y with y and x one array
    np.testing.assert_array_equal(x, 2 * np.arange(1000, dtype=np.float32))


def test_cuforge_check_turns_checks_on_and_check_false_turns_them_off():
    args = BUGGY["accumulate into Out"].args()[0]
    kernel = BUGGY["accumulate into Out"].kernel
    with _config.scope(check="1"):
        with pytest.raises(cf.UninitializedReadError):
            kernel(*args, device="cpu")
        kernel(*args, device="cpu", check=False)  # a call's check= wins
    with _config.scope(check="0"):
        kernel(*args, device="cpu")
    with _config.scope(check="maybe"), pytest.raises(cf.ConfigError, match="CUFORGE_CHECK expects 1 or 0"):
        kernel(*args, device="cpu")


def test_the_checked_build_is_a_library_of_its_own():
    x, y = np.ones(8, np.float32), np.zeros(8, np.float32)
    Saxpy(1.0, x, y, 8, device="cpu", check=False)
    Saxpy(1.0, x, y, 8, device="cpu", check=True)
    checked = Saxpy._plan.cpu_check()
    assert checked.entry != Saxpy._plan.cpu() and checked.library is not Saxpy._plan.cpu_library()


def test_check_on_a_gpu_launch_says_it_is_the_cpu_backend_s():
    with pytest.raises(cf.ArgumentError, match="check= runs a launch checked on the CPU backend"):
        Saxpy(1.0, np.ones(4, np.float32), np.zeros(4, np.float32), 4, device=0, check=True)


def test_module_variables_set_with_set_global_are_seen_by_a_checked_launch():
    Scaled = cf.kernel(type("ScaledByConstant", (), {
        "__annotations__": {"x": cf.In[cf.float32], "y": cf.Out[cf.float32]},
        "block": 32,
        "preamble": "__constant__ float scale[2];",
        "body": "int i = blockIdx.x * blockDim.x + threadIdx.x; y[i] = scale[1] * x[i];",
    }))  # fmt: skip
    Scaled.set_global("scale", np.array([0, 5], np.float32), device="cpu")
    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    Scaled(x, y, device="cpu", check=True)
    assert (y == 5).all()


def test_a_launch_does_not_inherit_the_last_launch_s_shadow():
    # The checker keeps its shadow memory from launch to launch (its cells carry their launch):
    # what one launch wrote is neither initialised for the next (an Out argument starts undefined
    # each time) nor a race with another block's write in the next.
    Rotated = cf.kernel(type("WritesRotated", (), {
        "__annotations__": {"y": cf.Out[cf.float32], "shift": cf.int32, "accumulate": cf.int32},
        "block": 32,
        "body": "int i = (blockIdx.x * blockDim.x + threadIdx.x + shift) % 64;\n"
                "if (accumulate) y[i] += 1.f; else y[i] = 1.f;",
    }))  # fmt: skip
    y = np.zeros(64, np.float32)
    for shift in (0, 32, 0):  # element 0: block 0's, then block 1's, then block 0's again
        Rotated(y, shift, 0, grid=2, device="cpu", check=True)
    assert (y == 1).all()
    with pytest.raises(cf.UninitializedReadError, match=r"uninitialized read: parameter 'y' \(Out\[float32\]\), index "):
        Rotated(y, 0, 1, grid=2, device="cpu", check=True)


@cf.kernel
class SpinLockCounter:
    """A test-and-test-and-set lock: thread 0 of each block polls the lock with volatile loads,
    takes it with atomicCAS, and releases it with atomicExch (correct: not flagged)."""

    counter: cf.Array[cf.int32]
    lock: cf.Array[cf.int32]
    block = 32
    body = """
    if (threadIdx.x == 0) {
        for (;;) {
            while (*(volatile int*)lock) {}
            if (atomicCAS(lock, 0, 1) == 0) break;
        }
        *(volatile int*)counter = *(volatile int*)counter + 1;
        __threadfence();
        atomicExch(lock, 0);
    }
    """


@cf.kernel
class FloatSumReadEarly:
    """Every block adds into one float with atomicAdd (a CAS loop on the CPU), and block 0 reads
    the total before the other blocks are done (a race between blocks)."""

    x: cf.In[cf.float32]
    total: cf.Array[cf.float32]
    out: cf.Out[cf.float32]
    block = 64
    body = """
    atomicAdd(total, x[blockIdx.x * blockDim.x + threadIdx.x]);
    __syncthreads();
    if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = *total;
    """


@cf.kernel
class LastBlockReadsCount:
    """Blocks count their elements with an integer atomicAdd, fence, then draw a ticket: the
    block that draws the last one reads the count (ordered by the fence and the ticket)."""

    x: cf.In[cf.float32]
    hits: cf.Array[cf.uint32]
    ticket: cf.Array[cf.uint32]
    out: cf.Out[cf.uint32]
    block = 64
    body = """
    __shared__ bool last;
    if (x[blockIdx.x * blockDim.x + threadIdx.x] > 0.5f) atomicAdd(hits, 1u);
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    __syncthreads();
    if (last && threadIdx.x == 0) out[0] = *hits;
    """


def test_a_spin_lock_polled_with_volatile_loads_and_released_with_an_atomic_is_not_a_race():
    counter, lock = np.zeros(1, np.int32), np.zeros(1, np.int32)
    SpinLockCounter(counter, lock, grid=8, device="cpu", check=True)
    assert counter[0] == 8 and lock[0] == 0


def test_a_float_atomic_sum_read_before_the_other_blocks_finish_is_a_race():
    # (either half may come second: blocks run at once)
    with pytest.raises(cf.RaceError, match=r"data race on parameter 'total' .* atomically update.* in different blocks"):
        FloatSumReadEarly(np.ones(256, np.float32), np.zeros(1, np.float32), np.zeros(1, np.float32), grid=4,
                          device="cpu", check=True)  # fmt: skip


def test_the_last_block_reads_an_atomic_count_after_the_fence_and_the_ticket():
    x = np.random.default_rng(3).random(64 * 16, dtype=np.float32)
    for _ in range(5):  # (blocks run at once: the last atomic on the count comes from any of them)
        hits, ticket, out = np.zeros(1, np.uint32), np.zeros(1, np.uint32), np.zeros(1, np.uint32)
        LastBlockReadsCount(x, hits, ticket, out, grid=16, device="cpu", check=True)
        assert out[0] == hits[0] == (x > 0.5).sum()


@cf.kernel
class ThroughAnInteger:
    """Reads an array through a pointer made from an integer: memory the checker does not know."""

    address: cf.uint64
    y: cf.Out[cf.float32]
    body = "const float* p = reinterpret_cast<const float*>(address); y[threadIdx.x] = p[threadIdx.x];"


def test_memory_the_checker_does_not_know_is_warned_of_once_per_kernel():
    x, y = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    with pytest.warns(RuntimeWarning, match=r"ThroughAnInteger: its code reached memory that is none of its arrays.*"
                                            r"not checked: at ThroughAnInteger.body, line 1"):  # fmt: skip
        ThroughAnInteger(x.ctypes.data, y, grid=1, block=32, device="cpu", check=True)
    np.testing.assert_array_equal(y, x)
    ThroughAnInteger(x.ctypes.data, y, grid=1, block=32, device="cpu", check=True)  # (once: warnings are errors here)


@cf.kernel
class ThroughAnIntegerOnThePool:
    """ThroughAnInteger over enough threads that the runtime's workers share its blocks."""

    address: cf.uint64
    y: cf.Out[cf.float32]
    body = "int i = blockIdx.x * blockDim.x + threadIdx.x; y[i] = reinterpret_cast<const float*>(address)[i];"


@cf.kernel
class ThroughAnIntegerCooperative:
    """ThroughAnInteger launched cooperatively: each block on a thread of its own, ended by the launch's end."""

    address: cf.uint64
    y: cf.Out[cf.float32]
    cooperative = True
    body = "int i = blockIdx.x * blockDim.x + threadIdx.x; y[i] = reinterpret_cast<const float*>(address)[i];"


@pytest.mark.parametrize("kernel, grid", [(ThroughAnIntegerOnThePool, 256), (ThroughAnIntegerCooperative, 4)])
def test_memory_the_checker_does_not_know_is_counted_on_every_worker(kernel, grid):
    # (each worker counts its own such accesses, summed at the launch's end: a block's thread may have ended)
    x = np.arange(grid * 32, dtype=np.float32)
    y = np.zeros_like(x)
    with pytest.warns(RuntimeWarning, match=rf"{kernel.label}: its code reached memory that is none of its arrays"):
        kernel(x.ctypes.data, y, grid=grid, block=32, device="cpu", check=True)
    np.testing.assert_array_equal(y, x)


@cf.kernel
class BlockSums:
    """Correct: each block's sum through shared memory, its threads as fibers (a barrier)."""

    x: cf.In[cf.float32]
    out: cf.Out[cf.float32]
    n: cf.int64
    block = 64
    body = """
    __shared__ float s[64];
    long long i = blockIdx.x * 64LL + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.f;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.f;
        for (int k = 0; k < 64; ++k) t += s[k];
        out[blockIdx.x] = t;
    }
    """


def _block_sums(x):
    out = np.zeros(128, np.float32)
    BlockSums(x, out, x.size, grid=128, device="cpu", check=True)
    return out, x.reshape(128, 64).sum(axis=1)


def _staged_copies(x):
    y = np.zeros_like(x)
    AsyncCopyBackToGlobal(x, y, grid=128, device="cpu", check=True)
    return y, 2 * x


@pytest.mark.parametrize("launch", [_block_sums, _staged_copies], ids=["parameters", "asynchronous copies"])
def test_cuforges_own_memory_is_not_memory_the_checker_does_not_know(monkeypatch, launch):
    # Each fiber copies its parameters from the launch's buffer (cuforge's): that copy is not one
    # of the kernel's accesses. Counted, it was every thread's, on one counter that all the
    # workers wrote: a 2^20-thread reduction took longer on 16 cores than on 2. The same for the
    # records of asynchronous copies held until their wait.
    from cuforge._launch import check as launch_check

    seen = []
    monkeypatch.setattr(launch_check, "_warn_unchecked", lambda label, build, check: seen.append(check.unchecked))
    got, want = launch(np.arange(64 * 128, dtype=np.float32))
    np.testing.assert_array_equal(got, want)
    assert seen == []


@cf.kernel
class LocalsOfEveryKind:
    """Correct code declaring locals every way the checked build's guards meet (locals.py): a
    macro's type, structs with and without padding, a template's member function, a switch and a
    goto (left unfollowed), a pragma before a loop's block, a lambda, a local struct, a 2-D array."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    block = 32
    preamble = """
    #define REAL float
    struct P { float x, y; };
    struct Q { float x; double y; };
    struct alignas(16) R { float a[3]; };
    template <class T> struct Box { T v; __device__ T get() const { T r; r = v; return r; } };
    __device__ int pick(int k) {
        int r;
        switch (k) { case 0: { int t; t = 1; r = t; break; } default: r = 2; }
        return r;
    }
    __device__ float viagoto(float v) { float w; if (v > 0) goto pos; w = -v; return w; pos: w = v; return w; }
    """
    body = """
    int i = blockIdx.x * 32 + threadIdx.x;
    REAL a;
    a = x[i];
    P p; p.x = a; p.y = 2 * a;
    Q q; q.x = 1; q.y = 2;
    R r; r.a[0] = 1; r.a[1] = 2; r.a[2] = 3;
    Box<float> b; b.v = a;
    #pragma unroll
    for (int k = 0; k < 2; ++k) { float t; t = k; a += t; }
    unsigned long long u; u = 3;
    std::size_t n; n = 2;
    auto f = [&](int k) { float s; s = k * 0.5f; return s; };
    struct Local { int m; } loc; loc.m = 1;
    float arr[2][2];
    arr[0][0] = 1; arr[0][1] = 2; arr[1][0] = 3; arr[1][1] = 4;
    y[i] = a + p.x + p.y + (float)q.x + (float)q.y + r.a[2] + b.get() + (float)u + (float)n + f(2) + loc.m
           + arr[1][1] + pick(i & 1) + viagoto(a);
    """


def test_locals_declared_every_way_compile_checked_and_compute_what_numpy_does():
    x = np.arange(64, dtype=np.float32)
    expected = 6 * x + 19 + np.where(np.arange(64) % 2 == 0, 1, 2)
    for check in (False, True):
        y = np.zeros(64, np.float32)
        LocalsOfEveryKind(x, y, grid=2, device="cpu", check=check)
        np.testing.assert_array_equal(y, expected)


@cf.kernel
class SetsAFlag:
    """Rodinia bfs's `*g_over = true` from every thread with work (global memory), and a block's
    `found = 1` (shared memory); mode 1 writes each thread's own index to the global flag instead,
    mode 2 to the shared one."""

    work: cf.In[cf.uint8]
    over: cf.Array[cf.int32]
    y: cf.Out[cf.int32]
    mode: cf.int32
    block = 96
    body = """
    __shared__ int found;
    if (threadIdx.x == 0) found = 0;
    __syncthreads();
    int tid = blockIdx.x * 96 + threadIdx.x;
    if (work[tid]) { *over = mode == 1 ? tid : 1; found = mode == 2 ? threadIdx.x : 1; }
    __syncthreads();
    y[tid] = found;
    """


@pytest.mark.parametrize("mode, where", [(1, r"parameter 'over'"), (2, r"__shared__ variable 'found'")])
def test_many_threads_writing_the_same_value_is_no_race_but_other_values_are(mode, where):
    work = (np.arange(384) % 7 == 0).astype(np.uint8)
    over, y = np.zeros(1, np.int32), np.zeros(384, np.int32)
    SetsAFlag(work, over, y, 0, grid=4, device="cpu", check=True)
    assert over[0] == 1 and (y == 1).all()
    with pytest.raises(cf.RaceError, match=rf"data race on {where}.* at SetsAFlag\.body, line 5: "):
        SetsAFlag(work, np.zeros(1, np.int32), y, mode, grid=4, device="cpu", check=True)


@cf.kernel
class FilledByAHelper:
    """A local array filled by a __device__ helper (mode 1: half of it, then all of it read) and
    a CUB BlockLoad of a partial tile (mode 2: without its default for the items past the end,
    then all of them reduced)."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int32
    mode: cf.int32
    block = 32
    preamble = """
    #include <cub/block/block_load.cuh>
    #include <cub/block/block_reduce.cuh>
    __device__ void fill(const float* from, float* v, int count) { for (int k = 0; k < count; ++k) v[k] = from[k]; }
    """
    body = """
    float v[4];
    fill(x + threadIdx.x * 4, v, mode == 1 ? 2 : 4);
    float s = v[0] + v[1] + v[2] + v[3];
    typedef cub::BlockLoad<float, 32, 4> BL;
    typedef cub::BlockReduce<float, 32> BR;
    __shared__ typename BL::TempStorage load;
    __shared__ typename BR::TempStorage reduce;
    float items[4];
    if (mode == 2) BL(load).Load(x, items, n);
    else BL(load).Load(x, items, n, 0.f);
    float total = BR(reduce).Sum(items);
    if (threadIdx.x == 0) y[0] = total;
    y[threadIdx.x + 1] = s;
    """


def test_a_local_filled_by_a_helper_or_by_cub_is_followed():
    x = np.arange(128, dtype=np.float32)
    y = np.zeros(33, np.float32)
    FilledByAHelper(x, y, 100, 0, grid=1, device="cpu", check=True)
    assert y[0] == x[:100].sum() and (y[1:] == x.reshape(32, 4).sum(1)).all()
    with pytest.raises(cf.UninitializedReadError, match=r"local variable 'v' .* at FilledByAHelper\.body, line 3: "):
        FilledByAHelper(x, y, 100, 1, grid=1, device="cpu", check=True)
    with pytest.raises(cf.UninitializedReadError, match=r"local variable 'items' .* at FilledByAHelper\.body, line 11: "):
        FilledByAHelper(x, y, 100, 2, grid=1, device="cpu", check=True)


@cf.kernel
class ByMemset:
    """The C library's memset and memcpy in device code: a shared histogram that thread 0 zeroes
    with memset (mode 0), a memset past a shared array's end (mode 1), and a local array that
    memcpy fills in part (mode 2: 4 of 8 floats, then all 8 summed) or in full (mode 0)."""

    x: cf.In[cf.int32]
    h: cf.Out[cf.uint32]
    mode: cf.int32
    block = 64
    body = """
    __shared__ unsigned hist[16];
    if (threadIdx.x == 0) memset(hist, 0, (mode == 1 ? 32 : 16) * sizeof(unsigned));
    __syncthreads();
    atomicAdd(&hist[x[threadIdx.x] & 15], 1u);
    __syncthreads();
    float buf[8]; memcpy(buf, x, (mode == 2 ? 4 : 8) * sizeof(float));
    float s = 0.f; for (int k = 0; k < 8; ++k) s += buf[k] * 0.f;
    if (threadIdx.x < 16) h[threadIdx.x] = hist[threadIdx.x] + (unsigned)s;
    """


def test_memset_and_memcpy_in_device_code_are_accesses_the_checker_sees():
    x = np.random.default_rng(5).integers(0, 100, 64).astype(np.int32)
    for check in (False, True):
        h = np.zeros(16, np.uint32)
        ByMemset(x, h, 0, grid=1, device="cpu", check=check)
        np.testing.assert_array_equal(h, np.bincount(x & 15, minlength=16))
    with pytest.raises(cf.OutOfBoundsError, match=r"out-of-bounds write of 128 bytes: __shared__ variable 'hist'.* at "
                       r"ByMemset\.body, line 2: "):  # fmt: skip
        ByMemset(x, np.zeros(16, np.uint32), 1, grid=1, device="cpu", check=True)
    with pytest.raises(cf.UninitializedReadError, match=r"local variable 'buf' .* at ByMemset\.body, line 7: "):
        ByMemset(x, np.zeros(16, np.uint32), 2, grid=1, device="cpu", check=True)


@cf.kernel
class FilterTaps:
    """FIR taps in a cuda::std::array, read through a span of the input; mode 1 reads one tap
    past the end (a `k <= 4` bound)."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    mode: cf.int32
    block = 32
    preamble = "#include <cuda/std/array>\n#include <cuda/std/span>"
    body = """
    cuda::std::array<float, 4> taps = {0.25f, 0.5f, 0.25f, 0.f};
    cuda::std::span<const float> xs(x, 32);
    float s = 0.f;
    for (int k = 0; k < 4 + mode; ++k) s += taps[k] * xs[(threadIdx.x + k) % 32];
    y[threadIdx.x] = s;
    """


def test_libcu_preconditions_are_checked_in_a_checked_launch():
    x = np.arange(32, dtype=np.float32)
    for check in (False, True):
        y = np.zeros(32, np.float32)
        FilterTaps(x, y, 0, grid=1, device="cpu", check=check)
        np.testing.assert_allclose(y, 0.25 * x + 0.5 * np.roll(x, -1) + 0.25 * np.roll(x, -2))
    with pytest.raises(cf.DeviceFaultError, match=r"FilterTaps .*assert\(out-of-bounds access in std::array<T, N>\) failed"):
        FilterTaps(x, np.zeros(32, np.float32), 1, grid=1, device="cpu", check=True)


@cf.kernel
class TwoTables:
    """Module variables declared one after the other (the CUDA samples' binomialOptions, nbody,
    Parboil's spmv): each one's first element is its own, not one past the previous one's end;
    mode 1 reads one past c_scale's end."""

    out: cf.Out[cf.float32]
    mode: cf.int32
    preamble = "__constant__ float c_scale[4];\n__constant__ float c_bias[4];\n__device__ double d_a[2];\n__device__ int d_b[3];"
    body = "int t = threadIdx.x; out[t] = c_scale[t + mode] * 2.0f + c_bias[t] + (float)d_a[t % 2] + (float)d_b[t % 3];"


def test_module_variables_side_by_side_are_each_their_own():
    for name, value in (("c_scale", np.arange(4, dtype=np.float32)), ("c_bias", np.ones(4, np.float32)),
                        ("d_a", np.zeros(2)), ("d_b", np.zeros(3, np.int32))):  # fmt: skip
        TwoTables.set_global(name, value, device="cpu")
    out = np.zeros(4, np.float32)
    TwoTables(out, 0, grid=1, block=4, device="cpu", check=True)
    np.testing.assert_array_equal(out, [1, 3, 5, 7])
    with pytest.raises(cf.OutOfBoundsError, match=r"module variable 'c_scale'"):
        TwoTables(out, 1, grid=1, block=4, device="cpu", check=True)


@cf.kernel
class CpAsyncFromAHeader:
    """16-byte cp.async copies from a source offset by `skip` floats (a header element: 1 breaks
    the alignment cp.async needs)."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    skip: cf.int32
    block = 32
    preamble = "#include <cuda_pipeline.h>"
    body = """
    __shared__ __align__(16) float s[32 * 4];
    int t = threadIdx.x;
    __pipeline_memcpy_async(&s[t * 4], x + skip + t * 4, 16);
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    y[t] = s[((t + 1) % 32) * 4];
    """


def test_a_misaligned_cp_async_is_reported_where_it_is_issued():
    x = np.arange(132, dtype=np.float32)
    y = np.zeros(32, np.float32)
    CpAsyncFromAHeader(x, y, 4, grid=1, device="cpu", check=True)
    np.testing.assert_array_equal(y, x[4:132].reshape(32, 4)[:, 0][np.r_[1:32, 0]])
    with pytest.raises(cf.MisalignedAccessError, match=r"not a multiple of 16.* at CpAsyncFromAHeader\.body, line 3: "):
        CpAsyncFromAHeader(x, y, 1, grid=1, device="cpu", check=True)
