"""A reduction family by dtype and block size: one declaration, twelve kernels.

    python examples/reduction.py

All twelve instantiations compile in one NVRTC program (NVRTC needs no GPU). On a GPU each
one sums 10M elements and is checked against NumPy. Without one, each runs on the CPU instead
(cuforge's CPU backend, ``device="cpu"``: the host's C++ compiler builds each instantiation
once, then the disk cache keeps it) on NumPy arrays, and is checked against NumPy there.
"""

import numpy as np

import cuforge as cf


@cf.kernel
class Sum:
    """out[0] += sum(x): 16-byte loads in a grid-stride loop, warp shuffles, one atomic per block."""

    T = cf.typeparam(cf.float32, cf.float64, cf.int32)
    BLOCK = cf.intparam(256, 128, 512, 1024)
    x: cf.In[T]
    out: cf.Array[T, 1]
    n: cf.int64
    block = "BLOCK"
    # Calling the family (Sum(x, out, n)) times each block size once per size class of n on
    # this GPU and keeps the fastest, on disk; Sum[T, BLOCK] picks one explicitly.
    autotune = cf.autotune(BLOCK=[128, 256, 512, 1024], key=["n"])

    @staticmethod
    def grid(n, block):
        # Enough blocks to fill an H100/H200 (132 SMs) several times over; the loop covers the rest.
        return (max(1, min((n + block[0] - 1) // block[0], 132 * 16)),)

    body = """
    // 16-byte vector loads (4 floats or ints, 2 doubles) keep enough bytes in flight to
    // saturate memory; a misaligned view falls back to scalar loads. Warps reduce with
    // shuffles, then one atomic per block.
    constexpr int V = 16 / sizeof(T);
    struct alignas(16) Vec { T v[V]; };
    T acc = 0;
    long long stride = (long long)gridDim.x * BLOCK;
    long long first = blockIdx.x * (long long)BLOCK + threadIdx.x;
    long long done = 0;
    if ((reinterpret_cast<unsigned long long>(x) & 15) == 0) {
        const Vec* xv = reinterpret_cast<const Vec*>(x);
        long long nv = n / V;
        for (long long j = first; j < nv; j += stride) {
            Vec t = xv[j];
            #pragma unroll
            for (int k = 0; k < V; ++k) acc += t.v[k];
        }
        done = nv * V;
    }
    for (long long i = done + first; i < n; i += stride) acc += x[i];
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


def check_all(n: int = 10_000_000, device: str | None = None) -> None:
    """Every instantiation sums ``n`` values, checked against NumPy: on the GPU's memory, or with
    ``device="cpu"`` on NumPy arrays in place."""
    rng = np.random.default_rng(0)
    for k in Sum.instantiations():
        dtype = k.template_args["T"]
        host = rng.integers(-100, 100, n).astype(dtype.numpy) if dtype.is_integer else rng.random(n).astype(dtype.numpy)
        if device == "cpu":
            out = np.zeros(1, dtype.numpy)
            k(host, out, n, device="cpu")
            got = out[0]
        else:
            out = cf.zeros(1, dtype)
            k(cf.to_device(host), out, n)
            got = out.to_numpy()[0]
        want = host.astype(np.float64).sum()
        tol = 1e-3 * abs(want) if dtype is cf.float32 else 1e-9 * abs(want)
        assert abs(float(got) - want) <= tol, (k.name_expression, got, want)
        print(f"{k.name_expression:22s} sum={float(got):.6g}  matches NumPy")


def main() -> None:
    compiled = Sum.precompile(arch="sm_90")
    print(f"{len(compiled)} instantiations compiled in one NVRTC program, e.g. {compiled[0].lowered_name}")
    if not cf.gpu_available():
        print("no GPU here: each instantiation runs on the CPU instead (device='cpu'), 1M elements each")
        check_all(n=1_000_000, device="cpu")
        # Calling the family infers T from the arrays; on the CPU BLOCK takes its default
        # (autotuning times a GPU).
        out = np.zeros(1, np.float64)
        Sum(np.ones(1000, np.float64), out, 1000, device="cpu")
        assert out[0] == 1000.0
        print("Sum(x, out, 1000) on float64 arrays (T inferred, BLOCK at its default): matches NumPy")
        return
    check_all()
    # Calling the family infers T from the arrays and picks BLOCK by autotuning (once per size class).
    x = cf.to_device(np.ones(1000, np.float64))
    out = cf.zeros(1, cf.float64)
    Sum(x, out, 1000)
    assert out.to_numpy()[0] == 1000.0


if __name__ == "__main__":
    main()
