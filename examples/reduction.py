"""A reduction family by dtype and block size: one declaration, twelve kernels.

    python examples/reduction.py

All twelve instantiations compile in one NVRTC program. On a GPU each one sums 10M
elements and is checked against NumPy; without one, the family is compiled and listed.
"""

import numpy as np

import cuforge as cf


@cf.kernel
class Sum:
    """out[0] += sum(x): a grid-stride loop, warp shuffles, one atomic per block."""

    T = cf.typeparam(cf.float32, cf.float64, cf.int32)
    BLOCK = cf.intparam(256, 128, 512, 1024)
    x: cf.In[T]
    out: cf.Array[T, 1]
    n: cf.int64
    block = "BLOCK"

    @staticmethod
    def grid(n, block):
        # Enough blocks to fill an H100/H200 (132 SMs) several times over; the loop covers the rest.
        return (max(1, min((n + block[0] - 1) // block[0], 132 * 16)),)

    body = """
    // Four independent accumulators per thread keep enough loads in flight to saturate
    // memory; warps reduce with shuffles, then one atomic per block.
    T acc0 = 0, acc1 = 0, acc2 = 0, acc3 = 0;
    long long stride = (long long)gridDim.x * BLOCK;
    long long i = blockIdx.x * (long long)BLOCK + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        acc0 += x[i];
        acc1 += x[i + stride];
        acc2 += x[i + 2 * stride];
        acc3 += x[i + 3 * stride];
    }
    for (; i < n; i += stride) acc0 += x[i];
    T acc = (acc0 + acc1) + (acc2 + acc3);
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    __shared__ T warps[BLOCK / 32];
    if ((threadIdx.x & 31) == 0) warps[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        acc = threadIdx.x < BLOCK / 32 ? warps[threadIdx.x] : T(0);
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
        if (threadIdx.x == 0) atomicAdd(out, acc);
    }
    """


def check_all(n: int = 10_000_000) -> None:
    rng = np.random.default_rng(0)
    for k in Sum.instantiations():
        dtype = k.template_args["T"]
        host = rng.integers(-100, 100, n).astype(dtype.numpy) if dtype.is_integer else rng.random(n).astype(dtype.numpy)
        x = cf.to_device(host)
        out = cf.zeros(1, dtype)
        k(x, out, n)
        got, want = out.to_numpy()[0], host.astype(np.float64).sum()
        tol = 1e-3 * abs(want) if dtype is cf.float32 else 1e-9 * abs(want)
        assert abs(float(got) - want) <= tol, (k.name_expression, got, want)
        print(f"{k.name_expression:22s} sum={float(got):.6g}  matches NumPy")


def main() -> None:
    compiled = Sum.precompile(arch="sm_90")
    print(f"{len(compiled)} instantiations compiled in one NVRTC program, e.g. {compiled[0].lowered_name}")
    try:
        cf.zeros(1, cf.float32)
    except cf.NoDeviceError:
        print("no GPU here: compiled only; a GPU is needed to launch")
        return
    check_all()
    # Calling the family infers T from the arrays and uses the default BLOCK.
    x = cf.to_device(np.ones(1000, np.float64))
    out = cf.zeros(1, cf.float64)
    Sum(x, out, 1000)
    assert out.to_numpy()[0] == 1000.0


if __name__ == "__main__":
    main()
