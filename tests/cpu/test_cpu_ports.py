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
