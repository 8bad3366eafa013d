"""Every benchmark in one run, on the GPU machine: JSON, plots and the targets' verdicts.

    python benchmarks/run_all.py [OUTPUT_DIR]       (default: docs/benchmarks, where the docs show them)

Writes results.json (launch kinds, a build's start-up, PyTorch's and JAX's ops and the CPU backend included) and
launch_overhead.png, graphs.png, bandwidth.png, startup.png. Each figure is compared with the peers measured in the same run;
a peer that is not installed is reported as missing, never skipped silently.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bandwidth  # noqa: E402
import compile_speed  # noqa: E402
import cpu_backend  # noqa: E402
import family_compile  # noqa: E402
import graphs  # noqa: E402
import import_time  # noqa: E402
import jax_ops  # noqa: E402
import launch_kinds  # noqa: E402
import launch_overhead  # noqa: E402
import startup  # noqa: E402
import threads  # noqa: E402
import torch_ops  # noqa: E402
import warm_start  # noqa: E402


def _machine() -> dict:
    try:
        gpu = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        gpu = "unknown"
    return {"gpu, driver": gpu, "python": sys.version.split()[0], "date": datetime.date.today().isoformat()}


def _ratio(a: object, b: object) -> float | None:
    return a / b if isinstance(a, float) and isinstance(b, float) and b else None


def targets(r: dict) -> dict:
    """Each target's value (a ratio, or a figure where the target is one), its limit and
    whether it holds, in the order docs/benchmarks.md lists them."""
    launch, bw, start = r["launch_us"], r["bandwidth"]["GB/s"], r["startup"]
    checked, core = launch["cuforge checked (cupy arrays)"], launch["cuda.core launch"]
    out: dict[str, dict] = {}

    def at_most(name: str, value: object, limit: float) -> None:
        out[name] = {"ratio": value, "limit": limit, "holds": isinstance(value, float) and value <= limit}

    def at_least(name: str, value: object, limit: float) -> None:
        out[name] = {"ratio": value, "limit": limit, "holds": isinstance(value, float) and value >= limit}

    at_most("checked launch <= 1.1x cuda.core launch", _ratio(checked, core), 1.1)
    at_most("checked launch <= CuPy RawKernel (ratio <= 1)", _ratio(checked, launch["cupy RawKernel"]), 1.0)
    at_most("prepared launch <= raw cuLaunchKernel (ratio <= 1)",
            _ratio(launch["cuforge prepared launch"], launch["raw cuLaunchKernel (packed)"]), 1.0)  # fmt: skip
    at_most("warm start <= 0.2x CuPy's disk hit", start["warm start"].get("ratio cuforge / cupy"), 0.2)
    at_least("batched family compile >= 5x one at a time", r["family_compile"]["speed-up batched vs one at a time"], 5.0)
    at_least("saxpy (float4) >= 95% of copy bandwidth",
             _ratio(bw["cuforge saxpy, float4"], bw["device-to-device copy (same bytes as saxpy)"]), 0.95)  # fmt: skip
    tuned = bw["cuforge Sum, autotuned (examples/reduction.py)"]
    at_least("reduction >= 90% of copy bandwidth", _ratio(tuned, bw["device-to-device copy (same bytes as the sum)"]), 0.90)
    at_least("reduction not slower than cupy.sum (ratio >= 1)", _ratio(tuned, bw["cupy.sum"]), 1.0)
    at_most("import cuforge <= 0.5x import cupy",
            _ratio(start["import"]["import cuforge (ms)"], start["import"]["import cupy (ms)"]), 0.5)  # fmt: skip
    at_most("no-extension launch <= 2.5x cuda.core (same process)",
            _ratio(launch.get("cuforge checked, no C extension (cupy arrays)"), launch.get("cuda.core launch (same process)")),
            2.5)  # fmt: skip
    gr = r["graphs"]
    replay = gr["cuforge cf.graph() replay (us per kernel)"]
    at_most("cuforge graph replay <= 0.6 us per kernel (H200)", replay if isinstance(replay, float) else None, 0.6)
    at_most("cuforge graph replay <= 0.15x checked launch",
            _ratio(replay, gr["cuforge checked launches, one by one (us per kernel)"]), 0.15)  # fmt: skip
    cs = r["compile_speed"]
    at_least("second CUB kernel with PCH >= 3x faster than without", cs["PCH speed-up on the second kernel"], 3.0)
    at_least("the same, kernels declared with a preamble", cs["PCH speed-up, kernels declared with a preamble"], 3.0)
    at_least("tiled 16-instantiation family: split >= 3x one batched program",
             cs["16-instantiation tiled convolution: speed-up"], 3.0)  # fmt: skip
    at_least("12-instantiation axpy: split no slower than batched (>= 0.95)", cs["12-instantiation axpy: speed-up"], 0.95)
    at_most("%%cuda cell of 5 kernels: 1 NVRTC program", cs["%%cuda cell of 5 kernels: NVRTC programs"], 1.0)
    proc = r["startup"]["processes"]
    # A difference, not a ratio: RawModule's own cost is within the noise of 0 (whole processes
    # vary by tens of ms), so a ratio would divide by noise.
    own, rawmodule = proc.get("cuforge's own cost over cupy (ms)"), proc.get("RawModule's own cost over cupy (ms)")
    both = own is not None and rawmodule is not None
    at_most("start-up: cuforge's own cost - RawModule's <= 0 ms", own - rawmodule if both else None, 0.0)
    # Issue #39: process CPU time after NumPy's import, against a whole `python -c pass`
    ct = start.get("cpu time", {})
    at_most("start-up: import cuforge <= 1.5x python -c pass", ct.get("import cuforge / python -c pass"), 1.5)
    for case in ("cpu launch, plain body", "cpu launch, {{ }} family", "cpu launch, default cache location"):
        at_most(f"start-up: {case} <= 1.7x python -c pass", ct.get(f"{case} / python -c pass"), 1.7)
    th = r["threads"]
    for n in (1, 4, 32):
        best = min(th[f"{n} threads: {peer} (us per launch)"] for peer in ("cupy RawKernel", "cuda.core launch"))
        at_most(f"{n} threads: cuforge <= best peer (first launches included)",
                _ratio(th[f"{n} threads: cuforge (us per launch)"], best), 1.0)  # fmt: skip
    tr = r["torch"]
    at_most("torch tensors: cuforge call <= 1.1x the same call on CuPy arrays",
            _ratio(tr.get("cuforge call (torch tensors)"), tr.get("cuforge call (cupy arrays)")), 1.1)  # fmt: skip
    at_most("cuforge op <= 1.5x torch.mul", _ratio(tr.get("cuforge op"), tr.get("torch.mul(x, 2.0)")), 1.5)
    at_most("cuforge op < Triton @jit launch (ratio < 1)",
            _ratio(tr.get("cuforge op"), tr.get("triton @jit launch (torch tensors)")), 0.999)  # fmt: skip
    recorded = tr.get("cuforge op, x requires grad")
    at_most("cuforge op, x requires grad <= 2x torch.mul", _ratio(recorded, tr.get("torch.mul(x, 2.0)")), 2.0)
    at_most("the same, against torch.mul with x requiring grad too",
            _ratio(recorded, tr.get("torch.mul(x, 2.0), x requires grad")), 2.0)  # fmt: skip
    breaks = tr.get("torch.compile, cuforge op: graph breaks")
    at_most("torch.compile: graph breaks around the cuforge op", float(breaks) if isinstance(breaks, int) else None, 0.0)
    replayed = tr.get("reduce-overhead: cuforge launches in a replay")
    at_most("reduce-overhead: cuforge launches in a CUDA graph replay",
            float(replayed) if isinstance(replayed, int) else None, 0.0)  # fmt: skip
    jx = r["jax"]
    at_most("jax: a jitted function calling the cuforge op <= 1.3x the same with jnp in its place",
            _ratio(jx.get("jit: cuforge op"), jx.get("jit: x * 2.0 (jnp)")), 1.3)  # fmt: skip
    replays = jx.get("command buffers: handler calls per 1000 calls")
    at_most("jax: handler calls per 1000 calls under XLA's command buffers (replayed, no host work)",
            float(replays) if isinstance(replays, int) else None, 0.0)  # fmt: skip
    out.update(r["cpu_backend"]["targets"])  # the CPU backend's, on this machine's CPU
    return out


def plots(r: dict, outdir: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def bars(data: dict, title: str, unit: str, path: str) -> None:
        items = [(k, v) for k, v in data.items() if isinstance(v, float)]
        fig, ax = plt.subplots(figsize=(9, 0.45 * len(items) + 1.2))
        colors = ["#2a7ab9" if k.startswith("cuforge") else "#999999" for k, _ in items]
        ax.barh([k for k, _ in items], [v for _, v in items], color=colors)
        for i, (_, v) in enumerate(items):
            ax.text(v, i, f" {v:.3g}", va="center", fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(unit)
        ax.set_title(f"{title}\n{r['machine']['gpu, driver']}, {r['machine']['date']}", fontsize=10)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)

    bars(r["launch_us"], "Host launch overhead, empty 4-parameter kernel (lower is better)", "microseconds per launch",
         os.path.join(outdir, "launch_overhead.png"))  # fmt: skip
    bars({k: v for k, v in r["graphs"].items() if "(us per kernel)" in k},
         "CUDA graph replay, 100 empty kernels per graph (lower is better)", "microseconds per kernel",
         os.path.join(outdir, "graphs.png"))  # fmt: skip
    bars(r["bandwidth"]["GB/s"], "Memory bandwidth (higher is better)", "GB/s", os.path.join(outdir, "bandwidth.png"))
    startup = {
        "cuforge warm start (ms)": r["startup"]["warm start"]["cuforge warm start (ms)"],
        "cupy RawModule warm start (ms)": r["startup"]["warm start"]["cupy RawModule warm start (ms)"],
        **{k: v for k, v in r["family_compile"].items() if "speed-up" not in k},
        **r["startup"]["import"],
    }
    bars(startup, "Start-up: warm start, 12-kernel family compile, import (lower is better)", "milliseconds",
         os.path.join(outdir, "startup.png"))  # fmt: skip


def main(outdir: str) -> dict:
    os.makedirs(outdir, exist_ok=True)
    r = {"machine": _machine()}
    r["launch_us"] = launch_overhead.main()
    if r["launch_us"].get("cuforge launcher") != "c":  # every cuforge row would be the general path's
        raise SystemExit(f"run_all.py: cuforge's C launcher is not in use ({r['launch_us'].get('cuforge launcher')!r}); "
                         f"build it first: python setup.py build_ext --inplace")  # fmt: skip
    # Before the threads: once 32 threads have each made a stream, graph replay on this GPU
    # takes 0.69 us per kernel instead of 0.51, for every contender alike.
    r["graphs"] = graphs.main()
    r["threads"] = threads.main()
    r["bandwidth"] = bandwidth.main()
    r["family_compile"] = family_compile.main()
    r["compile_speed"] = compile_speed.main()
    r["startup"] = {"warm start": warm_start.main(), "import": import_time.main(), "processes": startup.main(),
                    "cpu time": startup.cpu_time()}  # fmt: skip
    r["launch_kinds"] = launch_kinds.main()  # reported, not a target: cooperative cost, build vs cache start-up
    r["torch"] = torch_ops.main()  # after the graphs and threads: torch.compile's CUDA graphs stay alive
    r["jax"] = jax_ops.main()  # (JAX takes most of the GPU's memory: after the others)
    # The GPU machine's CPU; Numba's simulator rows need CUFORGE_BENCH_NUMBA_PYTHON (or numba here).
    r["cpu_backend"] = cpu_backend.main()
    r["targets"] = targets(r)
    with open(os.path.join(outdir, "results.json"), "w") as fh:
        json.dump(r, fh, indent=1)
    plots(r, outdir)
    return r


if __name__ == "__main__":
    result = main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, os.pardir, "docs", "benchmarks"))
    print(json.dumps(result, indent=1))
