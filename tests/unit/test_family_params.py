"""Family template parameters beyond the cartesian product: restrictions that leave
combinations out (real NVRTC compiles)."""

from __future__ import annotations

import numpy as np
import pytest

import cuforge as cf

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
