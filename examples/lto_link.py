"""Link-time optimisation: a kernel calls an extern __device__ function defined in a second
translation unit; nvJitLink links the two LTO-IR inputs and can inline across them.

    python examples/lto_link.py

On a GPU the linked kernel runs on 100,001 floats, checked against NumPy. Without one, NVRTC
still compiles both units to LTO-IR and nvJitLink links them into a cubin (neither needs a
GPU); then the same two units are compiled for the CPU (cuforge's CPU backend,
``device="cpu"``: each unit of ``link=`` a translation unit of its own, linked by the host's
toolchain, so there is no LTO-IR and no cross-unit inlining there), and the kernel runs on
NumPy arrays, checked against NumPy.
"""

import numpy as np

import cuforge as cf

# The second translation unit: compiled to LTO-IR on its own (it could equally be a
# cf.Module("poly.ltoir") built elsewhere).
POLY = """
extern "C" __device__ float poly(float x) { return (3.0f * x + 2.0f) * x + 1.0f; }
"""


@cf.kernel
class ApplyPoly:
    """y[i] = poly(x[i]), with poly() from the linked unit."""

    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int64
    options = cf.CompileOptions(lto=True)
    link = (POLY,)
    preamble = 'extern "C" __device__ float poly(float x);'
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = poly(x[i]);
    """


def check(n: int = 100_001, device: str | None = None) -> None:
    """poly() over n values, checked against NumPy: in the GPU's memory, or with
    ``device="cpu"`` on NumPy arrays in place."""
    x = np.linspace(-2, 2, n, dtype=np.float32)
    if device == "cpu":
        got = np.empty(n, np.float32)
        ApplyPoly(x, got, n, device="cpu")
    else:
        y = cf.empty(n, cf.float32)
        ApplyPoly(cf.to_device(x), y, n)
        got = y.to_numpy()
    np.testing.assert_allclose(got, (3 * x + 2) * x + 1, rtol=1e-6, atol=1e-6)
    how = "linked by the host's toolchain, on the CPU" if device == "cpu" else "linked with nvJitLink, LTO"
    print(f"ApplyPoly: {n} values match NumPy ({how})")


if __name__ == "__main__":
    if cf.gpu_available():
        check()
    else:
        ck = ApplyPoly.compile(arch="sm_90")
        print(f"no GPU: compiled and linked {ck.lowered_name} ({len(ck.code)}-byte {ck.code_type}) with nvJitLink, LTO")
        print("running it on the CPU instead (device='cpu'); LTO is the GPU's: the CPU build links the two units without it")
        check(device="cpu")
