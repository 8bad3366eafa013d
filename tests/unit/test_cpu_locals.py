"""Which local variables a checked CPU build follows (``cuforge._cpu.locals``): a guard on the
declaration's own line for each one declared without an initializer in a function's block,
none where the checker could miss a write or C++ would refuse the guard. (Kernels that run
checked with such variables: tests/cpu/test_cpu_check*.py.)"""

from __future__ import annotations

import pytest

from cuforge._cpu.locals import follow_locals
from cuforge._cpu.translate import masked


def followed(source: str) -> str:
    out = follow_locals(source, masked(source))
    assert out.count("\n") == source.count("\n")  # (the body's lines stay where they were)
    return out


def test_each_local_without_an_initializer_gets_a_guard_on_its_line():
    source = (
        "__global__ void k(const float* x, float* y, int n) {\n"
        "  float acc;\n"
        "  int h[4], m;\n"
        "  unsigned long long t;\n"
        "  float4 v;\n"
        "  float ok = 0.f;\n"
        "  for (int i = 0; i < n; ++i) { float w; w = x[i]; acc += w; }\n"
        "}\n"
    )
    lines = followed(source).splitlines()
    assert lines[1] == "  float acc; CF_LOCAL(acc);"
    assert lines[2] == "  int h[4], m; CF_LOCAL(h); CF_LOCAL(m);"
    assert lines[3] == "  unsigned long long t; CF_LOCAL(t);"
    assert lines[4] == "  float4 v; CF_LOCAL(v);"
    assert lines[5] == "  float ok = 0.f;"
    assert "{ float w; CF_LOCAL(w); w = x[i];" in lines[6]


@pytest.mark.parametrize(
    "source",
    [
        # a struct's members, a namespace's variables, an initializer
        "struct S { float a; int b[2]; };\nnamespace n { float g; }\n",
        "__device__ float f(float x) { float s, c; sincosf(x, &s, &c); return s + c; }",  # address taken
        "__device__ float f(const float* p) { float b[4]; float* q = b; q[0] = *p; return b[0]; }",  # array decays
        # passed to a function the source defines, in a source that calls a C library writer
        "__device__ void g(float* v) { v[0] = 1; }\n"
        "__device__ float f(float x) { float b[2], s, c; g(b); sincosf(x, &s, &c); return b[0] + s + c; }",
        "__global__ void k(int c, float* y) { switch (c) { case 0: float v; v = 1; y[0] = v; } }",  # a case jumps past
        "__global__ void k(int c, float* y) { float v; if (c) goto out; v = 1; y[0] = v; out: return; }",  # goto
        "__global__ void k(float* y) { // float v;\n y[0] = 1; }",  # a comment
        "__global__ void k(float* y) { float* p; static float s; volatile int f; y[0] = 1; }",  # pointer, static, volatile
        "__global__ void k(float* y) { return x; }",  # a keyword is no type
        # a shuffle's source, undefined in the lanes that do not supply it (warp-aggregated atomics)
        "__global__ void k(int* c) { int base; if (threadIdx.x == 0) base = atomicAdd(c, 32);\n"
        " base = __shfl_sync(0xffffffffu, base, 0); c[1 + threadIdx.x] = base; }",
    ],
)
def test_no_guard_where_a_write_could_be_missed_or_cxx_would_refuse_it(source):
    assert "CF_LOCAL" not in followed(source)


def test_an_array_passed_whole_to_a_seen_function_is_followed():
    """A helper of the source, memset/memcpy/memmove (the checked build's own) and a CUB
    collective's Load write what they are given where the checker sees it."""
    source = (
        "__device__ void fill(const float* x, float* v, int n) { for (int k = 0; k < n; ++k) v[k] = x[k]; }\n"
        "__global__ void k(const float* x, float* y) {\n"
        "  float a[4]; fill(x, a, 2);\n"
        "  float b[4]; memcpy(b, x, 8);\n"
        "  int c; memcpy(&c, x, 4);\n"
        "  float d[4]; BL(t).Load(x, d, 3);\n"
        "  float e[4]; other(e);\n"
        "  y[0] = a[3] + b[3] + c + d[3] + e[0];\n"
        "}\n"
    )
    lines = followed(source).splitlines()
    assert [line.count("CF_LOCAL") for line in lines[2:7]] == [1, 1, 1, 1, 0]  # (other() is no function of the source)


def test_a_template_function_and_a_lambda_are_blocks():
    source = (
        "template <class T> __device__ T sum(const T* x, int n) { T acc; for (int i = 0; i < n; ++i) acc += x[i]; return acc; }\n"
        "__global__ void k(float* y) { auto f = [&](int i) { float t; t = y[i]; return t; }; y[0] = f(1); }\n"
    )
    out = followed(source)
    assert "T acc; CF_LOCAL(acc);" in out
    assert "float t; CF_LOCAL(t);" in out
