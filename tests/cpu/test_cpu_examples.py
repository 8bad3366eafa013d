"""The example scripts where there is no GPU: each still compiles for the GPU with NVRTC, then
runs its kernels on the CPU backend and checks them against NumPy (an example's checks are
asserts: a wrong result ends it with a traceback and a non-zero exit).

The scripts run as a user runs them (``python examples/NAME.py``), all at once in subprocesses
(the reduction's twelve host builds take most of the time), with no GPU visible even on a
machine that has one, and an empty cache directory each."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
SCRIPTS = ("saxpy", "reduction", "transpose", "lto_link")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, subprocess.Popen[str]]]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), CUDA_VISIBLE_DEVICES="")
    env.pop("CUFORGE_DEVICE", None)  # the examples choose the CPU themselves where no GPU is usable
    started = {}
    for name in SCRIPTS:
        env["CUFORGE_CACHE_DIR"] = str(tmp_path_factory.mktemp(f"cache-{name}"))
        started[name] = subprocess.Popen([sys.executable, os.path.join(EXAMPLES, f"{name}.py")], env=env, text=True,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    yield started
    for process in started.values():
        if process.poll() is None:
            process.kill()
            process.communicate()


def _output(runs: dict[str, subprocess.Popen[str]], name: str) -> list[str]:
    out, err = runs[name].communicate(timeout=600)
    assert runs[name].returncode == 0, f"examples/{name}.py exited with {runs[name].returncode}:\n{err}"
    return out.splitlines()


def test_saxpy_runs_on_the_cpu(runs):
    lines = _output(runs, "saxpy")
    assert lines[0] == "compiled Saxpy(a: float32, x: In[float32], y: Array[float32], n: int64)"
    assert lines[-1] == "no GPU here: ran on the CPU instead (device='cpu') on 1048576 elements: matches NumPy"


def test_every_reduction_instantiation_runs_on_the_cpu(runs):
    lines = _output(runs, "reduction")
    assert lines[0].startswith("12 instantiations compiled in one NVRTC program, e.g. _Z3SumIfLi256EEv")
    assert lines[1] == "no GPU here: each instantiation runs on the CPU instead (device='cpu'), 1M elements each"
    checked = [re.fullmatch(r"(Sum<\w+, \d+>) +sum=\S+  matches NumPy", line) for line in lines[2:14]]
    assert [m.group(1) for m in checked if m] == [
        f"Sum<{t}, {b}>" for t in ("float", "double", "int") for b in (256, 128, 512, 1024)
    ]
    assert lines[14:] == ["Sum(x, out, 1000) on float64 arrays (T inferred, BLOCK at its default): matches NumPy"]


def test_every_transpose_instantiation_runs_on_the_cpu(runs):
    assert _output(runs, "transpose") == [
        "4 instantiations compiled in one NVRTC program",
        "no GPU here: each instantiation runs on the CPU instead (device='cpu')",
        *(f"{f'Transpose<{t}, {tile}>':24s} matches NumPy" for t in ("float", "double") for tile in (32, 16)),
    ]


def test_the_lto_example_links_for_the_gpu_and_runs_on_the_cpu(runs):
    lines = _output(runs, "lto_link")
    assert re.fullmatch(r"no GPU: compiled and linked _Z9ApplyPolyPKfPfx \(\d+-byte cubin\) with nvJitLink, LTO", lines[0])
    assert lines[1:] == [
        "running it on the CPU instead (device='cpu'); LTO is the GPU's: the CPU build links the two units without it",
        "ApplyPoly: 100001 values match NumPy (linked by the host's toolchain, on the CPU)",
    ]
