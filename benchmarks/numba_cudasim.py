"""The CPU backend's kernels written with numba.cuda, timed under Numba's CUDA simulator.

    NUMBA_ENABLE_CUDASIM=1 python benchmarks/numba_cudasim.py [REPEATS]

Run by cpu_backend.py in a subprocess, with an interpreter where numba (and numba-cuda,
which carries numba.cuda for recent numba) is installed: numba is no dependency of cuforge.
The simulator runs every CUDA thread of a block as a Python thread, so the sizes are small
(SIZES); the grid-stride reduction keeps its 64 blocks of 256 threads whatever the size.
Each kernel's launches are timed (the median of REPEATS; a launch takes seconds, so none is
left untimed as a warm-up: the simulator compiles nothing) and the first one's result is
checked against NumPy. Prints one JSON line: per kernel, its size and the median seconds per
launch.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import numpy as np
from numba import config, cuda, float32

BLOCK = 256
GRID_STRIDE_BLOCKS = 64
# The grid-stride size is the smallest that gives each of its 64 x 256 threads an element:
# its launch costs about as much at 2**12 (the threads dominate), and Numba's elements/s
# would be understated there.
SIZES = {"saxpy": 1 << 14, "tree reduction": 1 << 12, "grid-stride reduction": 1 << 14}


@cuda.jit
def saxpy(a, x, y, n):
    i = cuda.grid(1)
    if i < n:
        y[i] = a * x[i] + y[i]


@cuda.jit(device=True)
def block_tree(s, t, partial):
    """Halve the block's shared sums in place, a barrier after each step; thread 0 writes the total."""
    cuda.syncthreads()
    k = cuda.blockDim.x // 2
    while k > 0:
        if t < k:
            s[t] += s[t + k]
        cuda.syncthreads()
        k //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = s[0]


@cuda.jit
def tree_reduction(x, partial, n):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    s[t] = x[i] if i < n else float32(0)
    block_tree(s, t, partial)


@cuda.jit
def grid_stride_reduction(x, partial, n):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    acc = float32(0)
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    stride = cuda.gridDim.x * cuda.blockDim.x
    while i < n:
        acc += x[i]
        i += stride
    s[t] = acc
    block_tree(s, t, partial)


def cases(rng: np.random.Generator) -> dict:
    """Per kernel: (launch, check): a launch on arrays of the kernel's size, and a launch
    whose result is then compared with NumPy's."""
    n = SIZES["saxpy"]
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    y0 = y.copy()
    blocks = (n + BLOCK - 1) // BLOCK

    def saxpy_check() -> None:
        y[:] = y0
        saxpy[blocks, BLOCK](np.float32(2.0), x, y, n)
        np.testing.assert_allclose(y, np.float32(2.0) * x + y0, rtol=1e-6, atol=1e-6)

    nt = SIZES["tree reduction"]
    xt = rng.integers(0, 8, nt).astype(np.float32)  # sums exact in float32: checked exactly
    tree_blocks = (nt + BLOCK - 1) // BLOCK
    pt = np.zeros(tree_blocks, np.float32)

    def tree_check() -> None:
        tree_reduction[tree_blocks, BLOCK](xt, pt, nt)
        want = np.pad(xt, (0, tree_blocks * BLOCK - nt)).reshape(-1, BLOCK).astype(np.float64).sum(axis=1)
        np.testing.assert_array_equal(pt, want)

    ng = SIZES["grid-stride reduction"]
    xg = rng.integers(0, 8, ng).astype(np.float32)
    pg = np.zeros(GRID_STRIDE_BLOCKS, np.float32)

    def grid_stride_check() -> None:
        grid_stride_reduction[GRID_STRIDE_BLOCKS, BLOCK](xg, pg, ng)
        threads = GRID_STRIDE_BLOCKS * BLOCK
        per_thread = np.pad(xg, (0, -ng % threads)).astype(np.float64).reshape(-1, threads).sum(axis=0)
        np.testing.assert_array_equal(pg, per_thread.reshape(GRID_STRIDE_BLOCKS, BLOCK).sum(axis=1))

    return {
        "saxpy": (lambda: saxpy[blocks, BLOCK](np.float32(2.0), x, y, n), saxpy_check),
        "tree reduction": (lambda: tree_reduction[tree_blocks, BLOCK](xt, pt, nt), tree_check),
        "grid-stride reduction": (lambda: grid_stride_reduction[GRID_STRIDE_BLOCKS, BLOCK](xg, pg, ng), grid_stride_check),
    }


def main(repeats: int) -> dict:
    if not config.ENABLE_CUDASIM:
        raise SystemExit("numba_cudasim.py times Numba's CUDA simulator: run it with NUMBA_ENABLE_CUDASIM=1")
    results = {}
    for name, (launch, check) in cases(np.random.default_rng(0)).items():
        runs = []
        for i in range(repeats):
            t = time.perf_counter()
            (check if i == 0 else launch)()
            runs.append(time.perf_counter() - t)
        results[name] = {"n": SIZES[name], "seconds": statistics.median(runs)}
    return results


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)))
