"""Host launch overhead: the same empty 4-parameter kernel through cuforge and its peers.

    python benchmarks/launch_overhead.py

Each figure is the median over 7 timed loops of 20,000 launches (queued, then synchronised),
after a warm-up, in microseconds per launch; the contenders take turns, loop by loop. Peers
that are not installed are reported as missing. cuforge is measured as a checked call (grid
and block given, and from the default launch rule) and as a prepared launch (checked and
packed once); the checked call also as a cuforge installed where no C compiler was present
makes it (the general path, the launch through cuda.bindings; see no_extension.py), in
three processes, of which the one with the median ratio to cuda.core is reported.
"""

from __future__ import annotations

import ctypes
import json
import os
import struct
import subprocess
import sys
from collections.abc import Callable

import numpy as np

import cuforge as cf
from cuforge._runtime import cuda as _cuda

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import loop_timer, report, take_turns  # noqa: E402

N, REPEATS = 20_000, 7
SRC = 'extern "C" __global__ void empty4(float a, const float* x, float* y, long long n) {}'


@cf.kernel
class Empty4:
    a: cf.float32
    x: cf.In[cf.float32]
    y: cf.Array[cf.float32]
    n: cf.int64
    body = ""


def measure(cases: dict[str, tuple[Callable[[], object], Callable[[], object]]]) -> dict[str, float]:
    """Median microseconds per launch of each (launch, synchronise) case."""
    return take_turns({name: loop_timer(*case, N, 2000) for name, case in cases.items()}, REPEATS)


def main() -> dict:
    import cupy as cp
    from cuda.bindings import driver
    from cuda.core import Device, LaunchConfig, launch

    dev = Device()
    dev.set_current()
    x = cp.ones(1024, dtype=cp.float32)
    y = cp.ones(1024, dtype=cp.float32)
    sync = cp.cuda.runtime.deviceSynchronize
    grid, block = (1,), (32,)
    cases: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {}
    missing: dict[str, str] = {}

    cases["cuforge checked (cupy arrays)"] = (lambda: Empty4(1.0, x, y, 1024, grid=grid, block=block), sync)
    cases["cuforge checked, default grid (cupy arrays)"] = (lambda: Empty4(1.0, x, y, 1024), sync)
    cases["cuforge prepared launch"] = (Empty4.prepare(1.0, x, y, 1024, grid=grid, block=block, stream=0), sync)

    ck = Empty4.compile()
    kern = ck.function(dev.device_id)
    cfg = LaunchConfig(grid=1, block=32)
    stream = dev.default_stream
    a32, n64, xp, yp = np.float32(1.0), np.int64(1024), x.data.ptr, y.data.ptr
    cases["cuda.core launch"] = (lambda: launch(stream, cfg, kern, a32, xp, yp, n64), sync)

    handle = kern.handle
    buf = ctypes.create_string_buffer(32)
    base = ctypes.addressof(buf)
    ptrs = (ctypes.c_void_p * 4)(base, base + 8, base + 16, base + 24)
    addr = ctypes.addressof(ptrs)
    fmt = struct.Struct("=f4xQQq")

    def raw() -> None:
        fmt.pack_into(buf, 0, 1.0, x.data.ptr, y.data.ptr, 1024)
        driver.cuLaunchKernel(handle, 1, 1, 1, 32, 1, 1, 0, 0, addr, 0)

    cases["raw cuLaunchKernel (packed)"] = (raw, sync)
    rk = cp.RawKernel(SRC, "empty4")
    cases["cupy RawKernel"] = (lambda: rk((1,), (32,), (np.float32(1.0), x, y, np.int64(1024))), sync)
    try:
        import torch

        tx = torch.ones(1024, device="cuda")
        ty = torch.ones(1024, device="cuda")
        tsync = torch.cuda.synchronize
        cases["cuforge checked (torch tensors)"] = (lambda: Empty4(1.0, tx, ty, 1024, grid=grid, block=block), tsync)
        cases["torch.add (reference)"] = (lambda: torch.add(tx, ty, out=ty), tsync)
    except ImportError:
        missing["cuforge checked (torch tensors)"] = missing["torch.add (reference)"] = "missing: torch not installed"
    try:
        import triton

        @triton.jit
        def empty4_triton(a, x, y, n):
            pass

        empty4_triton[(1,)](1.0, tx, ty, 1024)
        cases["triton @jit (torch tensors)"] = (lambda: empty4_triton[(1,)](1.0, tx, ty, 1024), tsync)
    except Exception as exc:  # not installed, or cannot run here
        missing["triton @jit (torch tensors)"] = f"missing: {type(exc).__name__}: {exc}"[:120]
    results: dict[str, float | str] = dict(measure(cases))
    results["cuforge launcher"] = _cuda.state.launcher
    results.update(no_extension(missing))
    return {**results, **missing}


NO_EXT, CORE = "cuforge checked, no C extension (cupy arrays)", "cuda.core launch (same process)"


def no_extension(missing: dict[str, str], processes: int = 3) -> dict[str, float | str]:
    """What a cuforge installed where no C compiler was present does, with cuda.core timed in
    the same process (the extension must be hidden before cuforge is imported): the process
    whose ratio is the median of ``processes``. On the GPU machine the ratio moves by up to
    0.2 between processes of the same code (0.2 is 8% of it), more than the turns within a
    process even out, so one process is one sample of it."""
    runs = []
    for _ in range(processes):
        out = subprocess.run([sys.executable, os.path.join(HERE, "no_extension.py")], capture_output=True, text=True)
        if out.returncode != 0:
            missing[NO_EXT] = f"failed: {out.stderr.strip()[-200:]}"
            return {}
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    runs.sort(key=lambda r: r[NO_EXT] / r[CORE])
    ratios = ", ".join(f"{r[NO_EXT] / r[CORE]:.2f}" for r in runs)
    return {**runs[len(runs) // 2], "no C extension, ratio in each process": ratios}


if __name__ == "__main__":
    report(main(), 48, " us")
