"""Kernel families: indexing, instantiation, inference errors, batched compiles (real NVRTC)."""

from __future__ import annotations

import numpy as np
import pytest

import cuforge as cf


@cf.kernel
class Axpy:
    T = cf.typeparam(cf.float16, cf.float32, cf.float64)
    BLOCK = cf.intparam(256, 128, 512, 1024)
    a: T
    x: cf.In[T]
    y: cf.Array[T]
    n: cf.int64
    body = """
    long long i = blockIdx.x * (long long){{ BLOCK }} + threadIdx.x;
    // {{ T.name }}: {{ T.itemsize }} bytes, float: {{ T.is_float }}
    if (i < n) y[i] = a * x[i] + y[i];
    """


@pytest.fixture(scope="module")
def axpy_sm90():
    """The whole family, compiled once for the module."""
    before = cf.cache_stats().compiles
    compiled = Axpy.precompile(arch="sm_90")
    return compiled, cf.cache_stats().compiles - before


def test_twelve_instantiations_compile_in_one_nvrtc_program(axpy_sm90):
    compiled, programs = axpy_sm90
    assert programs == 1
    assert len(compiled) == 12
    assert len({c.lowered_name for c in compiled}) == 12
    assert all(c.cubin[:4] == b"\x7fELF" for c in compiled)
    assert compiled[0].lowered_name == "_Z4AxpyI6__halfLi256EEvT_PKS1_PS1_x"
    by_expr = {c.name_expression: c for c in compiled}
    assert by_expr["Axpy<double, 512>"].lowered_name == "_Z4AxpyIdLi512EEvT_PKS0_PS0_x"
    # Each instantiation is now a memory hit, alone or in a batch.
    before = cf.cache_stats().compiles
    assert Axpy[cf.float64, 512].compile(arch="sm_90") is by_expr["Axpy<double, 512>"]
    assert Axpy.precompile(arch="sm_90") == compiled
    assert cf.cache_stats().compiles == before


def test_indexing_defaults_and_instantiate():
    k = Axpy[cf.float64, 512]
    assert isinstance(k, cf.Kernel) and k.name_expression == "Axpy<double, 512>"
    assert k.template_args == {"T": cf.float64, "BLOCK": 512}
    assert Axpy[cf.float64] is Axpy[cf.float64, 256] is Axpy.instantiate(T=cf.float64)
    assert Axpy.instantiate(BLOCK=1024) is Axpy[cf.float16, 1024]
    assert Axpy[np.float32] is Axpy[cf.float32]
    assert repr(k) == "<cuforge.Kernel Axpy<double, 512>(a: float64, x: In[float64], y: Array[float64], n: int64)>"
    assert repr(Axpy) == "<cuforge.Family Axpy[T in (float16, float32, float64), BLOCK in (256, 128, 512, 1024)]>"


def test_instantiations_in_declaration_order():
    exprs = [k.name_expression for k in Axpy.instantiations()]
    assert exprs[:5] == ["Axpy<__half, 256>", "Axpy<__half, 128>", "Axpy<__half, 512>", "Axpy<__half, 1024>", "Axpy<float, 256>"]
    assert exprs[-1] == "Axpy<double, 1024>" and len(exprs) == 12


def test_template_values_reach_jinja_and_cpp():
    src = Axpy[cf.float64, 512].render()
    assert "template <typename T, int BLOCK>\n__global__ void Axpy(T a, const T* __restrict__ x, T* y, long long n);" in src
    assert "template <>\n__global__ void Axpy<double, 512>(double a, const double* __restrict__ x, double* y, long long n)" in src
    assert "using T = double; [[maybe_unused]] constexpr int BLOCK = 512;" in src
    assert "(long long)512 + threadIdx.x" in src and "// float64: 8 bytes, float: True" in src
    assert '#line 1 "Axpy<double, 512>.body"' in src


@pytest.mark.parametrize(
    "index, match",
    [
        ((cf.int32,), r"^Axpy: template parameter T allows float16, float32, float64; got cuforge.int32"),
        ((cf.float32, 64), r"^Axpy: template parameter BLOCK allows 256, 128, 512, 1024; got 64"),
        ((cf.float32, "256"), r"BLOCK allows .*; got '256'"),
        ((cf.float32, 256, 1), r"^Axpy\[\.\.\.\] takes at most 2 values \(T, BLOCK\), got 3"),
    ],
)
def test_indexing_outside_the_declared_sets(index, match):
    with pytest.raises(cf.DeclarationError, match=match):
        Axpy[index]


def test_instantiate_with_unknown_name():
    with pytest.raises(cf.DeclarationError, match=r"unknown template parameter\(s\) TILE; the family's are T, BLOCK"):
        Axpy.instantiate(TILE=16)


@pytest.mark.parametrize(
    "x, y, match",
    [
        (
            np.ones(4, np.int32),
            np.ones(4, np.int32),
            r"^Axpy: argument 'x' sets T, which allows float16, float32, float64; got an array of int32; cast it to "
            r"one of those \(e.g. x.astype\(numpy.float16\)\): the family has no other instantiations\Z",
        ),
        (
            np.ones(4, np.float32),
            np.ones(4, np.float64),
            r"^Axpy: arguments 'x' \(float32\) and 'y' \(float64\) must share T; cast one of them",
        ),
        (2.0, np.ones(4, np.float32), r"^Axpy: argument 'x' sets T, .*; got float 2.0"),
    ],
)
def test_inference_errors(x, y, match):
    with pytest.raises(cf.ArgumentTypeError, match=match):
        Axpy(2.0, x, y, 4)


def test_the_suggested_cast_is_all_that_fits_indexing_is_refused_too():
    with pytest.raises(cf.ArgumentTypeError, match=r"cast it to one of those"):
        Axpy(2.0, np.ones(4, np.int32), np.ones(4, np.int32), 4)
    with pytest.raises(cf.DeclarationError, match=r"template parameter T allows float16, float32, float64; got cuforge.int32"):
        Axpy[cf.int32]


@cf.kernel
class Rotate:
    T = cf.typeparam(cf.vector(cf.float16, 2), cf.float32, cf.vector(cf.float32, 4), cf.vector(cf.float32, 2))
    x: cf.In[T]
    y: cf.Out[T]
    n: cf.int64
    body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] = x[i];"


@pytest.mark.parametrize(
    ("dtype", "shape", "expected"),
    [
        (np.float16, (8, 2), "Rotate<__half2>"),
        (np.float32, (8, 4), "Rotate<float4>"),
        (np.float32, (8, 2), "Rotate<float2>"),  # float32 and float2 both fit: the last dimension says vectors
        (np.float32, (8,), "Rotate<float>"),
        (np.float32, (3, 8, 4), "Rotate<float4>"),
    ],
)
def test_inference_finds_a_vector_instantiation_from_the_last_dimension(dtype, shape, expected):
    x, y = np.ones(shape, dtype), np.zeros(shape, dtype)
    assert Rotate.select(x, y, 8).name_expression == expected


def test_vector_inference_settles_on_what_every_array_fits():
    assert Rotate.select(np.ones((8, 2), np.float32), np.zeros(16, np.float32), 8).name_expression == "Rotate<float>"


@pytest.mark.parametrize(
    ("x", "y", "match"),
    [
        (
            np.ones((8, 3), np.float16),
            np.ones((8, 3), np.float16),
            r"^Rotate: argument 'x' sets T, which allows float16x2, float32, float32x4, float32x2; got an array of "
            r"float16 of shape \(8, 3\); cast it to one of those \(e.g. x.astype\(numpy.float16\) with shape "
            r"\(..., 2\)\): the family has no other instantiations\Z",
        ),
        (
            np.ones((8, 2), np.float16),
            np.ones((8, 4), np.float32),
            r"^Rotate: arguments 'x' \(float16x2\) and 'y' \(float32x4\) must share T; cast one of them",
        ),
    ],
)
def test_vector_inference_errors_name_real_casts(x, y, match):
    with pytest.raises(cf.ArgumentTypeError, match=match):
        Rotate.select(x, y, 8)


def test_inference_picks_the_instantiation_before_any_cuda_call():
    # float64 arrays select Axpy<double, 256>, whose own checks then reject an int64-overflowing n.
    with pytest.raises(cf.ArgumentError, match=r"^Axpy<double, 256>: argument 'n' expects int64"):
        Axpy(2.0, np.ones(4), np.ones(4), 2**70)


@pytest.mark.parametrize(
    "ns, match",
    [
        (lambda: {"T": cf.typeparam()}, r"needs at least one dtype"),
        (lambda: {"T": cf.typeparam(np.float32)}, r"takes cuforge dtypes"),
        (lambda: {"T": cf.typeparam(cf.float32, cf.float32)}, r"lists float32 twice"),
        (lambda: {"B": cf.intparam(1.5)}, r"takes ints that fit a C\+\+ int"),
        (lambda: {"B": cf.intparam(1, 1)}, r"lists a value twice"),
        (lambda: {"B": cf.intparam(128), "block": "C"}, r"block names 'C', which is not an intparam"),
        (lambda: {"B": cf.intparam(128, 2048), "block": "B"}, r"block\[0\] expects an int from 1 to 1024, got 2048"),
        (lambda: {"B": cf.intparam(128), "autotune": cf.autotune(C=[1])}, r"autotune candidate 'C' is not an intparam"),
        (lambda: {"B": cf.intparam(128), "autotune": cf.autotune(B=[64])}, r"template parameter B allows 128; got 64"),
        (lambda: {"B": cf.intparam(128), "autotune": cf.autotune(B=[128], key=["m"])}, r"autotune key 'm' names no parameter"),
        (lambda: {"autotune": cf.autotune(B=[128])}, r"autotune needs a family"),
        (lambda: {"n": cf.intparam(1)}, r"template parameter 'n' clashes with a parameter"),
    ],
)
def test_family_declaration_errors(ns, match):
    def make():
        return cf.kernel(
            type("Fam", (), {"__annotations__": {"x": cf.Out[cf.float32], "n": cf.int32}, "body": "x[0] = n;", **ns()})
        )

    with pytest.raises(cf.DeclarationError, match=match):
        make()


def test_typeparam_not_declared_on_the_class():
    other = cf.typeparam(cf.float32)
    with pytest.raises(cf.DeclarationError, match=r"parameter 'x' uses a type parameter that is not declared on this class"):
        cf.kernel(type("Foreign", (), {"__annotations__": {"x": cf.Out[other]}, "body": ";"}))


def test_source_family_uses_real_cpp_templates():
    @cf.kernel
    class Fill:
        T = cf.typeparam(cf.float32, cf.int64)
        V = cf.intparam(3, 7)
        x: cf.Out[T]
        name = "fill"
        source = "template <typename T, int V> __global__ void fill(T* x) { x[threadIdx.x] = V; }"

    compiled = Fill.precompile(arch="sm_90")
    assert [c.lowered_name for c in compiled] == [
        "_Z4fillIfLi3EEvPT_",
        "_Z4fillIfLi7EEvPT_",
        "_Z4fillIxLi3EEvPT_",
        "_Z4fillIxLi7EEvPT_",
    ]


def test_precompile_a_subset_and_reject_foreign_kernels(saxpy):
    @cf.kernel
    class Small:
        T = cf.typeparam(cf.float32, cf.float64)
        x: cf.Out[T]
        body = "x[0] = 1;"

    before = cf.cache_stats().compiles
    done = Small.precompile(arch="sm_90", instances=[Small[cf.float64]])
    assert [c.name_expression for c in done] == ["Small<double>"] and cf.cache_stats().compiles == before + 1
    with pytest.raises(cf.DeclarationError, match=r"is not an instantiation of this family"):
        Small.precompile(arch="sm_90", instances=[saxpy])


def test_registry_lists_replaces_and_precompiles():
    ns = {"__annotations__": {"x": cf.Out[cf.int32]}, "body": "x[0] = 1;", "__module__": "regtest"}
    first = cf.kernel(type("Reg", (), dict(ns)))
    assert cf.registry["regtest.Reg"] is first
    second = cf.kernel(type("Reg", (), dict(ns)))  # a re-run notebook cell
    assert cf.registry["regtest.Reg"] is second and list(cf.registry).count("regtest.Reg") == 1
    assert "test_family.Axpy" in "".join(cf.registry)
    built = cf.registry.precompile(arch="sm_90", kernels=["regtest.Reg", Axpy], workers=2, progress=False)
    assert len(built["regtest.Reg"]) == 1 and len(built[Axpy.qualname]) == 12
    with pytest.raises(KeyError, match=r"no kernel named 'nope' is registered"):
        cf.registry["nope"]


def test_a_clean_family_compiles_with_a_clean_log():
    @cf.kernel
    class Quiet:
        T = cf.typeparam(cf.float32, cf.float64)
        BLOCK = cf.intparam(128, 256)
        y: cf.Array[cf.float32]
        body = "y[threadIdx.x] = 1.0f;"  # uses neither T nor BLOCK: no warning for cuforge's own lines
        grid = 1

    assert [c.log for c in Quiet.precompile("sm_90")] == [""] * 4


def test_a_grid_function_reads_template_parameters_and_unknown_names_fail_at_definition():
    @cf.kernel
    class Tiled:
        TILE = cf.intparam(2, 4)
        x: cf.Array[cf.float32]
        n: cf.int64
        block = 64

        @staticmethod
        def grid(n, TILE, block):  # Kernel Tuner's rule: each thread does TILE elements
            return (-(-n // (block[0] * TILE)),)

        body = "long long i = (blockIdx.x * (long long)blockDim.x + threadIdx.x) * TILE; if (i < n) x[i] = 1.0f;"

    assert Tiled[4]._plan.grid((None, 1000), [], (64, 1, 1)) == (4, 1, 1)
    assert Tiled[2]._plan.grid((None, 1000), [], (64, 1, 1)) == (8, 1, 1)
    with pytest.raises(cf.DeclarationError, match=r"the grid function asks for tile_size_x, which are not parameters or "
                                                  r"template parameters \(x, n, TILE\) or 'block'"):  # fmt: skip

        @cf.kernel
        class Misnamed:
            TILE = cf.intparam(2, 4)
            x: cf.Array[cf.float32]
            n: cf.int64
            grid = staticmethod(lambda n, tile_size_x: (n // tile_size_x,))
            body = "x[0] = 1.0f;"


def test_bool_template_parameters_render_as_cpp_bools():
    @cf.kernel
    class Reduce:
        POW2 = cf.boolparam()  # reduce7's nIsPow2
        x: cf.Array[cf.float32]
        n: cf.int32
        grid = 1
        body = """
        {% if POW2 %}// a power of two{% else %}// any size{% endif %}: {{ POW2 }}
        if (POW2 || threadIdx.x < n) x[threadIdx.x] = 1.0f;
        """

    assert [k.name_expression for k in Reduce.instantiations()] == ["Reduce<false>", "Reduce<true>"]
    assert "// a power of two: true" in Reduce[True].render() and "// any size: false" in Reduce[False].render()
    assert "[[maybe_unused]] constexpr bool POW2 = true;" in Reduce[True].render()
    assert [c.lowered_name for c in Reduce.precompile("sm_90")] == ["_Z6ReduceILb0EEvPfi", "_Z6ReduceILb1EEvPfi"]
    with pytest.raises(cf.DeclarationError, match=r"template parameter POW2 is a bool: True or False; got 1"):
        Reduce[1]
    with pytest.raises(cf.DeclarationError, match=r"for a C\+\+ bool use cf.boolparam\(\)"):
        cf.intparam(True, False)
    assert repr(cf.boolparam(True)) == "cuforge.boolparam(True)"


@cf.kernel
class LayerNorm:  # llm.c's layernorm_forward: mean and rstd are kept only for the backward pass
    T = cf.typeparam(cf.float32, cf.float16)
    out: cf.Out[T]
    mean: cf.Optional[cf.Out[T]]
    rstd: cf.Optional[cf.Out[T]]
    inp: cf.In[T]
    n: cf.int32
    body = "if (threadIdx.x < n) { out[threadIdx.x] = inp[threadIdx.x]; if (mean) mean[threadIdx.x] = 0; }"


def test_an_optional_array_given_none_or_left_out_sets_no_type_parameter():
    h = np.ones(8, np.float16)
    assert LayerNorm.select(h, None, None, h, 8) is LayerNorm[cf.float16]
    assert LayerNorm.select(out=h, inp=h, n=8) is LayerNorm[cf.float16]
    assert LayerNorm.select(h, h, None, h, 8) is LayerNorm[cf.float16]
    with pytest.raises(cf.ArgumentTypeError, match=r"^LayerNorm: arguments 'out' \(float16\) and 'mean' \(float32\) "):
        LayerNorm.select(h, np.ones(8, np.float32), None, h, 8)
    with pytest.raises(cf.ArgumentTypeError, match=r"^LayerNorm: argument 'out' sets T, .*; got NoneType None"):
        LayerNorm.select(None, None, None, h, 8)  # only an Optional array may be None

    @cf.kernel
    class Bias:
        T = cf.typeparam(cf.float64, cf.float32)
        bias: cf.Optional[cf.In[T]]
        body = ";"

    assert Bias.select(None) is Bias.select() is Bias[cf.float64]  # no array sets T: its default
