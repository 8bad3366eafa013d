"""The C extension's raw launch, its limits, and cuforge without it."""

from __future__ import annotations

import subprocess
import sys

import pytest

import cuforge as cf

from .. import launch_inputs as li

claunch = pytest.importorskip(
    "cuforge._claunch", reason="cuforge's C launcher is not built here (no C compiler at install): launches use ctypes"
)


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((0, (1, 1, 1), (32, 1, 1), 0, 0), TypeError, r"launch\(\) takes 6 or 7 arguments \(5 given\)"),
        ((0, [1, 1, 1], (32, 1, 1), 0, 0, 0), TypeError, r"launch: grid must be a tuple of 3 ints"),
        ((0, (1, 1), (32, 1, 1), 0, 0, 0), TypeError, r"launch: grid must be a tuple of 3 ints"),
        ((0, (1, 1, 1), (32, 1.0, 1), 0, 0, 0), TypeError, r"an integer is required"),
        ((0, (1, 1, 1), (32, -1, 1), 0, 0, 0), OverflowError, r"negative value"),
        ((0, (2**32, 1, 1), (32, 1, 1), 0, 0, 0), OverflowError, r"grid\[0\] does not fit an unsigned int"),
        ((0, (1, 1, 1), (32, 1, 1), 2**32, 0, 0), OverflowError, r"shared_mem does not fit an unsigned int"),
        (("f", (1, 1, 1), (32, 1, 1), 0, 0, 0), TypeError, r"an integer is required"),
    ],
)
def test_bad_arguments_raise_before_the_driver(args, error, match):
    with pytest.raises(error, match=match):
        claunch.launch(*args)


def test_without_an_entry_point_it_answers_not_initialized():
    # A fresh process: no device was made current, so no entry point was set.
    code = "import cuforge._claunch as c; print(c.launch(0, (1, 1, 1), (32, 1, 1), 0, 0, 0))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "3"  # CUDA_ERROR_NOT_INITIALIZED


WITHOUT_EXTENSION = """
import sys
sys.modules["cuforge._claunch"] = None  # as if no C compiler was present at install
import numpy as np
import cuforge as cf
from cuforge._runtime import cuda as _cuda
from cuforge._kernel.kernel import _PythonCall
assert _cuda.claunch is None and cf.Kernel.__bases__[0] is _PythonCall

@cf.kernel
class Saxpy:
    a: cf.float32
    x: cf.In[cf.float32]
    y: cf.Array[cf.float32]
    n: cf.int64
    body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i];"

assert Saxpy._fast is None  # no C launcher: the general path takes every call
try:
    Saxpy(1.0, np.ones(4), np.ones(4, np.float32), 4)
except cf.ArgumentTypeError as exc:
    print(exc)
"""


def test_without_the_extension_python_checks_the_same_calls():
    out = subprocess.run([sys.executable, "-c", WITHOUT_EXTENSION], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (
        "Saxpy: argument 'x' expects In[float32], got a float64 array (numpy.ndarray); "
        "cast with x.astype(numpy.float32) or declare the parameter with cf.float64"
    )


def test_with_the_extension_kernels_are_called_from_c():
    import cuforge as cf

    assert cf.Kernel.__bases__[0] is claunch.KernelBase and cf.Kernel.__call__ is claunch.KernelBase.__call__


def test_the_c_launcher_exports_its_limits():
    import cuforge as cf

    assert (claunch.MAX_PARAMS, claunch.MAX_PARAM_BYTES) == (256, 4096)

    # Past MAX_PARAMS the general path takes every call: no Launcher is made.
    ns = {"__annotations__": {f"p{i}": cf.int32 for i in range(claunch.MAX_PARAMS + 1)}, "body": ";", "grid": "p0"}
    wide = cf.kernel(type("Wide", (), ns))
    assert wide._fast is None and isinstance(wide, cf.Kernel)


def test_launch_attributes_are_cuLaunchKernelEx_records():
    from cuforge._runtime import cuda as _cuda

    assert _cuda.LaunchConfig((1, 1, 1), (1, 1, 1)).attributes() is None
    attrs = _cuda.LaunchConfig((1, 1, 1), (1, 1, 1), cooperative=True, cluster=(2, 1, 1), programmatic_serialization=True).attributes()
    assert len(attrs) == 3 * 72  # sizeof(CUlaunchAttribute)
    assert attrs[:4] == (2).to_bytes(4, "little") and attrs[8:12] == (1).to_bytes(4, "little")  # COOPERATIVE = 1
    assert attrs[72:76] == (4).to_bytes(4, "little") and attrs[80:92] == b"\x02\0\0\0\x01\0\0\0\x01\0\0\0"
    assert attrs[144:148] == (6).to_bytes(4, "little")
    with pytest.raises(TypeError, match="attrs must be None or bytes of CUlaunchAttribute records"):
        claunch.launch(0, (1, 1, 1), (32, 1, 1), 0, 0, 0, b"short")


def test_c_launcher_packs_none_for_an_optional_array_as_the_general_path_does():
    @cf.kernel
    class Moments:
        out: cf.Out[cf.float32]
        mean: cf.Optional[cf.Out[cf.float32]]
        n: cf.int32
        body = ";"

    out = li.fake_device_array((300,), cf.float32)
    null_mean = (0x7F0000000000).to_bytes(8, "little") + bytes(8) + (300).to_bytes(4, "little")
    for args, kwargs in [((out, None, 300), {}), ((out,), {"n": 300}), ((), {"n": 300, "out": out})]:
        fast, general = li.both(Moments, args, kwargs, None, None, 0, None)
        assert fast == general
        assert fast[0][:20] == null_mean and fast[1] == (2, 1, 1) and fast[5] == (0,)  # one array: out
    # None for the array the grid is sized by: nothing to launch, on both paths
    assert li.both(Moments, (None, None, 1), {}, None, None, 0, None) == ("declined", "declined")
    only = cf.kernel(type("OnlyOptional", (), {"__annotations__": {"x": cf.Optional[cf.Array[cf.float32]]}, "body": ";"}))
    assert li.both(only, (None,), {}, None, None, 0, None) == (None, None)


def test_c_launcher_computes_a_blocks_grid_itself():
    """A cf.blocks grid is a rule code the C launcher computes (no Python grid function per
    call): a Launcher given none still launches that many blocks, and declines a count out of
    range so that the general path explains it."""
    from cuforge._declare import launch_rules as _launch_rules
    from cuforge._launch.checks import scalar_to_bytes

    k = cf.kernel(type("Blocks", (), {"__annotations__": {"x": cf.In[cf.float32], "nb": cf.uint64},
                                      "grid": cf.blocks("nb"), "body": ";"}))  # fmt: skip
    assert k._plan.grid.source == _launch_rules.blocks_code(1)
    converters = (None, scalar_to_bytes(k._plan.checks[1], k._plan.specs[1]))
    bare = claunch.Launcher(k.label, k._plan.specs, converters, {}, _launch_rules.blocks_code(1), None, (128, 1, 1), None)
    x = li.fake_device_array((8,), cf.float32)
    assert bare.check_and_pack((x, 7), None, None, None, 0, None)[1:3] == ((7, 1, 1), (128, 1, 1))
    for count in (0, 2**31, 2**64 - 1):
        assert bare.check_and_pack((x, count), None, None, None, 0, None) is False
    with pytest.raises(ValueError, match=r"Launcher: grid_rule names no parameter"):  # x is an array, not a count
        claunch.Launcher(k.label, k._plan.specs, converters, {}, _launch_rules.blocks_code(0), None, (128, 1, 1), None)
    with pytest.raises(cf.ArgumentError, match=r"Blocks: grid = cf.blocks\('nb'\) launches nb blocks, which must be "
                                               r"from 1 to 2147483647; got nb=2147483648; pass a count >= 1, or grid="):  # fmt: skip
        k(x, 2**31)
