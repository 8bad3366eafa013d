"""Warm start: the first call of a disk-cached kernel in a fresh process, CUDA context excluded.

    python benchmarks/warm_start.py

For cuforge and for CuPy RawKernel (with its own disk cache), each in its own cache dir: one
process fills each cache, then 15 fresh processes of each, taking turns (so that a drift of the
machine's speed falls on both alike), each time, after CuPy has created the CUDA
context and the arrays, everything else: for cuforge its import, its own start (cuda.core,
the device, the driver's entry points), the kernel's declaration and its first launch up to
its completion; for CuPy the RawModule and its first launch. Median, milliseconds. Python
writes bytecode as it would for an installed package (the GPU image sets
PYTHONDONTWRITEBYTECODE, which would charge each process for compiling sources).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import AXPY_CUDA, AXPY_FAMILY, report

SRC = AXPY_CUDA

CUFORGE = (
    textwrap.dedent(
        """
    import time, numpy as np, cupy as cp
    cp.cuda.Device(0).use(); cp.cuda.runtime.deviceSynchronize()   # the CUDA context (excluded), made by CuPy
    x = cp.ones(1 << 20, dtype=cp.float32); y = cp.ones(1 << 20, dtype=cp.float32)
    t = time.perf_counter()                      # everything of cuforge's is timed, its import included
    """
    )
    + AXPY_FAMILY
    + textwrap.dedent(
        """
    Axpy(2.0, x, y, 1 << 20)
    cp.cuda.runtime.deviceSynchronize()
    print((time.perf_counter() - t) * 1e3, cf.cache_stats().compiles)
    """
    )
)

CUPY = (
    textwrap.dedent(
        """
    import time, cupy as cp, numpy as np
    cp.cuda.Device(0).use(); cp.cuda.runtime.deviceSynchronize()   # the CUDA context (excluded)
    x = cp.ones(1 << 20, dtype=cp.float32); y = cp.ones(1 << 20, dtype=cp.float32)
    t = time.perf_counter()
    mod = cp.RawModule(code=%r, options=("-std=c++17",), name_expressions=["axpy<float>"])
    k = mod.get_function("axpy<float>")
    k(((1 << 20) // 256,), (256,), (np.float32(2.0), x, y, np.int64(1 << 20)))
    cp.cuda.runtime.deviceSynchronize()
    print((time.perf_counter() - t) * 1e3, 0)
    """
    )
    % SRC
)


PROCESSES = 15


def one(code: str, env: dict[str, str]) -> tuple[float, int]:
    """(milliseconds, NVRTC compiles) of one fresh process running ``code``."""
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True).stdout
    ms, n = out.split()
    return float(ms), int(n)


def main() -> dict:
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as d:
        env = {**os.environ, "CUFORGE_CACHE_DIR": os.path.join(d, "cuforge"), "CUPY_CACHE_DIR": os.path.join(d, "cupy")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: the filling process writes the bytecode
        try:
            import cupy  # noqa: F401

            codes = {"cuforge": CUFORGE, "cupy": CUPY}
        except ImportError:
            codes = {"cuforge": CUFORGE}
            results["cupy RawModule warm start (ms)"] = "missing: cupy not installed"
        runs: dict[str, list[tuple[float, int]]] = {name: [] for name in codes}
        for code in codes.values():
            one(code, env)  # (fills its cache)
        for _ in range(PROCESSES):
            for name, code in codes.items():
                runs[name].append(one(code, env))
        ms = statistics.median(t for t, _ in runs["cuforge"])
        results["cuforge warm start (ms)"] = ms
        results["cuforge NVRTC compiles in warm processes"] = sorted({n for _, n in runs["cuforge"]})
        if "cupy" in runs:
            results["cupy RawModule warm start (ms)"] = statistics.median(t for t, _ in runs["cupy"])
            results["ratio cuforge / cupy"] = ms / results["cupy RawModule warm start (ms)"]  # type: ignore[operator]
    return results


if __name__ == "__main__":
    report(main(), 44, "")
