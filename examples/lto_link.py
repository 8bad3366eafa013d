"""Link-time optimisation: a kernel calls an extern __device__ function defined in a second
translation unit; nvJitLink links the two LTO-IR inputs and can inline across them.

python examples/lto_link.py
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


def check(n: int = 100_001) -> None:
    x = np.linspace(-2, 2, n, dtype=np.float32)
    y = cf.empty(n, cf.float32)
    ApplyPoly(cf.to_device(x), y, n)
    np.testing.assert_allclose(y.to_numpy(), (3 * x + 2) * x + 1, rtol=1e-6, atol=1e-6)
    print(f"ApplyPoly: {n} values match NumPy (linked with nvJitLink, LTO)")


if __name__ == "__main__":
    if cf.gpu_available():
        check()
    else:
        ck = ApplyPoly.compile(arch="sm_90")
        print(f"no GPU: compiled and linked {ck.lowered_name} ({len(ck.code)}-byte {ck.code_type}); a GPU is needed to run it")
