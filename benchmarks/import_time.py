"""``import cuforge`` against ``import cupy``, each in 7 fresh processes (median, milliseconds).

Python writes bytecode as it would for an installed package, in an untimed first process:
the GPU image sets PYTHONDONTWRITEBYTECODE, which would charge every process for compiling
cuforge's sources (pip compiles them at install).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import report


def import_ms(module: str, runs: int = 7) -> float | str:
    code = f"import time; t = time.perf_counter(); import {module}; print((time.perf_counter() - t) * 1e3)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    times = []
    for i in range(runs + 1):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        if out.returncode != 0:
            return f"missing: {out.stderr.strip().splitlines()[-1] if out.stderr else module}"
        if i:  # the first writes the bytecode
            times.append(float(out.stdout))
    return statistics.median(times)


def main() -> dict:
    return {"import cuforge (ms)": import_ms("cuforge"), "import cupy (ms)": import_ms("cupy")}


if __name__ == "__main__":
    report(main(), 24, " ms")
