"""Launches from many Python threads: cuforge against CuPy RawKernel and cuda.core launch.

    python benchmarks/threads.py

Each of 1, 4 and 32 new threads makes its own non-blocking CuPy stream and its arrays
(cp.full, 64K floats), then launches saxpy 200 times on its stream; cuforge with its
default grid, the peers with the grid spelled out. The figure is the wall time from the
threads' start to the last one's synchronisation, per launch, in microseconds: the first
launches in each new thread are inside it. Contenders take turns, median of the rounds: 51
rounds at 1 thread, 21 at 4 and 11 at 32 (the windows last about 1, 4 and 70 ms; one slow
spell of the machine moved a 5-round median by 20%, and cuforge and cuda.core are within a
few percent of each other). Every contender was launched once in the main thread first
(compiled and loaded).
"""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time
from collections.abc import Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import example, report, take_turns

N, LAUNCHES = 65536, 200
ROUNDS = {1: 51, 4: 21, 32: 11}  # threads -> rounds: the short windows get more
SRC = """extern "C" __global__ void saxpy(float a, const float* x, float* y, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }"""


Saxpy = example("saxpy").Saxpy  # examples/saxpy.py's kernel


def contenders() -> dict[str, Callable[..., Callable[[], None]]]:
    """name -> make(stream, x, y): a function making one launch on that stream."""
    import cupy as cp
    from cuda.core import Device, LaunchConfig, Stream, launch

    rk = cp.RawKernel(SRC, "saxpy")
    dev = Device()
    dev.set_current()
    kern = Saxpy.compile().function(dev.device_id)
    grid = ((N + 255) // 256,)
    cfg = LaunchConfig(grid=grid, block=256)
    a32, n64 = np.float32(2.0), np.int64(N)

    def make_cuforge(s, x, y):
        return lambda: Saxpy(2.0, x, y, N, stream=s)

    def make_cupy(s, x, y):
        return lambda: rk(grid, (256,), (a32, x, y, n64), stream=s)

    def make_core(s, x, y):
        cs = Stream.from_handle(s.ptr)
        xp, yp = x.data.ptr, y.data.ptr
        return lambda: launch(cs, cfg, kern, a32, xp, yp, n64)

    return {"cuforge": make_cuforge, "cupy RawKernel": make_cupy, "cuda.core launch": make_core}


def run(make: Callable[..., Callable[[], None]], threads: int) -> tuple[float, float]:
    """(us per launch over all threads, median us of each thread's first launch)."""
    import cupy as cp

    barrier = threading.Barrier(threads + 1)
    firsts: list[float] = []
    done = threading.Barrier(threads + 1)

    def work() -> None:
        with cp.cuda.Device(0):
            s = cp.cuda.Stream(non_blocking=True)
            x, y = cp.full(N, 1.0, cp.float32), cp.full(N, 2.0, cp.float32)
            barrier.wait()
            one = make(s, x, y)
            t = time.perf_counter()
            one()
            firsts.append(time.perf_counter() - t)
            for _ in range(LAUNCHES - 1):
                one()
            s.synchronize()
            done.wait()

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    done.wait()
    wall = time.perf_counter() - t0
    for t in ts:
        t.join()
    return wall / (threads * LAUNCHES) * 1e6, statistics.median(firsts) * 1e6


def _timer(make: Callable[..., Callable[[], None]], threads: int, firsts: list[float]) -> Callable[[], float]:
    def once() -> float:
        per, first = run(make, threads)
        firsts.append(first)
        return per

    return once


def main() -> dict:
    import cupy as cp

    makers = contenders()
    s = cp.cuda.Stream(non_blocking=True)
    x, y = cp.ones(N, cp.float32), cp.ones(N, cp.float32)
    for make in makers.values():  # compiled and loaded in the main thread first
        make(s, x, y)()
    s.synchronize()
    results: dict[str, float] = {}
    for threads, rounds in ROUNDS.items():
        firsts: dict[str, list[float]] = {name: [] for name in makers}

        per = take_turns({name: _timer(make, threads, firsts[name]) for name, make in makers.items()}, rounds)
        for name in makers:
            results[f"{threads} threads: {name} (us per launch)"] = per[name]
            results[f"{threads} threads: {name}, first launch in a thread (us)"] = statistics.median(firsts[name])
    return results


if __name__ == "__main__":
    report(main(), 60, "")
