"""What the driver's launch kinds cost, and what a build saves at start-up.

    python benchmarks/launch_kinds.py

- Launch: an empty kernel launched plainly (the C launcher) and cooperatively (the general
  path: its grid is checked against the kernel's occupancy on every call), against cuda.core's
  plain and cooperative launches of the same cubin; median microseconds per launch.
- Start-up: the first call of a kernel in a fresh process (context excluded), served by a warm
  disk cache and by an ahead-of-time build (``python -m cuforge build``); median of 5
  processes, milliseconds.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

import cuforge as cf

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import AXPY_FAMILY, report  # noqa: E402
from launch_overhead import measure  # noqa: E402


@cf.kernel
class Plain:
    y: cf.Array[cf.float32]
    n: cf.int64
    body = ""


@cf.kernel
class Coop:
    y: cf.Array[cf.float32]
    n: cf.int64
    cooperative = True
    body = ""


def launches() -> dict[str, float]:
    import cupy as cp
    from cuda.core import Device, LaunchConfig, launch

    dev = Device()
    dev.set_current()
    y, sync = cp.ones(1024, dtype=cp.float32), cp.cuda.runtime.deviceSynchronize
    kern = Plain.compile().function(dev.device_id)
    coop = Coop.compile().function(dev.device_id)
    import numpy as np

    n64, stream = np.int64(1024), dev.default_stream
    plain_cfg, coop_cfg = LaunchConfig(grid=4, block=256), LaunchConfig(grid=4, block=256, is_cooperative=True)
    r = measure({
        "cuforge plain launch": (lambda: Plain(y, 1024, grid=4, block=256), sync),
        "cuforge cooperative launch": (lambda: Coop(y, 1024, grid=4, block=256), sync),
        "cuda.core plain launch": (lambda: launch(stream, plain_cfg, kern, y.data.ptr, n64), sync),
        "cuda.core cooperative launch": (lambda: launch(stream, coop_cfg, coop, y.data.ptr, n64), sync),
    })  # fmt: skip
    r["ratio cuforge cooperative / cuforge plain"] = r["cuforge cooperative launch"] / r["cuforge plain launch"]
    r["ratio cuforge cooperative / cuda.core cooperative"] = r["cuforge cooperative launch"] / r["cuda.core cooperative launch"]
    return r


KERNELS = AXPY_FAMILY
FIRST_CALL = textwrap.dedent("""
    import time, cupy as cp, cuforge as cf
    from cuforge._runtime import cuda as _cuda
    _cuda.current_device(); cp.cuda.runtime.deviceSynchronize()   # the CUDA context (excluded)
    x = cp.ones(1 << 20, dtype=cp.float32); y = cp.ones(1 << 20, dtype=cp.float32)
    t = time.perf_counter()
    import start_kernels
    start_kernels.Axpy(2.0, x, y, 1 << 20)
    cp.cuda.runtime.deviceSynchronize()
    print((time.perf_counter() - t) * 1e3, cf.cache_stats().compiles)
""")


def startup() -> dict[str, object]:
    from cuforge._runtime import cuda as _cuda

    def first_calls(env: dict[str, str]) -> tuple[float, list[int]]:
        subprocess.run([sys.executable, "-c", FIRST_CALL], env=env, check=True, capture_output=True)
        times, compiles = [], []
        for _ in range(5):
            out = subprocess.run([sys.executable, "-c", FIRST_CALL], env=env, check=True, capture_output=True, text=True)
            ms, n = out.stdout.split()
            times.append(float(ms))
            compiles.append(int(n))
        return statistics.median(times), compiles

    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "start_kernels.py"), "w") as fh:
            fh.write(KERNELS)
        base = {**os.environ, "PYTHONPATH": os.pathsep.join([d, *sys.path])}
        # as installed: the filling process writes the bytecode (the GPU image sets PYTHONDONTWRITEBYTECODE,
        # which would charge the timed first call for compiling the modules it imports on first use)
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        warm = {**base, "CUFORGE_CACHE_DIR": os.path.join(d, "cache")}
        results["first call, warm disk cache (ms)"], _ = first_calls(warm)
        arch = f"sm_{_cuda.current_device().cc}"
        command = [sys.executable, "-m", "cuforge", "build", "start_kernels", "--arch", arch, "-o", os.path.join(d, "build")]
        subprocess.run(command, env=warm, check=True, capture_output=True)
        built = {**base, "CUFORGE_CACHE_DIR": os.path.join(d, "empty"), "CUFORGE_BUILD_DIR": os.path.join(d, "build")}
        results["first call, from the build (ms)"], compiles = first_calls(built)
        results["NVRTC compiles in the build's processes"] = compiles
    results["ratio build / warm cache"] = results["first call, from the build (ms)"] / results["first call, warm disk cache (ms)"]  # type: ignore[operator]
    return results


def main() -> dict[str, object]:
    return {**launches(), **startup()}


if __name__ == "__main__":
    report(main(), 52)
