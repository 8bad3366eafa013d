"""The pytest plugin's choice of device: ``--cuforge-device`` (and GPU N), ``--cuforge-arch``,
the ``launches`` marker and the ``cuforge_device`` fixture, and the switch of a ``launches``
test's launches to the CPU where that is where they run."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator

import pytest

from ._pytest_gpu import check_context_after, gpu_reason, skip_reason, uses_gpu_fixtures
from ._pytest_state import STATE, brief

_SWITCH = pytest.StashKey["contextlib.ExitStack"]()
CPU_ARCH = "sm_90"  # what compile-only calls (precompile, %%cuda) target on the CPU, unless told


def device_option(value: str) -> str:
    """``--cuforge-device``: auto, cpu, cuda or cuda:N (PyTorch's spelling of GPU N)."""
    gpu = value.partition(":")[2]
    if value in ("auto", "cuda", "cpu") or (value.startswith("cuda:") and gpu.isascii() and gpu.isdigit()):
        return value
    raise argparse.ArgumentTypeError(f"expects auto, cuda, cuda:N or cpu, got {value!r}")


def configure_device(config: pytest.Config) -> None:
    """GPU N (``--cuforge-device=cuda:N``) as where launches that name none go, and
    ``--cuforge-arch`` for the session; both put back at its end."""
    from .. import _config

    if config.getoption("cuforge_device").startswith("cuda:"):
        from .._runtime import cuda as _cuda

        saved = _config.device()
        config.add_cleanup(lambda: _cuda.set_default_device(saved))
        _cuda.set_default_device(config.getoption("cuforge_device"))
    arch = config.getoption("cuforge_arch")
    if arch:
        from ..errors import CuforgeError
        from ..options import check_arch

        try:
            check_arch(arch)
        except CuforgeError as exc:
            raise pytest.UsageError(f"--cuforge-arch: {exc}") from None
        stack = contextlib.ExitStack()
        stack.enter_context(_config.scope(arch=arch))
        config.add_cleanup(stack.close)


def launches(item: pytest.Item) -> bool:
    """A test for either device: the ``launches`` marker or the ``cuforge_device`` fixture
    (``gpu`` wins: such a test is GPU-only)."""
    return item.get_closest_marker("gpu") is None and (
        item.get_closest_marker("launches") is not None or "cuforge_device" in getattr(item, "fixturenames", ())
    )


def uses_gpu(item: pytest.Item) -> bool:
    """The test runs on the GPU: a ``launches`` one where they run there, or a GPU-only one."""
    if launches(item):
        return launch_device(item.config) == "cuda"
    return uses_gpu_fixtures(item)


def _compiler_reason() -> str | None:
    from .._cpu.toolchain import find_compiler
    from ..errors import CompilerNotFoundError

    try:
        find_compiler()
    except CompilerNotFoundError as exc:
        return str(exc)
    return None


def launch_device(config: pytest.Config) -> str | None:
    """Where ``launches`` tests run, looked at once: ``"cuda"``, ``"cpu"``, or None (the
    reason in ``device_reason``)."""
    state = config.stash[STATE]
    if not state.device_checked:
        wanted = config.getoption("cuforge_device").partition(":")[0]  # cuda:N is cuda, N chosen at configure
        if wanted == "auto" and config.getoption("cuforge_require_gpu"):
            wanted = "cuda"  # GPU CI: a missing GPU fails rather than falling back to the CPU
        gpu = gpu_reason(config) if wanted != "cpu" else "--cuforge-device=cpu"
        cpu = _compiler_reason() if gpu is not None and wanted != "cuda" else None
        if gpu is None:
            state.device = "cuda"
        elif wanted != "cuda" and cpu is None:
            state.device = "cpu"
        elif wanted == "cuda":
            state.device_reason = (f"needs a CUDA GPU (--cuforge-device=cuda; none found: "
                                   f"{brief(config, 'no usable CUDA GPU', str(gpu))})")  # fmt: skip
        elif wanted == "cpu":
            state.device_reason = (f"needs a C++ compiler for cuforge's CPU backend (--cuforge-device=cpu): "
                                   f"{brief(config, 'no C++ compiler', str(cpu))}")  # fmt: skip
        else:
            state.device_reason = (f"needs a CUDA GPU ({brief(config, 'no usable CUDA GPU', str(gpu))}) or a C++ compiler "
                                   f"for cuforge's CPU backend ({brief(config, 'no C++ compiler', str(cpu))})")  # fmt: skip
        state.device_checked = True
    return state.device


def _launch_skip_reason(config: pytest.Config) -> str | None:
    device = launch_device(config)
    if device == "cuda":
        return skip_reason(config)  # a faulted context skips these too
    reason = config.stash[STATE].device_reason
    if reason and config.getoption("cuforge_device") != "cpu" and config.getoption("cuforge_require_gpu"):
        pytest.fail(f"--cuforge-require-gpu: no usable CUDA device: {reason}", pytrace=False)
    return reason


def _switch_to_cpu(checked: bool) -> contextlib.ExitStack:
    """The process's launches go to the CPU until the stack closes: the default device (C
    launcher included), CUFORGE_DEVICE for subprocesses and CUFORGE_CHECK, the session's
    ``--cuforge-check``, so that they launch as this process does (both set and restored as
    pytest's monkeypatch does), and an arch for compile-only calls (``precompile``, ``%%cuda``)
    where none is set. Only these two settings are put back: a whole-settings scope would also
    undo what a session fixture set meanwhile (its cache directory)."""
    from .. import _config
    from .._runtime import cuda as _cuda

    names = ("device", "arch")
    saved = _config.overrides_of(*names)
    previous = _config.device()

    def restore() -> None:
        _cuda.set_default_device(previous)  # the C launcher's process flag back
        _config.restore_overrides(names, saved)  # (not overridden before: CUFORGE_DEVICE / CUFORGE_ARCH read live again)

    stack = contextlib.ExitStack()
    stack.callback(restore)
    _cuda.set_default_device("cpu")
    if not _config.arch():
        _config.override(arch=CPU_ARCH)
    env = pytest.MonkeyPatch()
    stack.callback(env.undo)
    env.setenv("CUFORGE_DEVICE", "cpu")
    env.setenv("CUFORGE_CHECK", "1" if checked else "0")
    return stack


@pytest.hookimpl(tryfirst=True)  # before pytest's skipping plugin reads the skip marks
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A GPU test (the marker, or a GPU fixture) skips through a ``skip`` mark rather than
    ``pytest.skip()``, so that ``-rs`` names the test's file and line, not this plugin's. A
    ``launches`` test does too where no device can run it, and on the CPU runs inside the
    switch to the CPU (closed at its teardown)."""
    if launches(item):
        reason = _launch_skip_reason(item.config)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))
        elif launch_device(item.config) == "cpu":
            item.stash[_SWITCH] = _switch_to_cpu(item.config.getoption("cuforge_check") == "on")
    elif uses_gpu(item):
        reason = skip_reason(item.config)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    try:
        return (yield)  # the test's fixtures are torn down on the device it ran on
    finally:
        switch = item.stash.get(_SWITCH, None)
        if switch is not None:
            del item.stash[_SWITCH]
            switch.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A GPU test's kernels must not have faulted (see ``check_context_after``)."""
    if not uses_gpu(item) or item.config.stash[STATE].gpu_reason is not None:
        return (yield)
    return (yield from check_context_after(item))


@pytest.fixture
def cuforge_device(request: pytest.FixtureRequest) -> str:
    """Where this test's launches run, ``"cuda"`` or ``"cpu"`` (``--cuforge-device``): asking
    for it makes the test a ``launches`` one, skipped where neither device can run it."""
    device = launch_device(request.config)
    if device is None:  # (the setup hook has marked the test skipped already; a safeguard)
        pytest.skip(request.config.stash[STATE].device_reason or "no device")
    return device
