"""The pytest plugin's options and configuration, and the hooks and fixtures of its private
modules gathered where pytest looks for them (it finds hooks by name in the registered module);
the public face (the ``pytest11`` entry point ``cuforge``) is ``cuforge.pytest_plugin``, whose
docstring says what it offers.

Its parts: ``_pytest_devices`` (where ``launches`` tests run, the switch to the CPU),
``_pytest_gpu`` (GPU skips and fixtures, faults), ``_pytest_checks`` (checked CPU launches, their
time limit), ``_pytest_sanitize`` (GPU tests under compute-sanitizer), ``_pytest_compile_all``,
``_pytest_fixtures`` (cache directory, compile counter)."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from ._pytest_checks import CPU_TIMEOUT, configure_checks
from ._pytest_compile_all import CompileAll, CompileItem, pytest_collection, pytest_collection_modifyitems
from ._pytest_devices import (
    configure_device,
    cuforge_device,
    device_option,
    pytest_runtest_call,
    pytest_runtest_setup,
    pytest_runtest_teardown,
)
from ._pytest_fixtures import CompileCounter, cuforge_cache_dir, cuforge_compile_counter
from ._pytest_gpu import cuda_device, cuda_stream, gpu_module, pytest_terminal_summary
from ._pytest_sanitize import TOOLS, configure_sanitize, pytest_pyfunc_call, tools_option
from ._pytest_state import STATE, _State, config_of_session

__all__ = [
    "STATE",
    "pytest_addoption",
    "pytest_configure",
    "pytest_plugin_registered",
    "pytest_pyfunc_call",
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

# The names the plugin is registered under: the entry point's, and the module's (``-p
# cuforge.pytest_plugin``, or ``pytest_plugins = [...]`` in a conftest).
_NAMES = ("cuforge", "cuforge.pytest_plugin")


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
        type=device_option,
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
        "--cuforge-sanitize",
        nargs="?",
        const=TOOLS,
        type=tools_option,
        metavar="TOOLS",
        help=f"run each GPU test again under NVIDIA's compute-sanitizer, once per tool (a subprocess each), and fail it "
        f"with the errors found, naming the kernel: TOOLS from {','.join(TOOLS)} (default: all four)",
    )
    group.addoption("--cuforge-sanitize-inner", action="store_true", help=argparse.SUPPRESS)  # the test's subprocess
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


def pytest_plugin_registered(plugin: Any, plugin_name: str, manager: pytest.PytestPluginManager) -> None:
    """Registered under one of its names, the plugin blocks the other: ``-p cuforge.pytest_plugin``
    (as the docs tell users of the source tree) on an installed cuforge would otherwise register
    the module again under the entry point's name, which pytest refuses."""
    if plugin_name in _NAMES and getattr(plugin, "pytest_plugin_registered", None) is pytest_plugin_registered:
        for other in _NAMES:
            if other != plugin_name and manager.get_plugin(other) is None:
                manager.set_blocked(other)


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
    config_of_session.append(config)
    configure_checks(config)
    configure_device(config)
    configure_sanitize(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    if config in config_of_session:
        config_of_session.remove(config)
