"""The plugin on a GPU: a faulting kernel fails its test, naming it, and poisons no other."""

from __future__ import annotations

import importlib.metadata

import pytest

from cuforge.pytest_plugin import gpu_module

pytestmark = gpu_module()
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
            "*the GPU faulted during this test: CUDA_ERROR_ILLEGAL_ADDRESS*the last cuforge launch was "
            "Wild (grid=(1, 1, 1), block=(32, 1, 1), shared_mem=0)*",
            "*SKIPPED*the CUDA context is unusable after test_a_kernel_fault*",
        ]
    )


def test_a_fault_in_cupy_after_a_cuforge_launch_is_not_blamed_on_the_cuforge_kernel(pytester):
    """The driver does not say which kernel faulted: the report names the last cuforge launch
    as one suspect and GPU work another library ran after it as the other."""
    pytest.importorskip("cupy")
    pytester.makepyfile(
        """
        import cupy as cp, pytest, cuforge as cf

        @cf.kernel
        class Fine:
            x: cf.Array[cf.float32]
            n: cf.int64
            body = "if (threadIdx.x < n) x[threadIdx.x] = 1.0f;"

        WILD = cp.RawKernel(r'extern "C" __global__ void wild() { ((float*)0x10)[threadIdx.x] = 1.0f; }', "wild")

        @pytest.mark.gpu
        def test_cupy_faults():
            Fine(cp.zeros(32, cp.float32), 32, grid=1, block=32)
            WILD((1,), (32,), ())
        """
    )
    result = pytester.runpytest_subprocess(*PLUGIN, "-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*the last cuforge launch was Fine (grid=(1, 1, 1)*: the fault is in it, or in GPU work another library*"]
    )
    result.stdout.no_fnmatch_line("*Fine (grid=(1, 1, 1), block=(32, 1, 1), shared_mem=0) faulted*")


def test_fixtures_on_the_gpu(cuda_device, cuda_stream):
    assert cuda_device.compute_capability[0] >= 7
    assert int(cuda_stream.handle) != 0
