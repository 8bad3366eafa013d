"""The persistent cache on a GPU: a fresh process launches a cached templated kernel without
NVRTC, and without importing cuda.core (some 100 ms of a warm start) or, on device arrays,
cuda.bindings' driver module (15-19 ms)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from cuforge.pytest_plugin import gpu_module

pytestmark = gpu_module()

PROGRAM = textwrap.dedent(
    """
    import json, sys, numpy as np
    ARRAYS
    driver_before = "cuda.bindings.driver" in sys.modules
    import cuforge as cf

    @cf.kernel
    class Axpy:
        T = cf.typeparam(cf.float32, cf.float64)
        BLOCK = cf.intparam(256, 128)
        a: T
        x: cf.In[T]
        y: cf.Array[T]
        n: cf.int64
        block = "BLOCK"
        body = "long long i = blockIdx.x * (long long)BLOCK + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i];"

    x = xp.arange(1000, dtype=np.float64)
    y = xp.ones(1000, dtype=np.float64)
    Axpy(2.0, x, y, 1000)
    s = cf.cache_stats()
    print(json.dumps({"ok": bool((y == 2 * x + 1).all()), "compiles": s.compiles, "disk_hits": s.disk_hits,
                      "cuda.core": "cuda.core" in sys.modules,
                      "driver": "cuda.bindings.driver" in sys.modules and not driver_before}))
    """
)


def _cold_then_warm(tmp_path, arrays):
    env = {**os.environ, "CUFORGE_CACHE_DIR": str(tmp_path)}
    program = PROGRAM.replace("ARRAYS", arrays)

    def run():
        out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, check=True).stdout
        return json.loads(out.strip().splitlines()[-1])

    return run(), run()


def test_fresh_process_launches_a_cached_templated_kernel_without_nvrtc(tmp_path):
    cold, warm = _cold_then_warm(tmp_path, "xp = np")  # host arrays: staged through cuda.bindings' cuMemAlloc
    assert cold["ok"] and cold["compiles"] == 1 and not cold["cuda.core"]
    assert warm["ok"] and warm["compiles"] == 0 and warm["disk_hits"] >= 1 and not warm["cuda.core"]


def test_a_warm_launch_on_device_arrays_imports_neither_cuda_core_nor_the_bindings_driver(tmp_path):
    pytest.importorskip("cupy")
    cold, warm = _cold_then_warm(tmp_path, "import cupy as xp; xp.ones(1)")  # CuPy made the context
    assert cold["ok"] and cold["compiles"] == 1
    assert warm == {"ok": True, "compiles": 0, "disk_hits": warm["disk_hits"], "cuda.core": False, "driver": False}
