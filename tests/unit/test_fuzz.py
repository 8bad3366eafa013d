"""Hypothesis fuzzing of what users write: kernel classes (annotations, names, bodies, Jinja,
type and int parameters) and %%cuda cells' C++ signatures. Every outcome is a working kernel
(it really compiles) or a CuforgeError with a message: never another exception type."""

from __future__ import annotations

import keyword

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cuforge as cf
from cuforge._declare import cparse as _cparse

SETTINGS = settings(max_examples=1000, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
                    database=None)  # fmt: skip

DTYPES = [cf.bool_, cf.int8, cf.int32, cf.int64, cf.uint16, cf.float16, cf.bfloat16, cf.float32, cf.float64, cf.complex64]
GOOD_NAMES = ["x", "y", "n", "a", "out", "ok_name", "count", "alpha"]
BAD_NAMES = ["int", "class", "threadIdx", "_hidden", "for", "grid", "stream", "T", "B", "9lives", "π", "x y", "return",
             "lambda", "device", "cluster"]  # fmt: skip
NAMES = GOOD_NAMES + BAD_NAMES
name = st.one_of(st.sampled_from(GOOD_NAMES), st.sampled_from(GOOD_NAMES), st.sampled_from(GOOD_NAMES), st.sampled_from(BAD_NAMES))
BODIES = [
    "",
    "y[threadIdx.x] = 1;",
    "if (n > 0) { y[0] = 2; }",
    "{ y[0] = 1;",  # unbalanced
    "}}",
    "y[0] = undefined_name;",
    "{{ T.cpp }} t = 0; y[0] = t;",
    "{{ missing }}",
    "{% if %}",
    "{{ B }}",
    "{# comment #} y[0] = 0;",
    "asm(\"trap;\");",
    "int a[{{ B }}]; y[0] = a[0];",
]

annotation = st.one_of(
    st.sampled_from(DTYPES),
    st.sampled_from(["USE_T", "USE_ARRAY_T"]),
    st.builds(lambda d, r: cf.Array[d] if r is None else cf.Array[d, r], st.sampled_from(DTYPES), st.sampled_from([None, 1, 2])),
    st.builds(lambda d: cf.In[d], st.sampled_from(DTYPES)),
    st.builds(lambda d: cf.Out[d], st.sampled_from(DTYPES)),
)
bad_annotation = st.sampled_from(["not a type", 3, None, float, "cf.float32"])


def _outcome(make):
    """A declared kernel or family that compiles, or a CuforgeError; anything else fails."""
    try:
        obj = make()
        kernels = obj.instantiations()[:2] if isinstance(obj, cf.Family) else [obj]
        for k in kernels:
            k.render()
            k.compile("sm_90")
        return "ok"
    except cf.CuforgeError as exc:
        assert str(exc), type(exc)
        return type(exc).__name__


@SETTINGS
@given(
    params=st.dictionaries(name, st.one_of(annotation, annotation, annotation, bad_annotation), max_size=4),
    body=st.sampled_from(BODIES),
    types=st.one_of(st.lists(st.sampled_from(DTYPES), unique=True, min_size=1, max_size=3), st.lists(st.sampled_from(DTYPES), max_size=3)),
    ints=st.one_of(st.lists(st.integers(min_value=1, max_value=64), unique=True, max_size=3),
                   st.lists(st.integers(min_value=-2, max_value=2**31), max_size=3)),
    extra=st.one_of(st.just({}), st.just({}), st.dictionaries(
        st.sampled_from(["block", "grid", "name", "preamble", "cooperative", "cluster", "bogus"]),
        st.sampled_from([0, 64, (8, 8), "n", "T", "k", "#include <nothing.h>", True, (2, 1, 1), 1.5]),
        max_size=2)),
)
def test_kernel_classes_give_a_kernel_or_a_cuforge_error(params, body, types, ints, extra):
    def make():
        ns: dict = {"body": body, **extra}
        if types or any(isinstance(v, str) and v.startswith("USE_") for v in params.values()) or "{{ T" in body:
            ns["T"] = cf.typeparam(*types)
        typed = {"USE_T": lambda: ns["T"], "USE_ARRAY_T": lambda: cf.Array[ns["T"]]}
        ns["__annotations__"] = {k: typed[v]() if isinstance(v, str) and v in typed else v for k, v in params.items()}
        if ints or "{{ B" in body:
            ns["B"] = cf.intparam(*ints)
        return cf.kernel(type("Fuzzed", (), ns))

    _outcome(make)


CPP_TYPES = ["float", "const float*", "float*", "double* __restrict__", "int", "long long", "unsigned", "char*", "bool",
             "T*", "const T* __restrict__", "__half", "float2", "cuFloatComplex", "int&", "std::vector<int>", "void*",
             "struct S*", "volatile int*", "size_t", "float[4]", "", "const", "unsigned long long"]  # fmt: skip


@SETTINGS
@given(
    params=st.lists(st.tuples(st.sampled_from(CPP_TYPES), st.sampled_from(["a", "b", "n", "x", "int", ""])), max_size=4),
    template=st.sampled_from(["", "template <typename T> ", "template <typename T, int N> ", "template <int> "]),
    extern_c=st.booleans(),
    tail=st.sampled_from([" {}", " { }", ";", " {", ""]),
)
def test_cuda_cell_signatures_give_a_kernel_or_a_cuforge_error(params, template, extern_c, tail):
    ipython = pytest.importorskip("cuforge.integrations.ipython")
    signature = ", ".join(f"{t} {n}".strip() for t, n in params)
    prefix = 'extern "C" ' if extern_c else ""
    source = f"{prefix}{template}__global__ void k({signature}){tail}"
    try:
        parsed = _cparse.find_kernels(source)
        for p in parsed:
            targs = ["float"] * len(p.template_params) if p.template_params else None
            if targs is not None and any(kind == "value" for kind, _ in p.template_params):
                targs = ["float" if kind == "type" else "4" for kind, _ in p.template_params]
            k = ipython._make(p, source, cf.CompileOptions(), None, targs)
            k.compile("sm_90")
    except cf.CuforgeError as exc:
        assert str(exc)


def test_the_name_pool_covers_cpp_keywords_and_python_ones():
    assert any(keyword.iskeyword(n) for n in NAMES) and "class" in NAMES and "threadIdx" in NAMES

