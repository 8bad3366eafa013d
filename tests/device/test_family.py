"""Families launched on host arrays, on either device: an explicit instantiation, extern
shared arrays of two types, vector types inferred from the arrays, module variables per
instantiation."""

from __future__ import annotations

import numpy as np
import pytest

import cuforge as cf

pytestmark = pytest.mark.launches


def test_explicit_index_bypasses_tuning():
    @cf.kernel
    class Tuned:
        T = cf.typeparam(cf.float32)
        BLOCK = cf.intparam(128, 256)
        x: cf.Out[T]
        n: cf.int64
        block = "BLOCK"
        autotune = cf.autotune(BLOCK=[128, 256], key=["n"])
        body = "long long i = blockIdx.x * (long long)BLOCK + threadIdx.x; if (i < n) x[i] = BLOCK;"

    x = np.zeros(1000, np.float32)
    Tuned[cf.float32, 256](x, 1000)
    assert (x == 256).all() and Tuned.tuning() == []


def test_a_family_with_extern_shared_arrays_of_two_types_precompiles_and_runs():
    """One program cannot hold `extern __shared__ T temp[]` for float and double: each
    instantiation compiles alone, and both run."""

    @cf.kernel
    class Reverse:
        T = cf.typeparam(cf.float32, cf.float64)
        x: cf.Array[T]
        n: cf.int32
        block = 128
        grid = 1
        shared_mem = staticmethod(lambda block: block[0] * 8)
        body = """
        extern __shared__ T temp[];
        temp[threadIdx.x] = threadIdx.x < n ? x[threadIdx.x] : T(0);
        __syncthreads();
        if (threadIdx.x < n) x[threadIdx.x] = temp[n - 1 - threadIdx.x];
        """

    before = cf.cache_stats().batch_fallbacks
    assert len(Reverse.precompile()) == 2
    assert cf.cache_stats().batch_fallbacks == before + 1
    for dtype in (np.float32, np.float64):
        x = np.arange(100, dtype=dtype)
        Reverse(x, 100)
        np.testing.assert_array_equal(x, np.arange(99, -1, -1, dtype=dtype))


@cf.kernel
class SwapLanes:
    T = cf.typeparam(cf.vector(cf.float16, 2), cf.vector(cf.float32, 4))
    x: cf.In[T]
    y: cf.Out[T]
    n: cf.int64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) { T v = x[i]; T w = v; w.x = v.y; w.y = v.x; y[i] = w; }
    """


@pytest.mark.parametrize(("dtype", "lanes"), [(np.float16, 2), (np.float32, 4)])
def test_an_unindexed_vector_family_infers_the_vector_type_from_host_arrays(dtype, lanes):
    x = np.arange(1000 * lanes).astype(dtype).reshape(1000, lanes)
    y = np.zeros_like(x)
    SwapLanes(x, y, 1000)
    want = x.copy()
    want[:, [0, 1]] = x[:, [1, 0]]
    np.testing.assert_array_equal(y, want)


def test_each_family_instantiation_has_its_own_module_variables():
    @cf.kernel
    class Scaled:
        T = cf.typeparam(cf.float32, cf.float64)
        x: cf.Array[T]
        n: cf.int32
        grid = 1
        preamble = "__constant__ double factor;"
        body = "if (threadIdx.x < n) x[threadIdx.x] *= T(factor);"

    Scaled.precompile()
    Scaled[cf.float32].set_global("factor", np.float64(2.0))
    Scaled[cf.float64].set_global("factor", np.float64(3.0))
    x32, x64 = np.ones(100, np.float32), np.ones(100, np.float64)
    Scaled(x32, 100)
    Scaled(x64, 100)
    assert (x32 == 2.0).all() and (x64 == 3.0).all()
