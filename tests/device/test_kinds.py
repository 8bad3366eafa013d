"""Launch kinds on host arrays, on either device: cooperative grid sync, clusters with
distributed shared memory, 100 KiB of dynamic shared memory."""

from __future__ import annotations

import numpy as np
import pytest

from .. import kind_kernels as kk

pytestmark = pytest.mark.launches


def test_grid_sync_two_phase_sum_matches_numpy(cuforge_device):
    from cuforge._runtime import cuda as _cuda

    x = np.random.default_rng(3).standard_normal(1_000_003).astype(np.float32)
    # as many blocks as fit on the GPU at once; on the CPU every block of a cooperative launch
    # runs at once, a thread each
    blocks = kk.GridSum.occupancy(block=256) * _cuda.current_device().sm_count if cuforge_device == "cuda" else 12
    partial, out = np.zeros(blocks, np.float64), np.zeros(1, np.float64)
    kk.GridSum(x, partial, out, x.size, grid=blocks)
    np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-9)


def test_cluster_blocks_read_each_others_shared_memory():
    out = np.zeros(8, np.int32)
    kk.ClusterSwap(out, grid=8)
    np.testing.assert_array_equal(out, [1, 0, 3, 2, 5, 4, 7, 6])


def test_100_kib_of_dynamic_shared_memory(cuforge_device):
    out = np.zeros(4, np.int64)
    kk.BigShared(out, shared_mem=100 * 1024)
    count = 100 * 1024 // 4
    np.testing.assert_array_equal(out, [count * (count - 1) // 2 + b * count for b in range(4)])
    if cuforge_device == "cuda":  # the driver's view of the loaded kernel
        attrs = kk.BigShared.attributes
        assert attrs.max_dynamic_shared_bytes >= 100 * 1024 and attrs.max_threads_per_block == 1024


def test_a_non_portable_cluster_of_16_blocks():
    out = np.zeros(32, np.int32)
    kk.ClusterSwap(out, grid=32, cluster=16, non_portable_cluster=True)
    np.testing.assert_array_equal(out, [(b + 1) % 16 + 16 * (b // 16) for b in range(32)])
