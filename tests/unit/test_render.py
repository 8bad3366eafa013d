"""Rendering bodies and templates into CUDA C++."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cuforge as cf
from cuforge import _config
from cuforge._declare.render import CppBool, Snippet, dedent_body, environment

from ..conftest import ROOT_TEMPLATES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_body_is_dedented_and_placed_under_line_directives(saxpy):
    src = saxpy.render()
    assert '#line 1 "Saxpy.body"\nlong long i = blockIdx.x' in src
    assert "__global__ void Saxpy(float a, const float* __restrict__ x, float* y, long long n)\n{\n" in src
    assert src == saxpy.render()  # rendering is deterministic


def test_dedent_counts_lines_from_the_first_code_line():
    assert dedent_body("\n    a;\n      b;\n    ") == "a;\n  b;\n"
    assert dedent_body("a;") == "a;\n"


def test_jinja_sees_name_and_params_and_headers_follow_types():
    @cf.kernel
    class Half:
        x: cf.Array[cf.float16]
        c: cf.complex64
        preamble = "__device__ int twice_{{ name }}(int v) { return 2 * v; }"
        body = """
        // {{ name }} has {{ params | length }} params; x is {{ params.x.dtype }}
        x[0] = x[0];
        """

    src = Half.render()
    assert src.index("#include <cuda_fp16.h>") < src.index("#include <cuforge_complex.cuh>") < src.index("__global__")
    assert "// Half has 2 params; x is __half" in src
    assert '#line 1 "Half.preamble"\n__device__ int twice_Half(int v)' in src


def test_missing_variable_is_a_template_error_naming_kernel_and_line():
    @cf.kernel
    class Undef:
        x: cf.Out[cf.float32]
        body = """
        x[0] = 1;
        x[1] = {{ TILE }};
        """

    with pytest.raises(
        cf.TemplateError, match=r"Undef: cannot render body line 2: 'TILE' is undefined.*\n +2 \| x\[1\] = \{\{ TILE \}\};"
    ):
        Undef.render()


def test_no_autoescape_in_cpp():
    @cf.kernel
    class Amp:
        x: cf.Out[cf.int32]
        body = "{% set op = '<<' %}x[0] = 1 {{ op }} 2 && 1;"

    assert "x[0] = 1 << 2 && 1;" in Amp.render()


def test_whole_kernel_template_from_a_user_directory(scale):
    src = scale.render()
    assert (
        'extern "C" __global__ void scale(float factor, const float* __restrict__ x, float* __restrict__ y, long long n)' in src
    )


def test_template_path_setting_and_missing_template():
    class_ns = {
        "__annotations__": {"x": cf.Out[cf.float32]},
        "template": "scale.cu.j2",
    }
    with _config.scope(template_path=ROOT_TEMPLATES):
        k = cf.kernel(type("FromPath", (), dict(class_ns)))
    assert "FromPath" in k.render()
    missing = cf.kernel(type("Missing", (), {**class_ns, "template": "nope.cu.j2"}))
    with pytest.raises(cf.TemplateError, match=r"Missing: template 'nope.cu.j2' not found in .*CUFORGE_TEMPLATE_PATH"):
        missing.render()


def test_a_preamble_naming_a_template_parameter_gets_a_hint_that_says_why_it_is_not_there():
    @cf.kernel
    class Shared:
        T = cf.typeparam(cf.float32, cf.float64)
        x: cf.Array[T]
        preamble = "__device__ {{ T }} twice({{ T }} v) { return v + v; }"
        body = "x[0] = twice(x[0]);"
        grid = 1

    with pytest.raises(cf.TemplateError, match=r"'T' is undefined; a preamble is shared by every instantiation, so only "
                                               r"`name` and `params` are defined in it, not template parameters"):  # fmt: skip
        Shared[cf.float32].render()


def _bounded(**ns):
    ns.setdefault("__annotations__", {"c": cf.Out[cf.float32]})
    ns.setdefault("body", "c[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;")
    return cf.kernel(type("Bounded", (), ns))


def test_launch_bounds_are_rendered_into_the_declaration_and_compiled():
    plain = _bounded(launch_bounds=(256, 1), block=256)
    assert "__global__ void __launch_bounds__(256, 1) Bounded(float* __restrict__ c)" in plain.render()
    assert plain.compile("sm_90").resources()["max_threads"] == 256
    assert "max_threads" not in _bounded().compile("sm_90").resources()  # no bounds, no figure


def test_launch_bounds_over_template_parameters_differ_per_instantiation():
    tiles = staticmethod(lambda BM, BN, TM, TN: (BM * BN) // (TM * TN))
    sgemm = _bounded(BM=cf.intparam(128, 64), BN=cf.intparam(128, 64), TM=cf.intparam(8), TN=cf.intparam(8),
                     block=tiles, launch_bounds=staticmethod(lambda BM, BN, TM, TN: ((BM * BN) // (TM * TN), 1)))  # fmt: skip
    big, small = sgemm[128, 128, 8, 8], sgemm[64, 64, 8, 8]
    assert "__global__ void __launch_bounds__(256, 1) Bounded<128, 128, 8, 8>(float* __restrict__ c)" in big.render()
    assert "__launch_bounds__(64, 1) Bounded<64, 64, 8, 8>" in small.render()
    assert big.compile("sm_90").resources()["max_threads"] == 256
    assert small.compile("sm_90").resources()["max_threads"] == 64
    by_name = _bounded(B=cf.intparam(128, 512), block="B", launch_bounds=("B", 2))
    assert "__launch_bounds__(512, 2) Bounded<512>" in by_name[512].render()
    kept = _bounded(B=cf.intparam(64, 128), L=cf.intparam(64, 128), block="B", launch_bounds="L",
                    restrict=staticmethod(lambda B, L: B <= L))  # fmt: skip
    assert [i.template_args for i in kept.instantiations()] == [{"B": 64, "L": 64}, {"B": 64, "L": 128}, {"B": 128, "L": 128}]


@pytest.mark.parametrize(
    "ns, match",
    [
        ({"launch_bounds": 2048}, r"Bounded: launch_bounds = 2048: max threads per block is at most 1024, got 2048"),
        (
            {"launch_bounds": (256, 1, 2, 3)},
            r"Bounded: launch_bounds = \(256, 1, 2, 3\): expects an int \(max threads per "
            r"block\) or a tuple of 1 to 3 positive ints",
        ),
        (
            {"B": cf.intparam(64, 2048), "launch_bounds": staticmethod(lambda B: B)},
            r"Bounded: launch_bounds = the function \S*<lambda> gave 2048 for B=2048: max threads per block is at most 1024",
        ),
        ({"launch_bounds": "C"}, r"Bounded: launch_bounds names 'C', which is not an intparam of this class"),
        (
            {"launch_bounds": 128, "block": 256},
            r"Bounded: block=\(256, 1, 1\) has more threads than launch_bounds=\(128,\) "
            r"allows \(128 per block\); make the block smaller or the bound larger",
        ),
        (
            {"B": cf.intparam(128, 256), "block": "B", "launch_bounds": 128},
            r"Bounded: block=\(256, 1, 1\) for B=256 has more threads than launch_bounds=\(128,\) allows \(128 per "
            r"block\); make the block smaller or the bound larger, or leave B=256 out with restrict",
        ),
        (
            {"B": cf.intparam(64, 128), "L": cf.intparam(64, 128), "block": "B", "launch_bounds": staticmethod(lambda L: L)},
            r"Bounded: block=\(128, 1, 1\) for B=128, L=64 has more threads than launch_bounds=\(64,\) allows",
        ),
        (
            {"launch_bounds": 128, "name": "k", "source": "__global__ void k(float* c) {}", "body": None},
            r"Bounded: launch_bounds applies to body= kernels, whose __global__ declaration cuforge writes; a source= kernel "
            r"writes __launch_bounds__\(...\) in its own C\+\+",
        ),
    ],
)
def test_launch_bounds_mistakes_fail_at_definition(ns, match):
    with pytest.raises(cf.DeclarationError, match=match):
        _bounded(**ns)


# Bodies of text and `{{ }}` placeholders, some of which Jinja reads as more than a name: the
# substitution path and Jinja must give the same text, or both fail.
_PIECES = st.sampled_from(["x = ", "{{ BLOCK }}", "{{T}}", "{{\tname\n}}", "{{ FLAG }}", "{{ true }}", "{{ range }}",
                           "{{ MISSING }}", "{{ BLOCK|int }}", "{{- BLOCK }}", "{", "}", "}}", "{{", "{%", "{#", "\r\n",
                           "\n", " ", ";", "a{", "%}", "#}"])  # fmt: skip
_CONTEXT = {"BLOCK": 256, "T": "float", "name": "K", "FLAG": CppBool(True)}


def _by_jinja(text: str) -> str | None:
    import jinja2

    if not any(mark in text for mark in ("{{", "{%", "{#")):
        return text  # (plain C++ is never given to Jinja)
    try:
        out = environment().from_string(text).render(_CONTEXT)
    except jinja2.TemplateError:
        return None
    return out if out.endswith("\n") else out + "\n"


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=12))
def test_a_body_that_only_substitutes_renders_as_jinja_renders_it(pieces):
    raw = "".join(pieces)
    try:
        ours: str | None = Snippet.parse("K", "body", raw).render(_CONTEXT)
    except cf.TemplateError:
        ours = None
    assert ours == _by_jinja(dedent_body(raw))


def test_a_family_substituting_values_renders_without_jinja_and_keys_follow_the_values(tmp_path):
    """The README's Axpy: each instantiation's source, and so its cache key, has its own
    value, and Jinja is not imported to render it."""
    code = (
        f"import sys\nsys.path.insert(0, {ROOT!r})\nimport cuforge as cf\nfrom tests.warm_kernels import Axpy\n"
        "from cuforge._compile import identity\n"
        "for block in (256, 128):\n"
        "    ck = Axpy[cf.float32, block]\n"
        "    unit = ck._compile_unit()\n"
        "    print(f'(long long){block} + threadIdx.x' in unit.source,\n"
        "          identity.key_of(unit, ('-arch=sm_90',), unit.options))\n"
        "print('jinja2' in sys.modules)\n"
    )
    env = {**os.environ, "CUFORGE_CACHE_DIR": str(tmp_path)}
    lines = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout.split("\n")
    (found256, key256), (found128, key128) = lines[0].split(), lines[1].split()
    assert found256 == found128 == "True"
    assert key256 != key128
    assert lines[2] == "False"
