"""The plugin on a GPU: a faulting kernel fails its test, naming it, and poisons no other."""

from __future__ import annotations

import importlib.metadata

import pytest

pytestmark = pytest.mark.gpu
INSTALLED = any(ep.value == "cuforge.pytest_plugin" for ep in importlib.metadata.entry_points(group="pytest11"))
PLUGIN = [] if INSTALLED else ["-p", "cuforge.pytest_plugin"]


def test_a_kernel_fault_fails_its_test_and_skips_later_gpu_tests(pytester):
    pytester.makepyfile(
        """
        import numpy as np, pytest, cuforge as cf

        @cf.kernel
        class Wild:
            x: cf.Array[cf.float32]
            n: cf.int64
            body = "float* p = (float*)0x10; p[threadIdx.x] = x[0];"

        @pytest.mark.gpu
        def test_fault():
            Wild(cf.zeros(4, cf.float32), 4, grid=1, block=32)

        @pytest.mark.gpu
        def test_later():
            pass

        def test_cpu():
            pass
        """
    )
    result = pytester.runpytest_subprocess(*PLUGIN, "-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(failed=1, skipped=1, passed=1)
    result.stdout.fnmatch_lines(
        [
            "*Wild (grid=(1, 1, 1), block=(32, 1, 1), shared_mem=0) faulted: CUDA_ERROR_ILLEGAL_ADDRESS*",
            "*SKIPPED*the CUDA context is unusable after test_a_kernel_fault*",
        ]
    )


def test_fixtures_on_the_gpu(cuda_device, cuda_stream):
    assert cuda_device.compute_capability[0] >= 7
    assert int(cuda_stream.handle) != 0
