"""Which bugs of cuforge's corpora (tests/cpu/check_corpus.py, tests/cpu/check_corpus_more.py,
tests/cpu/check_probe_buggy.py with check_probe_correct.py, tests/cpu/check_probe4_buggy.py with
check_probe4_correct.py) each tool finds: cuforge's checked CPU launch, and NVIDIA's
compute-sanitizer (memcheck, racecheck, initcheck, synccheck) on the GPU.

    python benchmarks/bug_finders.py [OUT.json [CORPUS ...]]   (on the GPU machine, compute-sanitizer
                                                                on PATH or in /usr/local/cuda/bin;
                                                                CORPUS: check_corpus, check_corpus_more,
                                                                check_probe, check_probe4; all by default)

Each buggy kernel runs with the arguments that show its bug, and each correct kernel with its
own: checked on the CPU (the error it raises, if any), then on the GPU under each tool in a
process of its own (the launch's arrays made device arrays: CuPy, ``cupy.empty`` for an
``Out[...]`` argument, whose contents are undefined by contract), the tool's error count read
from its summary. A table is printed, and the figures written as JSON.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
# each corpus: the modules under tests/cpu and the dictionaries of its buggy and its correct cases
CORPORA = {
    "check_corpus": (("check_corpus", "BUGGY"), ("check_corpus", "CORRECT")),
    "check_corpus_more": (("check_corpus_more", "BUGGY_MORE"), ("check_corpus_more", "CORRECT_MORE")),
    "check_probe": (("check_probe_buggy", "BUGGY"), ("check_probe_correct", "CORRECT")),
    "check_probe4": (("check_probe4_buggy", "BUGGY"), ("check_probe4_correct", "CORRECT")),
}

CHILD = """
import sys
sys.path.insert(0, {root!r})
import cupy as cp, numpy as np
from tests.cpu.{buggy_module} import {buggy} as BUGGY
from tests.cpu.{correct_module} import {correct} as CORRECT
case = {{**BUGGY, **CORRECT}}[{name!r}]
args, kwargs = case.args()
kwargs = {{k: v for k, v in kwargs.items() if k not in ("device", "check")}}
specs = case.kernel._plan.specs
moved = []
for spec, a in zip(specs, args):
    if isinstance(a, np.ndarray):
        a = cp.empty(a.shape, a.dtype) if getattr(spec.type, "intent", "") == "out" else cp.asarray(a)
    moved.append(a)
try:
    case.kernel(*moved, **kwargs)
    cp.cuda.runtime.deviceSynchronize()
except Exception as exc:  # (a fault: the sanitizer reports it; the process says what it raised)
    print(type(exc).__name__, str(exc)[:200])
"""


def sanitizer() -> str | None:
    return shutil.which("compute-sanitizer") or next(
        (p for p in ("/usr/local/cuda/bin/compute-sanitizer",) if os.path.exists(p)), None
    )


def cases(module: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The buggy and the correct cases of corpus ``module``."""
    sys.path.insert(0, ROOT)
    (buggy_module, buggy), (correct_module, correct) = CORPORA[module]
    return (getattr(importlib.import_module(f"tests.cpu.{buggy_module}"), buggy),
            getattr(importlib.import_module(f"tests.cpu.{correct_module}"), correct))  # fmt: skip


def on_cpu(module: str, name: str) -> str:
    """The error a checked CPU launch of case ``name`` of corpus ``module`` raises ("" for none)."""
    import cuforge as cf

    case = {**cases(module)[0], **cases(module)[1]}[name]
    args, kwargs = case.args()
    try:
        case.kernel(*args, **{**kwargs, "device": "cpu", "check": True})
    except cf.CuforgeError as exc:
        return type(exc).__name__
    return ""


def on_gpu(tool_path: str, tool: str, module: str, name: str) -> int:
    """compute-sanitizer ``tool``'s error count for case ``name`` of corpus ``module`` (-1: it did not run)."""
    argv = [tool_path, "--tool", tool, "--print-limit", "10", "--report-api-errors", "no"]  # (kernels' errors only)
    if tool == "racecheck":
        argv += ["--racecheck-report", "all"]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([os.path.join(ROOT, "src"), *sys.path]),
        "CUFORGE_CACHE_DIR": os.environ.get("CUFORGE_CACHE_DIR", "/tmp/cuforge-bug-finders"),
    }
    (buggy_module, buggy), (correct_module, correct) = CORPORA[module]
    child = CHILD.format(root=ROOT, buggy_module=buggy_module, buggy=buggy, correct_module=correct_module, correct=correct,
                         name=name)  # fmt: skip
    try:
        out = subprocess.run([*argv, sys.executable, "-c", child], capture_output=True, text=True, timeout=180, env=env)
    except subprocess.TimeoutExpired:
        return -1
    text = out.stdout + out.stderr
    for line in reversed(text.splitlines()):
        if "ERROR SUMMARY:" in line:
            return int(line.split("ERROR SUMMARY:")[1].split()[0])
        if "RACECHECK SUMMARY:" in line:
            return int(line.split("RACECHECK SUMMARY:")[1].split()[0])
    return -1


def main(out: str | None = None, corpora: tuple[str, ...] = tuple(CORPORA)) -> dict[str, dict[str, object]]:
    tool_path = sanitizer()
    names = [(m, n) for m in corpora for part in cases(m) for n in part]
    results: dict[str, dict[str, object]] = {}
    for m, n in names:
        bugs, goods = cases(m)
        results[f"{m}: {n}"] = {"buggy": n in bugs, "kernel": {**bugs, **goods}[n].kernel.__name__,
                                "cuforge": on_cpu(m, n)}  # fmt: skip
    if tool_path is not None:
        jobs = [(t, m, n) for m, n in names for t in TOOLS]
        with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
            for (t, m, n), count in zip(jobs, pool.map(lambda job: on_gpu(tool_path, *job), jobs)):
                results[f"{m}: {n}"][t] = count
    print(f"{'case':72} {'kernel':26} {'cuforge':24} " + " ".join(f"{t:>9}" for t in TOOLS))
    for n, r in results.items():
        print(f"{('BUG ' if r['buggy'] else 'ok  ') + n:72} {r['kernel']!s:26} {r['cuforge'] or '-':24} "
              + " ".join(f"{r.get(t, 'n/a')!s:>9}" for t in TOOLS))  # fmt: skip
    buggy = [r for r in results.values() if r["buggy"]]
    found_cf = sum(bool(r["cuforge"]) for r in buggy)
    found_cs = sum(any(isinstance(r.get(t), int) and r[t] > 0 for t in TOOLS) for r in buggy)  # type: ignore[operator]
    flagged_cf = sum(bool(r["cuforge"]) for r in results.values() if not r["buggy"])
    flagged_cs = sum(any(isinstance(r.get(t), int) and r[t] > 0 for t in TOOLS) for r in results.values() if not r["buggy"])  # type: ignore[operator]
    print(f"buggy found: cuforge {found_cf}/{len(buggy)}, compute-sanitizer {found_cs}/{len(buggy)}"
          + ("" if tool_path else " (compute-sanitizer not found)"))  # fmt: skip
    print(f"correct flagged: cuforge {flagged_cf}, compute-sanitizer {flagged_cs}")
    if out:
        with open(out, "w") as f:
            json.dump(results, f, indent=1)
    return results


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None, tuple(sys.argv[2:]) or tuple(CORPORA))
