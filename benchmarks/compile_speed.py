"""Compile speed for real code: CUB, precompiled headers, a heavy family, a %%cuda cell.

    python benchmarks/compile_speed.py

Every figure is taken in fresh processes with the disk cache off (``CUFORGE_CACHE=0``), a
token unique to the run in the source (so no cache of cuforge's, CuPy's or an earlier run's
serves it), and ``CUDA_CACHE_DISABLE=1`` (the driver's JIT cache, ~/.nv/ComputeCache, which
cubins never use anyway). Median of 3 processes each (one each for the convolution family,
whose batched compile takes tens of seconds), in seconds:

- a CUB ``BlockReduce`` kernel compiled cold, and CuPy ``RawModule`` on the same code;
- a second, distinct kernel with the same includes in the same process, with NVRTC's
  precompiled header (cuforge's default) and without (``CUFORGE_PCH=0``): kernels given as
  ``source=``, and kernels declared with a ``body`` whose ``preamble`` includes CUB;
- a 16-instantiation tiled 2-D convolution family (after Kernel Tuner's example: a 17x17
  filter, block 16/32 x 8/16, tiles 1/2 x 2/4, every loop unrolled) as one batched NVRTC
  program (``CUFORGE_COMPILE_WORKERS=1``) and as cuforge splits it (the default), and the
  12-instantiation axpy family of family_compile.py the same two ways (7 times each, taking
  turns with the first alternating, median: cuforge keeps it one program, so the two ways
  differ only by noise);
- the NVRTC programs a ``%%cuda`` cell of five kernels costs.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import textwrap
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import report

CUB = """#include <cub/block/block_reduce.cuh>
extern "C" __global__ void block_sum_%(tag)s(const float* x, float* out) {
    using BlockReduce = cub::BlockReduce<float, 256>;
    __shared__ typename BlockReduce::TempStorage tmp;
    float s = BlockReduce(tmp).Sum(x[blockIdx.x * 256 + threadIdx.x] * %(scale)s);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}
"""

PCH = textwrap.dedent(
    """
    import sys, time, cuforge as cf
    CUB, token, form = sys.argv[1], sys.argv[2], sys.argv[3]
    def kernel(i):
        ns = {"__annotations__": {"x": cf.In[cf.float32], "out": cf.Out[cf.float32]}}
        if form == "source":
            ns.update(source=f"// {token}\\n" + CUB % {"tag": i, "scale": f"{i}.0f"}, name=f"block_sum_{i}")
        else:  # the docs' way (guide/compile-speed.md): the include in the preamble, the code in the body
            ns.update(preamble="#include <cub/block/block_reduce.cuh>", block=256, body=(
                f"// {token}\\nusing R = cub::BlockReduce<float, 256>; __shared__ typename R::TempStorage tmp;\\n"
                f"float s = R(tmp).Sum(x[blockIdx.x * 256 + threadIdx.x] * {i}.0f); if (threadIdx.x == 0) out[blockIdx.x] = s;"))
        return cf.kernel(type(f"K{i}", (), ns))
    times = []
    for i in range(2):
        t = time.perf_counter(); kernel(i).compile("sm_90"); times.append(time.perf_counter() - t)
    print(times[0], times[1], cf.cache_stats().pch_hits)
    """
)

CUPY = textwrap.dedent(
    """
    import sys, time, cupy as cp
    CUB, token = sys.argv[1], sys.argv[2]
    t = time.perf_counter()
    try:
        mod = cp.RawModule(code=f"// {token}\\n" + CUB % {"tag": 0, "scale": "1.0f"}, options=("-std=c++17",))
        mod.get_function("block_sum_0")
        print(time.perf_counter() - t)
    except Exception as exc:
        print("refused:", type(exc).__name__, str(exc).splitlines()[0][:150])
    """
)

FAMILY = textwrap.dedent(
    """
    import sys, time, cuforge as cf
    which, token = sys.argv[1], sys.argv[2]
    if which == "conv":
        @cf.kernel
        class Conv:
            BX = cf.intparam(16, 32)
            BY = cf.intparam(8, 16)
            TX = cf.intparam(1, 2)
            TY = cf.intparam(2, 4)
            out: cf.Out[cf.float32]
            img: cf.In[cf.float32]
            filt: cf.In[cf.float32]
            block = ("BX", "BY")
            grid = 1
            body = "// " + token + '''
            constexpr int FH = 17, FW = 17, W = 4096;
            __shared__ float tile[BY * TY + FH - 1][BX * TX + FW - 1];
            int tx = threadIdx.x, ty = threadIdx.y;
            int x0 = blockIdx.x * BX * TX, y0 = blockIdx.y * BY * TY;
            #pragma unroll
            for (int i = ty; i < BY * TY + FH - 1; i += BY) {
                #pragma unroll
                for (int j = tx; j < BX * TX + FW - 1; j += BX) tile[i][j] = img[(y0 + i) * (W + FW - 1) + x0 + j];
            }
            __syncthreads();
            float sum[TY][TX];
            #pragma unroll
            for (int a = 0; a < TY; a++) {
                #pragma unroll
                for (int b = 0; b < TX; b++) sum[a][b] = 0.0f;
            }
            #pragma unroll
            for (int i = 0; i < FH; i++) {
                #pragma unroll
                for (int j = 0; j < FW; j++) {
                    #pragma unroll
                    for (int a = 0; a < TY; a++) {
                        #pragma unroll
                        for (int b = 0; b < TX; b++) sum[a][b] += tile[ty + BY * a + i][tx + BX * b + j] * filt[i * FW + j];
                    }
                }
            }
            #pragma unroll
            for (int a = 0; a < TY; a++) {
                #pragma unroll
                for (int b = 0; b < TX; b++) out[(y0 + ty + BY * a) * W + x0 + tx + BX * b] = sum[a][b];
            }
            '''
        fam = Conv
    else:
        @cf.kernel
        class Axpy:
            T = cf.typeparam(cf.float16, cf.float32, cf.float64)
            BLOCK = cf.intparam(256, 128, 512, 1024)
            a: T
            x: cf.In[T]
            y: cf.Array[T]
            n: cf.int64
            body = "// " + token + '''
            long long i = blockIdx.x * (long long)BLOCK + threadIdx.x;
            if (i < n) y[i] = a * x[i] + y[i];
            '''
        fam = Axpy
    t = time.perf_counter()
    fam.precompile("sm_90")
    print(time.perf_counter() - t, cf.cache_stats().compiles)
    """
)

CELL = textwrap.dedent(
    """
    import cuforge as cf
    from IPython.core.interactiveshell import InteractiveShell
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "cuforge")
    cell = "\\n".join(f'extern "C" __global__ void k{i}(float* y, int n) {{ if (threadIdx.x < n) y[threadIdx.x] += {i}; }}'
                     for i in range(5))
    sh.run_cell_magic("cuda", "--arch sm_90", cell)
    print(cf.cache_stats().compiles)
    """
)


def run(code: str, *args: str, **env: str) -> list[str]:
    full = {**os.environ, "CUFORGE_CACHE": "0", "CUDA_CACHE_DISABLE": "1", **env}
    full.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: the modules a first compile imports have bytecode
    out = subprocess.run([sys.executable, "-c", code, *args], env=full, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip()[-600:])
    return out.stdout.split()


def median(rows: list[list[str]], i: int) -> float:
    return statistics.median(float(r[i]) for r in rows)


def main() -> dict:
    r: dict[str, float | str] = {}
    with_pch = [run(PCH, CUB, uuid.uuid4().hex, "source") for _ in range(3)]
    without = [run(PCH, CUB, uuid.uuid4().hex, "source", CUFORGE_PCH="0") for _ in range(3)]
    r["CUB BlockReduce kernel, cold (s)"] = median(without, 0)
    r["CUB kernel, cold, making the PCH (s)"] = median(with_pch, 0)
    r["second CUB kernel, same process, no PCH (s)"] = median(without, 1)
    r["second CUB kernel, same process, with PCH (s)"] = median(with_pch, 1)
    r["PCH speed-up on the second kernel"] = median(without, 1) / median(with_pch, 1)
    body_pch = [run(PCH, CUB, uuid.uuid4().hex, "body") for _ in range(3)]
    body_without = [run(PCH, CUB, uuid.uuid4().hex, "body", CUFORGE_PCH="0") for _ in range(3)]
    r["second CUB kernel declared with a preamble, no PCH (s)"] = median(body_without, 1)
    r["second CUB kernel declared with a preamble, with PCH (s)"] = median(body_pch, 1)
    r["PCH speed-up, kernels declared with a preamble"] = median(body_without, 1) / median(body_pch, 1)
    cupy = [run(CUPY, CUB, uuid.uuid4().hex) for _ in range(3)]
    if cupy[0][0] == "refused:":
        r["cupy RawModule, same CUB kernel (s)"] = " ".join(cupy[0])
    else:
        r["cupy RawModule, same CUB kernel (s)"] = median(cupy, 0)
    for which, label, times in (("conv", "16-instantiation tiled convolution", 1), ("axpy", "12-instantiation axpy", 7)):
        batched, adaptive = [], []
        for turn in range(times):  # taking turns, which goes first alternating: the axpy's two ways are 0.2 s each
            ways = [(batched, {"CUFORGE_COMPILE_WORKERS": "1"}), (adaptive, {})]
            for out, env in ways if turn % 2 == 0 else ways[::-1]:
                out.append(run(FAMILY, which, uuid.uuid4().hex, **env))
        r[f"{label}, one batched program (s)"] = median(batched, 0)
        r[f"{label}, as cuforge splits it (s)"] = median(adaptive, 0)
        r[f"{label}: NVRTC programs when split"] = adaptive[0][1]
        r[f"{label}: speed-up"] = median(batched, 0) / median(adaptive, 0)
    try:
        r["%%cuda cell of 5 kernels: NVRTC programs"] = float(run(CELL)[-1])
    except RuntimeError as exc:
        r["%%cuda cell of 5 kernels: NVRTC programs"] = f"failed: {exc}"[:200]
    r["CPUs"] = float(len(os.sched_getaffinity(0)))
    return r


if __name__ == "__main__":
    result = main()
    report(result, 60)
    print(json.dumps(result))
