"""Start-up as a user sees it: whole fresh processes with warm caches, timed from outside.

    python benchmarks/startup.py

Each contender is a complete `python -c` process: import, make arrays, launch one axpy from
a warm disk cache, wait for it. The array library alone is the baseline; each kernel
library's own cost is its process's time minus the baseline's in the same round, the median
of those paired differences (a slow spell of the machine then falls on both terms; the
difference of the two medians moved by 50-100 ms between runs). The contenders take turns,
process by process, 15 rounds after one that fills the caches (each library its own cache
directory, and Python's bytecode written, as pip writes it at install: the GPU image sets
PYTHONDONTWRITEBYTECODE, which would charge every process for compiling the pure-Python
packages' sources); medians, in milliseconds:

- CuPy alone; CuPy + ``RawModule`` (CuPy's disk cache); CuPy + cuforge;
- PyTorch alone; PyTorch + cuforge (tensors), where PyTorch is installed.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import AXPY_CUDA, AXPY_FAMILY, report

N = 1 << 20
SRC = AXPY_CUDA
CUPY_ARRAYS = f"import cupy as cp\nx = cp.ones({N}, dtype=cp.float32); y = cp.ones({N}, dtype=cp.float32)\n"
TORCH_ARRAYS = f"import torch\nx = torch.ones({N}, device='cuda'); y = torch.ones({N}, device='cuda')\n"
CUFORGE = AXPY_FAMILY + f"""
Axpy(2.0, x, y, {N})
assert cf.cache_stats().compiles == 0 or not WARM
"""
CONTENDERS = {
    "cupy alone": CUPY_ARRAYS + "cp.cuda.runtime.deviceSynchronize()\n",
    "cupy + RawModule": CUPY_ARRAYS
    + f"import numpy as np\nmod = cp.RawModule(code={SRC!r}, options=('-std=c++17',), name_expressions=['axpy<float>'])\n"
    + f"mod.get_function('axpy<float>')(({N} // 256,), (256,), (np.float32(2.0), x, y, np.int64({N})))\n"
    + "cp.cuda.runtime.deviceSynchronize()\n",
    "cupy + cuforge": CUPY_ARRAYS + CUFORGE + "cp.cuda.runtime.deviceSynchronize()\n",
    "torch alone": TORCH_ARRAYS + "torch.cuda.synchronize()\n",
    "torch + cuforge": TORCH_ARRAYS + CUFORGE + "torch.cuda.synchronize()\n",
}


def main(rounds: int = 15) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "CUFORGE_CACHE_DIR": os.path.join(tmp, "cuforge"), "CUPY_CACHE_DIR": os.path.join(tmp, "cupy")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its bytecode: let the fill round write it
        present = {}
        for name, code in CONTENDERS.items():  # fill the caches; leave out what cannot run here
            out = subprocess.run([sys.executable, "-c", "WARM = False\n" + code], env=env, capture_output=True, text=True)
            present[name] = out.returncode == 0 or f"missing: {out.stderr.strip().splitlines()[-1][:120]}"
        runs: dict[str, list[float]] = {name: [] for name, ok in present.items() if ok is True}
        for _ in range(rounds):
            for name in runs:
                t = time.perf_counter()
                code = "WARM = True\n" + CONTENDERS[name]
                subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
                runs[name].append((time.perf_counter() - t) * 1e3)
    result: dict[str, float | str] = {f"{name} (ms, whole process)": statistics.median(v) for name, v in runs.items()}
    result.update({f"{name} (ms, whole process)": ok for name, ok in present.items() if ok is not True})

    def own(name: str, base: str) -> float | None:
        if name not in runs or base not in runs:
            return None
        return statistics.median(t - b for t, b in zip(runs[name], runs[base], strict=True))

    for name, base in (("cupy + RawModule", "cupy alone"), ("cupy + cuforge", "cupy alone"), ("torch + cuforge", "torch alone")):
        value = own(name, base)
        if value is not None:
            result[f"{name.split(' + ')[1]}'s own cost over {base.split()[0]} (ms)"] = value
    return result


if __name__ == "__main__":
    report(main(), 52)
