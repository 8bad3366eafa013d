"""Where a call runs: its device=, else the kernel's %%cuda preference, else the thread's
set_device, else the process's choice (set_default_device, else CUFORGE_DEVICE)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import cuforge as cf
from cuforge import _config
from cuforge._runtime import cuda as _cuda


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
