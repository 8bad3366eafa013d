"""The CPU backend under hostile use: memory that changes under a launch, locals too large for a
thread's stack, grids whose block count passes 2**32, and the faults and refusals that must
name what happened. Each test runs a real kernel on the CPU."""

from __future__ import annotations

import array
import ctypes
import threading
import time
from typing import Any

import numpy as np
import pytest

import cuforge as cf
from cuforge._cpu import runtime as _cpu_runtime

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
