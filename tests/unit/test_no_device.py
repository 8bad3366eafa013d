"""A kernel called where no GPU can be used: the error names the kernel and its fix, and
IPython shows it with the caller's frames only, not cuforge's."""

from __future__ import annotations

import os

import numpy as np
import pytest

import cuforge as cf
from cuforge._runtime import cuda as _cuda

from ..conftest import Saxpy

NO_GPU = pytest.mark.skipif(_cuda.gpu_available(), reason="a GPU is present: the launch would run")
CUFORGE_DIR = os.path.dirname(cf.__file__)


def call_without_a_gpu() -> cf.NoDeviceError:
    x = np.ones(8, np.float32)
    with pytest.raises(cf.NoDeviceError) as info:
        Saxpy(2.0, x, x, 8)
    return info.value


@NO_GPU
def test_a_launch_without_a_gpu_names_the_kernel_and_its_own_compile_call():
    exc = call_without_a_gpu()
    assert str(exc).startswith("Saxpy: no CUDA device is available (")
    assert str(exc).endswith("compiling does not: use Saxpy.compile(arch='sm_90')")


@NO_GPU
def test_a_family_instance_is_named_by_its_instantiation():
    @cf.kernel
    class Fill:
        T = cf.typeparam(cf.float32, cf.float64)
        y: cf.Array[T]
        body = "y[threadIdx.x] = T(1);"

    with pytest.raises(cf.NoDeviceError, match=r"^Fill<double>: no CUDA device is available .*use \.compile\(arch='sm_90'\) "):
        Fill(np.ones(4))


@NO_GPU
def test_ipython_shows_the_message_and_the_callers_frame_not_cuforges():
    lines = call_without_a_gpu()._render_traceback_()
    assert lines[0] == "Traceback (most recent call last):"
    assert any(__file__ in line and "call_without_a_gpu" in line for line in lines)
    assert not any(CUFORGE_DIR in line for line in lines)
    assert lines[-1] == f"cuforge.NoDeviceError: {call_without_a_gpu()}"


def test_an_error_raised_in_cuforge_alone_renders_as_its_message():
    try:
        cf.graph(mode="strict")
    except cf.ArgumentError as exc:
        lines = exc._render_traceback_()
    assert lines[-1] == "cuforge.ArgumentError: cf.graph(): mode expects one of 'thread_local', 'global', 'relaxed', got 'strict'"
    assert not any(CUFORGE_DIR in line for line in lines)


@NO_GPU
def test_a_real_ipython_shell_shows_the_cell_and_the_message(capsys):
    InteractiveShell = pytest.importorskip("IPython.core.interactiveshell").InteractiveShell
    shell = InteractiveShell.instance()
    shell.user_ns.update(Saxpy=Saxpy, np=np)
    shell.run_cell("x = np.ones(8, np.float32)\nSaxpy(2.0, x, x, 8)")
    out = capsys.readouterr()
    shown = (out.out + out.err).strip().splitlines()
    assert shown[-1].startswith("cuforge.NoDeviceError: Saxpy: no CUDA device is available")
    assert "Saxpy(2.0, x, x, 8)" in shown[-2] and not any(CUFORGE_DIR in line or "interactiveshell" in line for line in shown)


@NO_GPU
@pytest.mark.parametrize(
    "use",
    [
        lambda k, x: k.prepare(x),
        lambda k, x: k.attributes,
        lambda k, x: k.occupancy(block=32),
        lambda k, x: k.set_global("factor", np.array([3.0], np.float32)),
        lambda k, x: k.get_global("factor", np.float32),
    ],
    ids=["prepare", "attributes", "occupancy", "set_global", "get_global"],
)
def test_what_loads_a_kernel_names_it_without_a_gpu(use):
    @cf.kernel
    class Scaled:
        x: cf.Array[cf.float32]
        preamble = "__constant__ float factor;"
        body = "x[threadIdx.x] *= factor;"

    with pytest.raises(cf.NoDeviceError, match=r"^Scaled: no CUDA device is available .*use Scaled\.compile\(arch='sm_90'\)$"):
        use(Scaled, np.ones(4, np.float32))


@NO_GPU
def test_an_autotuned_family_call_names_the_family_and_its_precompile():
    @cf.kernel
    class Tuned:
        T = cf.typeparam(cf.float32)
        B = cf.intparam(64, 128)
        y: cf.Array[T]
        block = "B"
        autotune = cf.autotune(B=[64, 128])
        body = "y[threadIdx.x] = T(1);"

    with pytest.raises(cf.NoDeviceError, match=r"^Tuned: no CUDA device is available .*use Tuned\.precompile\(arch='sm_90'\)$"):
        Tuned(np.ones(4, np.float32))
