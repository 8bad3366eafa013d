"""Host launch overhead: the same empty 4-parameter kernel through cuforge and its peers.

    python benchmarks/launch_overhead.py

Each figure is the median over 5 timed loops of 20,000 launches (queued, then synchronised),
after a warm-up, in microseconds per launch. Peers that are not installed are reported as
missing. cuforge is measured as a checked call (grid and block given, and from the default
launch rule) and as a prepared launch (checked and packed once).
"""

from __future__ import annotations

import ctypes
import os
import statistics
import struct
import sys
import time

import numpy as np

import cuforge as cf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import report

N, REPEATS = 20_000, 5
SRC = 'extern "C" __global__ void empty4(float a, const float* x, float* y, long long n) {}'


@cf.kernel
class Empty4:
    a: cf.float32
    x: cf.In[cf.float32]
    y: cf.Array[cf.float32]
    n: cf.int64
    body = ""


def timed(launch, sync) -> float:
    for _ in range(2000):
        launch()
    sync()
    runs = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        for _ in range(N):
            launch()
        sync()
        runs.append((time.perf_counter() - t) / N * 1e6)
    return statistics.median(runs)


def main() -> dict:
    import cupy as cp
    from cuda.bindings import driver
    from cuda.core import Device, LaunchConfig, launch

    dev = Device()
    dev.set_current()
    x = cp.ones(1024, dtype=cp.float32)
    y = cp.ones(1024, dtype=cp.float32)
    results: dict[str, float | str] = {}
    sync = cp.cuda.runtime.deviceSynchronize
    cfg_grid, cfg_block = (1,), (32,)

    results["cuforge checked (cupy arrays)"] = timed(lambda: Empty4(1.0, x, y, 1024, grid=cfg_grid, block=cfg_block), sync)
    results["cuforge checked, default grid (cupy arrays)"] = timed(lambda: Empty4(1.0, x, y, 1024), sync)
    prepared = Empty4.prepare(1.0, x, y, 1024, grid=cfg_grid, block=cfg_block, stream=0)
    results["cuforge prepared launch"] = timed(prepared, sync)

    ck = Empty4.compile()
    kern = ck.function(dev.device_id)
    cfg = LaunchConfig(grid=1, block=32)
    stream = dev.default_stream
    a32, n64, xp, yp = np.float32(1.0), np.int64(1024), x.data.ptr, y.data.ptr
    results["cuda.core launch"] = timed(lambda: launch(stream, cfg, kern, a32, xp, yp, n64), sync)

    handle = kern.handle
    buf = ctypes.create_string_buffer(32)
    base = ctypes.addressof(buf)
    ptrs = (ctypes.c_void_p * 4)(base, base + 8, base + 16, base + 24)
    addr = ctypes.addressof(ptrs)
    fmt = struct.Struct("=f4xQQq")

    def raw():
        fmt.pack_into(buf, 0, 1.0, x.data.ptr, y.data.ptr, 1024)
        driver.cuLaunchKernel(handle, 1, 1, 1, 32, 1, 1, 0, 0, addr, 0)

    results["raw cuLaunchKernel (packed)"] = timed(raw, sync)
    rk = cp.RawKernel(SRC, "empty4")
    results["cupy RawKernel"] = timed(lambda: rk((1,), (32,), (np.float32(1.0), x, y, np.int64(1024))), sync)
    try:
        import triton
        import triton.language as tl  # noqa: F401

        @triton.jit
        def empty4_triton(a, x, y, n):
            pass

        import torch

        tx_, ty_ = torch.ones(1024, device="cuda"), torch.ones(1024, device="cuda")
        results["triton @jit (torch tensors)"] = timed(lambda: empty4_triton[(1,)](1.0, tx_, ty_, 1024), torch.cuda.synchronize)
    except Exception as exc:  # not installed, or cannot run here
        results["triton @jit (torch tensors)"] = f"missing: {type(exc).__name__}: {exc}"[:120]
    try:
        import torch

        tx = torch.ones(1024, device="cuda")
        ty = torch.ones(1024, device="cuda")
        results["cuforge checked (torch tensors)"] = timed(
            lambda: Empty4(1.0, tx, ty, 1024, grid=cfg_grid, block=cfg_block), torch.cuda.synchronize
        )
        results["torch.add (reference)"] = timed(lambda: torch.add(tx, ty, out=ty), torch.cuda.synchronize)
    except ImportError:
        results["cuforge checked (torch tensors)"] = "missing: torch not installed"
        results["torch.add (reference)"] = "missing: torch not installed"
    return results


if __name__ == "__main__":
    report(main(), 44, " us")
