"""A kernel called where no GPU can be used: the error names the kernel and its fix, and
IPython shows it with the caller's frames only, not cuforge's."""

from __future__ import annotations

import contextlib
import os

import numpy as np
import pytest

import cuforge as cf
from cuforge import _config
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


@NO_GPU
def test_what_needs_a_gpu_whatever_is_chosen_says_so_rather_than_offer_the_cpu():
    """Device memory and graphs are GPU-only: their errors say what to do on the CPU, under
    CUFORGE_DEVICE=cpu too, where offering the CPU would send the reader round in circles."""
    gone = r"no CUDA device is available \(.*\); launching needs an NVIDIA GPU and driver; "
    for chosen in (False, True):
        with _on_cpu(chosen):
            with pytest.raises(cf.NoDeviceError, match=rf"^cf.zeros\(\): {gone}device memory is GPU-only \(on the CPU, a "
                                                        r"launch takes NumPy arrays in place: use numpy.zeros\)$"):  # fmt: skip
                cf.zeros(4, cf.float32)
            with pytest.raises(cf.NoDeviceError, match=r"^cf.to_device\(\): .*\(on the CPU, a launch takes NumPy arrays in "
                                                        r"place: pass the NumPy array itself\)$"):  # fmt: skip
                cf.to_device(np.ones(4))
            with pytest.raises(cf.NoDeviceError, match=rf"^cf.graph\(\): {gone}a CUDA graph is GPU-only \(on the CPU, call "
                                                        r"the kernels themselves\)$"):  # fmt: skip
                with cf.graph():
                    pass


@NO_GPU
def test_synchronize_returns_at_once_where_the_cpu_is_chosen_and_else_says_why_it_cannot_wait():
    with _on_cpu(True):
        cf.synchronize()  # a CPU launch is done when its call returns
    with pytest.raises(cf.NoDeviceError, match=r"^cf.synchronize\(\): no CUDA device is available .*; cf.synchronize\(\) is "
                                                r"GPU-only \(on the CPU, a launch is done when its call returns: there is "
                                                r"nothing to wait for, and where the CPU is chosen, by cf.set_device\('cpu'\) "
                                                r"or CUFORGE_DEVICE=cpu, cf.synchronize\(\) returns at once\)$"):  # fmt: skip
        cf.synchronize()


@NO_GPU
def test_a_kernel_the_cpu_cannot_run_is_not_offered_the_cpu(saxpy_sm90):
    @cf.kernel
    class Prebuilt:
        module = cf.Module(saxpy_sm90.code)
        name = saxpy_sm90.lowered_name
        a: cf.float32
        x: cf.In[cf.float32]
        y: cf.Array[cf.float32]
        n: cf.int64

    @cf.kernel
    class BlockSort:
        x: cf.Array[cf.float32]
        preamble = "#include <cub/block/block_radix_sort.cuh>"
        block = 128
        body = """
        using Sort = cub::BlockRadixSort<float, 128, 1>;
        __shared__ typename Sort::TempStorage tmp;
        float key[1] = {x[threadIdx.x]};
        Sort(tmp).Sort(key);
        x[threadIdx.x] = key[0];
        """

    @cf.kernel
    class BlockSum:
        x: cf.In[cf.float32]
        out: cf.Out[cf.float32]
        preamble = "#include <cub/block/block_reduce.cuh>"
        block = 128
        body = """
        using Reduce = cub::BlockReduce<float, 128>;
        __shared__ typename Reduce::TempStorage tmp;
        float s = Reduce(tmp).Sum(x[threadIdx.x]);
        if (threadIdx.x == 0) out[0] = s;
        """

    x = np.ones(128, np.float32)
    with pytest.raises(cf.NoDeviceError, match=r"^Prebuilt: no CUDA device is available .*launching needs an NVIDIA GPU and "
                                                r"driver; the CPU cannot run this kernel \(it is prebuilt \(module=<cuforge.Module "
                                                r"<bytes> \(cubin\)>\): GPU code, with no source to compile for the CPU\)"):  # fmt: skip
        Prebuilt(2.0, x, x, 128)
    with pytest.raises(cf.NoDeviceError, match=r"^BlockSort: no CUDA device .*; the CPU cannot run this kernel \(it uses "
                                                r"CUB device code other than cub::BlockReduce, BlockScan, BlockLoad, BlockStore, WarpReduce, WarpScan, "
                                                r"KeyValuePair, ArgMin and ArgMax, which the CPU backend cannot run\)"):  # fmt: skip
        BlockSort(x, grid=1)
    with pytest.raises(cf.NoDeviceError, match=r"^BlockSum: .*, or the CPU: pass device='cpu'"):  # (CUB's reductions run there)
        BlockSum(x, np.zeros(1, np.float32), grid=1)
    with pytest.raises(cf.NoDeviceError, match=r"^Saxpy: .*, or the CPU: pass device='cpu'"):  # a kernel the CPU runs
        Saxpy(2.0, x, x, 128)


def test_a_cast_is_spelled_in_the_arrays_own_library():
    @cf.kernel
    class Fill:
        T = cf.typeparam(cf.float32, cf.float64)
        y: cf.Array[T]
        body = "y[threadIdx.x] = T(1);"

    with pytest.raises(cf.ArgumentTypeError, match=r"Fill: argument 'y' sets T, which allows float32, float64; got a list; "
                                                    r"cast it to one of those \(e.g. numpy.asarray\(y, numpy.float32\)\)"):  # fmt: skip
        Fill([1, 2, 3], device="cpu")
    with pytest.raises(cf.ArgumentTypeError, match=r"got an array of int32; cast it to one of those \(e.g. "
                                                    r"y.astype\(numpy.float32\)\)"):  # fmt: skip
        Fill(np.ones(3, np.int32), device="cpu")
    torch = pytest.importorskip("torch")
    with pytest.raises(
        cf.ArgumentTypeError, match=r"got an array of int32; cast it to one of those \(e.g. y.to\(torch.float32\)\)"
    ):
        Fill(torch.ones(3, dtype=torch.int32), device="cpu")
    with pytest.raises(cf.ArgumentTypeError, match=r"^Saxpy: argument 'x' expects In\[float32\], got an int64 array "
                                                    r"\(torch.Tensor\); cast with x.to\(torch.float32\) or declare"):  # fmt: skip
        Saxpy(2.0, torch.ones(3, dtype=torch.int64), torch.ones(3), 3, device="cpu")


@NO_GPU
def test_a_cpu_tensor_for_a_gpu_launch_without_a_gpu_is_offered_the_cpu():
    torch = pytest.importorskip("torch")
    x, y = torch.ones(8), torch.zeros(8)
    with pytest.raises(cf.ArgumentTypeError, match=r"^Saxpy: argument 'x' expects In\[float32\], got a torch array in host "
                                                    r"memory; no GPU can be used here, and the CPU takes it in place: pass "
                                                    r"device='cpu', call cf.set_device\('cpu'\) or set CUFORGE_DEVICE=cpu"):  # fmt: skip
        Saxpy(2.0, x, y, 8)
    Saxpy(2.0, x, y, 8, device="cpu")  # as it says
    assert torch.equal(y, torch.full((8,), 2.0))


@contextlib.contextmanager
def _on_cpu(chosen: bool):
    """The process's launches on the CPU (CUFORGE_DEVICE=cpu, as the process reads it) or not."""
    previous = _config.device()
    saved = _config.overrides_of("device")
    _cuda.set_default_device("cpu" if chosen else "cuda")
    try:
        yield
    finally:
        _cuda.set_default_device(previous)
        _config.restore_overrides(("device",), saved)
