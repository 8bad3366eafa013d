"""The launch rules both launch paths follow: the grid and block limits, a class's grid rule
(the default grid) and its shared-memory rule. No CUDA call: the C launcher reads their data
(`GridRule.source`, the limits) from here."""

from __future__ import annotations

import inspect
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..errors import ArgumentError, DeclarationError
from .kinds import KIND_OPTIONS
from .rules import GridCount
from .signature import ParamSpec
from .spelling import describe, numpy_scalar

# keywords a call takes that the C launcher leaves to the general path
CALL_OPTIONS: tuple[str, ...] = ("device", *KIND_OPTIONS)
GRID_LIMIT = (2**31 - 1, 65535, 65535)
BLOCK_LIMIT = (1024, 1024, 64)
SHARED_MEM_MAX = 2**32 - 1  # the driver takes an unsigned int


class Shaped(Protocol):
    """What a grid rule reads of an array argument (an ``ArrayArg``): its shape."""

    @property
    def shape(self) -> tuple[int, ...]: ...


DIMS_MEMO: dict[tuple[Any, int], tuple[int, int, int]] = {}


def dims(value: Any, what: str, kernel: str, limit: tuple[int, int, int]) -> tuple[int, int, int]:
    """Normalise a grid or block to 3 positive ints within ``limit`` (valid ones are memoised:
    a launch that passes the same grid= every time pays for one dict lookup)."""
    try:
        if exact_ints(value):
            return DIMS_MEMO[value, id(limit)]
    except (KeyError, TypeError):
        pass
    out = _dims(value, what, kernel, limit)
    if exact_ints(value) and len(DIMS_MEMO) < 4096:
        DIMS_MEMO[value, id(limit)] = out
    return out


def exact_ints(value: Any) -> bool:
    """An int or a tuple of ints, exactly: the memo's keys compare by value, and (256.0,) or
    (True,) equal (256,) and (1,), which must still be refused."""
    if value.__class__ is int:
        return True
    if value.__class__ is not tuple:
        return False
    for v in value:
        if v.__class__ is not int:
            return False
    return True


def _dims(value: Any, what: str, kernel: str, limit: tuple[int, int, int]) -> tuple[int, int, int]:
    if _is_int(value):
        value = (value,)
    if not isinstance(value, (tuple, list)) or not 1 <= len(value) <= 3:
        raise ArgumentError(f"{kernel}: {what} expects an int or a tuple of 1 to 3 ints, got {describe(value)}")
    out = []
    for i, v in enumerate(value):
        if not _is_int(v) or not 1 <= v <= limit[i]:
            raise ArgumentError(
                f"{kernel}: {what}[{i}] expects an int from 1 to {limit[i]}, got {v!r} (in {what}={tuple(value)!r})"
            )
        out.append(int(v))
    while len(out) < 3:
        out.append(1)
    if limit is BLOCK_LIMIT and out[0] * out[1] * out[2] > 1024:
        raise ArgumentError(
            f"{kernel}: {what}={tuple(value)!r} has {out[0] * out[1] * out[2]} threads; a block holds at most 1024"
        )
    return out[0], out[1], out[2]


def _is_int(v: Any) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or numpy_scalar(v, "iu")


def blocks_code(index: int) -> int:
    """The grid rule code of ``cf.blocks`` on parameter ``index`` (see GridRule)."""
    return -3 - index


class GridRule:
    """Where a launch without grid= gets its grid: ``source`` -1 is the largest array, k the
    value or size of parameter k (the grid covers that many threads: ``grid = "n"`` or
    ``cf.covering("n")``), -2 the class's grid function or fixed grid, in ``function``, and
    ``blocks_code(k)`` parameter k's value in blocks (``cf.blocks("n")``), which ``function``
    also computes for the general path. The C launcher takes ``source`` as its grid rule and
    computes every rule but -2 itself."""

    __slots__ = ("function", "kernel", "source")

    def __init__(self, kernel: str, rule: Any, specs: tuple[ParamSpec, ...], template_args: dict[str, Any] | None = None):
        self.kernel = kernel
        self.function: Callable[[tuple[Any, ...], tuple[int, int, int]], Any] | None = None
        names = [s.name for s in specs]
        if rule is None:
            if not any(s.is_array for s in specs):
                ints = [s.name for s in specs if s.dtype.is_integer]
                size = f"grid = {ints[0]!r} (the threads to cover), " if ints else ""
                raise DeclarationError(
                    f"{kernel}: with no array parameter there is nothing to size the grid by, and a class must say how "
                    f"before it can be launched; set grid on the class: {size}a fixed grid (grid = 1) or a function of "
                    f"the arguments (grid = lambda n: ...)"
                )
            self.source = -1
        elif isinstance(rule, (str, GridCount)):
            name = rule if isinstance(rule, str) else rule.param
            if name not in names:
                raise DeclarationError(f"{kernel}: grid = {rule!r} names no parameter; the parameters are {', '.join(names)}")
            spec = specs[names.index(name)]
            if isinstance(rule, GridCount) and rule.unit == "blocks":
                if spec.is_array or not spec.dtype.is_integer:
                    raise DeclarationError(
                        f"{kernel}: grid = {rule!r} must name an integer parameter (the number of blocks), not "
                        f"{spec.type_name}; to cover an array's elements use cf.covering({name!r})"
                    )
                self.source = blocks_code(spec.index)
                self.function = _blocks_function(kernel, rule, spec.index)
            elif not spec.is_array and not spec.dtype.is_integer:
                raise DeclarationError(f"{kernel}: grid = {rule!r} must name an integer or array parameter, not {spec.type_name}")
            else:
                self.source = spec.index
        elif isinstance(rule, (int, tuple)) and not isinstance(rule, bool):  # a fixed grid
            try:
                fixed = dims(rule, "grid", kernel, GRID_LIMIT)
            except ArgumentError as exc:
                raise DeclarationError(str(exc)) from None
            self.source = -2
            self.function = lambda args, block: fixed
        else:
            self.source = -2
            self.function = _grid_function(kernel, rule, names, template_args or {})

    def __call__(self, args: tuple[Any, ...], arrays: Sequence[tuple[int, Shaped]], block: tuple[int, int, int]) -> Any:
        """The grid, or None when the sizing count is 0 (nothing to launch)."""
        if self.function is not None:
            return self.function(args, block)
        if self.source == -1:  # an Optional array given None has no entry in arrays
            count = 0
            for _, arg in arrays:  # (a loop: max()'s default= keyword costs more than it)
                size = math.prod(arg.shape)
                if size > count:
                    count = size
        else:
            found = [arg for i, arg in arrays if i == self.source]
            count = math.prod(found[0].shape) if found else int(args[self.source] or 0)
        if count <= 0:
            return None
        return dims(-(-count // block[0]), "grid", self.kernel, GRID_LIMIT)


def _blocks_function(kernel: str, rule: GridCount, index: int) -> Callable[[tuple[Any, ...], tuple[int, int, int]], Any]:
    """``cf.blocks(name)``: the grid is the parameter's value, in blocks (the value its check
    accepted, as an int: the C launcher reads the packed integer)."""

    def by_blocks(args: tuple[Any, ...], block: tuple[int, int, int]) -> tuple[int, int, int]:
        value = args[index]
        if 1 <= operator.index(value) <= GRID_LIMIT[0]:
            return (operator.index(value), 1, 1)
        raise ArgumentError(
            f"{kernel}: grid = {rule!r} launches {rule.param} blocks, which must be from 1 to {GRID_LIMIT[0]}; "
            f"got {rule.param}={value!r}; pass a count >= 1, or grid= to choose the grid at launch"
        )

    return by_blocks


def grid_function_names(kernel: str, rule: Any, names: list[str], template_names: list[str], what: str = "grid") -> list[str]:
    """The names a grid (or shared_mem) function asks for, each a kernel parameter, a template
    parameter or ``block`` (checked when the class is defined, family or not)."""
    fn = rule.__func__ if isinstance(rule, staticmethod) else rule
    if not callable(fn):
        raise DeclarationError(f"{kernel}: {what} must be a parameter name or a function, got {rule!r}")
    wanted = list(inspect.signature(fn).parameters)
    unknown = [w for w in wanted if w not in names and w not in template_names and w != "block"]
    if unknown:
        known = ", ".join([*names, *template_names])
        raise DeclarationError(
            f"{kernel}: the {what} function asks for {', '.join(unknown)}, which are not parameters or template "
            f"parameters ({known}) or 'block'"
        )
    return wanted


def _rule_function(kernel: str, rule: Any, names: list[str], template_args: dict[str, Any],
                   what: str = "grid") -> Callable[[tuple[Any, ...], tuple[int, int, int]], Any]:  # fmt: skip
    """The class's grid (or shared_mem) function, called with the arguments it names."""
    fn = rule.__func__ if isinstance(rule, staticmethod) else rule
    wanted = grid_function_names(kernel, rule, names, list(template_args), what)
    # (name, parameter index) or (name, -1) for block, or (name, -2) for a template parameter's value
    picks = [(w, names.index(w) if w in names else -1 if w == "block" else -2) for w in wanted]

    def call(args: tuple[Any, ...], block: tuple[int, int, int]) -> Any:
        return fn(**{w: (args[i] if i >= 0 else block if i == -1 else template_args[w]) for w, i in picks})

    return call


def _grid_function(kernel: str, rule: Any, names: list[str],
                   template_args: dict[str, Any]) -> Callable[[tuple[Any, ...], tuple[int, int, int]], Any]:  # fmt: skip
    call = _rule_function(kernel, rule, names, template_args)

    def by_function(args: tuple[Any, ...], block: tuple[int, int, int]) -> Any:
        return dims(call(args, block), "grid (from the class's grid function)", kernel, GRID_LIMIT)

    return by_function


class SharedMemRule:
    """A class's ``shared_mem``: a fixed int, an integer parameter's value, or a function of
    parameters, template parameters and ``block``. A call that leaves ``shared_mem`` at 0
    (its default) gets it; a call that passes bytes overrides it."""

    __slots__ = ("fixed", "function", "kernel")

    def __init__(self, kernel: str, rule: Any, specs: tuple[ParamSpec, ...], template_args: dict[str, Any]):
        self.kernel = kernel
        self.fixed: int | None = None
        self.function: Callable[[tuple[Any, ...], tuple[int, int, int]], Any] | None = None
        names = [s.name for s in specs]
        if isinstance(rule, int) and not isinstance(rule, bool):
            if not 0 <= rule <= SHARED_MEM_MAX:
                raise DeclarationError(f"{kernel}: shared_mem = {rule} must be from 0 to {SHARED_MEM_MAX} bytes")
            self.fixed = rule
        elif isinstance(rule, str):
            spec = specs[names.index(rule)] if rule in names else None
            if spec is None or spec.is_array or not spec.dtype.is_integer:
                raise DeclarationError(
                    f"{kernel}: shared_mem = {rule!r} must name an integer parameter; the parameters are {', '.join(names)}"
                )
            index = spec.index
            self.function = lambda args, block: args[index]
        else:
            self.function = _rule_function(kernel, rule, names, template_args, "shared_mem")

    def __call__(self, args: tuple[Any, ...], block: tuple[int, int, int]) -> int:
        if self.fixed is not None:
            return self.fixed
        value = self.function(args, block)  # type: ignore[misc]  # set when fixed is None
        if not _is_int(value) or not 0 <= value <= SHARED_MEM_MAX:
            raise ArgumentError(
                f"{self.kernel}: the class's shared_mem rule gave {value!r}; it must give an int from 0 to "
                f"{SHARED_MEM_MAX} (bytes)"
            )
        return int(value)
