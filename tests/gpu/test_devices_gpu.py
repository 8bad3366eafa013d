"""Several GPUs and worker processes: launches follow the arrays, kernels travel to spawn
workers and Dask, and a forked child gets a clear error. The two-GPU tests skip with a
reason on a machine with one."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import cuforge as cf
from cuforge.pytest_plugin import gpu_module

from ..conftest import Saxpy

pytestmark = gpu_module()
EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


def _gpus() -> int:
    try:
        from cuda.core import system

        return int(system.get_num_devices())
    except Exception:  # no driver here: the gpu marker skips these tests anyway
        return 0


two_gpus = pytest.mark.skipif(_gpus() < 2, reason=f"needs two CUDA GPUs in one machine; this one has {_gpus()}")


@pytest.fixture(autouse=True)
def _the_threads_device_is_as_it_was():
    """A launch on device 1 (by its arrays, device=, a graph, an op) leaves this thread's
    current device where it was: the tests after these run on device 0."""
    runtime = pytest.importorskip("cuda.bindings.runtime")
    before = int(runtime.cudaGetDevice()[1])
    yield
    assert int(runtime.cudaGetDevice()[1]) == before, "the test left this thread's current CUDA device changed"


def _expected(n, a=2.0):
    x = np.arange(n, dtype=np.float32)
    return x, a * x + 1


@two_gpus
def test_cupy_arrays_on_device_1_launch_there_with_no_set_device():
    cp = pytest.importorskip("cupy")
    n = 100_003
    x, _ = _expected(n)
    with cp.cuda.Device(1):
        dx, dy = cp.asarray(x), cp.ones(n, dtype=cp.float32)
    Saxpy(2.0, dx, dy, n)  # this thread's device is 0: the launch goes to 1 and comes back
    Saxpy(2.0, dx, dy, n, block=128)
    with cp.cuda.Device(1):
        assert dy.device.id == 1
        np.testing.assert_allclose(cp.asnumpy(dy), 2 * x * 2 + 1, rtol=1e-6)
        dy[...] = 1
        for _ in range(3):  # inside CuPy's own device context: adopted, then the C launcher
            Saxpy(2.0, dx, dy, n)
        np.testing.assert_allclose(cp.asnumpy(dy), 3 * 2 * x + 1, rtol=1e-6)
    assert cp.cuda.runtime.getDevice() == 0  # the thread's device is as it was


@two_gpus
def test_torch_tensors_on_cuda_1_launch_there():
    torch = pytest.importorskip("torch")
    n = 4097
    x, want = _expected(n)
    tx = torch.from_numpy(x).to("cuda:1")
    ty = torch.ones(n, device="cuda:1")
    Saxpy(2.0, tx, ty, n)
    torch.cuda.synchronize(1)
    np.testing.assert_allclose(ty.cpu().numpy(), want, rtol=1e-6)


@two_gpus
def test_mixed_devices_are_refused_naming_each_argument():
    cp = pytest.importorskip("cupy")
    x = cp.ones(64, dtype=cp.float32)
    with cp.cuda.Device(1):
        y = cp.ones(64, dtype=cp.float32)
    with pytest.raises(cf.ArgumentTypeError, match=r"Saxpy: the arrays are on different devices \('x' on device 0; 'y' on "
                                                   r"device 1\); a launch runs on one device"):  # fmt: skip
        Saxpy(1.0, x, y, 64)
    with pytest.raises(cf.ArgumentTypeError, match=r"Saxpy: device=0 was asked, but the arrays are on different devices"):
        with cp.cuda.Device(1):
            Saxpy(1.0, cp.ones(64, dtype=cp.float32), cp.ones(64, dtype=cp.float32), 64, device=0)
    with pytest.raises(cf.ArgumentTypeError, match=r"Saxpy: device=1 was asked, but the arrays are on different devices"):
        Saxpy(1.0, x, x, 64, device="cuda:1")  # PyTorch's spelling of device=1


@two_gpus
def test_two_threads_one_per_device_launch_100_times_each():
    cp = pytest.importorskip("cupy")
    n, errors, results = 65_536, [], {}

    def work(device):
        try:
            with cp.cuda.Device(device):
                x, y = cp.arange(n, dtype=cp.float32), cp.zeros(n, dtype=cp.float32)
                for _ in range(100):
                    Saxpy(1.0, x, y, n)
                results[device] = cp.asnumpy(y)
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(d,)) for d in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for d in (0, 1):
        np.testing.assert_array_equal(results[d], 100 * np.arange(n, dtype=np.float32))


def _spawn_work(task):
    """In a spawn worker: the pickled kernel, on the worker's share of the GPUs."""
    import cupy as cp

    kernel, device, n = task
    with cp.cuda.Device(device):
        x, y = cp.arange(n, dtype=cp.float32), cp.ones(n, dtype=cp.float32)
        kernel(3.0, x, y, n)
        return device, float(cp.asnumpy(y).sum())


@two_gpus
def test_a_spawn_pool_of_4_workers_runs_a_pickled_kernel():
    pytest.importorskip("cupy")

    @cf.kernel
    class LocalSaxpy:  # not importable in the workers: it travels by declaration
        a: cf.float32
        x: cf.In[cf.float32]
        y: cf.Array[cf.float32]
        n: cf.int64
        body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i];"

    n = 10_000
    tasks = [(k, i % 2, n) for i, k in enumerate([Saxpy, LocalSaxpy, Saxpy, LocalSaxpy])]
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        done = pool.map(_spawn_work, tasks)
    want = float((3.0 * np.arange(n, dtype=np.float64) + 1).sum())
    assert sorted(d for d, _ in done) == [0, 0, 1, 1]
    for _, total in done:
        assert total == pytest.approx(want, rel=1e-6)


@two_gpus
def test_the_dask_example_uses_both_gpus():
    pytest.importorskip("distributed")
    pytest.importorskip("cupy")
    out = subprocess.run([sys.executable, os.path.join(EXAMPLES, "dask_saxpy.py")], capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    line = out.stdout.strip().splitlines()[-1]
    assert line.startswith("saxpy over 10 CuPy chunks matches NumPy; workers and their GPUs: ")
    used = eval(line.split("GPUs: ", 1)[1])  # {worker address: PCI bus id}
    assert len(used) == 2 and len(set(used.values())) == 2, used


def test_a_forked_child_gets_a_clear_error_and_the_parent_carries_on():
    code = textwrap.dedent("""
        import os, sys
        sys.path.insert(0, os.getcwd())
        import numpy as np, cuforge as cf
        from tests.conftest import Saxpy
        x, y = cf.to_device(np.ones(256, np.float32)), cf.zeros(256, cf.float32)
        Saxpy(1.0, x, y, 256)
        Saxpy(1.0, x, y, 256)  # the C launcher's path, warm
        pid = os.fork()
        if pid == 0:
            try:
                Saxpy(1.0, x, y, 256)
                print("child: launched", flush=True)
            except cf.CuforgeError as exc:
                print("child:", type(exc).__name__, exc, flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
        Saxpy(1.0, x, y, 256)
        print("parent:", y.to_numpy()[0], flush=True)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    child, parent = out.stdout.strip().splitlines()
    assert child.startswith("child: NoDeviceError Saxpy: CUDA cannot be used in a process forked from one that had already used "
                            "CUDA") and "'spawn' or 'forkserver'" in child  # fmt: skip
    assert parent == "parent: 3.0"


def test_prepare_can_be_the_first_cuda_use_of_a_process():
    pytest.importorskip("cupy")
    code = textwrap.dedent("""
        import os, sys
        sys.path.insert(0, os.getcwd())
        import cupy as cp
        from tests.conftest import Saxpy
        x, y = cp.ones(256, dtype=cp.float32), cp.zeros(256, dtype=cp.float32)
        Saxpy.prepare(2.0, x, y, 256, stream=0)()
        cp.cuda.runtime.deviceSynchronize()
        print(float(y.sum()))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "512.0", out.stderr


@two_gpus
def test_a_graph_captures_and_replays_on_device_1_and_refuses_device_0_arrays():
    cp = pytest.importorskip("cupy")
    n = 4099
    x, _ = _expected(n)
    with cp.cuda.Device(1):
        dx, dy = cp.asarray(x), cp.ones(n, dtype=cp.float32)
    Saxpy(2.0, dx, dy, n)  # loaded on device 1 before the capture
    with cp.cuda.Device(1):
        dy[...] = 1
        cp.cuda.Device(1).synchronize()
    with cf.graph(device=1) as g:
        Saxpy(2.0, dx, dy, n)
    g()  # from a thread whose device is 0: the graph's context is made current for the replay
    with cp.cuda.Device(1):
        cp.cuda.Device(1).synchronize()
        np.testing.assert_allclose(cp.asnumpy(dy), 2 * x + 1, rtol=1e-6)
    assert cp.cuda.runtime.getDevice() == 0
    on0 = cp.ones(n, dtype=cp.float32)
    Saxpy(1.0, on0, on0, n)
    with pytest.raises(cf.GraphCaptureError, match=r"Saxpy: the launch runs on device 0, but this graph captures on device 1"):
        with cf.graph(device=1):
            Saxpy(1.0, on0, on0, n)
    Saxpy(1.0, on0, on0, n)  # device 0 still works
    cp.cuda.Device(0).synchronize()
    np.testing.assert_allclose(cp.asnumpy(on0), 4.0)


@two_gpus
def test_a_torch_op_runs_on_the_tensors_device():
    torch = pytest.importorskip("torch")
    from .. import examples

    example = examples.load("torch_ops")
    x = torch.randn(64, 32, device="cuda:1")
    b = torch.randn(32, device="cuda:1")
    y = example.bias_silu(x, b)
    assert y.device == torch.device("cuda:1")
    torch.testing.assert_close(y, torch.nn.functional.silu(x + b))
