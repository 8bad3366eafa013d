"""Memory bandwidth of the examples' kernels against a device-to-device copy and CuPy.

    python benchmarks/bandwidth.py

saxpy (float32, 2^28 elements: 3 x 1 GiB of traffic) as the example writes it and
vectorised with float4; the reduction family (sum of 2^28 float32); each against a copy
moving the same bytes and against CuPy (ElementwiseKernel, cupy.sum). Each figure is the
median of 9 rounds, timed with CUDA events around 10 back-to-back calls (so the GPU's time
is measured, not the host's time to issue the first call), the contenders taking turns
round by round; GB/s = bytes read and written / time.
"""

from __future__ import annotations

import os
import sys

import cuforge as cf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import example, report, take_turns

N = 1 << 28


@cf.kernel
class SaxpyVec4:
    """y <- a*x + y with float4 loads and stores: x and y are float32 arrays of shape (n4, 4)."""

    a: cf.float32
    x: cf.In[cf.vector(cf.float32, 4)]
    y: cf.Array[cf.vector(cf.float32, 4)]
    n4: cf.int64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 xv = x[i], yv = y[i];
        yv.x = a * xv.x + yv.x; yv.y = a * xv.y + yv.y; yv.z = a * xv.z + yv.z; yv.w = a * xv.w + yv.w;
        y[i] = yv;
    }
    """


def measure(cp, cases: dict, rounds: int = 9, calls: int = 10) -> dict:
    """Median seconds per call of each case, timed with CUDA events around ``calls`` calls."""
    start, stop = cp.cuda.Event(), cp.cuda.Event()

    def timer(fn):
        for _ in range(3):
            fn()

        def once() -> float:
            start.record()
            for _ in range(calls):
                fn()
            stop.record()
            stop.synchronize()
            return cp.cuda.get_elapsed_time(start, stop) / 1e3 / calls

        return once

    return take_turns({name: timer(fn) for name, fn in cases.items()}, rounds)


def main() -> dict:
    import cupy as cp

    saxpy = example("saxpy").Saxpy
    Sum = example("reduction").Sum
    x = cp.random.random(N, dtype=cp.float32)
    y = cp.random.random(N, dtype=cp.float32)
    src = cp.empty(3 * N // 2, dtype=cp.float32)
    dst = cp.empty_like(src)
    out = cp.zeros(1, dtype=cp.float32)
    half = cp.empty(N // 2, dtype=cp.float32)
    half_dst = cp.empty_like(half)
    ew = cp.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z", "z = a * x + y", "bench_saxpy")

    def our_sum():
        out.fill(0)
        Sum[cf.float32, 256](x, out, N)

    def tuned_sum():
        out.fill(0)
        Sum(x, out, N)  # the family call: T inferred, BLOCK autotuned once and remembered

    saxpy_bytes, sum_bytes = 3 * N * 4, N * 4  # saxpy reads x and y and writes y; the sum reads x
    x4, y4 = x.reshape(-1, 4), y.reshape(-1, 4)  # the same memory, as float4 arrays
    cases = {  # name: (bytes moved per call, call)
        "device-to-device copy (same bytes as saxpy)": (saxpy_bytes, lambda: cp.copyto(dst, src)),
        "cuforge saxpy (examples/saxpy.py)": (saxpy_bytes, lambda: saxpy(2.0, x, y, N)),
        "cuforge saxpy, float4": (saxpy_bytes, lambda: SaxpyVec4(2.0, x4, y4, N // 4)),
        "cupy ElementwiseKernel saxpy": (saxpy_bytes, lambda: ew(cp.float32(2.0), x, y, y)),
        "device-to-device copy (same bytes as the sum)": (sum_bytes, lambda: cp.copyto(half_dst, half)),
        "cuforge Sum<float, 256> (examples/reduction.py)": (sum_bytes, our_sum),
        "cuforge Sum, autotuned (examples/reduction.py)": (sum_bytes, tuned_sum),
        "cupy.sum": (sum_bytes, lambda: cp.sum(x)),
    }
    seconds = measure(cp, {name: fn for name, (_, fn) in cases.items()})
    gbs = {name: nbytes / seconds[name] / 1e9 for name, (nbytes, _) in cases.items()}
    tuned_sum()
    got = float(out[0])
    ref = float(cp.sum(x.astype(cp.float64)))
    return {"GB/s": gbs, "sum_relative_error": abs(got - ref) / ref}


if __name__ == "__main__":
    report(main()["GB/s"], 50, " GB/s")
