"""Families on a GPU: every instantiation of the examples (on device arrays), autotuning that
persists, CUB block scans. Families on host arrays are in tests/device/test_family.py."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cuforge as cf
from cuforge import _config
from cuforge.pytest_plugin import gpu_module

from ..unit.test_family_params import CubScan

pytestmark = gpu_module()
EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


def _example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", os.path.join(EXAMPLES, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_reduction_instantiation_matches_numpy():
    _example("reduction").check_all(n=3_000_001)


def test_every_transpose_instantiation_matches_numpy():
    _example("transpose").check_all(rows=333, cols=517)


def test_family_call_infers_the_dtype_on_cupy_arrays():
    cp = pytest.importorskip("cupy")
    Sum = _example("reduction").Sum
    x = cp.arange(1000, dtype=cp.float64)
    out = cp.zeros(1, dtype=cp.float64)
    Sum(x, out, 1000)
    assert float(out[0]) == 999 * 1000 / 2


TUNED = textwrap.dedent(
    """
    import json, numpy as np, cuforge as cf
    from cuforge._kernel import autotune as tuning

    @cf.kernel
    class Scale:
        T = cf.typeparam(cf.float32, cf.float64)
        BLOCK = cf.intparam(256, 64, 128, 512)
        a: T
        x: cf.In[T]
        y: cf.Array[T]
        n: cf.int64
        block = "BLOCK"
        autotune = cf.autotune(BLOCK=[64, 128, 256, 512], key=["n"])
        body = "long long i = blockIdx.x * (long long)BLOCK + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i];"

    n = 3_000_000
    x = cf.to_device(np.ones(n, np.float32))
    y = cf.to_device(np.full(n, 5, np.float32))
    Scale(2.0, x, y, n)
    host = y.to_numpy()
    table = Scale.tuning()
    print(json.dumps({"timing_runs": tuning.timing_runs, "choice": table[0]["choice"], "from": table[0]["from"],
                      "y_ok": bool((host == 7).all()), "times": table[0]["times_ms"]}))
    """
)


def test_autotune_picks_persists_and_a_second_process_reuses_it(tmp_path):
    script = tmp_path / "tuned.py"
    script.write_text(TUNED)
    env = {**os.environ, "CUFORGE_CACHE_DIR": str(tmp_path / "cache")}

    def run():
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, check=True).stdout
        return json.loads(out.strip().splitlines()[-1])

    first = run()
    assert first["from"] == "timed" and first["timing_runs"] == 4
    assert first["y_ok"], "tuning must run on scratch copies: y is updated exactly once"
    fastest = min(first["times"], key=lambda row: row[1])[0]
    assert first["choice"] == fastest
    root = tmp_path / "cache" / _config.SCHEMA
    assert oct(root.stat().st_mode & 0o777) == "0o700" and any((root / "entries").rglob("*"))
    second = run()
    assert second == {**second, "from": "disk", "timing_runs": 0, "choice": first["choice"], "y_ok": True}


def test_autotuning_launches_candidates_with_the_calls_shared_memory():
    """Each candidate uses an extern __shared__ array: tuned without the call's shared_mem, it
    faulted the GPU (and the context was lost)."""

    @cf.kernel
    class BlockSums:
        BLOCK = cf.intparam(128, 256)
        x: cf.In[cf.float32]
        out: cf.Out[cf.float32]
        n: cf.int32
        block = "BLOCK"
        grid = staticmethod(lambda n: ((n + 255) // 256,))
        autotune = cf.autotune(BLOCK=[128, 256], key=["n"])
        body = """
        extern __shared__ float s[];
        int base = blockIdx.x * 256;
        float acc = 0.0f;
        for (int i = threadIdx.x; i < 256; i += BLOCK) acc += base + i < n ? x[base + i] : 0.0f;
        s[threadIdx.x] = acc;
        __syncthreads();
        if (threadIdx.x == 0) {
            float t = 0.0f;
            for (int i = 0; i < BLOCK; ++i) t += s[i];
            out[blockIdx.x] = t;
        }
        """

    n = 256 * 40
    x = np.random.default_rng(3).random(n, dtype=np.float32)
    out = np.zeros(40, np.float32)
    BlockSums(x, out, n, shared_mem=256 * 4)
    np.testing.assert_allclose(out, x.reshape(40, 256).sum(axis=1), rtol=1e-5)
    assert BlockSums.tuning()[0]["from"] == "timed"


@cf.kernel
class RestrictedScale:
    BLOCK = cf.intparam(256, 128, 1024)
    ITEMS = cf.intparam(16, 4)
    x: cf.Array[cf.float32]
    n: cf.int64
    block = "BLOCK"
    grid = lambda n, BLOCK, ITEMS: (n + BLOCK * ITEMS - 1) // (BLOCK * ITEMS)  # noqa: E731
    restrict = lambda BLOCK, ITEMS: BLOCK * ITEMS <= 8192  # noqa: E731
    autotune = cf.autotune(BLOCK=[128, 256, 1024], key=["n"])
    body = """
    __shared__ float tile[BLOCK * ITEMS];
    long long base = blockIdx.x * (long long)(BLOCK * ITEMS);
    for (int k = 0; k < ITEMS; k++) {
        long long i = base + k * BLOCK + threadIdx.x;
        tile[k * BLOCK + threadIdx.x] = i < n ? x[i] : 0.0f;
    }
    __syncthreads();
    for (int k = 0; k < ITEMS; k++) {
        long long i = base + k * BLOCK + threadIdx.x;
        if (i < n) x[i] = 2.0f * tile[k * BLOCK + threadIdx.x];
    }
    """


def test_autotuning_a_restricted_family_times_only_the_combinations_it_keeps():
    n = 100_003
    x = np.arange(n, dtype=np.float32)
    RestrictedScale(x, n)
    np.testing.assert_array_equal(x, 2.0 * np.arange(n, dtype=np.float32))
    (row,) = [r for r in RestrictedScale.tuning() if r["key"] == f"n={1 << (n - 1).bit_length()}"]
    assert [c for c, _ in row["times_ms"]] == [{"BLOCK": 128}, {"BLOCK": 256}, {"BLOCK": 1024}]  # 1024 runs with ITEMS=4
    assert [k.name_expression for k in RestrictedScale.instantiations()] == [
        "RestrictedScale<256, 16>", "RestrictedScale<256, 4>", "RestrictedScale<128, 16>", "RestrictedScale<128, 4>",
        "RestrictedScale<1024, 4>",
    ]  # fmt: skip


@pytest.mark.parametrize("algo", CubScan.template_params[0].values)
def test_each_cub_block_scan_algorithm_matches_numpy(algo):
    n = 256 * 9 + 17
    x = np.random.default_rng(2).integers(-50, 50, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    CubScan[algo](x, out, n)
    pad = np.zeros(-(-n // 256) * 256, np.int32)
    pad[:n] = x
    np.testing.assert_array_equal(out, np.cumsum(pad.reshape(-1, 256), axis=1).ravel()[:n])


@cf.kernel
class TunedShift:
    T = cf.typeparam(cf.float32, cf.float64)
    BLOCK = cf.intparam(128, 256)
    out: cf.Out[T]
    kept: cf.Optional[cf.Out[T]]
    x: cf.In[T]
    bias: cf.Optional[cf.In[T]]
    n: cf.int64
    block = "BLOCK"
    autotune = cf.autotune(BLOCK=[128, 256], key=["n"])
    body = """
    long long i = blockIdx.x * (long long)BLOCK + threadIdx.x;
    if (i >= n) return;
    out[i] = x[i] + (bias ? bias[i] : (T)0);
    if (kept) kept[i] = 2 * x[i];
    """


def test_autotuning_skips_optional_arrays_given_none():
    """Tuning made scratch copies of every written array, and an Optional one given None
    cannot be copied."""
    n = 5000
    x = np.random.default_rng(4).random(n)
    out = np.zeros(n)
    TunedShift(out, None, x, None, n)
    np.testing.assert_array_equal(out, x)
    out = np.zeros(n)
    TunedShift(out=out, x=x, n=n)  # left out: None
    np.testing.assert_array_equal(out, x)
    m = 3 * n  # another key, timed with both arrays given
    x, bias = np.random.default_rng(5).random(m), np.random.default_rng(6).random(m)
    out, kept = np.zeros(m), np.zeros(m)
    TunedShift(out, kept, x, bias, m)
    np.testing.assert_array_equal(out, x + bias)
    np.testing.assert_array_equal(kept, 2 * x)
    assert [row["from"] for row in TunedShift.tuning()] == ["timed", "timed"]
    assert [row["types"] for row in TunedShift.tuning()] == ["float64", "float64"]
