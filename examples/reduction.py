"""A reduction family by dtype and block size: one declaration, twelve kernels.

    python examples/reduction.py

All twelve instantiations compile in one NVRTC program. On a GPU each one sums 10M
elements and is checked against NumPy; without one, the family is compiled and listed.
"""

import numpy as np

import cuforge as cf


@cf.kernel
class Sum:
    """out[0] += sum(x): a grid-stride loop, a shared-memory tree, one atomic per block."""

    T = cf.typeparam(cf.float32, cf.float64, cf.int32)
    BLOCK = cf.intparam(256, 128, 512, 1024)
    x: cf.In[T]
    out: cf.Array[T, 1]
    n: cf.int64
    block = "BLOCK"

    @staticmethod
    def grid(n, block):
        return (max(1, min((n + block[0] - 1) // block[0], 132 * 8)),)

    body = """
    __shared__ T part[BLOCK];
    T acc = 0;
    for (long long i = blockIdx.x * (long long)BLOCK + threadIdx.x; i < n; i += (long long)gridDim.x * BLOCK)
        acc += x[i];
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, part[0]);
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
