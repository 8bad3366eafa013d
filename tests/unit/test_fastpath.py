"""The generated launch functions: they compile for every signature form and decline, with no
CUDA call, whatever they do not check themselves (the general path then handles it)."""

from __future__ import annotations

import numpy as np
import pytest

import cuforge as cf
from cuforge import _cuda
from cuforge._arrays import DeviceArray

from ..conftest import gpu_missing_reason


def fake_device_array(shape, dtype, device=0):
    """A DeviceArray record without memory: enough for checks that never reach the GPU."""
    d = object.__new__(DeviceArray)
    d.ptr, d.shape, d.dtype, d.device_id = 0x7F0000000000, shape, dtype, device
    d.size = int(np.prod(shape))
    d.nbytes = d.size * dtype.itemsize
    return d


@cf.kernel
class Mixed:
    flag: cf.bool_
    h: cf.float16
    i8: cf.int8
    d: cf.float64
    m: cf.Array[cf.float32, 2]
    v: cf.In[cf.int32]
    grid = "rows"
    rows: cf.int32
    body = "if (flag) m[0] = h + i8 + d + v[0] + rows;"


def test_generated_source_checks_every_parameter_inline():
    src = Mixed._fast.source
    assert "if a0.__class__ is not bool: return False" in src
    assert "not -65504.0 <= a1 <= 65504.0" in src and "not -128 <= a2 <= 127" in src
    assert "if a3.__class__ is not float: return False" in src  # float64: every float fits
    assert "or len(a4.shape) != 2: return False" in src and "count = a6" in src


def test_kernels_with_complex_or_bfloat16_scalars_take_the_general_path():
    @cf.kernel
    class Z:
        z: cf.complex64
        b: cf.bfloat16
        x: cf.Out[cf.float32]
        body = ";"

    assert Z._fast.__name__ == "_decline"


@pytest.mark.parametrize(
    "args",
    [
        (1.0, np.ones(4, np.float32), np.ones(4, np.float32), 4),  # host NumPy arrays: staged by the general path
        (1, fake_device_array((4,), cf.float32), fake_device_array((4,), cf.float32), 4),  # int for float32
        (1.0, fake_device_array((4,), cf.float64), fake_device_array((4,), cf.float32), 4),  # wrong dtype
        (1.0, fake_device_array((4,), cf.float32), fake_device_array((4,), cf.float32), 2**63),  # out of range
        (1.0, fake_device_array((4,), cf.float32), fake_device_array((4,), cf.float32)),  # too few
    ],
)
def test_declines_before_any_cuda_call(saxpy, args):
    before = _cuda.driver
    assert saxpy._fast(args, None, None, 0, None) is False
    assert _cuda.driver is before


@pytest.mark.skipif(gpu_missing_reason() is None, reason="a GPU is present: the launch would run")
def test_accepted_arguments_reach_the_device_and_fail_there_without_one(saxpy):
    x, y = fake_device_array((4,), cf.float32), fake_device_array((4,), cf.float32)
    with pytest.raises(cf.NoDeviceError):
        saxpy._fast((1.0, x, y, 4), None, None, 0, None)
    with pytest.raises(cf.ArgumentTypeError, match=r"Saxpy: stream expects a stream"):
        saxpy._fast((1.0, x, y, 4), None, None, 0, "default")  # checked before the device
