"""A checked kernel whose memory is reached only by indexing its array parameters is built
without ThreadSanitizer's instrumentation, its indexes checked inline (cuforge/_cpu/indexed.py,
cuforge/cpu_check.h): which kernels take that build, and that it reports what the instrumented
build reports, at the same lines, and computes what an unchecked launch computes."""

from __future__ import annotations

import re

import numpy as np
import pytest

import cuforge as cf
from cuforge._cpu import library
from cuforge._cpu.indexed import THREAD, rewrite

from ..conftest import Saxpy

SIGNATURE = "__global__ void K(float a, const float* __restrict__ x, float* y, long long n, const int* idx)\n{\n"
BODY = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"


def rendered(body: str) -> str:
    """A program as cuforge renders a class's body, with ``#line`` directives."""
    return f'// generated\n#line 1 "K.cu"\n{SIGNATURE}#line 1 "K.body"\n{BODY}{body}\n}}\n'


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("if (i < n) y[i] = a * x[i] + y[i];",
         "if (i < n) cuforge_cpu::check_ref<2>(y, i) = a * cuforge_cpu::check_ld<1>(x, i) + cuforge_cpu::check_ld<2>(y, i);"),
        ("for (long long j = i; j < n; j += blockDim.x * gridDim.x) { y[j] += x[idx[j]]; ++y[j]; y[j]--; }",
         "for (long long j = i; j < n; j += blockDim.x * gridDim.x) { cuforge_cpu::check_ref<2>(y, j) += "
         "cuforge_cpu::check_ld<1>(x, cuforge_cpu::check_ld<4>(idx, j)); ++cuforge_cpu::check_ref<2>(y, j); "
         "cuforge_cpu::check_ref<2>(y, j)--; }"),
        ("if (i < n) y[i] = fmaxf(x[i & 7], 0.f) * static_cast<float>(n);",
         "if (i < n) cuforge_cpu::check_ref<2>(y, i) = fmaxf(cuforge_cpu::check_ld<1>(x, i & 7), 0.f) * "
         "static_cast<float>(n);"),
        ("const float v = float(x[0]); y[0] = (float)(int)v;",
         "const float v = float(cuforge_cpu::check_ld<1>(x, 0)); cuforge_cpu::check_ref<2>(y, 0) = (float)(int)v;"),
        ("unsigned int t = threadIdx.x; const float v = x[t] > 0 ? x[t] : -x[t]; y[t] = v;",
         "unsigned int t = threadIdx.x; const float v = cuforge_cpu::check_ld<1>(x, t) > 0 ? "
         "cuforge_cpu::check_ld<1>(x, t) : -cuforge_cpu::check_ld<1>(x, t); cuforge_cpu::check_ref<2>(y, t) = v;"),
    ],
)  # fmt: skip
def test_indexes_into_array_parameters_become_checked_accesses_on_their_line(body, expected):
    out = rewrite(rendered(body))
    assert out is not None
    lines, before = out.split("\n"), rendered(body).split("\n")
    assert len(lines) == len(before)  # (every line where it was)
    assert lines[:2] + lines[4:6] == before[:2] + before[4:6]
    # the kernel inlined into the loop over its threads, which finds the running thread once
    assert lines[2] == before[2].replace("__global__ ", "__global__ __attribute__((always_inline)) inline ")
    assert lines[3] == f"{{ const cuforge_cpu::indexed_thread {THREAD};"
    assert lines[6] == re.sub(r"(check_(?:ld|ref)<\d>)\(", rf"\1({THREAD}, ", expected)


@pytest.mark.parametrize(
    "body",
    [
        "float v; if (i < n) v = x[i]; y[0] = v;",  # a local left unset: followed by the instrumented build
        "float t[4] = {0}; y[0] = t[1];",  # a local array
        "const float* p = x + i; y[0] = p[0];",  # a pointer made
        "y[0] = *x;",
        "float* p = &y[i]; *p = 1;",
        "__shared__ float s[32]; s[0] = x[0]; __syncthreads(); y[0] = s[0];",
        "atomicAdd(&y[0], 1.f);",
        "y[0] = __shfl_sync(0xffffffff, x[0], 0);",
        'printf("%f", x[0]);',
        "int j = 1, k = 2; y[j] = x[k];",  # two names declared at once
        "(i ? y[0] : y[1]) = 2;",  # a conditional's element assigned
        "auto v = x[0]; y[0] = v;",
        "y[0] = helper(x[0]);",  # a function the source defines may reach memory
        "y[0] = sizeof(x);",
        "if (i < n) y[i, i] = 2;",  # a comma expression as an index
        "if (i < n) (y[i])++;",  # a parenthesized place written
        "float v = 1.f; if (i < n) { float (v); y[i] = v; }",  # a local declared in parentheses, unset
        "float v = 0; { int const v; y[0] = v; }",
        "float v = v + 1; y[0] = v;",  # its own initializer reads it
    ],
)
def test_a_kernel_that_reaches_memory_another_way_is_built_instrumented(body):
    assert rewrite(rendered(body)) is None


def test_a_source_of_more_than_one_function_is_built_instrumented():
    source = rendered("y[i] = x[i];").replace('#line 1 "K.cu"\n', '#line 1 "K.cu"\n__device__ float twice(float v) { return 2 * v; }\n')
    assert rewrite(source) is None


@pytest.fixture
def builds(monkeypatch):
    """The kinds of CPU builds the test's launches made ("", "checked", "indexed")."""
    made: list[str] = []
    real = library._build

    def spy(*args, **kwargs):
        made.append(args[7])
        return real(*args, **kwargs)

    monkeypatch.setattr(library, "_build", spy)
    return made


@cf.kernel
class Update:
    """Compound assignments and increments: each reads and writes as the built-in one does."""

    x: cf.In[cf.float32]
    y: cf.Array[cf.float32]
    k: cf.Array[cf.int32]
    n: cf.int64
    block = 64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) { y[i] += 0.1; y[i] *= x[i]; k[i]++; ++k[i]; k[i] <<= 2; k[i] -= x[i]; }
    """


@cf.kernel
class ShiftLeft:
    """Each thread reads its right neighbour's element and writes its own: a race between threads."""

    y: cf.Array[cf.float32]
    n: cf.int64
    block = 64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i + 1 < n) y[i] = y[i + 1];
    """


@cf.kernel
class Scale:
    """An off-by-one bound: the last thread writes one past the end."""

    x: cf.In[cf.float32]
    out: cf.Out[cf.float32]
    n: cf.int64
    block = 64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i <= n) out[i] = 2 * x[i < n ? i : 0];
    """


@cf.kernel
class Accumulate:
    """Reads its Out argument before writing it: undefined on a GPU."""

    x: cf.In[cf.float32]
    out: cf.Out[cf.float32]
    n: cf.int64
    block = 64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = out[i] + x[i];
    """


def test_a_correct_kernel_computes_what_an_unchecked_launch_does(builds):
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal(1000, dtype=np.float32), rng.standard_normal(1000, dtype=np.float32)
    want = np.float32(1.5) * x + y
    Saxpy._cpu_check = None  # (built again, whichever test built it first)
    Saxpy(1.5, x, y, 1000, device="cpu", check=True)
    np.testing.assert_array_equal(y, want)
    assert builds == ["indexed"]


def test_compound_assignments_and_increments_compute_what_cpp_does(builds):
    rng = np.random.default_rng(6)
    x = rng.integers(1, 4, 300).astype(np.float32)
    y0, k0 = rng.standard_normal(300, dtype=np.float32), rng.integers(-50, 50, 300).astype(np.int32)
    y, k = y0.copy(), k0.copy()
    Update(x, y, k, 300, device="cpu", check=True)
    yu, ku = y0.copy(), k0.copy()
    Update(x, yu, ku, 300, device="cpu", check=False)
    np.testing.assert_array_equal(y, yu)
    np.testing.assert_array_equal(k, ku)
    np.testing.assert_array_equal(y, ((y0.astype(np.float64) + 0.1).astype(np.float32) * x))
    np.testing.assert_array_equal(k, ((k0 + 2) << 2) - x.astype(np.int32))
    assert builds[0] == "indexed"


def test_a_race_between_threads_is_reported_at_its_line(builds):
    y = np.arange(500, dtype=np.float32)
    with pytest.raises(cf.RaceError, match=r"ShiftLeft\.body, line 2: .*") as info:
        ShiftLeft(y, 500, device="cpu", check=True)
    assert "parameter 'y'" in str(info.value) and "block (" in str(info.value)
    assert builds == ["indexed"]


def test_an_out_of_bounds_write_is_refused_before_it_happens(builds):
    x = np.ones(100, np.float32)
    out = np.full(100, 7, np.float32)
    with pytest.raises(cf.OutOfBoundsError, match=r"index 100, outside its extent of 100 .*Scale\.body, line 2: "):
        Scale(x, out, 100, device="cpu", check=True)
    assert builds == ["indexed"]


def test_an_uninitialized_read_of_an_out_argument_is_reported(builds):
    x = np.ones(100, np.float32)
    with pytest.raises(cf.UninitializedReadError, match=r"Accumulate\.body, line 2: "):
        Accumulate(x, np.zeros(100, np.float32), 100, device="cpu", check=True)
    assert builds == ["indexed"]


def test_aliased_arguments_are_checked_as_one_buffer(builds):
    Saxpy._cpu_check = None
    buf = np.arange(200, dtype=np.float32)
    with pytest.raises(cf.RaceError, match=r"one buffer with"):
        Saxpy(2.0, buf[1:], buf[:-1], 199, device="cpu", check=True)  # x[i] is y[i + 1]: another thread's element
    assert builds == ["indexed"]
