"""Reading kernel declarations out of CUDA C++ (the %%cuda magic's parser)."""

import pytest

import cuforge as cf
from cuforge._declare.cparse import ParseError, cpp_type, find_kernels, parse_signature, split_instantiation

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


def test_a_pointer_defaulting_to_null_is_optional():
    src = """__global__ void layernorm(float* out, float* mean = NULL, float* __restrict__ rstd = nullptr,
                                       const float* inp = 0, int n = 4) {}"""
    (k,) = find_kernels(src)
    assert k.params[:2] == [("out", "float*"), ("mean", "float*")]
    assert k.defaults == {"mean": "NULL", "rstd": "nullptr", "inp": "0", "n": "4"}
    types = [repr(cpp_type(ty, f"p {n}", None, k.defaults.get(n))) for n, ty in k.params]
    assert types == ["Array[float32]", "Optional[Array[float32]]", "Optional[Array[float32]]", "Optional[In[float32]]",
                     "cuforge.int32"]  # fmt: skip
    assert not cpp_type("float*", "p", None, "some_global").optional  # only a null default makes it optional


@pytest.mark.parametrize(
    "text, expected",
    [
        ("const uint4*", "In[uint32x4]"),
        ("float2 *", "Array[float32x2]"),
        ("const __half2* __restrict__", "In[float16x2]"),
        ("half2*", "Array[float16x2]"),
        ("const __nv_bfloat162*", "In[bfloat16x2]"),
        ("const uchar4*", "In[uint8x4]"),
        ("const cuforge::float16x8*", "In[float16x8]"),
        ("cuforge::bfloat16x8*", "Array[bfloat16x8]"),
    ],
)
def test_pointers_to_cuda_vector_types(text, expected):
    assert repr(cpp_type(text, "p")) == expected


def test_a_vector_type_by_value_is_a_by_value_vector_parameter():
    assert cpp_type("float4", "k: parameter 'v'") is cf.vector(cf.float32, 4)
    assert cpp_type("const uchar4", "k: parameter 'colors'") is cf.vector(cf.uint8, 4)  # Mandelbrot's palette


def test_signature_names_vector_types_and_optional_arrays():
    _, params = parse_signature("k(x: In[uint4], y: Out[float32x4, 2], h: Array[cuforge::float16x8], m: Optional[Out[float32]])")
    assert [repr(t) for _, t in params] == ["In[uint32x4]", "Out[float32x4, 2]", "Array[float16x8]", "Optional[Out[float32]]"]
    with pytest.raises(ParseError, match=r"'float5' \(parameter 'x'\) is not a cuforge dtype such as float32, nor a "
                                         r"vector type such as float32x4"):  # fmt: skip
        parse_signature("k(x: In[float5])")


def test_extern_shared_arrays_in_function_bodies_become_one_array_of_bytes():
    from cuforge._declare.cparse import share_dynamic_shared

    src = """extern __shared__ float at_namespace_scope[];
extern "C" { extern __shared__ int in_extern_c_block[]; }
template <typename T> __global__ void k(T* o) {
    extern __shared__ __align__(32) T s[]; // a comment: extern __shared__ T fake[];
    if (o) { extern __shared__ volatile unsigned long long* ptrs[]; }
}"""
    out, names = share_dynamic_shared(src)
    assert names == ["s", "ptrs"]
    assert out.splitlines()[:2] == src.splitlines()[:2]
    assert out.splitlines()[3] == ("    extern __shared__ __align__(32) unsigned char cuforge_dynamic_smem_[]; T* const s = "
                                   "(T*)cuforge_dynamic_smem_; // a comment: extern __shared__ T fake[];")  # fmt: skip
    assert "volatile unsigned long long** const ptrs = (volatile unsigned long long**)cuforge_dynamic_smem_;" in out
