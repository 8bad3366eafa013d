"""The driver's launch kinds on a real GPU: a cooperative launch's default grid from the
occupancy, the device's limits, the kernel's attributes, a clustered histogram; every misuse
refused before any launch (none recorded), with the context usable afterwards. The launch
kinds on host arrays, which run on either device, are in tests/device/test_kinds.py."""

from __future__ import annotations

import numpy as np
import pytest

import cuforge as cf
from cuforge._runtime import cuda as _cuda
from cuforge.pytest_plugin import gpu_module

from .. import kind_kernels as kk

pytestmark = gpu_module()


@pytest.fixture
def probe():
    """After a refusal: no launch was recorded, and the context still runs a kernel."""

    def check(before):
        assert _cuda.last_launch() == before, "a refused call reached the driver"
        y = cf.zeros(64, cf.float32)
        kk.Bounded(y, 64, block=64)
        np.testing.assert_array_equal(y.to_numpy(), np.ones(64, np.float32))

    return check


def test_a_cooperative_launch_without_grid_runs_as_many_blocks_as_fit():
    blocks = kk.GridSum.occupancy(block=256) * _cuda.current_device().sm_count
    x = np.random.default_rng(4).standard_normal(1 << 20).astype(np.float32)
    partial, out = cf.zeros(blocks, cf.float64), cf.zeros(1, cf.float64)
    kk.GridSum(cf.to_device(x), partial, out, x.size)  # the array-covering default would be 4,096 blocks
    assert _cuda.last_launch()[1] == (blocks, 1, 1)
    np.testing.assert_allclose(out.to_numpy()[0], x.astype(np.float64).sum(), rtol=1e-9)
    y = cf.zeros(1 << 20, cf.float32)
    GridSyncNoFlag(y, cooperative=True)  # cooperative at the call: the same default
    assert _cuda.last_launch()[1] == (GridSyncNoFlag.occupancy(block=256) * _cuda.current_device().sm_count, 1, 1)


def test_a_cooperative_grid_too_large_is_refused_with_the_limit(probe):
    x, partial, out = cf.zeros(8, cf.float32), cf.zeros(8, cf.float64), cf.zeros(1, cf.float64)
    kk.GridSum(x, partial, out, 8, grid=1)
    before = _cuda.last_launch()
    limit = kk.GridSum.occupancy(block=256) * _cuda.current_device().sm_count
    with pytest.raises(cf.ArgumentError, match=rf"GridSum: a cooperative launch must fit on the GPU at once: at most {limit} "
                                               rf"blocks \(\d+ per SM x \d+ SMs\) for block=\(256, 1, 1\)"):  # fmt: skip
        kk.GridSum(x, partial, out, 8, grid=limit + 1)
    probe(before)


def test_grid_sync_without_the_flag_is_refused_before_the_launch(probe):
    y = cf.zeros(256, cf.float32)
    before = _cuda.last_launch()
    for _ in range(2):  # the first call loads the kernel; the second finds it loaded
        with pytest.raises(cf.ArgumentError, match=r"GridSyncNoFlag: the kernel's source syncs the whole grid .* set "
                                                   r"cooperative = True on the class or pass cooperative=True"):  # fmt: skip
            GridSyncNoFlag(y)
    probe(before)
    GridSyncNoFlag(y, cooperative=True, grid=1)  # at the call, it runs (one block: the kernel has no bounds check)
    np.testing.assert_array_equal(y.to_numpy(), np.ones(256, np.float32))


GridSyncNoFlag = kk.GridSyncNoFlag


def test_a_clustered_launch_of_the_cluster_histogram_matches_numpy():
    """this_grid().thread_rank() without a grid sync: a clustered launch, no cooperative flag."""
    data = np.random.default_rng(5).integers(-3, 260, 100_003).astype(np.int32)
    nbins = 256
    bins = cf.zeros(nbins, cf.int32)
    kk.ClusterHistogram(bins, cf.to_device(data), data.size, nbins, shared_mem=nbins // 2 * 4)
    expected = np.bincount(np.clip(data, 0, nbins - 1), minlength=nbins)
    np.testing.assert_array_equal(bins.to_numpy(), expected)
    assert not kk.ClusterHistogram._plan.grid_sync


def test_cluster_misuse_is_refused_before_the_launch(probe):
    out = cf.zeros(8, cf.int32)
    kk.ClusterSwap(out)  # the default grid (1 block for 8 elements) is rounded up to one whole cluster
    np.testing.assert_array_equal(out.to_numpy()[:2], [1, 0])
    before = _cuda.last_launch()
    with pytest.raises(cf.ArgumentError, match=r"ClusterSwap: grid=\(3, 1, 1\) is not divisible by cluster=\(2, 1, 1\)"):
        kk.ClusterSwap(out, grid=3)
    with pytest.raises(cf.ArgumentError, match=r"cluster=\(16, 1, 1\) has 16 blocks; .* not portable"):
        kk.ClusterSwap(out, cluster=16, grid=16)
    probe(before)


def test_shared_memory_past_the_device_limit_is_refused_with_the_limit(probe):
    out = cf.zeros(4, cf.int64)
    kk.BigShared(out, shared_mem=100 * 1024)
    limit = kk.BigShared.attributes.max_dynamic_shared_bytes
    before = _cuda.last_launch()
    for _ in range(2):  # the C launcher declines it to the general path, which names the limit
        with pytest.raises(cf.ArgumentError, match=rf"BigShared: shared_mem={limit + 1} bytes is more than the {limit} "
                                                   rf"bytes of dynamic shared memory a block can have on device 0"):  # fmt: skip
            kk.BigShared(out, shared_mem=limit + 1)
    probe(before)


def test_a_block_past_the_kernels_launch_bounds_is_refused(probe):
    y = cf.zeros(256, cf.float32)
    kk.Bounded(y, 256, block=128)
    assert kk.Bounded.attributes.max_threads_per_block == 128
    before = _cuda.last_launch()
    for _ in range(2):
        with pytest.raises(cf.ArgumentError, match=r"bounded: block=\(256, 1, 1\) has 256 threads, but the compiled kernel "
                                                   r"allows at most 128 per block on device 0"):  # fmt: skip
            kk.Bounded(y, 256, block=256)
    with pytest.raises(cf.ArgumentError, match=r"allows at most 128 per block"):
        kk.Bounded.prepare(y, 256, block=256)
    probe(before)


def test_attributes_and_occupancy():
    attrs = kk.Bounded.attributes
    assert attrs.registers > 0 and attrs.local_bytes == 0 and attrs.static_shared_bytes == 0 and attrs.device == 0
    assert kk.Bounded.occupancy(block=128) >= 1
    assert kk.BigShared.occupancy(block=256, shared_mem=100 * 1024) == 2  # 228 KiB per SM holds two
    with pytest.raises(cf.ArgumentError, match=r"block\[0\] expects an int from 1 to 1024"):
        kk.Bounded.occupancy(block=0)


def test_the_cubin_and_the_driver_give_one_static_shared_size():
    @cf.kernel
    class Staged:
        x: cf.Array[cf.float32]
        body = "__shared__ float s[256]; s[threadIdx.x] = x[threadIdx.x]; __syncthreads(); x[threadIdx.x] = s[0];"

    @cf.kernel
    class ExternOnly:
        x: cf.Array[cf.float32]
        body = "extern __shared__ float d[]; d[threadIdx.x] = x[threadIdx.x]; __syncthreads(); x[threadIdx.x] = d[0];"

    for k, size in ((Staged, 1024), (ExternOnly, 0)):
        assert k.compile().resources()["shared_bytes"] == k.attributes.static_shared_bytes == size


def test_coalesced_group_collectives_and_memcpy_async_give_the_cpu_backend_s_results():
    """The CPU backend's cg::reduce and scans over a labeled partition, and its memcpy_async,
    against CUDA's own on the GPU: the same results, bit for bit (integers; copies)."""
    from ..cpu.test_cpu_kinds import LabeledSums, StagedCopy

    rng = np.random.default_rng(5)
    keys = rng.integers(0, 4, 128).astype(np.int32)
    v = rng.integers(-50, 50, 128).astype(np.int32)
    on_cpu = np.zeros(384, np.int32)
    LabeledSums(keys, v, on_cpu, grid=2, device="cpu")
    on_gpu = cf.zeros(384, cf.int32)
    LabeledSums(cf.to_device(keys), cf.to_device(v), on_gpu, grid=2)
    np.testing.assert_array_equal(on_gpu.to_numpy(), on_cpu)

    x = np.arange(128, dtype=np.float32)
    copied = np.zeros(128, np.float32)
    StagedCopy(x, copied, grid=2, device="cpu")
    y = cf.zeros(128, cf.float32)
    StagedCopy(cf.to_device(x), y, grid=2)
    np.testing.assert_array_equal(y.to_numpy(), copied)


def test_libcu_barrier_memcpy_async_pipeline_and_wait_give_the_cpu_backend_s_results():
    """libcu++'s cuda::memcpy_async with a barrier and with a pipeline, and atomic_ref's wait, as
    the CPU backend runs them (tests/cpu/test_cpu_kinds.py) against the GPU: the same results."""
    from ..cpu.test_cpu_kinds import BarrierCopy, FlagWait

    x = np.arange(128, dtype=np.float32)
    copied = np.zeros(128, np.float32)
    BarrierCopy(x, copied, grid=2, device="cpu")
    y = cf.zeros(128, cf.float32)
    BarrierCopy(cf.to_device(x), y, grid=2)
    np.testing.assert_array_equal(y.to_numpy(), copied)
    waited = np.zeros(128, np.float32)
    FlagWait(x[:2], np.zeros(2, np.int32), waited, grid=2, device="cpu")
    y = cf.zeros(128, cf.float32)
    FlagWait(cf.to_device(x[:2]), cf.zeros(2, cf.int32), y, grid=2)
    np.testing.assert_array_equal(y.to_numpy(), waited)
