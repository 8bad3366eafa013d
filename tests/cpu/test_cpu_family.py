"""A family called on the CPU: the dtype inferred from the arrays, the call's device= passed to
the instantiation, and autotuning (which times a GPU) left to the defaults."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import cuforge as cf


@cf.kernel
class Axpy:
    T = cf.typeparam(cf.float32, cf.float64)
    BLOCK = cf.intparam(256, 128)
    a: T
    x: cf.In[T]
    y: cf.Array[T]
    n: cf.int64
    block = "BLOCK"
    autotune = cf.autotune(BLOCK=[128, 256], key=["n"])
    body = "long long i = blockIdx.x * (long long){{ BLOCK }} + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i];"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_family_call_on_the_cpu_infers_the_dtype_and_skips_tuning(dtype):
    x = np.arange(1000, dtype=dtype)
    y = np.ones(1000, dtype)
    Axpy(2.0, x, y, 1000, device="cpu")
    np.testing.assert_array_equal(y, 2 * x + 1)
    assert Axpy.select(2.0, x, y, 1000).template_args["BLOCK"] == 256  # the default: nothing was tuned


def test_a_family_call_follows_set_device_cpu():
    x = np.ones(300, np.float64)
    y = np.zeros(300, np.float64)

    def on_a_thread_of_its_own() -> None:  # set_device is per thread: this one ends with the test
        cf.set_device("cpu")
        Axpy(3.0, x, y, 300)

    t = threading.Thread(target=on_a_thread_of_its_own)
    t.start()
    t.join(timeout=60)
    np.testing.assert_array_equal(y, 3.0)
