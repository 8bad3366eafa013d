"""The CPU backend (device="cpu") against NumPy and Numba's CUDA simulator, with its targets.

    python benchmarks/cpu_backend.py [--quick] [--numba-python PYTHON] [--json PATH]

On NumPy arrays, on this machine's CPU, in one run:

- saxpy over 2^20 float32 (barrier-free: no fibers), against NumPy's in-place ``y += a * x``;
- a shared-memory tree reduction over 2^22 float32, one element per thread (block 256,
  ``__syncthreads`` in a loop, one partial sum per block), against NumPy's sums of the same
  256-element blocks;
- its grid-stride form (64 blocks of 256, each thread sums a grid-stride loop first), against
  ``x.sum()``;
- an empty launch (empty body, grid 1, block 1), microseconds per call;
- checked launches (``check=True``: out-of-bounds, uninitialised reads, races) against the same
  launches unchecked, as "checked / unchecked" time ratios: saxpy over 2^20 float32, the tree
  reduction over 2^20, and a 256x256 float32 matmul of 16x16 shared-memory tiles;
- a cached launch in a fresh process: ``python -c`` that imports cuforge, declares saxpy and
  launches it once with its shared object already in the disk cache; the whole process timed
  from outside, and inside it the time from before ``import cuforge`` to after the launch
  (NumPy imported and the arrays made before: they are the user's).

Each cuforge result is checked against NumPy before it is timed. In-process figures are the
median of ROUNDS timings of a loop of calls sized to take about 0.2 s, the contenders taking
turns round by round; fresh processes are the median of PROCESSES after one that fills the
caches. Numba's simulator runs the same three kernels written with numba.cuda
(numba_cudasim.py) in a subprocess of ``--numba-python`` (default: the environment variable
CUFORGE_BENCH_NUMBA_PYTHON, else this interpreter) with NUMBA_ENABLE_CUDASIM=1, on the smaller
sizes that script names; its figures are elements per second, the size given with them.
Without numba in that interpreter its rows say so and its targets do not hold.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable

import numpy as np

import cuforge as cf

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import take_turns  # noqa: E402

N_SAXPY, N_REDUCE = 1 << 20, 1 << 22
BLOCK, GRID_STRIDE_BLOCKS = 256, 64
EMPTY_CALLS = 2000
SAXPY_BODY = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i];"
# The block's tree: 256 floats in shared memory halved in place, a barrier after each step.
TREE = """
    __shared__ float s[256];  // one float per thread: block = 256
    s[t] = acc;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) partial[blockIdx.x] = s[0];
"""


@cf.kernel
class Saxpy:
    """y <- a*x + y, one element per thread."""

    a: cf.float32
    x: cf.In[cf.float32]
    y: cf.Array[cf.float32]
    n: cf.int64
    block = BLOCK
    grid = cf.covering("n")
    body = SAXPY_BODY


@cf.kernel
class TreeReduction:
    """partial[b] <- the sum of block b's 256 elements of x, one per thread."""

    x: cf.In[cf.float32]
    partial: cf.Out[cf.float32]
    n: cf.int64
    block = BLOCK
    grid = cf.covering("n")
    body = (
        """
    unsigned t = threadIdx.x;
    long long i = blockIdx.x * (long long)blockDim.x + t;
    float acc = i < n ? x[i] : 0.0f;
    """
        + TREE
    )


@cf.kernel
class GridStrideReduction:
    """partial[b] <- the sum of block b's threads' grid-stride sums over x."""

    x: cf.In[cf.float32]
    partial: cf.Out[cf.float32]
    n: cf.int64
    block = BLOCK
    grid = GRID_STRIDE_BLOCKS
    body = (
        """
    unsigned t = threadIdx.x;
    float acc = 0.0f;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + t; i < n; i += stride) acc += x[i];
    """
        + TREE
    )


@cf.kernel
class TiledMatMul:
    """c <- a @ b for n x n matrices (n a multiple of 16), 16x16 tiles through shared memory."""

    a: cf.In[cf.float32]
    b: cf.In[cf.float32]
    c: cf.Out[cf.float32]
    n: cf.int32
    block = (16, 16)
    body = """
    __shared__ float ta[16][16];
    __shared__ float tb[16][16];
    int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < n; k0 += 16) {
        ta[ty][tx] = a[row * n + k0 + tx];
        tb[ty][tx] = b[(k0 + ty) * n + col];
        __syncthreads();
        for (int k = 0; k < 16; ++k) acc += ta[ty][k] * tb[k][tx];
        __syncthreads();
    }
    c[row * n + col] = acc;
    """


@cf.kernel
class Empty:
    grid = 1
    block = 1
    body = ""


def per_call(fn: Callable[[], object], seconds: float = 0.2) -> Callable[[], float]:
    """A timer of ``fn``: seconds per call over a loop sized, after a warm-up call, to take
    about ``seconds``."""
    t = time.perf_counter()
    fn()
    calls = max(1, int(seconds / max(time.perf_counter() - t, 1e-7)))

    def once() -> float:
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - t) / calls

    return once


def small_integers(rng: np.random.Generator, n: int) -> np.ndarray:
    """float32 values 0..7: every partial sum of 2^22 of them is exact in float32 (below 2^24),
    so a reduction's result is checked exactly, whatever the order of its additions, and one
    element lost or added shows."""
    return rng.integers(0, 8, n).astype(np.float32)


def grid_stride_partials(x: np.ndarray, blocks: int, block: int) -> np.ndarray:
    """What GridStrideReduction writes, in float64: each block's threads' strided sums."""
    threads = blocks * block
    per_thread = np.pad(x.astype(np.float64), (0, -x.size % threads)).reshape(-1, threads).sum(axis=0)
    return per_thread.reshape(blocks, block).sum(axis=1)


def numpy_seconds(rounds: int) -> dict[str, float]:
    """NumPy's seconds per call: the in-place saxpy, the tree's partial sums, the whole sum."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(N_SAXPY, dtype=np.float32), rng.standard_normal(N_SAXPY, dtype=np.float32)
    a = np.float32(2.0)
    xr = small_integers(rng, N_REDUCE)
    partial = np.empty(N_REDUCE // BLOCK, np.float32)

    def saxpy() -> None:
        nonlocal y
        y += a * x

    timers = {
        "saxpy": per_call(saxpy),
        "tree reduction": per_call(lambda: xr.reshape(-1, BLOCK).sum(axis=1, out=partial)),
        "grid-stride reduction": per_call(xr.sum),
    }
    return take_turns(timers, rounds)


def cuforge_seconds(rounds: int) -> dict[str, float]:
    """cuforge's seconds per call on the CPU, each kernel's result checked against NumPy first;
    the empty launch's too."""
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(N_SAXPY, dtype=np.float32), rng.standard_normal(N_SAXPY, dtype=np.float32)
    want = np.float32(2.0) * x + y
    Saxpy(2.0, x, y, N_SAXPY, device="cpu")
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)

    xr = small_integers(rng, N_REDUCE)
    tree = np.zeros(N_REDUCE // BLOCK, np.float32)
    TreeReduction(xr, tree, N_REDUCE, device="cpu")
    np.testing.assert_array_equal(tree, xr.astype(np.float64).reshape(-1, BLOCK).sum(axis=1))
    strided = np.zeros(GRID_STRIDE_BLOCKS, np.float32)
    GridStrideReduction(xr, strided, N_REDUCE, device="cpu")
    np.testing.assert_array_equal(strided, grid_stride_partials(xr, GRID_STRIDE_BLOCKS, BLOCK))

    def empty_loop() -> float:
        t = time.perf_counter()
        for _ in range(EMPTY_CALLS):
            Empty(device="cpu")
        return (time.perf_counter() - t) / EMPTY_CALLS

    Empty(device="cpu")
    timers = {
        "saxpy": per_call(lambda: Saxpy(2.0, x, y, N_SAXPY, device="cpu")),
        "tree reduction": per_call(lambda: TreeReduction(xr, tree, N_REDUCE, device="cpu")),
        "grid-stride reduction": per_call(lambda: GridStrideReduction(xr, strided, N_REDUCE, device="cpu")),
        "empty launch": empty_loop,
    }
    return take_turns(timers, rounds)


N_CHECKED, N_MATMUL = 1 << 20, 256
CHECKED = ("saxpy", "tree reduction", "tiled matmul")


def checked_seconds(rounds: int) -> dict[str, float]:
    """Seconds per call of each kernel of CHECKED unchecked and checked ('saxpy checked', ...),
    both results checked against NumPy first."""
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal(N_CHECKED, dtype=np.float32), rng.standard_normal(N_CHECKED, dtype=np.float32)
    xr, tree = small_integers(rng, N_CHECKED), np.zeros(N_CHECKED // BLOCK, np.float32)
    a, b = (rng.standard_normal((N_MATMUL, N_MATMUL), dtype=np.float32) for _ in range(2))
    c = np.zeros((N_MATMUL, N_MATMUL), np.float32)
    calls = {
        "saxpy": lambda check: Saxpy(2.0, x, y, N_CHECKED, device="cpu", check=check),
        "tree reduction": lambda check: TreeReduction(xr, tree, N_CHECKED, device="cpu", check=check),
        "tiled matmul": lambda check: TiledMatMul(a, b, c, N_MATMUL, grid=(N_MATMUL // 16, N_MATMUL // 16),
                                                  device="cpu", check=check),
    }  # fmt: skip
    for check in (False, True):
        y0 = y.copy()
        calls["saxpy"](check)
        np.testing.assert_allclose(y, np.float32(2.0) * x + y0, rtol=1e-6, atol=1e-6)
        tree[:] = -1
        calls["tree reduction"](check)
        np.testing.assert_array_equal(tree, xr.astype(np.float64).reshape(-1, BLOCK).sum(axis=1))
        c[:] = np.nan
        calls["tiled matmul"](check)
        np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
    timers = {f"{name} {kind}": per_call(lambda f=calls[name], k=kind == "checked": f(k))
              for name in CHECKED for kind in ("unchecked", "checked")}  # fmt: skip
    return take_turns(timers, rounds)


FRESH = textwrap.dedent(
    f"""
    import time, numpy as np
    x = np.ones({N_SAXPY}, np.float32); y = np.ones({N_SAXPY}, np.float32)
    t = time.perf_counter()
    import cuforge as cf

    @cf.kernel
    class Saxpy:
        a: cf.float32
        x: cf.In[cf.float32]
        y: cf.Array[cf.float32]
        n: cf.int64
        body = {SAXPY_BODY!r}

    Saxpy(2.0, x, y, {N_SAXPY}, device="cpu")
    ms = (time.perf_counter() - t) * 1e3
    assert (y == 3.0).all()
    print(ms)
    """
)
BASELINE = f"import numpy as np\nx = np.ones({N_SAXPY}, np.float32); y = np.ones({N_SAXPY}, np.float32)\nprint(0.0)\n"


def fresh_processes(processes: int) -> dict[str, float]:
    """Milliseconds of a cached CPU launch in a fresh process (whole, and from the import on),
    and of the same process without cuforge; medians over ``processes`` after a filling one."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "CUFORGE_CACHE_DIR": os.path.join(tmp, "cuforge")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: the filling process writes the bytecode
        for code in (FRESH, BASELINE):
            subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
        whole, inside, base = [], [], []
        for _ in range(processes):  # the two take turns
            for code, times in ((FRESH, whole), (BASELINE, base)):
                t = time.perf_counter()
                out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
                times.append((time.perf_counter() - t) * 1e3)
                if code is FRESH:
                    inside.append(float(out.stdout.split()[-1]))
    return {
        "whole process": statistics.median(whole),
        "import to launched": statistics.median(inside),
        "numpy alone": statistics.median(base),
    }


def numba_sim(python: str) -> dict | str:
    """Numba's CUDA simulator on numba_cudasim.py's kernels and sizes: per kernel, its size and
    seconds per launch; or why it could not run."""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    probe = subprocess.run([python, "-c", "import numba.cuda"], env=env, capture_output=True, text=True)
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        return f"missing: numba.cuda not importable by {python} ({last[:100]}); pass --numba-python"
    out = subprocess.run([python, os.path.join(HERE, "numba_cudasim.py")], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        return f"failed: {out.stderr.strip()[-300:]}"
    return json.loads(out.stdout.strip().splitlines()[-1])


SIZES = {"saxpy": N_SAXPY, "tree reduction": N_REDUCE, "grid-stride reduction": N_REDUCE}


def main(quick: bool = False, numba_python: str | None = None) -> dict:
    """Every figure of one run: {'figures': name -> value or why missing, 'numba sizes': ...}."""
    rounds, processes = (3, 3) if quick else (9, 7)
    numba_python = numba_python or os.environ.get("CUFORGE_BENCH_NUMBA_PYTHON", sys.executable)
    fig: dict[str, object] = {}
    ref = numpy_seconds(rounds)
    for name, s in ref.items():
        fig[f"numpy {name} (ms)"] = s * 1e3
        fig[f"numpy {name} (M elements/s)"] = SIZES[name] / s / 1e6
    # The CPU backend missing or failing: its rows say why, and its targets fail.
    try:
        ours = cuforge_seconds(rounds)
        for name, s in ours.items():
            if name == "empty launch":
                fig["cuforge empty launch (us)"] = s * 1e6
            else:
                fig[f"cuforge {name} (ms)"] = s * 1e3
                fig[f"cuforge {name} (M elements/s)"] = SIZES[name] / s / 1e6
    except Exception as exc:
        fig["cuforge kernels (CPU backend)"] = f"failed: {type(exc).__name__}: {exc}"[:300]
    try:
        checked = checked_seconds(rounds)
        for name in CHECKED:
            plain, slow = checked[f"{name} unchecked"], checked[f"{name} checked"]
            fig[f"cuforge {name}, unchecked (ms)"], fig[f"cuforge {name}, checked (ms)"] = plain * 1e3, slow * 1e3
            fig[f"cuforge {name}, checked / unchecked"] = slow / plain
    except Exception as exc:
        fig["cuforge checked launches (CPU backend)"] = f"failed: {type(exc).__name__}: {exc}"[:300]
    try:
        fresh = fresh_processes(processes)
        fig["cuforge cached launch, fresh process (ms, whole process)"] = fresh["whole process"]
        fig["cuforge cached launch, fresh process (ms, import cuforge to launched)"] = fresh["import to launched"]
        fig["numpy alone, fresh process (ms, whole process)"] = fresh["numpy alone"]
    except subprocess.CalledProcessError as exc:
        last = (exc.stderr.strip().splitlines() or ["?"])[-1]
        fig["cuforge cached launch, fresh process"] = f"failed: {last[:300]}"
    sim = numba_sim(numba_python)
    for name in SIZES:
        if isinstance(sim, str):
            fig[f"numba cudasim {name} (M elements/s)"] = sim
        else:
            fig[f"numba cudasim {name} (M elements/s)"] = sim[name]["n"] / sim[name]["seconds"] / 1e6
            fig[f"numba cudasim {name} (elements)"] = sim[name]["n"]
    return {"figures": fig, "targets": targets(fig)}


def _ratio(a: object, b: object) -> float | None:
    return a / b if isinstance(a, float) and isinstance(b, float) and b else None


def targets(fig: dict) -> dict[str, dict]:
    """Issue #28's targets: each one's value, its limit and whether it holds."""
    out: dict[str, dict] = {}

    def check(name: str, value: object, limit: float, at_least: bool) -> None:
        ok = isinstance(value, float) and (value >= limit if at_least else value <= limit)
        out[name] = {"ratio": value, "limit": limit, "holds": ok}

    rate = "cuforge {} (M elements/s)".format
    check("cpu saxpy no slower than numpy y += a*x (speed ratio >= 1)",
          _ratio(fig.get(rate("saxpy")), fig.get("numpy saxpy (M elements/s)")), 1.0, True)  # fmt: skip
    check("cpu tree reduction >= 10 M elements/s", fig.get(rate("tree reduction")), 10.0, True)
    check("cpu grid-stride reduction >= 500 M elements/s", fig.get(rate("grid-stride reduction")), 500.0, True)
    for name in ("tree reduction", "grid-stride reduction"):
        check(f"cpu {name} >= 1000x numba cudasim (elements/s)",
              _ratio(fig.get(rate(name)), fig.get(f"numba cudasim {name} (M elements/s)")), 1000.0, True)  # fmt: skip
    check("cpu empty launch <= 10 us", fig.get("cuforge empty launch (us)"), 10.0, False)
    for name in CHECKED:
        check(f"cpu checked {name} <= 20x unchecked (time ratio)", fig.get(f"cuforge {name}, checked / unchecked"), 20.0, False)
    for kind in ("whole process", "import cuforge to launched"):
        check(f"cpu cached launch, fresh process <= 20 ms ({kind})",
              fig.get(f"cuforge cached launch, fresh process (ms, {kind})"), 20.0, False)  # fmt: skip
    return out


def table(result: dict) -> str:
    """Every figure, then every target with its verdict, and cuforge's ratios to its peers."""
    fig, lines = result["figures"], []
    for name, value in fig.items():
        lines.append(f"{name:72s} {value:12.4g}" if isinstance(value, float) else f"{name:72s} {value}")
    lines.append("")
    for name, t in result["targets"].items():
        value = f"{t['ratio']:12.4g}" if isinstance(t["ratio"], float) else f"{'n/a':>12s}"
        lines.append(f"{name:72s} {value}  limit {t['limit']:<6g} {'PASS' if t['holds'] else 'FAIL'}")
    lines.append("")
    for name in SIZES:
        ours = fig.get(f"cuforge {name} (M elements/s)")
        vs_np = _ratio(ours, fig.get(f"numpy {name} (M elements/s)"))
        vs_nb = _ratio(ours, fig.get(f"numba cudasim {name} (M elements/s)"))
        size = fig.get(f"numba cudasim {name} (elements)")
        lines.append(
            f"cuforge {name}: {'n/a' if vs_np is None else f'{vs_np:.3g}x'} numpy (same size), "
            f"{'n/a' if vs_nb is None else f'{vs_nb:.3g}x'} numba cudasim" + (f" (numba at {size} elements)" if size else "")
        )
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds and 3 fresh processes instead of 9 and 7")
    parser.add_argument("--numba-python", help="an interpreter with numba (and numba-cuda) for the simulator's rows")
    parser.add_argument("--json", help="also save the result here")
    args = parser.parse_args()
    result = main(args.quick, args.numba_python)
    print(table(result))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1)
