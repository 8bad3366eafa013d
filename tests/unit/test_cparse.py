"""Reading kernel declarations out of CUDA C++ (the %%cuda magic's parser)."""

import pytest

import cuforge as cf
from cuforge._cparse import ParseError, cpp_type, find_kernels, parse_signature, split_instantiation

SOURCE = """
#include <cuda_fp16.h>
// __global__ void in_a_comment(int x) {}
/* __global__ void in_a_block_comment(int x) {} */
extern "C" __global__ void saxpy(float a, const float* __restrict__ x, float *y, long long n) {}
template <typename T, int BLOCK>
__global__ void __launch_bounds__(256) axpy(T a, const T* x, T* __restrict__ y, size_t n) {}
extern "C" {
__global__ void inblock(const __half *h, unsigned int k, volatile int* flags) {}
}
__global__ void noparams() {}
__global__ void forward(int n);
__global__ void forward(int n) {}
"""


def test_finds_every_kernel_with_its_parameters():
    kernels = {k.name: k for k in find_kernels(SOURCE)}
    assert list(kernels) == ["saxpy", "axpy", "inblock", "noparams", "forward"]
    assert kernels["saxpy"].params == [("a", "float"), ("x", "const float* __restrict__"), ("y", "float *"), ("n", "long long")]
    assert kernels["saxpy"].extern_c and kernels["inblock"].extern_c and not kernels["axpy"].extern_c
    assert kernels["axpy"].template_params == [("type", "T"), ("value", "BLOCK")]
    assert kernels["noparams"].params == [] and kernels["saxpy"].line == 5


@pytest.mark.parametrize(
    "text, expected",
    [
        ("float", cf.float32),
        ("const double", cf.float64),
        ("unsigned long long", cf.uint64),
        ("long", cf.int64),
        ("size_t", cf.uint64),
        ("int8_t", cf.int8),
        ("__half", cf.float16),
        ("__nv_bfloat16", cf.bfloat16),
        ("cuDoubleComplex", cf.complex128),
        ("bool", cf.bool_),
    ],
)
def test_scalar_types(text, expected):
    assert cpp_type(text, "p") is expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("const float* __restrict__", "In[float32]"),
        ("float const *", "In[float32]"),
        ("float*", "Array[float32]"),
        ("float * const", "Array[float32]"),
        ("volatile int*", "Array[int32]"),
        ("const unsigned char *__restrict__", "In[uint8]"),
    ],
)
def test_pointer_types(text, expected):
    assert repr(cpp_type(text, "p")) == expected


def test_template_substitution():
    assert repr(cpp_type("const T*", "p", {"T": "double"})) == "In[float64]"


@pytest.mark.parametrize(
    "text, match",
    [
        ("Foo*", r"k: parameter 'p' has type 'Foo\*', which cuforge cannot map .*--signature"),
        ("float**", r"pointers to pointers are not supported"),
        ("float&", r"references, arrays and pointers to pointers are not supported"),
        ("T*", r"has type 'T\*', which cuforge cannot map"),
    ],
)
def test_unmappable_types_name_the_parameter(text, match):
    with pytest.raises(ParseError, match=match):
        cpp_type(text, "k: parameter 'p'")


def test_signature_and_instantiation_text():
    name, params = parse_signature("saxpy(a: float32, x: In[float32], y: Array[float64, 2], z: Out[int8])")
    assert name == "saxpy" and [(n, repr(t)) for n, t in params] == [
        ("a", "cuforge.float32"), ("x", "In[float32]"), ("y", "Array[float64, 2]"), ("z", "Out[int8]")
    ]  # fmt: skip
    assert parse_signature("(n: int64)")[0] is None
    with pytest.raises(ParseError, match=r"'float33' \(parameter 'a'\) is not a cuforge dtype"):
        parse_signature("k(a: float33)")
    with pytest.raises(ParseError, match=r"cannot read 'a float32'"):
        parse_signature("k(a float32)")
    assert split_instantiation("k<float, Pair<int, 2>>") == ("k", ["float", "Pair<int, 2>"])
    with pytest.raises(ParseError, match=r"expected a name expression"):
        split_instantiation("k")
