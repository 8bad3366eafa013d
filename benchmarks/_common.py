"""What the benchmark scripts share: timing contenders in turns, printing a result table and
saving it as JSON."""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any


def take_turns(timers: dict[str, Callable[[], float]], rounds: int) -> dict[str, float]:
    """The median of ``rounds`` timings of each contender, the contenders taking turns round by
    round: a slow spell of the machine (host timings here drift 20-40% between runs) then falls
    on all of them alike, and the ratios between them hold."""
    runs: dict[str, list[float]] = {name: [] for name in timers}
    for _ in range(rounds):
        for name, time_once in timers.items():
            runs[name].append(time_once())
    return {name: statistics.median(r) for name, r in runs.items()}


def loop_timer(call: Callable[[], object], sync: Callable[[], object], calls: int, warm: int) -> Callable[[], float]:
    """A timer of ``calls`` calls queued then synchronised, in microseconds per call, after
    ``warm`` calls."""
    for _ in range(warm):
        call()
    sync()

    def once() -> float:
        t = time.perf_counter()
        for _ in range(calls):
            call()
        sync()
        return (time.perf_counter() - t) / calls * 1e6

    return once


def report(results: dict[str, Any], width: int = 48, unit: str = "") -> None:
    """Print one line per figure; with a path as the script's argument, also save the JSON."""
    for name, value in results.items():
        print(f"{name:{width}s} {value:10.2f}{unit}" if isinstance(value, float) else f"{name:{width}s} {value}")
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as fh:
            json.dump(results, fh, indent=1)


def example(name: str) -> Any:
    """The module examples/NAME.py (its kernels: the benchmarks time what the examples show)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def axpy_class(name: str, t: str, params: str = "", block: str = "blockDim.x") -> str:
    """The source of an axpy kernel class ``name`` over element type ``t`` (a dtype, or a
    template parameter that ``params`` declares), for fresh processes to declare: its body
    reads the block size as ``block`` (``{{ BLOCK }}`` in a family that declares it)."""
    return (
        f"\nimport cuforge as cf\n\n@cf.kernel\nclass {name}:\n{params}    a: {t}\n    x: cf.In[{t}]\n"
        f"    y: cf.Array[{t}]\n    n: cf.int64\n"
        f'    body = "long long i = blockIdx.x * (long long){block} + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i];"\n'
    )


# The axpy family the start-up benchmarks declare in fresh processes (warm_start.py,
# startup.py, launch_kinds.py), and the same kernel as CUDA C++ for CuPy's RawModule.
AXPY_FAMILY = axpy_class("Axpy", "T", "    T = cf.typeparam(cf.float32, cf.float64)\n")
AXPY_CUDA = (
    "template <typename T> __global__ void axpy(T a, const T* __restrict__ x, T* y, long long n)"
    " { long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }"
)
