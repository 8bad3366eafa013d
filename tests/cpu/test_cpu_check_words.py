"""Global memory's shadow in two levels (cuforge/check_cell.h): an element that one thread alone has
touched, before any synchronization of its block, is a word, made into the full record when another
thread or a barrier makes the order between accesses matter. The record made then must say what the
word's access was ordered by: the block's barrier generation at its start, which the runtime's
counter keeps from block to block and launch to launch on one worker."""

from __future__ import annotations

import numpy as np
import pytest

import cuforge as cf


@cf.kernel
class ManyBarriers:
    """A block that meets 1000 barriers: its worker's barrier generation goes on from there."""

    y: cf.Out[cf.float32]
    block = 64
    body = """
    __shared__ float s[64];
    float acc = 0.f;
    for (int k = 0; k < 1000; ++k) {
        s[threadIdx.x] = k;
        __syncthreads();
        acc += s[(threadIdx.x + 1) % 64];
        __syncthreads();
    }
    y[blockIdx.x * 64 + threadIdx.x] = acc;
    """


@cf.kernel
class NeighbourReads:
    """Thread 1 reads the element thread 0 wrote, with no barrier between: a race, whatever came before."""

    y: cf.Out[cf.float32]
    z: cf.Out[cf.float32]
    block = 64
    body = """
    unsigned t = threadIdx.x;
    y[blockIdx.x * 64 + t] = t;
    __syncwarp();
    if (t == 33) z[blockIdx.x] = y[blockIdx.x * 64];
    """


@cf.kernel
class NeighbourReadsAfterBarrier:
    """The same read after a __syncthreads(): ordered, no report."""

    y: cf.Out[cf.float32]
    z: cf.Out[cf.float32]
    block = 64
    body = """
    unsigned t = threadIdx.x;
    y[blockIdx.x * 64 + t] = t + 1;
    __syncthreads();
    if (t == 33) z[blockIdx.x] = y[blockIdx.x * 64];
    """


@pytest.mark.parametrize("after_barriers", [False, True])
def test_a_word_s_write_is_ordered_by_the_barriers_of_its_block_only(after_barriers):
    blocks = 4
    if after_barriers:  # (every worker's barrier generation is then past 2000 when the next blocks start)
        ManyBarriers(np.zeros(blocks * 64, np.float32), grid=blocks, device="cpu", check=True)
    y, z = np.zeros(blocks * 64, np.float32), np.zeros(blocks, np.float32)
    NeighbourReadsAfterBarrier(y, z, grid=blocks, device="cpu", check=True)
    assert list(z) == [1.0] * blocks
    # thread 0 wrote y[64 b] alone, before any barrier (a word); thread 33, of another warp, reads it
    # after a __syncwarp of its own warp only: unordered
    with pytest.raises(cf.RaceError, match=r"data race on parameter 'y'.* at NeighbourReads\.body, line 4: "):
        NeighbourReads(y, z, grid=blocks, device="cpu", check=True)


@cf.kernel
class WarpNeighbourReads:
    """A __syncwarp orders the lanes of one warp: thread 1 reads what thread 0 wrote after it."""

    y: cf.Out[cf.float32]
    z: cf.Out[cf.float32]
    block = 64
    body = """
    unsigned t = threadIdx.x;
    y[blockIdx.x * 64 + t] = t + 2;
    __syncwarp();
    if (t == 1) z[blockIdx.x] = y[blockIdx.x * 64];
    """


def test_a_word_s_write_is_ordered_by_a_syncwarp_of_its_warp():
    y, z = np.zeros(128, np.float32), np.zeros(2, np.float32)
    WarpNeighbourReads(y, z, grid=2, device="cpu", check=True)
    assert list(z) == [2.0, 2.0]


@cf.kernel
class Elementwise:
    """Indexed (elementwise): each element read and written by its own thread, then one element of
    the next block's read by the last thread of each block, unordered."""

    x: cf.In[cf.float32]
    y: cf.Array[cf.float32]
    n: cf.int64
    cross: cf.int32
    block = 64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.f * x[i] + y[i];
    if (cross && threadIdx.x == 63 && i + 1 < n) y[i] = y[i + 1];
    """


def test_an_indexed_kernel_s_elements_are_words_until_another_block_reads_one():
    n = 1000
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, np.float32)
    Elementwise(x, y, n, 0, grid=16, device="cpu", check=True)
    np.testing.assert_array_equal(y, 2 * np.arange(n, dtype=np.float32) + 1)
    with pytest.raises(cf.RaceError, match=r"data race on parameter 'y'.* at Elementwise\.body, line [23]: "):
        Elementwise(x, y, n, 1, grid=16, device="cpu", check=True)
