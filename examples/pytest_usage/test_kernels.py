"""How a project tests its kernels with cuforge's pytest plugin.

pytest examples/pytest_usage                          # launches tests run on the GPU, else on the CPU backend;
                                                      # GPU tests skip (with reasons) without a GPU
pytest examples/pytest_usage --cuforge-compile-all --cuforge-arch sm_90   # compile every instantiation
"""

import numpy as np
import pytest
from kernels import Axpy, Clamp

import cuforge as cf
from cuforge.integrations.testing import assert_kernel_matches, parametrize_family, random_array


def axpy_reference(a, x, y, n):
    y[:] = (a * x.astype(np.float64) + y).astype(y.dtype)


@pytest.mark.launches
@parametrize_family(Axpy)
def test_axpy_matches_numpy(kernel):
    dtype = kernel.template_args["T"]
    n = 10_000
    assert_kernel_matches(kernel, axpy_reference, 1.5, random_array(n, dtype, 1), random_array(n, dtype, 2), n)


@pytest.mark.launches
def test_family_call_infers_the_dtype():
    x = random_array(1000, cf.float64, 3)
    assert_kernel_matches(Axpy, axpy_reference, 2.0, x, np.zeros(1000), 1000)


@pytest.mark.gpu
def test_clamp_on_a_stream(cuda_stream):
    x = cf.to_device(np.arange(-50, 50, dtype=np.int32))
    out = cf.zeros(100, cf.int32)
    Clamp(x, out, -10, 10, 100, stream=cuda_stream)
    cuda_stream.sync()
    np.testing.assert_array_equal(out.to_numpy(), np.clip(np.arange(-50, 50), -10, 10))


def test_no_recompile_after_warm_up(cuforge_cache_dir, cuforge_compile_counter):
    Clamp.compile(arch="sm_90")
    Clamp.compile(arch="sm_90")
    assert cuforge_compile_counter.count <= 1


def test_wrong_dtype_is_rejected_before_the_gpu():
    with pytest.raises(cf.ArgumentTypeError, match="Clamp: argument 'x' expects In\\[int32\\]"):
        Clamp(np.zeros(4, np.int64), np.zeros(4, np.int32), 0, 1, 4)
