"""The CPU backend under hostile use: memory that changes under a launch, locals too large for a
thread's stack, grids whose block count passes 2**32, and the faults and refusals that must
name what happened. Each test runs a real kernel on the CPU."""

from __future__ import annotations

import array
import ctypes
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from typing import Any

import numpy as np
import pytest

import cuforge as cf
from cuforge import _config
from cuforge._cpu import runtime as _cpu_runtime
from cuforge._cpu.toolchain import find_compiler


@pytest.fixture(autouse=True)
def _unchecked():
    """These tests are about the runtime the kernels run in: host memory that changes under a
    launch (which a checked launch's copies of the arrays would not see), stacks and grids of
    billions of blocks. They run unchecked whatever the session's --cuforge-check."""
    with _config.scope(check="0"):
        yield

# ---------------------------------------------------------------- memory held for the launch


@cf.kernel
class HoldsUntilTold:
    """Says it runs (state[0] = 1), then waits until told to end (state[1] != 0); reads x."""

    x: cf.In[cf.uint8]
    state: cf.Array[cf.int32]
    body = """
    volatile int* s = state;
    s[0] = x[0] + 1;
    for (long long spins = 0; s[1] == 0 && spins < (1LL << 36); ++spins) {}  // (bounded: never a hung test)
    """


class ByInterface:
    """Host memory described by ``__array_interface__`` with its data given as a buffer."""

    def __init__(self, data: bytearray) -> None:
        self.data = data

    @property
    def __array_interface__(self) -> dict[str, Any]:
        return {"shape": (len(self.data),), "typestr": "|u1", "data": self.data, "version": 3}


class ByOwnBuffer(bytearray):
    """``__array_interface__`` with no data: the object's own buffer is the memory."""

    @property
    def __array_interface__(self) -> dict[str, Any]:
        return {"shape": (len(self),), "typestr": "|u1", "data": None, "version": 3}


def _memory(kind: str) -> tuple[Any, Any]:
    """(what is passed, what another thread tries to resize)"""
    if kind == "array.array":
        a = array.array("B", [7] * 64)
        return a, a
    if kind == "bytearray":
        b = bytearray([7] * 64)
        return b, b
    if kind == "memoryview":
        b = bytearray([7] * 64)
        return memoryview(b), b
    if kind == "__array_interface__ buffer":
        b = bytearray([7] * 64)
        return ByInterface(b), b
    own = ByOwnBuffer([7] * 64)
    return own, own


@pytest.mark.parametrize("kind", ["array.array", "bytearray", "memoryview", "__array_interface__ buffer",
                                  "__array_interface__ own buffer"])  # fmt: skip
def test_a_buffer_cannot_be_resized_while_a_launch_uses_it(kind):
    passed, resizable = _memory(kind)
    state = np.zeros(2, np.int32)
    errors: list[BaseException] = []

    def launch() -> None:
        try:
            HoldsUntilTold(passed, state, grid=1, block=1, device="cpu")
        except BaseException as exc:  # (reported below)
            errors.append(exc)

    t = threading.Thread(target=launch)
    t.start()
    try:
        deadline = time.monotonic() + 60
        while state[0] == 0 and time.monotonic() < deadline and t.is_alive():
            time.sleep(0.001)
        assert state[0] == 8, (state, errors)  # the kernel runs, and read the buffer
        if isinstance(passed, memoryview):
            passed.release()  # the caller's view goes; the launch's own stays
        with pytest.raises(BufferError):  # the launch holds the buffer: it cannot move or be freed under the kernel
            resizable.extend(b"\0" * 100_000)
    finally:
        state[1] = 1
        t.join(timeout=60)
    assert not t.is_alive() and not errors, errors
    resizable.extend(b"\1")  # released once the launch returned
    assert len(resizable) == 65


# ---------------------------------------------------------------- block indices past 2**32


@cf.kernel
class BlockIndex:
    """Where the block is, and the grid's depth."""

    out: cf.Out[cf.uint32]
    body = "out[0] = blockIdx.x; out[1] = blockIdx.y; out[2] = blockIdx.z; out[3] = gridDim.z;"


def _run_blocks(grid: tuple[int, int, int], first: int) -> tuple[int, str, list[int]]:
    """Block ``first`` (a linear index) of a launch of BlockIndex over ``grid``, run alone through
    the kernel's CPU entry (the call the worker pool makes for a range of blocks): a grid of 2**32
    blocks or more is too many to run whole in a test."""
    out = np.zeros(4, np.uint32)
    pointer = ctypes.c_void_p(out.ctypes.data)
    params = (ctypes.c_void_p * 1)(ctypes.addressof(pointer))  # kernelParams: the address of each argument
    launch = _cpu_runtime.Launch()
    launch.grid[:] = grid
    launch.block[:] = (1, 1, 1)
    launch.args = ctypes.addressof(params)
    entry = ctypes.CFUNCTYPE(None, ctypes.POINTER(_cpu_runtime.Launch), ctypes.c_longlong, ctypes.c_longlong)(
        BlockIndex._cpu_entry()
    )
    entry(ctypes.byref(launch), first, first + 1)
    return launch.status, launch.message.decode(), out.tolist()


@pytest.mark.parametrize("grid", [(2**30, 4, 1), (2**31 - 1, 3, 1), (2**31 - 1, 65535, 65535), (65538, 65535, 2)])
def test_block_indices_of_grids_past_2_to_the_32_blocks(grid):
    BlockIndex(np.zeros(4, np.uint32), grid=(3, 2, 2), device="cpu")  # built, and the fault guard installed
    gx, gy, gz = grid
    total = gx * gy * gz
    for b in (0, 1, gx * gy - 1, gx * gy, gx * gy + gx + 5, total - 1):
        status, message, got = _run_blocks(grid, b)
        assert (status, message) == (0, ""), (grid, b)
        assert got == [b % gx, b // gx % gy, b // (gx * gy), gz], (grid, b)


# ---------------------------------------------------------------- stacks


LOCALS = """
    volatile int local[{n}];  // (volatile: each access is made, where written)
    unsigned t = threadIdx.x;
    local[0] = t;
    local[{n} - 1] = t;
    {sync};
    out[t] = local[0] == (int)t && local[{n} - 1] == (int)t;
"""


@cf.kernel
class LocalsThatFit:
    """120 KiB of locals per thread: less than the 128 KiB every thread's stack holds at least;
    the threads meet at a barrier, so each is a fiber on a stack of its own."""

    out: cf.Out[cf.int32]
    body = LOCALS.format(n=30 * 1024, sync="__syncthreads()")


@cf.kernel
class BigLocalsOnFibers:
    """256 KiB of locals per thread, more than a thread's stack; the threads meet at a barrier."""

    out: cf.Out[cf.int32]
    body = LOCALS.format(n=64 * 1024, sync="__syncthreads()")


@cf.kernel
class BigLocalsInALoop:
    """The same without a barrier: the threads run one after the other, on one stack."""

    out: cf.Out[cf.int32]
    body = LOCALS.format(n=64 * 1024, sync="")


def test_every_thread_has_at_least_128_kib_of_stack():
    out = np.zeros(256, np.int32)  # (the last threads' stacks are the most staggered)
    LocalsThatFit(out, grid=2, block=256, device="cpu")
    assert out.tolist() == [1] * 256  # no thread saw another's locals


@pytest.mark.parametrize("kernel", [BigLocalsOnFibers, BigLocalsInALoop], ids=lambda k: k.__name__)
def test_locals_larger_than_a_threads_stack_are_a_stack_overflow(kernel):
    out = np.zeros(64, np.int32)
    with pytest.raises(
        cf.DeviceFaultError,
        match=rf"{kernel.__name__} faulted on the CPU .*: a stack overflow in block \(0, 0, 0\), thread \(\d+, 0, 0\): "
        r"its local variables need more stack than the CPU backend gives a thread \(at least 128 KiB\); on a GPU a "
        r"thread's stack is 1 KiB by default \(cudaLimitStackSize\), so make its local arrays smaller, or put them in "
        r"shared or global memory",
    ):
        kernel(out, grid=1, block=64, device="cpu")
    BlockIndex(np.zeros(4, np.uint32), grid=1, block=1, device="cpu")  # the worker goes on


# ---------------------------------------------------------------- faults and refusals named right


@cf.kernel
class Divide:
    a: cf.int32
    b: cf.int32
    out: cf.Out[cf.int32]
    body = "out[0] = a / b;"


@pytest.mark.parametrize("a, b", [(-(2**31), -1), (5, 0)])
def test_integer_division_overflow_and_by_zero_are_named(a, b):
    with pytest.raises(
        cf.DeviceFaultError,
        match=r"Divide faulted on the CPU .*an arithmetic fault \(an integer division by zero or overflow "
        r"\(INT_MIN / -1\), which on a GPU gives an undefined value\)",
    ):
        Divide(a, b, np.zeros(1, np.int32), grid=1, block=1, device="cpu")


@cf.kernel
class FirstThreadsLeave:
    out: cf.Array[cf.int32]
    leave: cf.int32
    body = "if ((int)threadIdx.x < leave) return; __syncthreads(); out[threadIdx.x] = 1;"


@pytest.mark.parametrize(
    "leave, waiting, who",
    [(1, r"threads \[1-7\] wait", r"thread 0"), (2, r"threads \[2-7\] wait", r"threads \[0-1\]"),
     (7, r"thread 7 waits", r"threads \[0-6\]")],
)  # fmt: skip
def test_a_barrier_names_the_threads_that_exited(leave, waiting, who):
    with pytest.raises(
        cf.BarrierMisuseError,
        match=rf"block \(0, 0, 0\): {waiting} at the __syncthreads at FirstThreadsLeave.body, line 1, which {who} exited "
        r"without reaching; every thread of a block must reach each __syncthreads, or none \(CUDA's rule: a GPU since "
        r"Volta lets the waiting threads go on once the others exited, and an unchecked CPU launch does too",
    ):
        FirstThreadsLeave(np.zeros(8, np.int32), leave, grid=1, block=8, device="cpu", check=True)
    out = np.zeros(8, np.int32)
    FirstThreadsLeave(out, leave, grid=1, block=8, device="cpu", check=False)  # (as a GPU runs it: exited threads hold no barrier)
    assert out.tolist() == [0] * leave + [1] * (8 - leave)


@cf.kernel
class SecondBarrierDiverges:
    x: cf.Array[cf.float32]
    body = """
    x[threadIdx.x] = 1.0f;
    __syncthreads();
    if (threadIdx.x < 128)
        __syncthreads();
    x[threadIdx.x] += 1.0f;
    """


def test_a_divergent_second_barrier_names_every_thread_that_skipped_it_and_its_line():
    """After the first barrier the last thread to arrive runs on and exits first; the message
    still names all the threads that skipped the second one, not only that one. Unchecked, the
    launch runs as a GPU runs it."""
    with pytest.raises(
        cf.BarrierMisuseError,
        match=r"block \(0, 0, 0\): threads \[0-127\] wait at the __syncthreads at SecondBarrierDiverges.body, line 4, "
        r"which threads \[128-255\] exited without reaching;",
    ):
        SecondBarrierDiverges(np.zeros(256, np.float32), grid=1, block=256, device="cpu", check=True)
    x = np.zeros(256, np.float32)
    SecondBarrierDiverges(x, grid=1, block=256, device="cpu", check=False)
    assert (x == 2).all()


@cf.kernel
class MisalignedFloat4:
    x: cf.In[cf.float32]
    y: cf.Array[cf.float32]
    body = """
    const float4* v = reinterpret_cast<const float4*>(x + 1);  // 4 bytes past an aligned start
    float4* o = reinterpret_cast<float4*>(y + 1);
    o[threadIdx.x] = v[threadIdx.x];
    """


def test_a_misaligned_vector_access_is_named_as_what_it_most_likely_is():
    """x86-64 faults on an aligned 16-byte move at an address not a multiple of 16 with a
    general-protection fault, which names no address: the message says what it most often
    is (a GPU's misaligned address), not an access to memory the process does not own."""
    x, y = np.arange(64 * 4 + 8, dtype=np.float32), np.zeros(64 * 4 + 8, np.float32)
    with pytest.raises(
        cf.DeviceFaultError,
        match=r"MisalignedFloat4 faulted on the CPU .*: a general-protection fault in block \(0, 0, 0\), for which the "
        r"processor names no address; on x86-64 it is most often a 16-byte vector type \(float4, int4, double2, \.\.\.\) "
        r"read or written at an address that is not a multiple of 16, which on a GPU is a misaligned address error",
    ):
        MisalignedFloat4(x, y, grid=1, block=64, device="cpu")
    MisalignedFloat4(x[3:], y[3:], grid=1, block=64, device="cpu")  # x + 4 and y + 4 floats: aligned, it runs
    assert np.array_equal(y[4 : 4 + 64 * 4], x[4 : 4 + 64 * 4])


@cf.kernel
class TooMuchStaticShared:
    out: cf.Out[cf.float32]
    body = """
    __shared__ float tile[51200];  // 200 KiB
    tile[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = tile[threadIdx.x];
    """


def test_more_than_48_kib_of_static_shared_in_one_declaration_is_refused_at_compile():
    with pytest.raises(
        cf.CompileError,
        match=r"(?s)TooMuchStaticShared: the host C\+\+ compiler failed.*__shared__ 'tile' \(float\[51200\]\) is more than "
        r"the 48 KiB \(49152 bytes\) of static shared memory a kernel can have on a GPU; use dynamic shared memory \(an "
        r"extern __shared__ array sized by shared_mem=, up to 227 KiB per block with the opt-in\)",
    ):
        TooMuchStaticShared(np.zeros(32, np.float32), grid=1, block=32, device="cpu")
    with pytest.raises(cf.CompileError) as caught:
        TooMuchStaticShared(np.zeros(32, np.float32), grid=1, block=32, device="cpu")
    if find_compiler().kind == "gcc":  # (g++ shows the comparison's values)
        assert "204800" in str(caught.value)


@cf.kernel
class StaticSharedAddsUp:
    """Two declarations of 30 KiB: each fits, together they do not."""

    out: cf.Out[cf.float32]
    body = """
    __shared__ float a[7680];
    __shared__ float b[7680];
    a[threadIdx.x] = threadIdx.x;
    b[threadIdx.x] = 2 * threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = a[threadIdx.x] + b[threadIdx.x];
    """


# Six kernels over one source, 44 KiB of static shared memory each: more than the 256 KiB that
# the CPU backend keeps for the static shared memory of one source's kernels.
ARENA_SOURCE = "".join(
    f'extern "C" __global__ void fill{i}(float* out) {{ __shared__ float s[11264]; s[threadIdx.x] = {i}; '
    f"__syncthreads(); out[threadIdx.x] = s[threadIdx.x]; }}\n"
    for i in range(6)
)
FILLS = [cf.kernel(type(f"Fill{i}", (), {"__annotations__": {"out": cf.Out[cf.float32]}, "name": f"fill{i}", "block": 32,
                                         "source": ARENA_SOURCE})) for i in range(6)]  # fmt: skip

SHARED_TWICE = textwrap.dedent(
    """
    import sys, numpy as np, cuforge as cf
    sys.path.insert(0, {here!r})
    from test_cpu_hostile import FILLS, StaticSharedAddsUp
    for kernel in [StaticSharedAddsUp] * 2 + FILLS + FILLS[-1:]:
        out = np.zeros(32, np.float32)
        try:
            kernel(out, grid=1, block=32, device="cpu")
            assert (out == FILLS.index(kernel)).all()
        except cf.LaunchError as e:
            print(e, flush=True)
    """
)


def test_more_than_48_kib_of_static_shared_in_one_kernel_is_refused_at_launch_each_time(cuforge_cache_dir):
    # In a process of its own: a refusal that left the declaration's initialisation under way
    # would hang the next launch that reaches it.
    here = os.path.dirname(os.path.abspath(__file__))
    run = subprocess.run([sys.executable, "-c", SHARED_TWICE.format(here=here)], capture_output=True, text=True,
                         timeout=180, env={**os.environ, "CUFORGE_CACHE_DIR": str(cuforge_cache_dir)})  # fmt: skip
    lines = run.stdout.splitlines()
    assert run.returncode == 0 and len(lines) == 4, (run.stdout, run.stderr[-2000:])
    for line in lines[2:]:  # the sixth kernel of one source, twice
        assert re.fullmatch(
            r"fill5 \(grid=.*\) on the CPU: the static __shared__ memory of this source's kernels comes to 270336 bytes "
            r"with 's' \(45056 bytes\), more than the CPU backend's 262144 bytes for the kernels of one source; declare "
            r"the kernels over separate sources, or use dynamic shared memory \(an extern __shared__ array sized by "
            r"shared_mem=\)",
            line,
        ), line
    for line in lines[:2]:
        assert re.fullmatch(
            r"StaticSharedAddsUp \(grid=.*\) on the CPU: the kernel's static __shared__ memory comes to 61440 bytes "
            r"with 'b' \(30720 bytes\), more than the 48 KiB \(49152 bytes\) a kernel can have on a GPU; use dynamic "
            r"shared memory \(an extern __shared__ array sized by shared_mem=, up to 227 KiB per block with the opt-in\)",
            line,
        ), line


def test_a_system_without_memory_files_loads_from_the_private_folder(monkeypatch):
    """Where memfd_create is missing (or maps no code), a library is loaded from the process's
    private folder: that path took the store's lock a second time and hung the launch."""
    from cuforge._cpu import store

    monkeypatch.setattr(store, "_memory_file", lambda data, sha: None)
    Mark = cf.kernel(type("PrivateFolderMark", (), {
        "__annotations__": {"y": cf.Out[cf.int32]},
        "body": f"y[threadIdx.x] = {os.getpid() % 1000} + (int)threadIdx.x;",  # (a library this process has not loaded)
    }))  # fmt: skip
    y = np.zeros(8, np.int32)
    done = threading.Event()
    launch = threading.Thread(target=lambda: (Mark(y, grid=1, block=8, device="cpu"), done.set()), daemon=True)
    launch.start()
    launch.join(120)
    assert done.is_set(), "the launch did not finish: the store's lock was taken twice"
    np.testing.assert_array_equal(y, os.getpid() % 1000 + np.arange(8))
