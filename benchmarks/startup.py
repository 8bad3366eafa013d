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

`cpu_time` measures what issue #39's targets name, by process CPU time rather than wall
time: each case in fresh processes (21 by default), taking turns, with the bytecode written
and the disk cache filled first. A case's figure is the CPU time its process spends after
NumPy's import (``time.process_time``, every thread of the process): ``import cuforge``,
then the declaration and first launch of a cached axpy, on the CPU (a plain body, a
``{{ BLOCK }}`` family as the README's, the default cache location under a private HOME) and,
where there is a GPU and CuPy, on it (CuPy's arrays, after ``import cupy``; PyTorch's tensors,
after ``import torch``, where PyTorch is installed). The scale
is a whole ``python -c pass`` process's CPU time, measured in the same turns; each ratio is
against it. OpenBLAS runs one thread: its threads start with NumPy's import and spin on
the process's CPU time meanwhile, which is NumPy's cost, not the case's.

    python benchmarks/startup.py --cpu-time [ROUNDS] [JSON_PATH]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import AXPY_CUDA, AXPY_FAMILY, axpy_class, report

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


PLAIN = axpy_class("Saxpy", "cf.float32")
FAMILY = axpy_class("Axpy", "T", "    T = cf.typeparam(cf.float16, cf.float32, cf.float64)\n"
                    "    BLOCK = cf.intparam(256, 128, 512)\n    block = 'BLOCK'\n", "{{ BLOCK }}")  # (the README's Axpy)
HOST = "x = np.ones(4096, np.float32); y = np.ones(4096, np.float32)\n"
CPU_CASES = {  # name: (untimed prelude, timed code, whether the cache is the default location)
    "import cuforge": ("", "import cuforge\n", False),
    "cpu launch, plain body": (HOST, PLAIN + "Saxpy(np.float32(2.0), x, y, 4096, grid=16, block=256, device='cpu')\n", False),
    "cpu launch, {{ }} family": (HOST, FAMILY + "Axpy(np.float32(2.0), x, y, 4096, device='cpu')\n", False),
    "cpu launch, default cache location": (
        HOST, PLAIN + "Saxpy(np.float32(2.0), x, y, 4096, grid=16, block=256, device='cpu')\n", True),
}  # fmt: skip
GPU_ARRAYS = "import cupy as cp\nx = cp.ones(4096, dtype=cp.float32); y = cp.ones(4096, dtype=cp.float32)\n"
GPU_CASES = {
    "gpu launch, plain body (cupy arrays)": (GPU_ARRAYS, PLAIN + "Saxpy(np.float32(2.0), x, y, 4096, grid=16, block=256)\n"
                                             "cp.cuda.runtime.deviceSynchronize()\n", False),
    "gpu launch, after import torch": ("import torch\nx = torch.ones(4096, device='cuda'); y = torch.ones(4096, device='cuda')\n",
                                       PLAIN + "Saxpy(np.float32(2.0), x, y, 4096, grid=16, block=256)\n"
                                       "torch.cuda.synchronize()\n", False),
}  # fmt: skip


def cpu_time(rounds: int = 21) -> dict:
    """Each case's median process CPU time (ms) after NumPy's import, `python -c pass`'s whole
    process CPU time, and each case's ratio to it (see the module's docstring)."""
    import resource

    def timed(prelude: str, code: str) -> str:
        return ("import numpy as np\n" + prelude + "import time\n_t = time.process_time()\n" + code
                + "print((time.process_time() - _t) * 1e3)\n")  # fmt: skip

    cases = dict(CPU_CASES)
    gpu = subprocess.run([sys.executable, "-c", "import cupy; cupy.cuda.runtime.getDeviceCount()"], capture_output=True)
    if gpu.returncode == 0:
        cases.update(GPU_CASES)
    with tempfile.TemporaryDirectory() as tmp:
        base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "CUFORGE_CACHE_DIR")}
        base |= {"OPENBLAS_NUM_THREADS": "1", "HOME": os.path.join(tmp, "home"), "XDG_CACHE_HOME": ""}
        envs = {name: base if default else {**base, "CUFORGE_CACHE_DIR": os.path.join(tmp, "cache")}
                for name, (_, _, default) in cases.items()}  # fmt: skip
        present: dict[str, object] = {}
        for name, (prelude, code, _) in cases.items():  # fill the caches and write the bytecode
            out = subprocess.run([sys.executable, "-c", timed(prelude, code)], env=envs[name], capture_output=True, text=True)
            present[name] = out.returncode == 0 or f"missing: {out.stderr.strip().splitlines()[-1][:120]}"
        runs: dict[str, list[float]] = {"python -c pass": []} | {n: [] for n, ok in present.items() if ok is True}
        for _ in range(rounds):
            for name in runs:
                if name == "python -c pass":
                    before = resource.getrusage(resource.RUSAGE_CHILDREN)
                    subprocess.run([sys.executable, "-c", "pass"], env=base, check=True)
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    ms = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1e3
                else:
                    prelude, code, _ = cases[name]
                    ms = float(subprocess.run([sys.executable, "-c", timed(prelude, code)], env=envs[name], check=True,
                                              capture_output=True, text=True).stdout.split()[-1])  # fmt: skip
                runs[name].append(ms)
    scale = statistics.median(runs["python -c pass"])
    result: dict[str, object] = {"rounds": rounds}
    for name, times in runs.items():
        result[f"{name} (ms)"] = statistics.median(times)
        if name != "python -c pass":
            result[f"{name} / python -c pass"] = statistics.median(times) / scale
    result.update({f"{name} (ms)": ok for name, ok in present.items() if ok is not True})
    return result


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--cpu-time":
        del sys.argv[1]
        rounds = int(sys.argv.pop(1)) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 21
        report(cpu_time(rounds), 52)  # (a further argument: where report saves the JSON)
    else:
        report(main(), 52)
