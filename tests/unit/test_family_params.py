"""Family template parameters beyond the cartesian product: restrictions that leave
combinations out (real NVRTC compiles)."""

from __future__ import annotations

import numpy as np
import pytest

import cuforge as cf
from cuforge._compile import headers as _headers

TILE_BODY = """
__shared__ float tile[BLOCK * ITEMS];
for (int k = 0; k < ITEMS; k++) tile[threadIdx.x * ITEMS + k] = x[threadIdx.x];
__syncthreads();
x[threadIdx.x] = tile[(BLOCK - 1 - threadIdx.x) * ITEMS];
"""


@cf.kernel
class Tiles:
    BLOCK = cf.intparam(1024, 128, 256)
    ITEMS = cf.intparam(16, 4)
    x: cf.Array[cf.float32]
    block = "BLOCK"
    grid = 1
    restrict = lambda BLOCK, ITEMS: BLOCK * ITEMS <= 8192  # noqa: E731
    body = TILE_BODY


def test_restrict_leaves_combinations_out_of_instantiations_and_precompile():
    names = [k.name_expression for k in Tiles.instantiations()]
    assert names == ["Tiles<1024, 4>", "Tiles<128, 16>", "Tiles<128, 4>", "Tiles<256, 16>", "Tiles<256, 4>"]
    compiled = Tiles.precompile(arch="sm_90")
    assert [c.name_expression for c in compiled] == names and all(c.cubin[:4] == b"\x7fELF" for c in compiled)


def test_without_the_restriction_the_left_out_combination_cannot_compile():
    @cf.kernel
    class Unrestricted:
        BLOCK = cf.intparam(1024)
        ITEMS = cf.intparam(16)
        x: cf.Array[cf.float32]
        block = "BLOCK"
        grid = 1
        body = TILE_BODY

    with pytest.raises(cf.CompileError, match=r"shared"):
        Unrestricted.precompile(arch="sm_90")


def test_indexing_a_left_out_combination_names_it_and_the_restriction():
    with pytest.raises(cf.DeclarationError, match=(
        r"^Tiles: BLOCK=1024, ITEMS=16 is left out by the class's restrict \(lambda BLOCK, ITEMS: BLOCK \* ITEMS <= 8192\); "
        r"Tiles.instantiations\(\) lists the combinations it keeps$"
    )):  # fmt: skip
        Tiles[1024, 16]
    with pytest.raises(cf.DeclarationError, match=r"^Tiles: BLOCK=1024, ITEMS=16 is left out"):
        Tiles.instantiate(BLOCK=1024, ITEMS=16)


def test_defaults_fall_to_the_first_combination_the_restriction_keeps():
    assert Tiles[1024] is Tiles[1024, 4]  # ITEMS's default 16 is left out with BLOCK=1024
    assert Tiles[()] is Tiles[1024, 4]
    assert Tiles.instantiate(ITEMS=16) is Tiles[128, 16]
    assert Tiles.select(np.ones(4, np.float32)) is Tiles[1024, 4]


@cf.kernel
class Typed:
    T = cf.typeparam(cf.float32, cf.float64)
    BLOCK = cf.intparam(256, 512)
    POW2 = cf.boolparam()
    x: cf.Array[T]
    block = "BLOCK"
    restrict = [lambda T, BLOCK: T.itemsize * BLOCK <= 2048, lambda POW2: not POW2]
    body = "x[threadIdx.x] += POW2;"


def test_a_list_of_restrictions_over_dtypes_and_bools_must_all_hold():
    assert [k.name_expression for k in Typed.instantiations()] == [
        "Typed<float, 256, false>", "Typed<float, 512, false>", "Typed<double, 256, false>"
    ]  # fmt: skip
    assert Typed.select(np.ones(4)) is Typed[cf.float64, 256]
    with pytest.raises(cf.DeclarationError, match=(
        r"^Typed: every combination with T=float64, BLOCK=512 is left out by the class's restrict "
        r"\(lambda T, BLOCK: T.itemsize \* BLOCK <= 2048\) and \(lambda POW2: not POW2\); Typed.instantiations\(\) "
        r"lists the combinations it keeps$"
    )):  # fmt: skip
        Typed[cf.float64, 512]


def _declare(restrict, **ns):
    return cf.kernel(type("Bad", (), {"B": cf.intparam(1, 2), "__annotations__": {"x": cf.Array[cf.float32]},
                                       "body": "x[0] = B;", "restrict": restrict, **ns}))  # fmt: skip


@pytest.mark.parametrize(
    ("restrict", "match"),
    [
        (lambda C: C > 1, r"^Bad: restrict expects a function of template parameters by name, .* got <function"),
        (lambda: True, r"restrict expects a function of template parameters by name"),
        ("B > 1", r"restrict expects a function .* got 'B > 1', and the template parameters are B$"),
        (lambda B: B > 5, r"^Bad: restrict \(lambda B: B > 5\) leaves out every combination of B$"),
        (lambda B: B // 0, r"^Bad: restrict \(lambda B: B // 0\) raised ZeroDivisionError: .* for B=1$"),
        (lambda B: B - 1, r"^Bad: restrict \(lambda B: B - 1\) must return True or False, got 0 for B=1; wrap it in bool"),
    ],
)
def test_restriction_mistakes_fail_at_definition(restrict, match):
    with pytest.raises(cf.DeclarationError, match=match):
        _declare(restrict)


def test_restrict_needs_a_family():
    ns = {"__annotations__": {"x": cf.Array[cf.float32]}, "body": "x[0] = 1;", "restrict": lambda B: True}
    with pytest.raises(cf.DeclarationError, match=r"^Plain: restrict leaves out combinations of template parameters; "):
        cf.kernel(type("Plain", (), ns))


def test_block_limits_are_checked_on_the_combinations_the_restriction_keeps():
    @cf.kernel
    class Grid2D:
        BX = cf.intparam(32, 64)
        BY = cf.intparam(32, 16)
        x: cf.Array[cf.float32]
        block = ("BX", "BY")
        restrict = lambda BX, BY: BX * BY <= 1024  # noqa: E731
        body = "x[threadIdx.x] = 1;"

    assert [k.name_expression for k in Grid2D.instantiations()] == ["Grid2D<32, 32>", "Grid2D<32, 16>", "Grid2D<64, 16>"]
    with pytest.raises(cf.DeclarationError, match=r"block"):
        _declare(lambda B: True, block=("B", 1024))


# ------------------------------------------------------------ constparam: C++ spellings

ENUM_SOURCE = """
namespace algo { enum Kind { RAKING, WARP_SCANS, RAKING_MEMOIZE }; }
template <algo::Kind K, int BLOCK>
__global__ void pick(int* out) { if (threadIdx.x == 0) out[blockIdx.x] = (int)K * BLOCK; }
"""


@cf.kernel
class Pick:
    K = cf.constparam("algo::RAKING", "algo::WARP_SCANS", "algo::RAKING_MEMOIZE")
    BLOCK = cf.intparam(128, 256)
    out: cf.Out[cf.int32]
    name = "pick"
    source = ENUM_SOURCE


def test_a_source_family_with_an_enum_parameter_compiles_each_value():
    compiled = Pick.precompile(arch="sm_90")
    assert [c.name_expression for c in compiled][:2] == ["pick<algo::RAKING, 128>", "pick<algo::RAKING, 256>"]
    assert len({c.lowered_name for c in compiled}) == 6
    assert Pick["algo::WARP_SCANS"].compile(arch="sm_90").lowered_name == "_Z4pickILN4algo4KindE1ELi128EEvPi"
    assert Pick.instantiate(K="algo::RAKING_MEMOIZE").template_args == {"K": "algo::RAKING_MEMOIZE", "BLOCK": 128}
    assert repr(Pick.template_params[0]) == "cuforge.constparam('algo::RAKING', 'algo::WARP_SCANS', 'algo::RAKING_MEMOIZE')"


@cf.kernel
class Blend:
    MODE = cf.constparam("Mode::Fast", "Mode::Exact", cpp_type="Mode")
    x: cf.Array[cf.float32]
    preamble = "enum class Mode { Fast, Exact };"
    body = """
    {% if MODE == "Mode::Exact" %}x[threadIdx.x] = 0;{% endif %}
    if (MODE == Mode::Fast) x[threadIdx.x] *= 2;
    """


def test_a_body_family_declares_the_parameter_with_its_cpp_type():
    compiled = Blend.precompile(arch="sm_90")
    assert [c.lowered_name for c in compiled] == ["_Z5BlendIL4Mode0EEvPf", "_Z5BlendIL4Mode1EEvPf"]
    assert "template <Mode MODE>" in Blend["Mode::Fast"].render()
    assert "[[maybe_unused]] constexpr Mode MODE = Mode::Exact;" in Blend["Mode::Exact"].render()
    assert "x[threadIdx.x] = 0;" in Blend["Mode::Exact"].render() and "= 0;" not in Blend["Mode::Fast"].render()


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: cf.constparam(), r"^cf.constparam\(\) needs at least one C\+\+ constant"),
        (lambda: cf.constparam("a; b"), r"takes C\+\+ constants as strings: .*; got 'a; b'$"),
        (lambda: cf.constparam(2), r"takes C\+\+ constants as strings: .*; got 2$"),
        (lambda: cf.constparam("A", "A"), r"lists a value twice"),
        (lambda: cf.constparam("A", cpp_type="E>"), r"cpp_type=...\) takes the C\+\+ type .*; got 'E>'$"),
        (lambda: Pick["algo::NONE"], r"^Pick: template parameter K allows algo::RAKING, algo::WARP_SCANS, .*; got 'algo::NONE'$"),
    ],
)
def test_constparam_mistakes(build, match):
    with pytest.raises(cf.DeclarationError, match=match):
        build()


def test_a_body_family_needs_the_cpp_type():
    ns = {"M": cf.constparam("A", "B"), "__annotations__": {"x": cf.Array[cf.float32]}, "body": "x[0] = 1;"}
    with pytest.raises(cf.DeclarationError, match=(
        r"^Untyped: constparam M needs cpp_type= in a body= kernel, whose generated template declares it"
    )):  # fmt: skip
        cf.kernel(type("Untyped", (), ns))


@cf.kernel
class CubScan:
    """Inclusive prefix sums of 256-element blocks by cub::BlockScan, one family member per
    BlockScanAlgorithm."""

    ALGO = cf.constparam("cub::BLOCK_SCAN_RAKING", "cub::BLOCK_SCAN_RAKING_MEMOIZE", "cub::BLOCK_SCAN_WARP_SCANS",
                         cpp_type="cub::BlockScanAlgorithm")  # fmt: skip
    x: cf.In[cf.int32]
    out: cf.Out[cf.int32]
    n: cf.int64
    block = 256
    grid = lambda n: (n + 255) // 256  # noqa: E731
    preamble = "#include <cub/block/block_scan.cuh>"
    body = """
    using Scan = cub::BlockScan<int, 256, ALGO>;
    __shared__ typename Scan::TempStorage tmp;
    long long i = blockIdx.x * 256LL + threadIdx.x;
    int v = i < n ? x[i] : 0;
    Scan(tmp).InclusiveSum(v, v);
    if (i < n) out[i] = v;
    """


@pytest.mark.skipif(_headers.cccl_include_dir() is None, reason="needs the CCCL headers (nvidia-cuda-cccl)")
def test_cub_block_scan_algorithms_as_a_family_compile():
    compiled = CubScan.precompile(arch="sm_90")
    assert [c.name_expression for c in compiled] == [
        "CubScan<cub::BLOCK_SCAN_RAKING>", "CubScan<cub::BLOCK_SCAN_RAKING_MEMOIZE>", "CubScan<cub::BLOCK_SCAN_WARP_SCANS>"
    ]  # fmt: skip
    assert len({c.lowered_name for c in compiled}) == 3


@cf.kernel
class PickOne:
    K = cf.constparam("algo::RAKING", "algo::WARP_SCANS", "algo::RAKING_MEMOIZE")
    BLOCK = cf.intparam(128, 256)
    out: cf.Out[cf.int32]
    name = "pick_one"
    restrict = lambda K, BLOCK: K != "algo::RAKING_MEMOIZE" or BLOCK == 128  # noqa: E731
    source = ENUM_SOURCE.replace("pick(", "pick_one(").replace("{ if", '{ static_assert(K != algo::WARP_SCANS, "no"); if')


def test_messages_spell_a_constparam_value_as_python_indexes_with_it():
    assert repr(PickOne) == (
        '<cuforge.Family pick_one[K in ("algo::RAKING", "algo::WARP_SCANS", "algo::RAKING_MEMOIZE"), BLOCK in (128, 256)]>'
    )
    with pytest.raises(cf.DeclarationError, match=r'^PickOne: K="algo::RAKING_MEMOIZE", BLOCK=256 is left out by '):
        PickOne["algo::RAKING_MEMOIZE", 256]
    with pytest.raises(cf.CompileError, match=(
        r'^PickOne.precompile\(\): 2 of 5 instantiations failed to compile: PickOne\["algo::WARP_SCANS", 128\], '
        r'PickOne\["algo::WARP_SCANS", 256\] \(the other 3 compiled\)'
    )) as info:  # fmt: skip
        PickOne.precompile(arch="sm_90")
    assert '\n\nPickOne["algo::WARP_SCANS", 128]: ' in str(info.value)
    assert PickOne["algo::WARP_SCANS", 128].template_args == {"K": "algo::WARP_SCANS", "BLOCK": 128}  # as it reads


@pytest.mark.parametrize(
    ("tparams", "args", "match"),
    [
        ({}, (np.ones(4, np.float32), 4), r"^Tune: the class's restrict \(lambda B: B == 1\) leaves out every autotune "
                                         r"candidate; add candidates it keeps$"),
        ({"T": cf.typeparam(cf.float32, cf.float64)}, (np.ones(4), 4),
         r"^Tune: the class's restrict \(lambda B: B == 1\) leaves out every autotune candidate for T=float64; add "
         r"candidates it keeps$"),
    ],
)  # fmt: skip
def test_a_restriction_that_leaves_out_every_autotune_candidate_is_named_before_any_cuda_call(tparams, args, match):
    T = tparams.get("T", cf.float32)
    ns = {"B": cf.intparam(1, 2, 4), **tparams, "__annotations__": {"x": cf.Array[T], "n": cf.int64}, "body": "x[0] = B;",
          "restrict": lambda B: B == 1, "autotune": cf.autotune(B=[2, 4], key=["n"])}  # fmt: skip
    with pytest.raises(cf.DeclarationError, match=match):
        cf.kernel(type("Tune", (), ns))(*args)
