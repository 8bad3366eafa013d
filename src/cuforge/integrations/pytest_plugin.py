"""The pytest plugin's hooks, options and fixtures; the public face (the ``pytest11`` entry
point ``cuforge``) is ``cuforge.pytest_plugin``, whose docstring says what it offers."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "STATE",
    "pytest_addoption",
    "pytest_configure",
    "pytest_runtest_setup",
    "pytest_runtest_call",
    "pytest_runtest_teardown",
    "pytest_unconfigure",
    "pytest_terminal_summary",
    "cuda_device",
    "cuda_stream",
    "cuforge_device",
    "gpu_module",
    "cuforge_cache_dir",
    "CompileCounter",
    "cuforge_compile_counter",
    "pytest_collection",
    "pytest_collection_modifyitems",
    "CompileAll",
    "CompileItem",
]


class _State:
    """Per-session plugin state, kept in ``config.stash``."""

    def __init__(self) -> None:
        self.gpu_reason: str | None = None  # why there is no usable GPU, once looked at
        self.gpu_checked = False
        self.device: str | None = None  # where `launches` tests run: "cuda", "cpu", or None (skipped)
        self.device_reason: str | None = None  # why they cannot run anywhere, once looked at
        self.device_checked = False
        self.context_broken: str | None = None  # set after a kernel fault
        self.skip_details: dict[str, str] = {}  # what a skip's short reason stands for: the terminal summary's
        self.registered_before: set[int] = set()
        self.batches: dict[int, BaseException | None] = {}


STATE = pytest.StashKey[_State]()
_SWITCH = pytest.StashKey["contextlib.ExitStack"]()
_config_of_session: list[pytest.Config] = []  # the running session's, for gpu_module() at import
CPU_ARCH = "sm_90"  # what compile-only calls (precompile, %%cuda) target on the CPU, unless told
CPU_TIMEOUT = 60.0  # seconds a CPU launch may run in a test, unless told: a kernel that never ends fails its test


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cuforge", "cuforge CUDA kernels")
    group.addoption(
        "--cuforge-require-gpu",
        action="store_true",
        help="fail, rather than skip, tests marked gpu when no usable CUDA device is present (for GPU CI); "
        "launches tests then need the GPU too under --cuforge-device=auto",
    )
    group.addoption(
        "--cuforge-device",
        type=_device_option,
        default="auto",
        help="where tests marked launches run: auto (the GPU when one is usable, else cuforge's CPU backend "
        "when a C++ compiler is found), cuda (cuda:N: GPU N) or cpu (default: auto)",
    )
    group.addoption(
        "--cuforge-check",
        choices=("on", "off"),
        default="on",
        help="run launches on the CPU checked (out-of-bounds accesses, uninitialised reads, races, warp and barrier "
        "misuse reported as errors; CUFORGE_CHECK for the session): on (the default) or off",
    )
    group.addoption(
        "--cuforge-arch",
        metavar="ARCH",
        help="arch for compile-only work without a GPU, e.g. sm_90 (sets CUFORGE_ARCH for the session)",
    )
    group.addoption(
        "--cuforge-cpu-timeout",
        type=float,
        metavar="SECONDS",
        help=f"stop a launch on cuforge's CPU backend that runs longer than this and fail its test with "
        f"LaunchTimeoutError; 0: no limit (default: CUFORGE_CPU_TIMEOUT where set, else {CPU_TIMEOUT:g})",
    )
    group.addoption(
        "--cuforge-compile-all",
        action="store_true",
        help="add one test item per instantiation of every kernel and family the collected modules register",
    )
    group.addoption(
        "--cuforge-modules",
        action="append",
        default=[],
        metavar="MODULE",
        help="also compile the kernels of this importable module with --cuforge-compile-all (repeatable)",
    )


def _device_option(value: str) -> str:
    """``--cuforge-device``: auto, cpu, cuda or cuda:N (PyTorch's spelling of GPU N)."""
    gpu = value.partition(":")[2]
    if value in ("auto", "cuda", "cpu") or (value.startswith("cuda:") and gpu.isascii() and gpu.isdigit()):
        return value
    raise argparse.ArgumentTypeError(f"expects auto, cuda, cuda:N or cpu, got {value!r}")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "gpu: the test needs a CUDA GPU; skipped with the reason when none is usable (failed with --cuforge-require-gpu)",
    )
    config.addinivalue_line(
        "markers",
        "launches: the test launches kernels on the chosen device (--cuforge-device): the GPU, or cuforge's CPU "
        "backend where no GPU is usable; skipped with both reasons where neither can run",
    )
    config.stash[STATE] = _State()
    _config_of_session.append(config)
    from .. import _config

    checks = contextlib.ExitStack()  # (a test's own _config.scope(check=...) still wins inside it)
    checks.enter_context(_config.scope(check="1" if config.getoption("cuforge_check") == "on" else "0"))
    config.add_cleanup(checks.close)
    _limit_cpu_launches(config)
    if config.getoption("cuforge_device").startswith("cuda:"):  # GPU N: where launches that name none go
        from .. import _config
        from .._runtime import cuda as _cuda

        saved = _config.device()
        config.add_cleanup(lambda: _cuda.set_default_device(saved))
        _cuda.set_default_device(config.getoption("cuforge_device"))
    arch = config.getoption("cuforge_arch")
    if arch:
        from .. import _config
        from ..errors import CuforgeError
        from ..options import check_arch

        try:
            check_arch(arch)
        except CuforgeError as exc:
            raise pytest.UsageError(f"--cuforge-arch: {exc}") from None
        stack = contextlib.ExitStack()
        stack.enter_context(_config.scope(arch=arch))
        config.add_cleanup(stack.close)


def _limit_cpu_launches(config: pytest.Config) -> None:
    """The CPU launches' time limit for the session (CUFORGE_CPU_TIMEOUT's), put back at its end:
    the option's, else the environment's, else CPU_TIMEOUT."""
    seconds = config.getoption("cuforge_cpu_timeout")
    if seconds is None and "CUFORGE_CPU_TIMEOUT" not in os.environ:
        seconds = CPU_TIMEOUT
    if seconds is None:
        return
    if not seconds >= 0:
        raise pytest.UsageError(f"--cuforge-cpu-timeout expects seconds >= 0 (0: no limit), got {seconds:g}")
    from .. import _config

    saved = _config.overrides_of("cpu_timeout")
    _config.override(cpu_timeout=str(seconds))
    config.add_cleanup(lambda: _config.restore_overrides(("cpu_timeout",), saved))


def pytest_unconfigure(config: pytest.Config) -> None:
    if config in _config_of_session:
        _config_of_session.remove(config)


# ------------------------------------------------------------------ the GPU and the gpu marker


def _gpu_reason(config: pytest.Config) -> str | None:
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


def _brief(config: pytest.Config, what: str, reason: str) -> str:
    """``reason`` in a few words, for a skip line that ``-ra`` repeats for each test; the
    whole is written once, in the terminal summary, under ``what``."""
    config.stash[STATE].skip_details[what] = reason
    missing = re.search(r"(lib[\w.+-]+\.so[\d.]*): cannot open shared object file", reason)
    if missing:
        return f"{missing.group(1)} missing"
    first = reason.split("; ")[0].split(". ")[0]
    return first if len(first) <= 60 else first[:57] + "..."


def _skip_reason(config: pytest.Config) -> str | None:
    """Why a GPU test cannot run now (None: it can); fails it with --cuforge-require-gpu."""
    state = config.stash[STATE]
    if state.context_broken:
        return state.context_broken
    reason = _gpu_reason(config)
    if reason and config.getoption("cuforge_require_gpu"):
        pytest.fail(f"--cuforge-require-gpu: no usable CUDA device: {reason}", pytrace=False)
    return f"needs a CUDA GPU (none found: {_brief(config, 'no usable CUDA GPU', reason)})" if reason else None


def _require_gpu(config: pytest.Config) -> None:
    reason = _skip_reason(config)
    if reason:
        pytest.skip(reason)


def _launches(item: pytest.Item) -> bool:
    """A test for either device: the ``launches`` marker or the ``cuforge_device`` fixture
    (``gpu`` wins: such a test is GPU-only)."""
    return item.get_closest_marker("gpu") is None and (
        item.get_closest_marker("launches") is not None or "cuforge_device" in getattr(item, "fixturenames", ())
    )


def _uses_gpu(item: pytest.Item) -> bool:
    if _launches(item):
        return _launch_device(item.config) == "cuda"
    return item.get_closest_marker("gpu") is not None or bool(
        {"cuda_device", "cuda_stream"} & set(getattr(item, "fixturenames", ()))
    )


def _compiler_reason() -> str | None:
    from .._cpu.toolchain import find_compiler
    from ..errors import CompilerNotFoundError

    try:
        find_compiler()
    except CompilerNotFoundError as exc:
        return str(exc)
    return None


def _launch_device(config: pytest.Config) -> str | None:
    """Where ``launches`` tests run, looked at once: ``"cuda"``, ``"cpu"``, or None (the
    reason in ``device_reason``)."""
    state = config.stash[STATE]
    if not state.device_checked:
        wanted = config.getoption("cuforge_device").partition(":")[0]  # cuda:N is cuda, N chosen at configure
        if wanted == "auto" and config.getoption("cuforge_require_gpu"):
            wanted = "cuda"  # GPU CI: a missing GPU fails rather than falling back to the CPU
        gpu = _gpu_reason(config) if wanted != "cpu" else "--cuforge-device=cpu"
        cpu = _compiler_reason() if gpu is not None and wanted != "cuda" else None
        if gpu is None:
            state.device = "cuda"
        elif wanted != "cuda" and cpu is None:
            state.device = "cpu"
        elif wanted == "cuda":
            state.device_reason = (f"needs a CUDA GPU (--cuforge-device=cuda; none found: "
                                   f"{_brief(config, 'no usable CUDA GPU', str(gpu))})")  # fmt: skip
        elif wanted == "cpu":
            state.device_reason = (f"needs a C++ compiler for cuforge's CPU backend (--cuforge-device=cpu): "
                                   f"{_brief(config, 'no C++ compiler', str(cpu))}")  # fmt: skip
        else:
            state.device_reason = (f"needs a CUDA GPU ({_brief(config, 'no usable CUDA GPU', str(gpu))}) or a C++ compiler "
                                   f"for cuforge's CPU backend ({_brief(config, 'no C++ compiler', str(cpu))})")  # fmt: skip
        state.device_checked = True
    return state.device


def _launch_skip_reason(config: pytest.Config) -> str | None:
    device = _launch_device(config)
    if device == "cuda":
        return _skip_reason(config)  # a faulted context skips these too
    reason = config.stash[STATE].device_reason
    if reason and config.getoption("cuforge_device") != "cpu" and config.getoption("cuforge_require_gpu"):
        pytest.fail(f"--cuforge-require-gpu: no usable CUDA device: {reason}", pytrace=False)
    return reason


def _switch_to_cpu() -> contextlib.ExitStack:
    """The process's launches go to the CPU until the stack closes: the default device (C
    launcher included), CUFORGE_DEVICE for subprocesses (set and restored as pytest's
    monkeypatch does), and an arch for compile-only calls (``precompile``, ``%%cuda``) where
    none is set. Only these two settings are put back: a whole-settings scope would also undo
    what a session fixture set meanwhile (its cache directory)."""
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
    return stack


@pytest.hookimpl(tryfirst=True)  # before pytest's skipping plugin reads the skip marks
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A GPU test (the marker, or a GPU fixture) skips through a ``skip`` mark rather than
    ``pytest.skip()``, so that ``-rs`` names the test's file and line, not this plugin's. A
    ``launches`` test does too where no device can run it, and on the CPU runs inside the
    switch to the CPU (closed at its teardown)."""
    if _launches(item):
        reason = _launch_skip_reason(item.config)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))
        elif _launch_device(item.config) == "cpu":
            item.stash[_SWITCH] = _switch_to_cpu()
    elif _uses_gpu(item):
        reason = _skip_reason(item.config)
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
    """After a GPU test, make sure its kernels did not fault: a fault (illegal address, device
    assert) poisons the CUDA context, so it fails this test, naming the last cuforge launch
    as the suspect (the driver does not say which kernel faulted), and the rest of
    the session's GPU tests are skipped with that reason instead of failing one by one. (A
    fault on the CPU is an error of the launch, and the process goes on.)"""
    if not _uses_gpu(item) or item.config.stash[STATE].gpu_reason is not None:
        return (yield)
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


# ------------------------------------------------------------------ fixtures


@pytest.fixture
def cuda_device(request: pytest.FixtureRequest) -> Any:
    """The current CUDA device (a cuda.core ``Device``); skips the test without one."""
    _require_gpu(request.config)
    from .._runtime import cuda as _cuda

    return _cuda.core_device(_cuda.current_device().id)


@pytest.fixture
def cuda_stream(cuda_device: Any) -> Iterator[Any]:
    """A fresh cuda.core stream on the current device, synchronised at teardown."""
    stream = cuda_device.create_stream()
    yield stream
    stream.sync()
    stream.close()


@pytest.fixture
def cuforge_device(request: pytest.FixtureRequest) -> str:
    """Where this test's launches run, ``"cuda"`` or ``"cpu"`` (``--cuforge-device``): asking
    for it makes the test a ``launches`` one, skipped where neither device can run it."""
    device = _launch_device(request.config)
    if device is None:  # (the setup hook has marked the test skipped already; a safeguard)
        pytest.skip(request.config.stash[STATE].device_reason or "no device")
    return device


def gpu_module() -> pytest.MarkDecorator:
    """``pytestmark = gpu_module()`` at the top of a module whose every test needs a CUDA GPU:
    the ``gpu`` mark where one is usable, else the whole module is skipped once, with the reason
    (failed with --cuforge-require-gpu). It looks at the GPU when the module is collected."""
    __tracebackhide__ = True  # a skip names the module that called this (its file and line)
    if not _config_of_session:  # not under pytest with this plugin: each test's mark decides
        return pytest.mark.gpu
    config = _config_of_session[-1]
    reason = _gpu_reason(config)
    if reason and config.getoption("cuforge_require_gpu"):
        raise pytest.fail.Exception(f"--cuforge-require-gpu: no usable CUDA device: {reason}", pytrace=False)
    if reason:
        pytest.skip(f"needs a CUDA GPU: {reason}", allow_module_level=True)
    return pytest.mark.gpu


@pytest.fixture
def cuforge_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An empty disk-cache directory for this test; the previous setting is restored after."""
    from .. import _config

    path = tmp_path_factory.mktemp("cuforge-cache")
    with _config.scope(cache_dir=str(path)):
        yield path


class CompileCounter:
    """NVRTC compiles and cache hits since the fixture started (see ``cuforge.cache_stats``)."""

    def __init__(self) -> None:
        from .._compile import stats as _stats

        self._stats = _stats.cache_stats
        self._start = self._stats()

    @property
    def count(self) -> int:
        """NVRTC programs compiled during the test so far."""
        return self._stats().compiles - self._start.compiles

    @property
    def disk_hits(self) -> int:
        return self._stats().disk_hits - self._start.disk_hits

    @property
    def memory_hits(self) -> int:
        return self._stats().memory_hits - self._start.memory_hits

    def reset(self) -> None:
        self._start = self._stats()

    def __repr__(self) -> str:
        return f"<cuforge compile counter: {self.count} compiles, {self.disk_hits} disk hits, {self.memory_hits} memory hits>"


@pytest.fixture
def cuforge_compile_counter() -> CompileCounter:
    """Counts NVRTC compiles during the test: ``assert cuforge_compile_counter.count == 0``."""
    return CompileCounter()


# ------------------------------------------------------------------ --cuforge-compile-all


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[None]:
    if session.config.getoption("cuforge_compile_all"):
        from .._kernel.registry import registry

        session.config.stash[STATE].registered_before = {id(obj) for obj in registry.values()}
    return (yield)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("cuforge_compile_all"):
        return
    from .._kernel.family import Family
    from .._kernel.registry import registry

    modules = config.getoption("cuforge_modules")
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise pytest.UsageError(f"--cuforge-modules {name}: cannot import it: {exc}") from None
    before = config.stash[STATE].registered_before
    chosen = [
        obj
        for obj in registry.values()
        if id(obj) not in before
        or any(obj.__wrapped__.__module__ == m or obj.__wrapped__.__module__.startswith(m + ".") for m in modules)
    ]
    parent = CompileAll.from_parent(session, name="cuforge", nodeid="cuforge")
    for obj in chosen:
        kernels = obj.instantiations() if isinstance(obj, Family) else [obj]
        for k in kernels:
            items.append(CompileItem.from_parent(parent, name=f"compile[{_item_id(obj, k)}]", kernel=k, family=obj))


def _item_id(obj: Any, k: Any) -> str:
    if not k.template_args:
        return str(obj.__name__)
    return f"{obj.__name__}[{'-'.join(getattr(v, 'name', str(v)) for v in k.template_args.values())}]"


class CompileAll(pytest.Collector):
    """The parent of the compile items (their ids read ``cuforge::compile[Axpy[float32-256]]``)."""

    def collect(self) -> list[Any]:
        return []


class CompileItem(pytest.Item):
    """Compiles one instantiation for the session's arch (``--cuforge-arch``, the GPU's, or CUFORGE_ARCH)."""

    def __init__(self, *, kernel: Any, family: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kernel = kernel
        self.family = family

    def _arch(self) -> str:
        arch = self.config.getoption("cuforge_arch")
        if arch:
            return str(arch)
        from .._compile.targets import default_arch
        from .._kernel.kernel import current_cc

        return default_arch(f"compile {self.kernel.name_expression}", current_cc)  # the GPU's, else CUFORGE_ARCH

    def runtest(self) -> None:
        from .._kernel.family import Family

        arch = self._arch()
        batches = self.config.stash[STATE].batches
        if isinstance(self.family, Family) and id(self.family) not in batches:
            # One NVRTC program for the whole family; if it fails, each item compiles alone
            # and reports its own error.
            try:
                self.family.precompile(arch)
                batches[id(self.family)] = None
            except Exception as exc:
                batches[id(self.family)] = exc
        self.kernel.compile(arch)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        from ..errors import CuforgeError

        if isinstance(excinfo.value, CuforgeError):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Any, int | None, str]:
        cls = self.kernel.__wrapped__
        try:
            path, line = inspect.getsourcefile(cls), inspect.getsourcelines(cls)[1]
        except (OSError, TypeError):
            path, line = None, None
        return (path or self.path, line, f"compile {self.kernel.name_expression}")
