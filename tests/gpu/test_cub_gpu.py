"""The CPU backend's CUB (cub::BlockReduce, BlockScan, BlockLoad, BlockStore, WarpReduce, WarpScan,
KeyValuePair with ArgMin and ArgMax: tests/cpu/test_cpu_cub.py) against CUB itself on a GPU: the
same kernels give the same results, bit for bit (integers, and sums of small integers in doubles)."""

from __future__ import annotations

import numpy as np

import cuforge as cf
from cuforge.pytest_plugin import gpu_module

from ..cpu.test_cpu_cub import Collectives, TileCumsum, TiledScan

pytestmark = gpu_module()


def test_block_and_warp_collectives_match_the_cpu_backend():
    x = np.random.default_rng(0).integers(-100, 100, 192).astype(np.int32)
    on_cpu = np.full(192 * 8, -7, np.int32)
    Collectives(x, on_cpu, grid=2, device="cpu")
    on_gpu = cf.to_device(np.full(192 * 8, -7, np.int32))
    Collectives(cf.to_device(x), on_gpu, grid=2)
    np.testing.assert_array_equal(on_gpu.to_numpy(), on_cpu)


def test_a_prefix_callback_over_tiles_and_a_struct_reduction_match_the_cpu_backend():
    for n in (500, 100):
        x = np.random.default_rng(n).integers(-9, 10, n).astype(np.float64)
        cpu = (np.zeros(n), np.zeros(1), np.zeros(1, np.int32))
        TiledScan(x, *cpu, n, grid=1, device="cpu")
        gpu = (cf.zeros(n, cf.float64), cf.zeros(1, cf.float64), cf.zeros(1, cf.int32))
        TiledScan(cf.to_device(x), *gpu, n, grid=1)
        for got, want in zip(gpu, cpu):
            np.testing.assert_array_equal(got.to_numpy(), want)


def test_tiles_loaded_scanned_and_stored_match_the_cpu_backend():
    n = 700
    x = np.random.default_rng(4).integers(-50, 50, n).astype(np.int32)
    on_cpu = (np.zeros(n, np.int32), np.zeros(n, np.int32))
    TileCumsum(x, *on_cpu, n, grid=1, device="cpu")
    on_gpu = (cf.zeros(n, cf.int32), cf.zeros(n, cf.int32))
    TileCumsum(cf.to_device(x), *on_gpu, n, grid=1)
    for got, want in zip(on_gpu, on_cpu):
        np.testing.assert_array_equal(got.to_numpy(), want)


def test_key_value_pairs_and_a_reduction_in_a_smaller_block_match_the_cpu_backend():
    from ..cpu.test_cpu_cub import ArgExtremes, RowSums

    x = np.random.default_rng(3).permutation(128).astype(np.float32)
    on_cpu = np.zeros(4, np.int32)
    ArgExtremes(x, on_cpu, grid=2, device="cpu")
    on_gpu = cf.zeros(4, cf.int32)
    ArgExtremes(cf.to_device(x), on_gpu, grid=2)
    np.testing.assert_array_equal(on_gpu.to_numpy(), on_cpu)
    x = np.random.default_rng(4).integers(0, 9, 4000).astype(np.float32)
    for block in (256, 200):
        sums = cf.zeros(4, cf.float32)
        RowSums(cf.to_device(x), sums, 1000, 0, grid=4, block=block)
        np.testing.assert_array_equal(sums.to_numpy(), x.reshape(4, 1000).sum(1))
