"""The main cuforge example: declare saxpy, compile it, and launch it.

    python examples/saxpy.py

On a machine with an NVIDIA GPU it launches on 1M floats and checks the result against
NumPy. Without one it still compiles for the GPU (NVRTC needs no GPU) and prints what NVRTC
built, then runs the same kernel on the CPU (cuforge's CPU backend: ``device="cpu"``) and
checks that against NumPy.
"""

import numpy as np

import cuforge as cf


@cf.kernel
class Saxpy:
    """y <- a*x + y"""

    a: cf.float32
    x: cf.In[cf.float32]  # rendered `const float* __restrict__ x`
    y: cf.Array[cf.float32]  # rendered `float* y`
    n: cf.int64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
    """


def main() -> None:
    ck = Saxpy.compile(arch="sm_90")
    res = ck.resources()
    print(f"compiled {Saxpy.signature.describe(Saxpy.name)}")
    print(f"  lowered name : {ck.lowered_name}  (from nvrtcGetLoweredName)")
    print(f"  cubin        : {len(ck.cubin)} bytes for {ck.arch}, {ck.compile_seconds * 1e3:.1f} ms in NVRTC")
    print(f"  registers    : {res.get('registers', 'unknown')} per thread")

    # A wrong dtype is caught before anything reaches the GPU.
    try:
        Saxpy(2.0, np.ones(4), np.ones(4, np.float32), 4)
    except cf.ArgumentTypeError as exc:
        print(f"  checked      : {exc}")

    n = 1 << 20
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    try:
        dx, dy = cf.to_device(x), cf.to_device(y)
    except cf.NoDeviceError:
        got = y.copy()
        Saxpy(2.0, x, got, n, device="cpu")  # the same kernel, compiled for the host, on the NumPy arrays in place
        np.testing.assert_allclose(got, 2.0 * x + y, rtol=1e-6, atol=1e-6)
        print(f"no GPU here: ran on the CPU instead (device='cpu') on {n} elements: matches NumPy")
        return
    Saxpy(2.0, dx, dy, n)
    got = dy.to_numpy()
    np.testing.assert_allclose(got, 2.0 * x + y, rtol=1e-6, atol=1e-6)
    print(f"launched on {n} elements: matches NumPy")


if __name__ == "__main__":
    main()
