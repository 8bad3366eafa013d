"""The persistent cache on a GPU: a fresh process launches a cached templated kernel without
NVRTC, and without importing cuda.core (some 100 ms of a warm start)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.gpu

PROGRAM = textwrap.dedent(
    """
    import json, sys, numpy as np, cuforge as cf

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

    x = np.arange(1000, dtype=np.float64)
    y = np.ones(1000, dtype=np.float64)
    Axpy(2.0, x, y, 1000)
    s = cf.cache_stats()
    print(json.dumps({"ok": bool((y == 2 * x + 1).all()), "compiles": s.compiles, "disk_hits": s.disk_hits,
                      "cuda.core": "cuda.core" in sys.modules}))
    """
)


def test_fresh_process_launches_a_cached_templated_kernel_without_nvrtc(tmp_path):
    env = {**os.environ, "CUFORGE_CACHE_DIR": str(tmp_path)}

    def run():
        out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, env=env, check=True).stdout
        return json.loads(out.strip().splitlines()[-1])

    cold, warm = run(), run()
    assert cold["ok"] and cold["compiles"] == 1 and not cold["cuda.core"]
    assert warm == {"ok": True, "compiles": 0, "disk_hits": warm["disk_hits"], "cuda.core": False} and warm["disk_hits"] >= 1
