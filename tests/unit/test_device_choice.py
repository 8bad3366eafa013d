"""Where a call runs: its device=, else the kernel's %%cuda preference, else the thread's
set_device, else the process's choice (set_default_device, else CUFORGE_DEVICE)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import cuforge as cf
from cuforge import _config
from cuforge._runtime import cuda as _cuda

from ..conftest import Saxpy


def on_a_thread(fn: Callable[[], Any]) -> Any:
    """``fn()`` on a new thread, whose device state starts unset."""
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join(timeout=60)
    return out[0]


def test_the_call_the_kernel_the_thread_and_the_process_decide_in_that_order():
    state = _cuda.state
    saved, previous = _config.overrides_of("device"), _config.device()
    try:
        _cuda.set_default_device("cuda")
        assert on_a_thread(lambda: (state.runs_on_cpu({}), state.runs_on_cpu({}, True), state.runs_on_cpu({"device": 0}, True),
                                    state.runs_on_cpu({"device": "cpu"}))) == (False, True, False, True)  # fmt: skip

        def thread_chooses_cpu() -> tuple[bool, ...]:
            cf.set_device("cpu")
            return state.runs_on_cpu({}), state.runs_on_cpu({"device": 0}), state.on_cpu()

        assert on_a_thread(thread_chooses_cpu) == (True, False, True)
        assert not state.on_cpu()  # this thread did not choose: the process's choice

        _cuda.set_default_device("cpu")  # seen by every thread that has not chosen
        assert state.runs_on_cpu({}) and on_a_thread(lambda: state.runs_on_cpu({}))
        assert on_a_thread(lambda: state.runs_on_cpu({"device": 0})) is False
    finally:
        _cuda.set_default_device(previous)
        _config.restore_overrides(("device",), saved)


NO_GPU = pytest.mark.skipif(_cuda.gpu_available(), reason="a GPU is present: the GPU spellings would launch")


@NO_GPU
def test_pytorchs_spellings_name_a_gpu_wherever_a_device_is_taken(monkeypatch):
    """``"cuda"`` and ``"cuda:N"`` are taken as PyTorch takes them: without a GPU, each
    reaches the GPU and says there is none, never that the spelling is wrong."""
    x = np.ones(8, np.float32)
    for device in ("cuda", "cuda:0", "cuda:3", 0):
        with pytest.raises(cf.NoDeviceError, match=r"^Saxpy: no CUDA device is available"):
            Saxpy(2.0, x, x, 8, device=device)
    before = _cuda.state.tls.cpu
    for device in ("cuda", "cuda:1"):
        with pytest.raises(cf.NoDeviceError, match=r"no CUDA device is available"):
            cf.set_device(device)
    assert _cuda.state.tls.cpu is before  # a refused choice changes nothing
    for bad in ("gpu", "cuda:", "cuda:-1", "CUDA", 1.0, -1):
        with pytest.raises(cf.ArgumentError, match=r"device expects 'cpu', 'cuda', 'cuda:N' or a CUDA device ordinal N"):
            Saxpy(2.0, x, x, 8, device=bad)
        with pytest.raises(cf.ArgumentError, match=r"^set_device: device expects 'cpu', 'cuda', 'cuda:N'"):
            cf.set_device(bad)
    y = np.zeros(8, np.float32)
    Saxpy(2.0, x, y, 8, device="cpu")  # the CPU still runs it
    assert np.array_equal(y, np.full(8, 2.0, np.float32))


def test_the_process_default_takes_cuda_n_and_cuforge_device_too(monkeypatch):
    state = _cuda.state
    saved, previous = _config.overrides_of("device"), _config.device()
    try:
        _cuda.set_default_device("cuda:2")
        assert (state.default_cpu, state.default_gpu, _config.device()) == (False, 2, "cuda:2")
        _cuda.set_default_device("cuda")
        assert (state.default_cpu, state.default_gpu) == (False, 0)
        with pytest.raises(cf.ArgumentError, match=r"^set_default_device: device expects 'cpu', 'cuda', 'cuda:N'"):
            _cuda.set_default_device("gpu:1")
        _config.restore_overrides(("device",), {})
        for value, gpu in (("cuda:1", 1), ("CPU", 0)):
            monkeypatch.setenv("CUFORGE_DEVICE", value)
            state.default_cpu = None  # read again, as a new process does
            assert state.default_on_cpu() is (value == "CPU") and state.default_gpu == gpu
        monkeypatch.setenv("CUFORGE_DEVICE", "cuda:x")
        state.default_cpu = None
        with pytest.raises(cf.ConfigError, match=r"CUFORGE_DEVICE expects cuda, cuda:N \(GPU N\) or cpu, got 'cuda:x'"):
            state.default_on_cpu()
    finally:
        _config.restore_overrides(("device",), saved)
        state.default_cpu = None
        _cuda.set_default_device(previous)
