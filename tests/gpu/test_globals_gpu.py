"""Module variables on a real GPU: a __constant__ filter written before launches, a __device__
counter read back (by atomicAdd), and the errors of a wrong size or an unknown name."""

from __future__ import annotations

import numpy as np
import pytest

import cuforge as cf
from cuforge.pytest_plugin import gpu_module

pytestmark = gpu_module()


@cf.kernel
class Filter3:
    """out[i] = sum_k taps[k] * x[i + k] (a 3-tap filter in constant memory), counting calls."""

    x: cf.In[cf.float32]
    out: cf.Out[cf.float32]
    n: cf.int64
    grid = "n"
    preamble = "__constant__ float taps[3];\n__device__ unsigned int calls;"
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = taps[0] * x[i] + taps[1] * x[i + 1] + taps[2] * x[i + 2];
    if (i == 0) atomicAdd(&calls, 1u);
    """


def test_constant_memory_feeds_the_kernel_and_a_device_variable_reads_back():
    n = 1000
    x = np.random.default_rng(2).random(n + 2, dtype=np.float32)
    out = np.zeros(n, np.float32)
    Filter3.set_global("taps", np.array([0.25, 0.5, 0.25], np.float32))
    Filter3.set_global("calls", np.uint32(0))
    Filter3(x, out, n)
    np.testing.assert_allclose(out, 0.25 * x[:-2] + 0.5 * x[1:-1] + 0.25 * x[2:], rtol=1e-6)
    assert Filter3.get_global("calls", np.uint32)[0] == 1


def test_wrong_sizes_and_unknown_names_are_refused():
    with pytest.raises(cf.ArgumentTypeError, match=r"Filter3.set_global\('taps'\): the variable holds 12 bytes; got 24 "
                                                   r"\(float64, shape \(3,\)\)"):  # fmt: skip
        Filter3.set_global("taps", np.array([1.0, 0.0, 0.0]))
    with pytest.raises(cf.ArgumentError, match=r"the module of Filter3 has no variable 'tap'"):
        Filter3.set_global("tap", np.zeros(3, np.float32))
    assert Filter3.get_global("taps", np.float32).shape == (3,)




def test_static_module_variables_are_found_by_their_internal_symbol():
    from ..cpu.test_cpu_semantics import StaticTable

    StaticTable.set_global("c_Table", np.arange(12, dtype=np.uint32) * 3)
    StaticTable.set_global("calls", np.uint32(0))
    y = cf.zeros(12, cf.uint32)
    StaticTable(y)
    assert y.to_numpy().tolist() == list(range(0, 36, 3))
    assert StaticTable.get_global("calls", np.uint32)[0] == 1
