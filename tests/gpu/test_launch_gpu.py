"""Launches that need the GPU itself: device memory (CuPy, PyTorch, cuforge's), streams, the
C launcher against cuda.bindings, launch attributes, the driver's view of a kernel. Launches
on host arrays, which run on either device, are in tests/device."""

from __future__ import annotations

import numpy as np
import pytest

import cuforge as cf
from cuforge.pytest_plugin import gpu_module

pytestmark = gpu_module()


def test_torch_tensors_and_streams(saxpy):
    torch = pytest.importorskip("torch")
    n = 5000
    x = torch.arange(n, dtype=torch.float32, device="cuda")
    y = torch.ones(n, dtype=torch.float32, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    saxpy(2.0, x, y, n, stream=s)
    s.synchronize()
    assert torch.equal(y, 2 * x + 1)
    with torch.cuda.stream(s):  # no stream= : the current torch stream is used
        saxpy(1.0, x, y, n)
    s.synchronize()
    assert torch.equal(y, 3 * x + 1)


def test_cuda_core_stream_and_keyword_arguments(saxpy):
    cp = pytest.importorskip("cupy")
    from cuda.core import Device

    dev = Device()
    dev.set_current()  # cuda.core asks for it before it creates a stream; cuforge does not set it
    s = dev.create_stream()
    x = cp.full(1000, 2, dtype=cp.float32)
    y = cp.zeros(1000, dtype=cp.float32)
    saxpy(n=1000, y=y, x=x, a=3.0, stream=s)
    s.sync()
    assert float(y.sum()) == 6000.0


def test_cuforge_device_arrays(saxpy):
    x = cf.to_device(np.arange(300, dtype=np.float32))
    y = cf.zeros(300, cf.float32)
    e = cf.empty((2, 3), cf.int32)
    assert (e.shape, e.dtype, e.size, e.ndim) == ((2, 3), cf.int32, 6, 2)
    saxpy(0.5, x, y, 300)
    cf.synchronize()
    np.testing.assert_array_equal(y.to_numpy(), 0.5 * np.arange(300, dtype=np.float32))
    assert y.__cuda_array_interface__["typestr"] == "<f4"


def test_source_kernel_whose_signature_disagrees_is_caught():
    @cf.kernel
    class WrongSize:
        a: cf.int32
        x: cf.Out[cf.float32]
        name = "wrong"
        source = 'extern "C" __global__ void wrong(double a, float* x) { x[0] = a; }'

    with pytest.raises(
        cf.SignatureMismatchError,
        match=r"wrong: parameter 0 'a' is annotated int32 \(4 bytes\), but the compiled kernel's parameter 0 takes 8 bytes",
    ):
        WrongSize(1, np.zeros(1, np.float32))

    @cf.kernel
    class MissingParam:
        x: cf.Out[cf.float32]
        n: cf.int32
        name = "fewer"
        source = 'extern "C" __global__ void fewer(float* x) { x[0] = 1; }'

    with pytest.raises(
        cf.SignatureMismatchError, match=r"fewer: parameter 'n' is annotated but the compiled kernel has only 1 parameters"
    ):
        MissingParam(np.zeros(1, np.float32), 1)


def test_unknown_pointer_is_rejected_before_launch(saxpy):
    host = np.ones(8, np.float32)

    class HostCAI:  # claims to be device memory but points at pageable host memory
        __cuda_array_interface__ = {"shape": (8,), "typestr": "<f4", "data": (host.ctypes.data, False), "version": 3}

    with pytest.raises(cf.ArgumentTypeError, match=r"Saxpy: argument 'x' expects device memory, but CUDA does not know pointer"):
        saxpy(1.0, HostCAI(), np.ones(8, np.float32), 8)


def test_registers_from_the_cubin_match_the_driver(saxpy):
    ck = saxpy.compile()
    assert ck.arch == "sm_90" and ck.code_type == "cubin"
    fn = ck.function(0)
    assert ck.resources()["registers"] == fn.attributes.num_regs


@pytest.mark.parametrize("kind", ["c", "bindings"])
def test_both_launchers_launch_and_refuse_what_the_kernel_cannot_do(saxpy, kind):
    from cuforge._runtime import cuda as _cuda

    if kind == "c":
        pytest.importorskip("cuforge._claunch", reason="cuforge's C launcher is not built here")
    x = cf.to_device(np.arange(256, dtype=np.float32))
    y = cf.zeros(256, cf.float32)
    try:
        _cuda.state.bind_launcher(kind)
        assert _cuda.state.launcher == kind
        saxpy(2.0, x, y, 256)  # the C launcher (declining everything under "bindings")
        saxpy(2.0, x, y, n=256)  # by name
        saxpy.prepare(2.0, x, y, 256)()  # a prepared launch
        cf.synchronize()
        # more shared memory than a block can have: refused before the launch, naming the limit
        with pytest.raises(cf.ArgumentError, match=r"Saxpy: shared_mem=1048576 bytes is more than the \d+ bytes of "
                                                   r"dynamic shared memory a block can have on device 0"):  # fmt: skip
            saxpy(2.0, x, y, 256, grid=1, block=32, shared_mem=1 << 20)
    finally:
        _cuda.state.bind_launcher()
    np.testing.assert_array_equal(y.to_numpy(), 6 * np.arange(256, dtype=np.float32))


def test_c_launcher_and_general_path_agree_on_device_arrays(saxpy):
    """The CPU differential test's calls, with CuPy arrays and PyTorch tensors on the GPU in
    them: the C launcher's check_and_pack and the general path's agree call by call."""
    cp = pytest.importorskip("cupy")
    torch = pytest.importorskip("torch")
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from .. import launch_inputs as li

    if li.KERNELS[0]._fast is None:
        pytest.skip("cuforge's C launcher is not built here")
    pool = [cp.ones(7, cp.float32), cp.ones((2, 3), cp.int32), cp.ones(5, cp.float64)[::2], cp.ones(4, cp.int8),
            torch.ones(6, device="cuda"), torch.ones((3, 2), dtype=torch.int32, device="cuda"),
            torch.ones(4, dtype=torch.float64, device="cuda"), torch.ones(3), torch.ones(8, device="cuda")[::2]]  # fmt: skip

    @settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(li.calls(arrays=st.sampled_from(pool)))
    def agree(call):
        fast, general = li.both(*call)
        assert fast == general, f"C: {li.show(fast)}\ngeneral: {li.show(general)}"

    agree()


def test_c_launcher_launches_what_it_accepts_and_names_the_launch(saxpy):
    cp = pytest.importorskip("cupy")
    from cuforge._runtime import cuda as _cuda

    if saxpy._fast is None:
        pytest.skip("cuforge's C launcher is not built here")
    n = 1000
    x, y = cp.ones(n, cp.float32), cp.zeros(n, cp.float32)
    saxpy(1.0, x, y, n)  # the first launch (general path) loads the kernel on the device
    calls = []
    original = type(saxpy)._launch_general
    type(saxpy)._launch_general = lambda self, *a: (calls.append(a), original(self, *a))[1]
    try:
        block = (128,)
        saxpy(2.0, x, y, n, grid=8, block=block)
        saxpy(np.float32(1.0), x, y, n=n, stream=cp.cuda.Stream(non_blocking=True))  # by hook and by name, still C
        assert calls == []
        assert _cuda.last_launch()[0] == "Saxpy"
        saxpy(1.0, np.ones(n, np.float32), y, n)  # a host array: the general path stages it
        assert len(calls) == 1
    finally:
        type(saxpy)._launch_general = original
    cp.cuda.runtime.deviceSynchronize()
    np.testing.assert_array_equal(cp.asnumpy(y), np.full(n, 5.0, np.float32))


def test_c_launcher_launches_a_blocks_grid():
    """``grid = cf.blocks("nb")`` launches nb blocks from the C launcher (no general path):
    each block marks its slot, and a count of 0 is refused naming the fix."""
    cp = pytest.importorskip("cupy")

    @cf.kernel
    class MarkBlocks:
        marks: cf.Out[cf.int32]
        nb: cf.uint32
        grid = cf.blocks("nb")
        block = 64
        body = "if (threadIdx.x == 0) marks[blockIdx.x] = gridDim.x;"

    if MarkBlocks._fast is None:
        pytest.skip("cuforge's C launcher is not built here")
    marks = cp.zeros(100, cp.int32)
    MarkBlocks(marks, 1)  # the first launch (general path) loads the kernel on the device
    calls = []
    original = type(MarkBlocks)._launch_general
    type(MarkBlocks)._launch_general = lambda self, *a: (calls.append(a), original(self, *a))[1]
    try:
        MarkBlocks(marks, 37)
        MarkBlocks(marks, nb=np.uint32(37))
        assert calls == []
    finally:
        type(MarkBlocks)._launch_general = original
    cp.cuda.runtime.deviceSynchronize()
    np.testing.assert_array_equal(cp.asnumpy(marks), [37] * 37 + [0] * 63)
    with pytest.raises(cf.ArgumentError, match=r"MarkBlocks: grid = cf.blocks\('nb'\) launches nb blocks, which must "
                                               r"be from 1 to 2147483647; got nb=0; pass a count >= 1, or grid="):  # fmt: skip
        MarkBlocks(marks, 0)


def test_launch_attributes_reach_cuLaunchKernelEx(saxpy, monkeypatch):
    """The attribute list reaches the driver: a cooperative launch of more blocks than fit on
    the GPU at once is refused (a plain launch of the same grid runs), from the C launcher,
    the general path and a prepared launch alike."""
    cp = pytest.importorskip("cupy")
    from cuforge._launch.claunch import c_launcher
    from cuforge._runtime import cuda as _cuda

    n = 1024 * 4096
    x, y = cp.ones(n, cp.float32), cp.zeros(n, cp.float32)
    saxpy(1.0, x, y, n, block=1024)  # 4096 blocks of 1024 threads: far more than can be resident at once
    cp.cuda.runtime.deviceSynchronize()
    saxpy._plan.attrs = _cuda.LaunchConfig((1, 1, 1), (1, 1, 1), cooperative=True).attributes()  # the C launcher's
    cooperative = classmethod(lambda cls, grid, block, shared_mem, kind: cls(grid, block, shared_mem, cooperative=True))
    monkeypatch.setattr(_cuda.LaunchConfig, "of", cooperative)  # the general path's
    saxpy._fast = c_launcher(saxpy._plan)
    too_large = r"the launch \(grid=\(4096, 1, 1\), block=\(1024, 1, 1\), shared_mem=0\) failed: CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"
    try:
        with pytest.raises(cf.LaunchError, match=too_large):
            saxpy(1.0, x, y, n, block=1024)  # the C launcher
        with pytest.raises(cf.LaunchError, match=too_large):
            saxpy(1.0, x, y, n=n, block=1024)  # by name: still the C launcher
        with pytest.raises(cf.LaunchError, match=too_large):
            saxpy.prepare(1.0, x, y, n, block=1024)()
        _cuda.state.bind_launcher("bindings")  # the general path, through cuda.bindings' cuLaunchKernelEx
        try:
            with pytest.raises(cf.LaunchError, match=too_large):
                saxpy(1.0, x, y, n, block=1024)
        finally:
            _cuda.state.bind_launcher()
        saxpy(1.0, x, y, n, grid=4, block=1024)  # a cooperative grid that fits runs
        cp.cuda.runtime.deviceSynchronize()
    finally:
        saxpy._plan.attrs = None
        monkeypatch.undo()
        saxpy._fast = c_launcher(saxpy._plan)
    out = cp.asnumpy(y)
    assert (out[: 4 * 1024] == 2.0).all() and (out[4 * 1024 :] == 1.0).all()


def test_without_the_extension_the_python_path_launches():
    """A cuforge installed where no C compiler was present: the general path and cuda.bindings
    launches, same results."""
    import subprocess
    import sys

    code = """
import sys
sys.modules["cuforge._claunch"] = None
import numpy as np, cuforge as cf
from cuforge._runtime import cuda as _cuda

@cf.kernel
class Saxpy:
    a: cf.float32
    x: cf.In[cf.float32]
    y: cf.Array[cf.float32]
    n: cf.int64
    body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i];"

x, y = cf.to_device(np.arange(1000, dtype=np.float32)), cf.zeros(1000, cf.float32)
for _ in range(3):
    Saxpy(2.0, x, y, 1000)
Saxpy(2.0, x, y, n=1000, grid=(4,), block=(256,))
assert _cuda.state.launcher == "bindings" and _cuda.last_launch() == ("Saxpy", (4, 1, 1), (256, 1, 1), 0)
np.testing.assert_array_equal(y.to_numpy(), 8 * np.arange(1000, dtype=np.float32))
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_per_thread_default_stream_setting_is_followed_by_the_c_launcher():
    """With CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM=1, stream 0 is the per-thread default
    stream for cuda.bindings, and cuforge's C launcher binds the matching entry point."""
    import os
    import subprocess
    import sys

    pytest.importorskip("cuforge._claunch", reason="cuforge's C launcher is not built here")
    code = """
import numpy as np, cuforge as cf
from cuforge._runtime import cuda as _cuda

@cf.kernel
class Scale:
    a: cf.float32
    y: cf.Array[cf.float32]
    n: cf.int64
    body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] *= a;"

y = cf.to_device(np.ones(4096, np.float32))
for _ in range(3):
    Scale(2.0, y, 4096, stream=0)
Scale(2.0, y, 4096, stream=0)
assert _cuda.state.launcher == "c"
np.testing.assert_array_equal(y.to_numpy(), np.full(4096, 16.0, np.float32))
print("ok")
"""
    env = dict(os.environ, CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


