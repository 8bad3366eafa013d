"""How values are named in error messages: ``a float64 array``, ``an int32``, ``float 1.5``."""

from __future__ import annotations

import sys
from typing import Any

from .dtypes import DType


def numpy_scalar(value: Any, kinds: str = "") -> bool:
    """Whether ``value`` is a NumPy scalar (of one of ``kinds``: 'b', 'iu', 'f', 'c', ...).

    NumPy is looked up, never imported: without it no NumPy value can exist.
    """
    np = sys.modules.get("numpy")
    if np is None or not isinstance(value, np.generic):
        return False
    return not kinds or value.dtype.kind in kinds


def type_name(value: Any) -> str:
    tp = type(value)
    root = tp.__module__.split(".")[0]
    return tp.__qualname__ if root == "builtins" else f"{root}.{tp.__qualname__}"


def describe(value: Any) -> str:
    if isinstance(value, (bool, int, float, complex, str)) or value is None:
        text = repr(value)
        return f"{type_name(value)} {text if len(text) < 40 else text[:37] + '...'}"
    return a_or_an(type_name(value))


def a_or_an(word: str) -> str:
    """``word`` after its indefinite article, as it is read aloud: "an int32", "a uint8",
    "an 8-d", "a float16"."""
    spoken_vowel = word[:1] in "aeioAEIO" or (word[:1] in "uU" and not word.lower().startswith(("uint", "us", "uni")))
    number = word.split("-")[0]
    if number.isdigit():  # a rank: an 8, an 11, an 18, an 80
        spoken_vowel = number[0] == "8" or number in ("11", "18")
    return f"{'an' if spoken_vowel else 'a'} {word}"


def spell_value(value: Any) -> str:
    """A template value as Python code indexes a family with it, for messages: a dtype by
    name (``float64``), an int or bool as written, a constparam's C++ constant as a string
    (``"cub::BLOCK_SCAN_RAKING"``)."""
    if isinstance(value, DType):
        return value.name
    if isinstance(value, str) and '"' not in value:
        return f'"{value}"'
    return repr(value)


def spell_combination(tparams: tuple[Any, ...], values: tuple[Any, ...]) -> str:
    """``T=float64, BLOCK=1024``: a combination of template values, for messages."""
    return ", ".join(f"{t.name}={spell_value(v)}" for t, v in zip(tparams, values))


def cast_to(name: str, value: Any, origin: str | None, dtype: DType) -> str:
    """The call that casts argument ``name`` (``value``, an array from ``origin``: see
    ``ArrayArg.origin``; None where it is none) to ``dtype``, as its own library spells it:
    ``x.to(torch.float32)`` for a tensor, ``numpy.asarray(x, numpy.float32)`` for a list or
    anything else that is not an array, ``x.astype(numpy.float32)`` for the others."""
    if origin == "torch":
        return f"{name}.to(torch.{dtype.name})"
    numpy_dtype = "ml_dtypes.bfloat16" if dtype.name == "bfloat16" else f"numpy.{dtype.name}"
    if origin is None or isinstance(value, (list, tuple)):
        return f"numpy.asarray({name}, {numpy_dtype})"
    return f"{name}.astype({numpy_dtype})"
