"""cf.complex64/complex128 are cuforge::complex<T>: arithmetic in kernels, cuComplex code still
compiling, and the header provided to source= families whose name expressions spell it."""

from __future__ import annotations

import cuforge as cf
from cuforge._declare import cparse as _cparse


@cf.kernel
class ComplexOps:
    a: cf.complex64
    x: cf.In[cf.complex64]
    y: cf.Array[cf.complex64]
    n: cf.int64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) {
        cuforge::complex<float> z = a * x[i] + y[i] * 2.0f - 1.0f;
        z += cuforge::conj(x[i]) / (y[i] + 1.0f);
        y[i] = z * cuforge::abs(x[i]) + cuforge::exp(x[i]) * (z == x[i] ? 1.0f : 0.5f);
    }
    """


def test_complex_arithmetic_compiles_fast_with_no_cccl_include():
    ck = ComplexOps.compile("sm_90")
    assert ck.lowered_name == "_Z10ComplexOpsN7cuforge7complexIfEEPKS1_PS1_x"
    assert "#include <cuforge_complex.cuh>" in ck.source and "cuda/std/complex" not in ck.source


def test_kernels_written_for_cucomplex_still_compile():
    @cf.kernel
    class Legacy:
        x: cf.Array[cf.complex128]
        body = "x[threadIdx.x] = cuCmul(x[0], x[1]); x[2].x = cuCabs(x[3]); x[2].y = cuCimag(x[4]);"
        grid = 1

    assert Legacy.compile("sm_90").lowered_name == "_Z6LegacyPN7cuforge7complexIdEE"


def test_a_source_family_gets_the_header_its_name_expressions_need():
    @cf.kernel
    class Square:
        T = cf.typeparam(cf.float64, cf.complex128)
        x: cf.Array[T]
        name = "square"
        source = "template <typename T> __global__ void square(T* x) { x[threadIdx.x] = x[threadIdx.x] * x[threadIdx.x]; }"
        grid = 1

    lowered = [k.lowered_name for k in Square.precompile("sm_90")]
    assert lowered == ["_Z6squareIdEvPT_", "_Z6squareIN7cuforge7complexIdEEEvPT_"]


def test_cell_spellings_of_complex_map_to_cuforge_types():
    for spelled, dtype in [("cuFloatComplex", cf.complex64), ("cuda::std::complex<float>", cf.complex64),
                           ("cuforge::complex<double>", cf.complex128), ("cuDoubleComplex", cf.complex128)]:  # fmt: skip
        assert _cparse.cpp_type(f"const {spelled}* __restrict__", "x") == cf.In[dtype]
