"""Cold compile of a 12-instantiation family (3 dtypes x 4 block sizes).

    python benchmarks/family_compile.py

cuforge batched (one NVRTC program), cuforge one at a time (twelve programs) and, where
CuPy is installed, CuPy RawModule(name_expressions=...). Each run uses a define (or comment)
unique to this process and run, so nothing is served from a cache: not cuforge's, not CuPy's,
not an earlier run's on the same machine. Median of 3 runs, in milliseconds.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import uuid

import cuforge as cf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import report


@cf.kernel
class Axpy:
    T = cf.typeparam(cf.float16, cf.float32, cf.float64)
    BLOCK = cf.intparam(256, 128, 512, 1024)
    a: T
    x: cf.In[T]
    y: cf.Array[T]
    n: cf.int64
    body = """
    long long i = blockIdx.x * (long long)BLOCK + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
    """


def main(arch: str = "sm_90") -> dict:
    token = uuid.uuid4().hex  # per process: a second run on the same machine finds nothing cached
    run = iter(range(10**6))

    def opts():
        return cf.CompileOptions(defines={"CUFORGE_BENCH_RUN": f"{token}_{next(run)}"})

    def batched():
        Axpy.precompile(arch, options=opts())

    def one_by_one():
        o = opts()
        for k in Axpy.instantiations():
            k.compile(arch, options=o)

    def timed(fn):
        out = []
        for _ in range(3):
            t = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t) * 1e3)
        return statistics.median(out)

    results: dict[str, float | str] = {
        "cuforge batched (1 program)": timed(batched),
        "cuforge one at a time (12 programs)": timed(one_by_one),
    }
    try:
        import cupy as cp

        src = (
            "#include <cuda_fp16.h>\n"
            "template <typename T, int BLOCK> __global__ void axpy(T a, const T* __restrict__ x, T* y, long long n)"
            " { long long i = blockIdx.x * (long long)BLOCK + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }\n"
        )
        exprs = [f"axpy<{t}, {b}>" for t in ("__half", "float", "double") for b in (256, 128, 512, 1024)]
        counter = iter(range(10**6))

        def cupy_module():
            mod = cp.RawModule(code=src + f"// run {token} {next(counter)}\n", options=("-std=c++17",), name_expressions=exprs)
            for e in exprs:
                mod.get_function(e)

        results["cupy RawModule(name_expressions) (1 program)"] = timed(cupy_module)
    except ImportError:
        results["cupy RawModule(name_expressions) (1 program)"] = "missing: cupy not installed"
    b, o = results["cuforge batched (1 program)"], results["cuforge one at a time (12 programs)"]
    results["speed-up batched vs one at a time"] = o / b  # type: ignore[operator]
    return results


if __name__ == "__main__":
    report(main(), 48)
