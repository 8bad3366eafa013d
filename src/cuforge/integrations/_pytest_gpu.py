"""The pytest plugin's GPU side: whether a GPU is usable, the skips of GPU tests, the GPU
fixtures, ``gpu_module()``, and the check after each GPU test that its kernels did not fault."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ._pytest_state import STATE, brief, config_of_session


def gpu_reason(config: pytest.Config) -> str | None:
    """Why no CUDA GPU is usable (None: one is), looked at once per session."""
    state = config.stash[STATE]
    if not state.gpu_checked:
        from .._runtime import cuda as _cuda
        from ..errors import NoDeviceError

        try:
            _cuda.current_device()
        except NoDeviceError as exc:
            state.gpu_reason = str(exc)
        state.gpu_checked = True
    return state.gpu_reason


def skip_reason(config: pytest.Config) -> str | None:
    """Why a GPU test cannot run now (None: it can); fails it with --cuforge-require-gpu."""
    state = config.stash[STATE]
    if state.context_broken:
        return state.context_broken
    reason = gpu_reason(config)
    if reason and config.getoption("cuforge_require_gpu"):
        pytest.fail(f"--cuforge-require-gpu: no usable CUDA device: {reason}", pytrace=False)
    return f"needs a CUDA GPU (none found: {brief(config, 'no usable CUDA GPU', reason)})" if reason else None


def require_gpu(config: pytest.Config) -> None:
    reason = skip_reason(config)
    if reason:
        pytest.skip(reason)


def uses_gpu_fixtures(item: pytest.Item) -> bool:
    """A GPU-only test: the ``gpu`` marker or a GPU fixture."""
    return item.get_closest_marker("gpu") is not None or bool(
        {"cuda_device", "cuda_stream"} & set(getattr(item, "fixturenames", ()))
    )


def check_context_after(item: pytest.Item) -> Iterator[None]:
    """The body of ``pytest_runtest_call`` for a GPU test: after it, make sure its kernels did
    not fault. A fault (illegal address, device assert) poisons the CUDA context, so it fails
    this test, naming the last cuforge launch as the suspect (the driver does not say which
    kernel faulted), and the rest of the session's GPU tests are skipped with that reason
    instead of failing one by one. (A fault on the CPU is an error of the launch, and the
    process goes on.)"""
    raised: BaseException | None = None
    try:
        result = yield
    except BaseException as exc:
        raised = exc
    broken = _context_fault(item)
    if broken:
        from ..errors import LaunchError

        raise LaunchError(broken) from raised
    if raised is not None:
        raise raised
    return result


def _context_fault(item: pytest.Item) -> str | None:
    from .._runtime import cuda as _cuda

    if not _cuda.state.devices:  # CUDA never started in this process
        return None
    err = _cuda.context_error()
    if not err:
        return None
    # The driver does not say which kernel faulted: the last cuforge launch is a suspect, and so
    # is any GPU work another library (CuPy, PyTorch) ran after it.
    last = _cuda.last_launch()
    where = (
        f"the last cuforge launch was {last[0]} (grid={last[1]}, block={last[2]}, shared_mem={last[3]}): the fault "
        "is in it, or in GPU work another library (CuPy, PyTorch) ran after it"
        if last
        else "no cuforge kernel was launched: the fault is in GPU work another library (CuPy, PyTorch) ran"
    )
    state = item.config.stash[STATE]
    state.context_broken = (
        f"the CUDA context is unusable after {item.nodeid}, which faulted with {_cuda.error_text(err)}; {where}. "
        "Restart the process to run GPU tests again"
    )
    return (
        f"the GPU faulted during this test: {_cuda.error_text(err)}; {where}. "
        "The CUDA context of this process is now unusable; the remaining GPU tests are skipped."
    )


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash[STATE]
    if state.context_broken:
        terminalreporter.write_sep("=", "cuforge", red=True)
        terminalreporter.write_line(state.context_broken)
    elif state.skip_details:  # the whole of what the skip lines say in a few words
        terminalreporter.write_sep("=", "cuforge")
    for what, reason in state.skip_details.items():
        terminalreporter.write_line(f"tests skipped for {what}: {reason}")


@pytest.fixture
def cuda_device(request: pytest.FixtureRequest) -> Any:
    """The current CUDA device (a cuda.core ``Device``); skips the test without one."""
    require_gpu(request.config)
    from .._runtime import cuda as _cuda

    return _cuda.core_device(_cuda.current_device().id)


@pytest.fixture
def cuda_stream(cuda_device: Any) -> Iterator[Any]:
    """A fresh cuda.core stream on the current device, synchronised at teardown."""
    stream = cuda_device.create_stream()
    yield stream
    stream.sync()
    stream.close()


def gpu_module() -> pytest.MarkDecorator:
    """``pytestmark = gpu_module()`` at the top of a module whose every test needs a CUDA GPU:
    the ``gpu`` mark where one is usable, else the whole module is skipped once, with the reason
    (failed with --cuforge-require-gpu). It looks at the GPU when the module is collected."""
    __tracebackhide__ = True  # a skip names the module that called this (its file and line)
    if not config_of_session:  # not under pytest with this plugin: each test's mark decides
        return pytest.mark.gpu
    config = config_of_session[-1]
    reason = gpu_reason(config)
    if reason and config.getoption("cuforge_require_gpu"):
        raise pytest.fail.Exception(f"--cuforge-require-gpu: no usable CUDA device: {reason}", pytrace=False)
    if reason:
        pytest.skip(f"needs a CUDA GPU (none found: {brief(config, 'no usable CUDA GPU', reason)})", allow_module_level=True)
    return pytest.mark.gpu
