"""cf.graph(): capture, replay and update on a real GPU; every refusal leaves the device usable;
captures opened by CuPy and PyTorch take checked launches too."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import cuforge as cf
from cuforge.pytest_plugin import gpu_module

from ..conftest import Saxpy

pytestmark = gpu_module()
cp = pytest.importorskip("cupy", reason="the graph tests capture CuPy launches: install CuPy (pip install -e '.[cupy]')")

N = 4099


@cf.kernel
class Scale:
    factor: cf.float32
    y: cf.Array[cf.float32]
    n: cf.int64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] *= factor;
    """


@cf.kernel
class AddOne:
    T = cf.typeparam(cf.float32, cf.float64)
    y: cf.Array[T]
    n: cf.int64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] += T(1);
    """


def arrays(seed: int = 0) -> tuple[object, object, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)
    return cp.asarray(x), cp.asarray(y), x, y


def test_capture_records_without_running_and_replays_in_order():
    dx, dy, x, _ = arrays()
    Saxpy(2.0, dx, dy, N)  # compiled and loaded before the capture
    Scale(0.5, dy, N)
    cp.cuda.Device().synchronize()
    before = cp.asnumpy(dy)
    with cf.graph() as g:
        Saxpy(2.0, dx, dy, N)
        Scale(0.5, dy, N)
    cp.cuda.Device().synchronize()
    np.testing.assert_array_equal(cp.asnumpy(dy), before)  # a capture runs nothing
    assert g.launches == ("Saxpy", "Scale")
    g.upload()
    g()
    g.launch()
    cp.cuda.Device().synchronize()
    want = before
    for _ in range(2):
        want = (2.0 * x + want) * np.float32(0.5)
    np.testing.assert_allclose(cp.asnumpy(dy), want, rtol=1e-5, atol=1e-5)
    assert "2 launches: Saxpy, Scale" in repr(g)


def test_update_changes_arrays_and_scalars_in_place():
    dx, dy, _, _ = arrays(1)
    dx2, dy2, x2, y2 = arrays(2)
    Saxpy(1.0, dx, dy, N)
    with cf.graph() as g:
        Saxpy(1.0, dx, dy, N)
    keep = cp.asnumpy(dy)
    with g.update():
        Saxpy(3.0, dx2, dy2, N)
    g()
    cp.cuda.Device().synchronize()
    np.testing.assert_allclose(cp.asnumpy(dy2), 3.0 * x2 + y2, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(cp.asnumpy(dy), keep)  # the old arrays are no longer in the graph


def test_update_with_other_kernels_is_refused_and_the_graph_kept():
    dx, dy, x, y = arrays(3)
    Saxpy(1.0, dx, dy, N)
    Scale(1.0, dy, N)
    cp.copyto(dy, cp.asarray(y))
    with cf.graph() as g:
        Saxpy(1.0, dx, dy, N)
    with pytest.raises(cf.GraphUpdateError, match=r"launched 2 launches: Saxpy, Scale, but the graph holds 1 launch: Saxpy"):
        with g.update():
            Saxpy(1.0, dx, dy, N)
            Scale(2.0, dy, N)
    g()
    cp.cuda.Device().synchronize()
    np.testing.assert_allclose(cp.asnumpy(dy), x + y, rtol=1e-5, atol=1e-5)


def test_graph_keeps_captured_arrays_alive():
    dy = cp.zeros(N, dtype=cp.float32)

    def capture() -> cf.Graph:
        dx = cp.full(N, 3.0, dtype=cp.float32)
        Saxpy(1.0, dx, dy, N)
        cp.copyto(dy, cp.zeros(N, dtype=cp.float32))
        with cf.graph() as g:
            Saxpy(1.0, dx, dy, N)
        return g

    g = capture()
    gc.collect()
    junk = [cp.full(N, -7.0, dtype=cp.float32) for _ in range(8)]  # would reuse a freed block
    g()
    cp.cuda.Device().synchronize()
    np.testing.assert_array_equal(cp.asnumpy(dy), np.full(N, 3.0, np.float32))
    del junk


def test_family_picks_each_instantiation_at_capture_time():
    y32, y64 = cp.zeros(N, dtype=cp.float32), cp.zeros(N, dtype=cp.float64)
    AddOne(y32, N)
    AddOne(y64, N)
    with cf.graph() as g:
        AddOne(y32, N)
        AddOne(y64, N)
    g()
    g()
    cp.cuda.Device().synchronize()
    assert g.launches == ("AddOne<float>", "AddOne<double>")
    assert float(y32[0]) == 3.0 and float(y64[-1]) == 3.0


def test_capture_on_a_cupy_stream_takes_cupy_work_on_it():
    dx, dy, x, y = arrays(4)
    Saxpy(1.0, dx, dy, N)
    cp.copyto(dy, cp.asarray(y))
    s = cp.cuda.Stream(non_blocking=True)
    with s, cf.graph(stream=s) as g:
        Saxpy(1.0, dx, dy, N)
        dy *= 2  # CuPy work on the capture stream joins the graph
    g()
    s.synchronize()
    np.testing.assert_allclose(cp.asnumpy(dy), 2 * (x + y), rtol=1e-5, atol=1e-5)


def test_prepared_launch_on_the_capture_stream_is_captured():
    dx, dy, x, y = arrays(5)
    s = cp.cuda.Stream(non_blocking=True)
    prepared = Saxpy.prepare(1.0, dx, dy, N, stream=s)
    with cf.graph(stream=s) as g:
        prepared()
    assert g.launches == ("Saxpy",)
    g()
    s.synchronize()
    np.testing.assert_allclose(cp.asnumpy(dy), x + y, rtol=1e-5, atol=1e-5)
    other = Saxpy.prepare(1.0, dx, dy, N, stream=cp.cuda.Stream(non_blocking=True))
    with pytest.raises(cf.GraphCaptureError, match=r"Saxpy: stream=0x[0-9a-f]+ is not part of this cf.graph\(\) capture"):
        with cf.graph(stream=s):
            other()


# ---------------------------------------------------------------- refusals


def assert_device_usable() -> None:
    """An eager launch after a refusal runs and gives the right answer."""
    dx, dy, x, y = arrays(9)
    Saxpy(1.0, dx, dy, N)
    cp.cuda.Device().synchronize()
    np.testing.assert_allclose(cp.asnumpy(dy), x + y, rtol=1e-5, atol=1e-5)


def _fresh_kernel() -> cf.Kernel:
    """A kernel no test has compiled (its body is unique to this call)."""
    import uuid

    tag = uuid.uuid4().hex
    cls = type("Fresh", (), {"__annotations__": {"y": cf.Array[cf.float32], "n": cf.int64},
                             "body": f"// {tag}\nlong long i = threadIdx.x; if (i < n) y[i] = 1.0f;"})  # fmt: skip
    return cf.kernel(cls)


REFUSALS = {
    "host numpy": (lambda dy: Saxpy(1.0, np.ones(N, np.float32), dy, N), r"argument\(s\) 'x' are host NumPy arrays"),
    "first compile": (lambda dy: _fresh_kernel()(dy, N), r"its first compile \(NVRTC\) would run inside cf.graph\(\)"),
    "legacy stream": (lambda dy: Saxpy(1.0, dy, dy, N, stream=0), r"stream=0x0 is not part of this cf.graph\(\) capture"),
    "another stream": (
        lambda dy: Saxpy(1.0, dy, dy, N, stream=cp.cuda.Stream(non_blocking=True)),
        r"is not part of this cf.graph\(\) capture",
    ),
    "nested": (lambda dy: cf.graph().__enter__(), r"already capturing a graph, and captures do not nest"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refusal_is_clear_and_the_device_stays_usable(case):
    launch, message = REFUSALS[case]
    dy = cp.zeros(N, dtype=cp.float32)
    Saxpy(1.0, dy, dy, N)
    with pytest.raises(cf.GraphCaptureError, match=message):
        with cf.graph():
            Saxpy(1.0, dy, dy, N)
            launch(dy)
    assert_device_usable()


def test_autotuning_inside_a_capture_is_refused():
    @cf.kernel
    class Tuned:
        BLOCK = cf.intparam(128, 256)
        y: cf.Array[cf.float32]
        n: cf.int64
        block = "BLOCK"
        autotune = cf.autotune(BLOCK=[128, 256], key=["n"])
        body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] += 1.0f;"

    dy = cp.zeros(N, dtype=cp.float32)
    Tuned.precompile()
    with pytest.raises(cf.GraphCaptureError, match=r"autotuning would time 2 candidates here"):
        with cf.graph():
            Tuned(dy, N)
    Tuned(dy, N)  # tuned now, outside: the next capture takes the stored choice
    with cf.graph() as g:
        Tuned(dy, N)
    g()
    cp.cuda.Device().synchronize()
    assert_device_usable()


def test_a_refusal_caught_in_the_block_still_fails_the_capture():
    dy = cp.zeros(N, dtype=cp.float32)
    Saxpy(1.0, dy, dy, N)
    with pytest.raises(cf.GraphCaptureError, match="host NumPy arrays"):
        with cf.graph():
            try:
                Saxpy(1.0, np.ones(N, np.float32), dy, N)
            except cf.GraphCaptureError:
                pass
            with pytest.raises(cf.GraphCaptureError, match=r"this cf.graph\(\) capture already failed"):
                Saxpy(1.0, dy, dy, N)
    assert_device_usable()


def test_work_that_invalidates_the_capture_is_reported_and_cleaned_up():
    dy = cp.zeros(N, dtype=cp.float32)
    Saxpy(1.0, dy, dy, N)
    from cuda.bindings import driver

    with pytest.raises(cf.GraphCaptureError, match="CUDA ended the capture with an error"):
        with cf.graph():
            Saxpy(1.0, dy, dy, N)
            err, _ = driver.cuMemAlloc(16)  # an allocation, which a capture cannot hold: CUDA invalidates it
            assert int(err) == 900  # CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, returned, not raised
    assert_device_usable()


# ---------------------------------------------------------------- captures opened by others


def test_checked_launches_inside_cupy_begin_capture():
    dx, dy, x, y = arrays(6)
    Saxpy(1.0, dx, dy, N)
    cp.copyto(dy, cp.asarray(y))
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        Saxpy(1.0, dx, dy, N)  # CuPy arrays: the current CuPy stream, which is capturing
        Scale(2.0, dy, N)
        graph = s.end_capture()
    graph.launch(s)
    s.synchronize()
    np.testing.assert_allclose(cp.asnumpy(dy), 2 * (x + y), rtol=1e-5, atol=1e-5)


def test_checked_launches_inside_torch_cuda_graph():
    torch = pytest.importorskip("torch")
    x = torch.randn(N, device="cuda")
    y = torch.zeros(N, device="cuda")
    Saxpy(1.0, x, y, N)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        Saxpy(2.0, x, y, N)  # tensors: the current PyTorch stream, which is capturing
    y.zero_()
    g.replay()
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, 4 * x)


def test_host_arrays_inside_torch_cuda_graph_are_refused_clearly():
    torch = pytest.importorskip("torch")
    y = torch.zeros(N, device="cuda")
    Saxpy(1.0, y, y, N)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with pytest.raises(cf.GraphCaptureError, match=r"'x' are host NumPy arrays, .* a CUDA graph is being captured"):
        with torch.cuda.graph(g):
            y.add_(1.0)  # (an empty capture is a PyTorch warning)
            Saxpy(1.0, np.ones(N, np.float32), y, N, stream=torch.cuda.current_stream())
    assert_device_usable()


# ---------------------------------------------------------------- other libraries' work in the block


def test_a_cupy_copy_to_the_host_in_a_relaxed_capture_runs_at_once_and_the_capture_holds():
    """cp.asnumpy copies on CuPy's legacy default stream and waits. The graph's own capture
    stream is non-blocking, so the legacy stream does not wait for it, and a relaxed capture
    lets the capturing thread make that synchronous call: the copy runs at once, outside the
    graph, and the launches around it are captured."""
    dx, dy, x, y = arrays(10)
    other = cp.arange(N, dtype=cp.float32)
    Saxpy(1.0, dx, dy, N)
    Scale(1.0, dy, N)
    cp.copyto(dy, cp.asarray(y))
    cp.cuda.Device().synchronize()
    with cf.graph(mode="relaxed") as g:
        Saxpy(1.0, dx, dy, N)
        seen = cp.asnumpy(other)
        Scale(2.0, dy, N)
    np.testing.assert_array_equal(seen, np.arange(N, dtype=np.float32))
    np.testing.assert_array_equal(cp.asnumpy(dy), y)  # the captured launches did not run
    assert g.launches == ("Saxpy", "Scale")
    g()  # on the default stream: CuPy's copy below waits for the replay, with no synchronize
    np.testing.assert_allclose(cp.asnumpy(dy), 2 * (x + y), rtol=1e-5, atol=1e-5)


def test_a_cupy_copy_to_the_host_in_a_thread_local_capture_is_a_graph_capture_error_naming_the_fix():
    """The default mode refuses the capturing thread's synchronous copy (CUDA's
    cudaErrorStreamCaptureUnsupported, which invalidates the capture): a GraphCaptureError
    that names CuPy's error and the fix, and the thread captures again."""
    dx, dy, _, _ = arrays(12)
    Saxpy(1.0, dx, dy, N)
    cp.cuda.Device().synchronize()
    with pytest.raises(cf.GraphCaptureError, match=r"cudaErrorStreamCaptureUnsupported.*mode='relaxed'") as info:
        with cf.graph():
            Saxpy(1.0, dx, dy, N)
            cp.asnumpy(dx)
    assert type(info.value.__cause__).__name__ == "CUDARuntimeError"
    with cf.graph() as g:
        Saxpy(1.0, dx, dy, N)
    assert g.launches == ("Saxpy",)
    assert_device_usable()


def test_a_torch_copy_to_the_host_in_a_relaxed_capture_runs_at_once_and_the_capture_holds():
    torch = pytest.importorskip("torch")
    t = torch.arange(N, device="cuda", dtype=torch.float32)
    dx, dy, x, y = arrays(11)
    Saxpy(1.0, dx, dy, N)
    cp.copyto(dy, cp.asarray(y))
    torch.cuda.synchronize()
    with cf.graph(mode="relaxed") as g:
        Saxpy(1.0, dx, dy, N)
        seen = t.cpu()  # PyTorch's current stream: the legacy default one
    assert torch.equal(seen, torch.arange(N, dtype=torch.float32))
    g()
    cp.cuda.Device().synchronize()
    np.testing.assert_allclose(cp.asnumpy(dy), x + y, rtol=1e-5, atol=1e-5)


def test_another_librarys_call_that_breaks_the_capture_is_a_graph_capture_error():
    dy = cp.zeros(N, dtype=cp.float32)
    Saxpy(1.0, dy, dy, N)
    with pytest.raises(
        cf.GraphCaptureError,
        match=r"^cf.graph\(\): CUDARuntimeError raised in the block \(cudaErrorStreamCaptureUnsupported.*\), and CUDA "
        r"ended the capture with an error, .*nothing was recorded, and the thread can capture again",
    ) as info:
        with cf.graph():
            Saxpy(1.0, dy, dy, N)
            cp.cuda.runtime.malloc(16)  # cudaMalloc, which a thread_local capture refuses and CUDA invalidates
    assert type(info.value.__cause__).__name__ == "CUDARuntimeError"
    with cf.graph() as g:  # the thread captures again
        Saxpy(1.0, dy, dy, N)
    assert g.launches == ("Saxpy",)
    assert_device_usable()


def test_legacy_stream_work_while_a_blocking_stream_captures_names_the_cause_and_is_cleaned_up():
    """A blocking stream= makes the legacy stream wait for it: CuPy's copy there is CUDA's
    cudaErrorStreamCaptureImplicit, raised by CuPy (a GraphCaptureError naming it where CUDA
    also invalidated the capture); the capture ends either way."""
    dy = cp.zeros(N, dtype=cp.float32)
    Saxpy(1.0, dy, dy, N)
    blocking = cp.cuda.Stream()
    with pytest.raises((cf.GraphCaptureError, cp.cuda.runtime.CUDARuntimeError), match="cudaErrorStreamCaptureImplicit"):
        with cf.graph(stream=blocking):
            Saxpy(1.0, dy, dy, N)
            cp.asnumpy(dy)
    with cf.graph(stream=blocking) as g:
        Saxpy(1.0, dy, dy, N)
    g()
    blocking.synchronize()
    assert_device_usable()


def test_an_exception_of_the_block_goes_on_unchanged_and_the_thread_captures_again():
    dy = cp.zeros(N, dtype=cp.float32)
    Saxpy(1.0, dy, dy, N)
    with pytest.raises(KeyError, match="the block's own"):
        with cf.graph():
            Saxpy(1.0, dy, dy, N)
            raise KeyError("the block's own")
    with cf.graph() as g:
        Saxpy(1.0, dy, dy, N)
    assert g.launches == ("Saxpy",)
    assert_device_usable()
