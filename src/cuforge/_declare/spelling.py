"""How values are named in error messages: ``a float64 array``, ``an int32``, ``float 1.5``."""

from __future__ import annotations

import sys
from typing import Any


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
