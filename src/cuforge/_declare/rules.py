"""The launch rules a kernel class declares, as values: what a grid rule counts
(`blocks`, `covering`), and the rules over template parameters that are resolved
once per instantiation, at definition (a computed ``block``, ``launch_bounds``, which is
rendered into the generated ``__global__`` declaration).

The launch layer turns a grid rule into the grid of each call; `instantiations` checks the
template rules for every instantiation when the class is defined, and resolves them for one.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ..errors import DeclarationError


class GridCount:
    """A grid rule naming a parameter and what its value counts: ``"blocks"`` (the grid is
    that many blocks) or ``"threads"`` (the grid covers that many threads, or that array's
    elements). Made by `blocks` and `covering`; immutable.

    Examples
    --------
    >>> cf.blocks("numOfBlocks").unit, cf.covering("n").unit
    ('blocks', 'threads')
    """

    # A plain class: a frozen dataclass would slow ``import cuforge``, and a NamedTuple would
    # be taken for a tuple grid.
    __slots__ = ("param", "unit")
    __module__ = "cuforge"
    param: str
    unit: str

    def __init__(self, param: str, unit: str):
        object.__setattr__(self, "param", param)
        object.__setattr__(self, "unit", unit)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{self!r} is immutable: make another with cf.blocks() or cf.covering()")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GridCount) and (self.param, self.unit) == (other.param, other.unit)

    def __hash__(self) -> int:
        return hash((GridCount, self.param, self.unit))

    def __reduce__(self) -> tuple[Any, ...]:
        return (GridCount, (self.param, self.unit))

    def __repr__(self) -> str:
        return f"cf.{'blocks' if self.unit == 'blocks' else 'covering'}({self.param!r})"


def blocks(param: str) -> GridCount:
    """A grid rule: launch as many blocks as the integer parameter ``param`` holds.

    CUDA C++'s ``kernel<<<numOfBlocks, 512>>>`` ported as ``grid = cf.blocks("numOfBlocks")``
    launches ``numOfBlocks`` blocks of 512 threads. (A plain string, ``grid = "n"``, means
    `covering`: enough blocks to cover ``n`` threads.)

    Parameters
    ----------
    param : str
        An integer parameter of the kernel.

    Returns
    -------
    GridCount

    Examples
    --------
    >>> cf.blocks("numOfBlocks")
    cf.blocks('numOfBlocks')
    """
    return _count(param, "blocks")


def covering(param: str) -> GridCount:
    """A grid rule: launch enough blocks to cover ``param`` threads, one per element: the
    integer parameter's value, or the array parameter's size, divided by the block's x
    size and rounded up. The same as the plain string ``grid = "n"``, said explicitly.

    Parameters
    ----------
    param : str
        An integer or array parameter of the kernel.

    Returns
    -------
    GridCount

    Examples
    --------
    >>> cf.covering("n")
    cf.covering('n')
    """
    return _count(param, "threads")


def _count(param: Any, unit: str) -> GridCount:
    if not isinstance(param, str) or not param.isidentifier():
        what = "blocks" if unit == "blocks" else "covering"
        raise DeclarationError(f"cf.{what}() takes a parameter's name (a str), got {param!r}")
    return GridCount(param, unit)


# ---------------------------------------------------------------- rules over template parameters


def template_function(label: str, what: str, rule: Any, tparams: tuple[Any, ...]) -> Callable[..., Any] | None:
    """The function of a rule given as a function or staticmethod of template parameters
    (None for a rule that is not a function); its argument names are checked here."""
    fn = rule.__func__ if isinstance(rule, staticmethod) else rule
    if not callable(fn) or isinstance(fn, type):
        return None
    names = [t.name for t in tparams]
    wanted = list(inspect.signature(fn).parameters)
    unknown = [w for w in wanted if w not in names]
    if unknown:
        raise DeclarationError(
            f"{label}: the {what} function asks for {', '.join(unknown)}, which are not template parameters of this "
            f"class (template parameters: {', '.join(names) or 'none'}); a {what} is fixed per instantiation"
        )
    return fn  # type: ignore[no-any-return]


def call_with(fn: Callable[..., Any], template_args: dict[str, Any]) -> Any:
    """``fn`` called with the template arguments it names."""
    return fn(**{w: template_args[w] for w in inspect.signature(fn).parameters})


def describe(rule: Any) -> str:
    """A rule as a message shows it: a function by its name, anything else by its repr."""
    fn = rule.__func__ if isinstance(rule, staticmethod) else rule
    if callable(fn) and not isinstance(fn, type):
        name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
        return f"the function {name}"
    return repr(rule)


def bounds(value: Any) -> tuple[int, ...]:
    """A ``launch_bounds`` value as ``__launch_bounds__`` takes it: (max threads per block[,
    min blocks per SM[, max blocks per cluster]]). Raises ValueError saying what is wrong."""
    raw = (value,) if isinstance(value, int) else value
    ok = isinstance(raw, (tuple, list)) and 1 <= len(raw) <= 3
    if not ok or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in raw):
        raise ValueError(
            "expects an int (max threads per block) or a tuple of 1 to 3 positive ints (max threads per block, "
            f"min blocks per SM, max blocks per cluster), got {value!r}"
        )
    if raw[0] > 1024:
        raise ValueError(f"max threads per block is at most 1024, got {raw[0]}")
    return tuple(raw)


def spell_bounds(values: tuple[int, ...] | None) -> str:
    """``__launch_bounds__(256, 1) `` for a declaration, or "" without bounds."""
    return f"__launch_bounds__({', '.join(map(str, values))}) " if values else ""
