"""CUDA graph replay: 100 launches of one empty kernel per graph, in microseconds per kernel.

    python benchmarks/graphs.py

Contenders, all replaying a graph of 100 launches of the empty 4-parameter kernel of
launch_overhead.py (grid 1, block 32):

- cuforge ``cf.graph()`` of checked launches, replayed with ``g()``;
- CuPy stream capture (``Stream.begin_capture``) of CuPy ``RawKernel`` launches;
- ``torch.cuda.graph`` with the cuforge kernel inside (torch tensors), replayed with
  ``CUDAGraph.replay()``;

and, for scale, the same 100 launches made one by one as checked calls. Each replay figure is
the median over 7 timed loops of 200 replays (queued, then synchronised), after a second of
replays to raise the GPU's clocks; the contenders take turns, loop by loop. ``g.update()``
(re-capture, then update in place) is timed beside a fresh capture and instantiation of the
same 100 launches, the two taking turns 21 times, in milliseconds (medians).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

import numpy as np

import cuforge as cf

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import report, take_turns  # noqa: E402
from launch_overhead import SRC, Empty4  # noqa: E402

KERNELS, REPLAYS, REPEATS = 100, 200, 7


def per_kernel(replay: Callable[[], object], sync: Callable[[], object], launches: int = KERNELS) -> Callable[[], float]:
    """A timer of ``REPLAYS`` replays, in microseconds per kernel launched."""
    for _ in range(REPLAYS):
        replay()
    sync()

    def once() -> float:
        t = time.perf_counter()
        for _ in range(REPLAYS):
            replay()
        sync()
        return (time.perf_counter() - t) / (REPLAYS * launches) * 1e6

    return once


def ms(fn: Callable[[], object]) -> Callable[[], float]:
    """A timer of one call of ``fn``, in milliseconds."""

    def once() -> float:
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1e3

    return once


def main() -> dict:
    import cupy as cp

    x = cp.ones(1024, dtype=cp.float32)
    y = cp.ones(1024, dtype=cp.float32)
    sync = cp.cuda.runtime.deviceSynchronize
    grid, block = (1,), (32,)
    Empty4(1.0, x, y, 1024, grid=grid, block=block)  # compiled and loaded before any capture

    def hundred() -> None:
        for _ in range(KERNELS):
            Empty4(1.0, x, y, 1024, grid=grid, block=block)

    with cf.graph() as g:
        hundred()
    g.upload()
    # Replay takes the GPU's time, not the host's: keep it busy for a second first, so that
    # its clocks have risen before any contender is timed.
    end = time.perf_counter() + 1.0
    while time.perf_counter() < end:
        for _ in range(50):
            g()
        sync()
    timers = {"cuforge cf.graph() replay": per_kernel(g, sync)}

    rk = cp.RawKernel(SRC, "empty4")
    args = (np.float32(1.0), x, y, np.int64(1024))
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        for _ in range(KERNELS):
            rk((1,), (32,), args)
        cupy_graph = s.end_capture()
    cupy_graph.upload(s)
    timers["cupy stream capture replay (RawKernel)"] = per_kernel(lambda: cupy_graph.launch(s), sync)
    missing: dict[str, str] = {}
    try:
        import torch

        tx, ty = torch.ones(1024, device="cuda"), torch.ones(1024, device="cuda")
        Empty4(1.0, tx, ty, 1024, grid=grid, block=block)
        torch.cuda.synchronize()
        tg = torch.cuda.CUDAGraph()
        with torch.cuda.graph(tg):
            for _ in range(KERNELS):
                Empty4(1.0, tx, ty, 1024, grid=grid, block=block)
        timers["torch.cuda.graph replay (cuforge kernels inside)"] = per_kernel(tg.replay, torch.cuda.synchronize)
    except ImportError:
        missing["torch.cuda.graph replay (cuforge kernels inside)"] = "missing: torch not installed"
    timers["cuforge checked launches, one by one"] = per_kernel(hundred, sync, KERNELS)
    results: dict[str, float | str] = {f"{k} (us per kernel)": v for k, v in take_turns(timers, REPEATS).items()}

    def update() -> None:
        with g.update():
            hundred()

    def fresh() -> None:
        with cf.graph() as g2:
            hundred()
        g2.close()

    costs = take_turns({"cuforge g.update(), 100 launches (ms)": ms(update),
                        "cuforge fresh capture + instantiate, 100 launches (ms)": ms(fresh)}, 21)  # fmt: skip
    results.update(costs)
    return {**results, **missing}


if __name__ == "__main__":
    report(main(), 62)
