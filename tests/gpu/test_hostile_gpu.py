"""The hostile launch corpus through the real call (the C launcher first) with CuPy arrays:
every call is refused with its message, and none reaches the driver."""

from __future__ import annotations

import pytest

import cuforge as cf
from cuforge._runtime import cuda as _cuda
from cuforge.pytest_plugin import gpu_module

from ..conftest import Saxpy
from ..hostile_launches import corpus

pytestmark = gpu_module()


def test_every_hostile_call_is_refused_and_nothing_is_launched():
    cp = pytest.importorskip("cupy")
    x, y = cp.ones(64, dtype=cp.float32), cp.ones(64, dtype=cp.float32)
    strided = cp.ones(128, dtype=cp.float32)[::2]
    class ReadOnly:  # a read-only view of x, by __cuda_array_interface__
        __cuda_array_interface__ = {**x.__cuda_array_interface__, "data": (x.data.ptr, True)}

    cases = corpus(x, y, cp.ones(64, dtype=cp.float64), strided, ReadOnly())
    Saxpy(2.0, x, y, 64)
    before = _cuda.last_launch()
    refused = 0
    for what, args, kwargs, match in cases:
        with pytest.raises(cf.CuforgeError, match=match):
            Saxpy(*args, **kwargs)
        assert _cuda.last_launch() == before, what
        refused += 1
    assert refused == len(cases)
