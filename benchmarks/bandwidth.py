"""Memory bandwidth of the examples' kernels against a device-to-device copy and CuPy.

    python benchmarks/bandwidth.py

saxpy (float32, 2^28 elements: 3 x 1 GiB of traffic) as the example writes it and
vectorised with float4; the reduction family (sum of 2^28 float32); each against a copy
moving the same bytes and against CuPy (ElementwiseKernel, cupy.sum). CUDA events, median
of 20 timed runs after warm-up; GB/s = bytes read and written / time.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import sys

import cuforge as cf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import report

HERE = os.path.dirname(os.path.abspath(__file__))

N = 1 << 28


def _example(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", os.path.join(HERE, "..", "examples", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cf.kernel
class SaxpyVec4:
    """y <- a*x + y with float4 loads and stores; n4 = n / 4 (n a multiple of 4)."""

    a: cf.float32
    x: cf.In[cf.float32]
    y: cf.Array[cf.float32]
    n4: cf.int64
    grid = "n4"
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 xv = reinterpret_cast<const float4*>(x)[i];
        float4 yv = reinterpret_cast<float4*>(y)[i];
        yv.x = a * xv.x + yv.x; yv.y = a * xv.y + yv.y; yv.z = a * xv.z + yv.z; yv.w = a * xv.w + yv.w;
        reinterpret_cast<float4*>(y)[i] = yv;
    }
    """


def timed(cp, fn, repeat: int = 20) -> float:
    """Median seconds of fn() measured with CUDA events."""
    for _ in range(3):
        fn()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    out = []
    for _ in range(repeat):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        out.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return statistics.median(out)


def main() -> dict:
    import cupy as cp

    saxpy = _example("saxpy").Saxpy
    Sum = _example("reduction").Sum
    x = cp.random.random(N, dtype=cp.float32)
    y = cp.random.random(N, dtype=cp.float32)
    src = cp.empty(3 * N // 2, dtype=cp.float32)
    dst = cp.empty_like(src)
    out = cp.zeros(1, dtype=cp.float32)
    gbs = {}
    copy3 = timed(cp, lambda: cp.copyto(dst, src))  # reads 1.5N floats, writes 1.5N: 3N floats
    gbs["device-to-device copy (same bytes as saxpy)"] = 3 * N * 4 / copy3 / 1e9
    gbs["cuforge saxpy (examples/saxpy.py)"] = 3 * N * 4 / timed(cp, lambda: saxpy(2.0, x, y, N)) / 1e9
    gbs["cuforge saxpy, float4"] = 3 * N * 4 / timed(cp, lambda: SaxpyVec4(2.0, x, y, N // 4)) / 1e9
    ew = cp.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z", "z = a * x + y", "bench_saxpy")
    gbs["cupy ElementwiseKernel saxpy"] = 3 * N * 4 / timed(cp, lambda: ew(cp.float32(2.0), x, y, y)) / 1e9
    half = cp.empty(N // 2, dtype=cp.float32)
    half_dst = cp.empty_like(half)
    gbs["device-to-device copy (same bytes as the sum)"] = N * 4 / timed(cp, lambda: cp.copyto(half_dst, half)) / 1e9

    def our_sum():
        out.fill(0)
        Sum[cf.float32, 256](x, out, N)

    gbs["cuforge Sum<float, 256> (examples/reduction.py)"] = N * 4 / timed(cp, our_sum) / 1e9

    def tuned_sum():
        out.fill(0)
        Sum(x, out, N)  # the family call: T inferred, BLOCK autotuned once and remembered

    gbs["cuforge Sum, autotuned (examples/reduction.py)"] = N * 4 / timed(cp, tuned_sum) / 1e9
    got = float(out[0])
    gbs["cupy.sum"] = N * 4 / timed(cp, lambda: cp.sum(x)) / 1e9
    ref = float(cp.sum(x.astype(cp.float64)))
    return {"GB/s": gbs, "sum_relative_error": abs(got - ref) / ref}


if __name__ == "__main__":
    report(main()["GB/s"], 50, " GB/s")
