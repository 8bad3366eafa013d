"""``pytest --cuforge-sanitize[=TOOLS]``: each GPU test run again under NVIDIA's compute-sanitizer,
once per tool, in a subprocess of its own, and failed with the sanitizer's findings, each
naming its kernel. compute-sanitizer watches a whole process, so a test cannot be sanitized in
this one: the subprocess runs pytest on the test's node id alone, with
``--cuforge-sanitize-inner`` (it runs the test plainly, even where ``addopts`` says
``--cuforge-sanitize``). Tests on the CPU run as ever: their launches are checked by cuforge."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from typing import Any

import pytest

from ._pytest_devices import uses_gpu
from ._pytest_state import STATE

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
ERROR_EXIT = 86  # compute-sanitizer's exit status where it found errors (--error-exitcode)
TIMEOUT = 900.0  # seconds one test may run under one tool: the sanitizer slows kernels down many times
_TOOL_FLAGS = {"racecheck": ("--racecheck-report", "all")}  # hazards and the races they add up to


def tools_option(value: str) -> tuple[str, ...]:
    """``--cuforge-sanitize=TOOLS``: a comma-separated list of compute-sanitizer's tools."""
    tools = tuple(t.strip() for t in value.split(",") if t.strip())
    unknown = [t for t in tools if t not in TOOLS]
    if unknown or not tools:
        raise argparse.ArgumentTypeError(
            f"expects compute-sanitizer tools separated by commas, from {', '.join(TOOLS)}; got {value!r} (to give test "
            f"paths after it, write --cuforge-sanitize={','.join(TOOLS)} or put the option last)"
        )
    return tools


def find_sanitizer() -> tuple[str | None, list[str]]:
    """compute-sanitizer's path (None: not found) and where it was looked for."""
    looked = ["PATH"]
    found = shutil.which("compute-sanitizer")
    if found:
        return found, looked
    homes = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")]
    for folder in [*(os.path.join(h, "bin") for h in homes if h), "/usr/local/cuda/bin"]:
        looked.append(folder)
        path = os.path.join(folder, "compute-sanitizer")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path, looked
    return None, looked


def configure_sanitize(config: pytest.Config) -> None:
    """Find compute-sanitizer for ``--cuforge-sanitize``: a usage error where it is missing."""
    tools = config.getoption("cuforge_sanitize")
    if not tools or config.getoption("cuforge_sanitize_inner"):
        return
    path, looked = find_sanitizer()
    if path is None:
        unset = "" if os.environ.get("CUDA_HOME") else "; CUDA_HOME is unset"
        raise pytest.UsageError(
            f"--cuforge-sanitize runs GPU tests under NVIDIA's compute-sanitizer, which was not found: looked on PATH and "
            f"in {', '.join(looked[1:])}{unset}. It ships with the CUDA toolkit: install the toolkit, and put its bin "
            f"folder on PATH or set CUDA_HOME to it"
        )
    state = config.stash[STATE]
    state.sanitizer, state.sanitize_tools = path, tools


def _command(config: pytest.Config, tool: str, nodeid: str) -> list[str]:
    forwarded = [f"--cuforge-device={config.getoption('cuforge_device')}"]
    if config.getoption("cuforge_require_gpu"):
        forwarded.append("--cuforge-require-gpu")
    # --report-api-errors no: a CUDA API call that returns an error is the calling library's to
    # handle (cuda.bindings and CuPy probe the driver's entry points, which "fails" by design);
    # what a test's kernels do is what is reported
    return [str(config.stash[STATE].sanitizer), "--tool", tool, "--error-exitcode", str(ERROR_EXIT),
            "--report-api-errors", "no", *_TOOL_FLAGS.get(tool, ()),
            sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "cuforge.pytest_plugin",
            nodeid, "--cuforge-sanitize-inner", *forwarded]  # fmt: skip


def _run_one(item: pytest.Item, tool: str) -> str | None:
    """The test under one tool: what is wrong (None: nothing); skips the test where it skipped."""
    from ._sanitizer_report import describe, findings

    command = _command(item.config, tool, item.nodeid)
    try:
        done = subprocess.run(command, cwd=item.config.rootpath, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return f"{tool}: the test ran longer than {TIMEOUT:g} s under compute-sanitizer --tool {tool}"
    output = done.stdout + done.stderr
    found = findings(output)
    if found:
        return describe(tool, found)
    if done.returncode != 0:
        tail = "\n".join(output.splitlines()[-40:])
        return f"{tool}: the test failed under compute-sanitizer --tool {tool} (exit status {done.returncode}):\n{tail}"
    skipped = re.search(r"^SKIPPED \[\d+\] [^:]+(?::\d+)?: (.*)$", done.stdout, re.M)
    if skipped and not re.search(r"\b\d+ passed\b", done.stdout):
        pytest.skip(f"under compute-sanitizer: {skipped.group(1)}")
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Any:
    """A GPU test under ``--cuforge-sanitize``: run in subprocesses instead, one per tool."""
    state = pyfuncitem.config.stash[STATE]
    if state.sanitizer is None or not uses_gpu(pyfuncitem):
        return None
    problems = [p for p in (_run_one(pyfuncitem, tool) for tool in state.sanitize_tools) if p]
    if problems:
        pytest.fail("compute-sanitizer found errors:\n" + "\n".join(problems), pytrace=False)
    return True
