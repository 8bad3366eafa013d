"""Declaring kernels: what a class may say, and the errors raised when it is defined."""

from __future__ import annotations

import pytest

import cuforge as cf


def test_signature_is_read_once_in_order(saxpy):
    assert saxpy.signature.names == ("a", "x", "y", "n")
    assert saxpy.signature.describe("Saxpy") == "Saxpy(a: float32, x: In[float32], y: Array[float32], n: int64)"
    assert saxpy.signature.cpp() == "float a, const float* __restrict__ x, float* y, long long n"
    assert repr(saxpy) == "<cuforge.Kernel Saxpy(a: float32, x: In[float32], y: Array[float32], n: int64)>"
    assert saxpy.__doc__ == "y <- a*x + y" and saxpy.__name__ == "Saxpy"
    assert type(saxpy).__module__ == "cuforge"


def test_string_annotations_are_resolved():
    @cf.kernel
    class Lazy:
        x: "cf.Out[cf.int32]"  # noqa: UP037 (a quoted annotation under `from __future__ import annotations`)
        body = "x[0] = 1;"

    assert repr(Lazy.signature.params[0].type) == "Out[int32]"


def test_decorator_with_options_and_name():
    @cf.kernel(name="renamed", options=cf.CompileOptions(fast_math=True))
    class K:
        x: cf.Out[cf.float32]
        body = "x[0] = 1.0f;"

    assert K.name == "renamed" and K.options.fast_math
    assert "__global__ void renamed(float* __restrict__ x)" in K.render()


def _declare(ns: dict, annotations: dict | None = None) -> cf.Kernel:
    cls = type("Bad", (), {"__annotations__": annotations or {"x": cf.Out[cf.float32]}, **ns})
    return cf.kernel(cls)


@pytest.mark.parametrize(
    "ns, annotations, match",
    [
        ({}, None, r"Bad: a kernel class needs exactly one of body .* found none"),
        ({"body": "x;", "source": "x"}, None, r"exactly one of body .* found \['body', 'source'\]"),
        ({"body": 3}, None, r"Bad: body must be a string, got int"),
        ({"body": "x;"}, {"x": float}, r"parameter 'x' has annotation <class 'float'>; expected a cuforge type"),
        ({"body": "x;"}, {"x": "cf.float33"}, r"Bad: cannot evaluate the annotations"),
        ({"body": "x;"}, {"int": cf.int32}, r"parameter name 'int' cannot be used in C\+\+"),
        ({"body": "x;"}, {"threadIdx": cf.int32}, r"parameter name 'threadIdx' cannot be used"),
        ({"body": "x;"}, {"_x": cf.int32}, r"leading underscore"),
        ({"body": "x;", "blocks": 128}, None, r"unknown class attribute 'blocks'"),
        ({"body": "x;", "options": {"std": "c++17"}}, None, r"options must be a cuforge.CompileOptions"),
        ({"body": "x;", "name": "1x"}, None, r"name must be a C\+\+ identifier, got '1x'"),
        ({"source": "__global__ void k(float* x) {}"}, None, r"a source= kernel needs name = "),
        ({"body": "x;", "block": 2048}, None, r"block\[0\] expects an int from 1 to 1024, got 2048"),
        ({"body": "x;", "grid": "m"}, None, r"grid = 'm' names no parameter; the parameters are x"),
        ({"body": "x;", "grid": lambda q: 1}, None, r"the grid function asks for q"),
        ({"body": "{% if %}"}, None, r"Bad: cannot render body line 1: Expected an expression"),
    ],
)
def test_declaration_errors(ns, annotations, match):
    with pytest.raises(cf.DeclarationError if "render" not in match else cf.TemplateError, match=match):
        _declare(ns, annotations)


def test_grid_needs_a_size_when_there_are_no_arrays():
    """The fix is on the class: grid= at launch cannot help a class that is never made."""
    with pytest.raises(cf.DeclarationError, match=r"Bad: with no array parameter there is nothing to size the grid by, and a "
                                                  r"class must say how before it can be launched; set grid on the class: "
                                                  r"grid = 'n' \(the threads to cover\), a fixed grid \(grid = 1\) or a "
                                                  r"function of the arguments \(grid = lambda n: \.\.\.\)$"):  # fmt: skip
        _declare({"body": "n;"}, {"n": cf.int32})
    with pytest.raises(cf.DeclarationError, match=r"set grid on the class: a fixed grid \(grid = 1\)"):
        _declare({"body": "f;"}, {"f": cf.float32})
    for grid in ("n", 1, lambda n: n):  # each fix the message names declares the kernel
        _declare({"body": "n;", "grid": grid}, {"n": cf.int32})


def test_grid_by_float_parameter_is_rejected():
    with pytest.raises(cf.DeclarationError, match=r"must name an integer or array parameter"):
        _declare({"body": "f;", "grid": "f"}, {"f": cf.float32, "x": cf.Out[cf.float32]})


def test_decorating_a_function_is_an_error():
    with pytest.raises(cf.DeclarationError, match=r"decorates a class"):
        cf.kernel(lambda: None)  # type: ignore[arg-type]


def test_helpers_on_the_class_are_allowed():
    @cf.kernel
    class WithGrid:
        n: cf.int32
        block = (16, 16)
        body = "n;"

        @staticmethod
        def grid(n, block):
            return (n // block[0] + 1, 1)

    assert WithGrid._plan.block == (16, 16, 1)


def test_a_misspelt_class_attribute_is_refused_with_the_closest_name_functions_included():
    with pytest.raises(cf.DeclarationError, match=r"unknown class attribute 'gird'; did you mean 'grid'\?"):

        @cf.kernel
        class Typo:
            x: cf.Array[cf.float32]
            body = "x[0] = 1;"

            @staticmethod
            def gird(x):  # a function: ignored silently before
                return (1,)

    @cf.kernel
    class Helper:  # a name starting with _ is the user's own
        x: cf.Array[cf.float32]
        body = "x[0] = 1;"

        @staticmethod
        def _size(x):
            return 1

    assert Helper.name == "Helper"
