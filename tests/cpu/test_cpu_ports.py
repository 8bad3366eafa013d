"""CUDA C++ that NVRTC compiles, as ported code (cuda-samples and the like) writes it, built and
run on the CPU backend and checked against NumPy: kernels named like C library functions,
compiler messages that show the user's own lines, and link= sources."""

from __future__ import annotations

import re

import numpy as np
import pytest

import cuforge as cf

# ---------------------------------------------------------------- kernel names

# C library functions (and the entry's own parameter names) a kernel may be named after
NAMES = ("select", "random", "time", "index", "read", "write", "sync", "link", "signal", "L", "first", "last")
NAMED_SOURCE = "\n".join(
    f"__global__ void {name}(int* out, int k) {{ out[threadIdx.x] = k * {i + 1} + (int)threadIdx.x; }}"
    for i, name in enumerate(NAMES)
)


def named(name: str) -> cf.Kernel:
    """The kernel ``name`` of NAMED_SOURCE (all of them are built together, in one library)."""
    annotations = {"out": cf.Out[cf.int32], "k": cf.int32}
    return cf.kernel(type(f"Named_{name}", (), {"__annotations__": annotations, "name": name, "source": NAMED_SOURCE}))


NAMED = {name: named(name) for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_kernels_named_like_c_library_functions(name):
    out = np.zeros(8, np.int32)
    NAMED[name](out, 3, grid=1, block=8, device="cpu")
    np.testing.assert_array_equal(out, 3 * (NAMES.index(name) + 1) + np.arange(8))


# ---------------------------------------------------------------- the compiler's messages


@cf.kernel
class BrokenSource:
    out: cf.Out[cf.int32]
    name = "BrokenSource"
    source = """// line 1
// line 2
__global__ void BrokenSource(int* out) {
    out[0] = undefined_in_source;
}
"""


@cf.kernel
class BrokenBody:
    out: cf.Out[cf.int32]
    preamble = "__device__ int helper() { return undefined_in_preamble; }"
    body = """
    __shared__ undefined_type tile[32];
    out[0] = undefined_in_body + helper();
    """


def excerpt(line: int, text: str, caret: int | None = None) -> str:
    """A line as the compiler's message shows it (in the error's text, indented by 2)."""
    shown = f"\n  {line:>6} | {text}"
    return shown + (f"\n  {'':>6} | {' ' * (caret - 1)}^" if caret else "")


def test_a_source_kernel_s_error_shows_its_own_line():
    with pytest.raises(cf.CompileError) as caught:
        BrokenSource(np.zeros(1, np.int32), grid=1, block=1, device="cpu")
    message = str(caught.value)
    assert re.search(r"\n  BrokenSource\.cu:4:14: error: .undefined_in_source. was not declared", message)
    assert excerpt(4, "    out[0] = undefined_in_source;", caret=14) in message
    assert "// line" not in message


def test_a_body_kernel_s_errors_show_the_body_s_and_the_preamble_s_lines():
    with pytest.raises(cf.CompileError) as caught:
        BrokenBody(np.zeros(1, np.int32), grid=1, block=1, device="cpu")
    message = str(caught.value)
    preamble = excerpt(1, "__device__ int helper() { return undefined_in_preamble; }", caret=34)
    assert re.search(r"\n  BrokenBody\.preamble:1:34: error: [^\n]*" + re.escape(preamble), message)
    assert excerpt(2, "out[0] = undefined_in_body + helper();", caret=10) in message
    # the user's __shared__ line, with no caret: the compiler's columns are those of its rewriting
    shared = excerpt(1, "__shared__ undefined_type tile[32];")
    assert re.search(
        r"\n  BrokenBody\.body:1:\d+: error: .undefined_type. does not name a type" + re.escape(shared) + "\n  Broken", message
    )


# ---------------------------------------------------------------- link= sources


@cf.kernel
class Twice:  # docs/guide/prebuilt.md's example
    x: cf.Array[cf.float32]
    n: cf.int64
    options = cf.CompileOptions(lto=True)
    link = ['extern "C" __device__ float twice(float v) { return 2.0f * v; }']
    preamble = 'extern "C" __device__ float twice(float v);'
    body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) x[i] = twice(x[i]);"


DEVICE_LIBRARY = """
__device__ float multiplyByTwo(float number) { return number * 2.0f; }
__device__ float divideByTwo(float number) { return number * 0.5f; }
"""
WARP_LIBRARY = """
static __device__ float total(float v) { return v; }  // (a static of the same name as the kernel's own)
__device__ float warpSum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return total(v);
}
__device__ unsigned laneOf() { return threadIdx.x % 32; }
"""


@cf.kernel
class SeparateCompilation:
    """cuda-samples' simpleSeparateCompilation: device functions (C++ names) from one link
    source, called directly and through a __device__ function pointer; a warp sum and the
    lane from another, while the kernel's own source names no warp function."""

    v: cf.Array[cf.float32]
    sums: cf.Out[cf.float32]
    lanes: cf.Out[cf.int32]
    n: cf.int32
    block = 64
    link = [DEVICE_LIBRARY, WARP_LIBRARY]
    preamble = """
typedef float (*deviceFunc)(float);
extern __device__ float multiplyByTwo(float number);
extern __device__ float divideByTwo(float number);
extern __device__ float warpSum(float v);
extern __device__ unsigned laneOf();
__device__ deviceFunc dDivideByTwoPtr = divideByTwo;
static __device__ float total(float v) { return -v; }
"""
    body = """
    unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
    float x = tid < (unsigned)n ? v[tid] : 0.0f;
    sums[tid] = total(-warpSum(x));
    lanes[tid] = (int)laneOf();
    if (tid < (unsigned)n) v[tid] = (*dDivideByTwoPtr)(multiplyByTwo(multiplyByTwo(x)));
    """


def test_link_sources_are_compiled_for_the_cpu():
    x = np.arange(100, dtype=np.float32)
    Twice(x, x.size, grid=4, block=32, device="cpu")
    np.testing.assert_array_equal(x, 2 * np.arange(100, dtype=np.float32))


def test_separate_compilation_with_device_function_pointers_and_warp_functions():
    n = 100
    v = np.random.default_rng(9).integers(-50, 50, 128).astype(np.float32)
    before = v.copy()
    sums, lanes = np.zeros(128, np.float32), np.zeros(128, np.int32)
    SeparateCompilation(v, sums, lanes, n, grid=2, device="cpu")
    np.testing.assert_array_equal(v[:n], 2 * before[:n])
    np.testing.assert_array_equal(v[n:], before[n:])
    np.testing.assert_array_equal(sums, np.repeat(np.where(np.arange(128) < n, before, 0).reshape(4, 32).sum(axis=1), 32))
    np.testing.assert_array_equal(lanes, np.arange(128) % 32)


def test_prebuilt_gpu_code_in_link_is_refused_on_the_cpu():
    module = cf.Module(b"\x7fELF" + bytes(60), code_type="cubin")

    @cf.kernel
    class LinksAModule:
        x: cf.Array[cf.float32]
        link = [module]
        preamble = 'extern "C" __device__ float twice(float v);'
        body = "x[threadIdx.x] = twice(x[threadIdx.x]);"

    with pytest.raises(cf.CuforgeError, match=r"LinksAModule: link\[0\] is prebuilt GPU code \(<cuforge\.Module .*>\), which "
                       r"cannot run on the CPU: .* launch the kernel on a GPU \(device='cuda'\)$"):  # fmt: skip
        LinksAModule(np.zeros(4, np.float32), grid=1, block=4, device="cpu")
