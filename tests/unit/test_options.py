import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cuforge as cf
from cuforge.options import arch_number, check_arch, to_flags


def test_default_flags():
    assert to_flags(cf.CompileOptions(), "sm_90") == ("-arch=sm_90", "-std=c++17")


def test_every_option_becomes_a_flag_in_a_fixed_order():
    opts = cf.CompileOptions(
        std="c++20", fast_math=True, ftz=False, maxrregcount=64, lineinfo=True, debug=True,
        defines={"TILE": 16, "USE_X": None}, include_dirs=["/inc"], extra=["-restrict"],
    )  # fmt: skip
    assert to_flags(opts, "compute_90", ["/cuda/include"]) == (
        "-arch=compute_90", "-std=c++20", "-use_fast_math", "-ftz=false", "-maxrregcount=64", "-lineinfo",
        "-G", "-DTILE=16", "-DUSE_X", "-I/inc", "-I/cuda/include", "-restrict",
    )  # fmt: skip
    assert to_flags(opts, "compute_90", ["/cuda/include"]) == to_flags(opts, "compute_90", ["/cuda/include"])


def test_options_are_frozen_hashable_and_keyword_only():
    opts = cf.CompileOptions(defines=[("A", 1)])
    assert opts.defines == (("A", "1"),)
    assert hash(opts) == hash(cf.CompileOptions(defines={"A": "1"}))
    with pytest.raises(AttributeError):
        opts.std = "c++14"  # type: ignore[misc]
    with pytest.raises(TypeError):
        cf.CompileOptions("c++17")  # type: ignore[misc]
    assert opts.replace(fast_math=True).fast_math


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"std": "c++98"}, r"std expects one of c\+\+11"),
        ({"maxrregcount": 8}, r"maxrregcount expects an int from 16 to 255"),
        ({"fast_math": 1}, r"fast_math expects a bool"),
        ({"ftz": "yes"}, r"ftz expects a bool or None"),
        ({"defines": {"1BAD": 1}}, r"defines expects C identifiers"),
        ({"include_dirs": [3]}, r"include_dirs expects strings"),
    ],
)
def test_option_errors(kwargs, match):
    with pytest.raises(cf.DeclarationError, match=match):
        cf.CompileOptions(**kwargs)


def test_replace_with_unknown_field_names_the_fields():
    with pytest.raises(cf.DeclarationError, match=r"the fields are std, fast_math"):
        cf.CompileOptions().replace(fastmath=True)


def test_bad_arch():
    with pytest.raises(cf.DeclarationError, match=r"arch expects a string like 'sm_90'"):
        to_flags(cf.CompileOptions(), "90")


def test_options_are_a_frozen_keyword_only_dataclass_to_dataclasses():
    """Written by hand (a dataclass's generated methods cost every fresh process), the class
    still answers ``dataclasses`` as the frozen keyword-only dataclass it was."""
    import dataclasses

    opts = cf.CompileOptions(std="c++20", defines={"N": 4})
    assert dataclasses.is_dataclass(cf.CompileOptions) and dataclasses.is_dataclass(opts)
    assert [(f.name, f.default, f.kw_only) for f in dataclasses.fields(opts)][:2] == [("std", "c++17", True),
                                                                                       ("fast_math", False, True)]  # fmt: skip
    assert dataclasses.asdict(opts)["defines"] == (("N", "4"),)
    assert dataclasses.replace(opts, lineinfo=True) == opts.replace(lineinfo=True) != opts
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'std'"):
        opts.std = "c++14"  # type: ignore[misc]
    assert repr(cf.CompileOptions()).startswith("CompileOptions(std='c++17', fast_math=False, ftz=None,")


@settings(max_examples=1000, deadline=None)
@given(st.one_of(st.from_regex(r"(sm|compute)_(\d+)([af]?)\Z"),
                 st.text(alphabet=st.sampled_from("smcopute_09٣af \nx"), max_size=12)))  # fmt: skip
def test_an_arch_is_read_as_its_pattern_reads_it(arch):
    """check_arch and arch_number, which read an arch by hand, agree with the pattern they
    stand for: what it matches is accepted, with its number; anything else is refused."""
    import re

    m = re.match(r"(sm|compute)_(\d+)([af]?)\Z", arch)
    if m is None:
        with pytest.raises(cf.DeclarationError, match="arch expects a string like 'sm_90'"):
            check_arch(arch)
    else:
        assert check_arch(arch) == arch and arch_number(arch) == int(m.group(2))
