"""cf.graph() without a GPU: its options, its errors, and no capture state left behind."""

from __future__ import annotations

import pytest

import cuforge as cf
from cuforge._launch import capture as _capture
from cuforge._launch import graph as _graph
from cuforge._runtime import cuda as _cuda


def test_graph_is_made_without_cuda_and_says_it_is_not_captured():
    g = cf.graph()
    assert repr(g) == "<cuforge.Graph not captured on device None>"
    assert g.launches == ()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "strict"}, r"cf.graph\(\): mode expects one of 'thread_local', 'global', 'relaxed', got 'strict'"),
        (
            {"device": -1},
            r"cf.graph\(\): device expects 'cpu', 'cuda', 'cuda:N' or a CUDA device ordinal N \(an int >= 0\), got -1",
        ),
        ({"device": 1.0}, r"device expects 'cpu', 'cuda', .* got 1.0"),
        (
            {"device": "cpu"},
            r"cf.graph\(\): device='cpu': a graph captures GPU launches; on the CPU, launch the kernels themselves",
        ),
    ],
)
def test_bad_options_are_refused(kwargs, message):
    with pytest.raises(cf.ArgumentError, match=message):
        cf.graph(**kwargs)


def test_replay_or_update_before_a_capture_is_refused():
    g = cf.graph()
    with pytest.raises(cf.GraphCaptureError, match=r"Graph.launch\(\): the graph has no captured launches"):
        g()
    with pytest.raises(cf.GraphCaptureError, match=r"Graph.upload\(\): the graph has no captured launches"):
        g.upload()
    with pytest.raises(cf.GraphCaptureError, match=r"Graph.update\(\): the graph has not been captured yet"):
        g.update()


def test_error_tree():
    assert issubclass(cf.GraphCaptureError, cf.CuforgeError) and issubclass(cf.GraphCaptureError, RuntimeError)
    assert issubclass(cf.GraphUpdateError, cf.GraphCaptureError)
    assert cf.GraphCaptureError.__module__ == "cuforge"


def test_no_capture_state_outside_a_block():
    assert _capture.capture_in_thread() is None
    assert _cuda.state.captures_open == 0


def test_opening_a_capture_without_a_gpu_leaves_nothing_behind():
    if cf.gpu_available():
        pytest.skip("a GPU is present: tests/gpu/test_graph_gpu.py opens real captures")
    with pytest.raises(cf.NoDeviceError):
        with cf.graph():
            pass  # pragma: no cover
    assert _capture.capture_in_thread() is None and _cuda.state.captures_open == 0


def test_launch_descriptions():
    assert _graph.describe(()) == "no launches"
    assert _graph.describe(("A",)) == "1 launch: A"
    assert _graph.describe(("A", "B", "A")) == "3 launches: A x2, B"


def test_a_capture_broken_by_another_librarys_call_is_reported_with_that_call():
    text = _graph.invalidated("CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (...)", RuntimeError("cudaErrorStreamCaptureUnsupported"))
    assert text.startswith(
        "cf.graph(): RuntimeError raised in the block (cudaErrorStreamCaptureUnsupported), and CUDA ended the capture "
        "with an error, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (...): something in the block did what a capture cannot hold"
    )
    assert text.endswith(
        "nothing was recorded, and the thread can capture again: do that work before or after the `with` block, or "
        "capture with cf.graph(mode='relaxed'), which lets the capturing thread's synchronous calls run outside the graph"
    )
    assert _graph.invalidated("E (x)").startswith("cf.graph(): CUDA ended the capture with an error, E (x): ")
