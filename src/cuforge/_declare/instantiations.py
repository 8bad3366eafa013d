"""The instantiations a class keeps and the rules resolved for each: ``restrict`` (which
combinations of template values exist), and a ``block`` or ``launch_bounds`` given as ints,
intparam names or a function of template parameters. Each rule runs on every kept combination
when the class is defined, so that a mistake fails there; `resolve` gives one
instantiation's value.
"""

from __future__ import annotations

import inspect
import itertools
import linecache
from typing import Any

from ..errors import ArgumentError, DeclarationError
from . import launch_rules as _launch_rules
from . import rules as _rules
from .spelling import spell_combination, spell_value
from .value_params import IntParam


def restricted(label: str, tparams: tuple[Any, ...], rule: Any) -> tuple[tuple[tuple[Any, ...], ...], str | None]:
    """(the combinations of template values that ``restrict`` keeps, how the restriction reads
    in errors). ``restrict`` is a predicate over template parameters named by its arguments
    (``lambda BLOCK, ITEMS: BLOCK * ITEMS <= 8192``), or a list of them, all of which must
    hold; each is run on every combination here, so that a mistake fails at definition."""
    combos = tuple(itertools.product(*(t.values for t in tparams)))
    if rule is None:
        return combos, None
    if not tparams:
        raise DeclarationError(f"{label}: restrict leaves out combinations of template parameters; this class declares none")
    names = [t.name for t in tparams]
    rules = []
    for r in rule if isinstance(rule, (list, tuple)) else (rule,):
        fn = r.__func__ if isinstance(r, staticmethod) else r
        wanted = list(inspect.signature(fn).parameters) if callable(fn) else []
        if not wanted or any(w not in names for w in wanted):
            raise DeclarationError(
                f"{label}: restrict expects a function of template parameters by name, or a list of them "
                f"(restrict = lambda BLOCK, ITEMS: BLOCK * ITEMS <= 8192); got {r!r}, and the template "
                f"parameters are {', '.join(names)}"
            )
        rules.append((fn, [names.index(w) for w in wanted], _rule_text(fn, wanted)))
    kept = []
    for combo in combos:
        verdicts = []
        for fn, picks, text in rules:
            try:
                verdict = fn(*(combo[i] for i in picks))
            except Exception as exc:
                raise DeclarationError(
                    f"{label}: restrict {text} raised {type(exc).__name__}: {exc} for {spell_combination(tparams, combo)}"
                ) from None
            if not isinstance(verdict, bool):
                raise DeclarationError(
                    f"{label}: restrict {text} must return True or False, got {verdict!r} for "
                    f"{spell_combination(tparams, combo)}; wrap it in bool(...)"
                )
            verdicts.append(verdict)
        if all(verdicts):
            kept.append(combo)
    text = " and ".join(text for _, _, text in rules)
    if not kept:
        raise DeclarationError(f"{label}: restrict {text} leaves out every combination of {', '.join(names)}")
    return tuple(kept), text


def _rule_text(fn: Any, wanted: list[str]) -> str:
    """A restriction as it reads: a one-line lambda's own text (located by the positions of
    its code, Python 3.11+), else its name and arguments."""
    code: Any = getattr(fn, "__code__", None)
    if getattr(fn, "__name__", "") == "<lambda>" and hasattr(code, "co_positions"):
        spans = [(line, c, e) for line, end, c, e in code.co_positions() if line and line == end and c is not None and e]
        text = linecache.getline(code.co_filename, spans[0][0]).encode() if spans else b""
        if text and len({line for line, _, _ in spans}) == 1 and any(e > c for _, c, e in spans):
            body = text[min(c for _, c, e in spans if e > c) : max(e for _, _, e in spans)].decode(errors="replace")
            return f"(lambda {', '.join(wanted)}: {body})"
    return f"({getattr(fn, '__qualname__', fn)!s}({', '.join(wanted)}))"


def _instances(label: str, what: str, rule: Any, function: Any, tparams: tuple[Any, ...],
               combinations: tuple[tuple[Any, ...], ...]) -> list[tuple[dict[str, Any], Any]]:  # fmt: skip
    """(template arguments, value) of a block or launch_bounds rule for every instantiation
    the class keeps (``combinations``, after ``restrict``): ints and intparam names (an int or
    a tuple of them), or a function of template parameters."""
    names = [t.name for t in tparams]
    if function is not None:
        wanted = list(inspect.signature(function).parameters)
    else:
        ints = [t.name for t in tparams if isinstance(t, IntParam)]
        entries = rule if isinstance(rule, (tuple, list)) else (rule,)
        for entry in entries:
            if isinstance(entry, str) and entry not in ints:
                raise DeclarationError(
                    f"{label}: {what} names {entry!r}, which is not an intparam of this class (intparams: "
                    f"{', '.join(ints) or 'none'}); give ints, intparam names or a function of the template parameters"
                )
        wanted = [e for e in entries if isinstance(e, str)]
    out = []
    for args in dict.fromkeys(tuple((w, c[names.index(w)]) for w in wanted) for c in combinations):
        values = dict(args)
        if function is not None:
            out.append((values, function(**values)))
        else:
            combo = tuple(values[e] if isinstance(e, str) else e for e in entries)
            out.append((values, combo if isinstance(rule, (tuple, list)) else combo[0]))
    return out


def _refused(label: str, what: str, rule: Any, function: Any, args: dict[str, Any], value: Any, reason: str) -> DeclarationError:
    """A block or launch_bounds value that is not valid, showing what was given."""
    given = f"{_rules.describe(rule)} gave {value!r}" if function is not None else repr(rule)
    where = f" for {', '.join(f'{k}={spell_value(v)}' for k, v in args.items())}" if args else ""
    return DeclarationError(f"{label}: {what} = {given}{where}: {reason}")


def check_block(label: str, rule: Any, function: Any, tparams: tuple[Any, ...],
                 combinations: tuple[tuple[Any, ...], ...]) -> list[tuple[dict[str, Any], tuple[int, int, int]]]:  # fmt: skip
    """(template arguments, block dims) for every instantiation kept; refuses a block that is not valid."""
    out = []
    for args, value in _instances(label, "block", rule, function, tparams, combinations):
        try:
            out.append((args, _launch_rules.dims(value, "block", label, _launch_rules.BLOCK_LIMIT)))
        except ArgumentError as exc:
            raise _refused(label, "block", rule, function, args, value, str(exc).removeprefix(label + ": ")) from None
    return out


def check_launch_bounds(label: str, kind: str, rule: Any, function: Any, tparams: tuple[Any, ...],
                         combinations: tuple[tuple[Any, ...], ...]) -> list[tuple[dict[str, Any], tuple[int, ...]]]:  # fmt: skip
    """(template arguments, bounds) for every instantiation kept; refuses bounds that are not valid."""
    if kind != "body":
        raise DeclarationError(
            f"{label}: launch_bounds applies to body= kernels, whose __global__ declaration cuforge writes; a {kind}= "
            f"kernel writes __launch_bounds__(...) in its own C++"
        )
    out = []
    for args, value in _instances(label, "launch_bounds", rule, function, tparams, combinations):
        try:
            out.append((args, _rules.bounds(value)))
        except ValueError as exc:
            raise _refused(label, "launch_bounds", rule, function, args, value, str(exc)) from None
    return out


def check_block_fits(label: str, blocks: list[tuple[dict[str, Any], tuple[int, int, int]]],
                      bounds: list[tuple[dict[str, Any], tuple[int, ...]]], tparams: tuple[Any, ...],
                      combinations: tuple[tuple[Any, ...], ...]) -> None:  # fmt: skip
    """Refuses a kept combination whose block has more threads than its launch_bounds allows
    (the compiled code could not run that block), naming the template values that decide."""
    names = [t.name for t in tparams]
    block_of = {tuple(args.items()): dims for args, dims in blocks}
    bound_of = {tuple(args.items()): b for args, b in bounds}
    block_keys, bound_keys = list(blocks[0][0]), list(bounds[0][0])
    for combo in combinations:
        values = dict(zip(names, combo))
        dims = block_of[tuple((k, values[k]) for k in block_keys)]
        bound = bound_of[tuple((k, values[k]) for k in bound_keys)]
        if dims[0] * dims[1] * dims[2] <= bound[0]:
            continue
        used = ", ".join(f"{n}={spell_value(values[n])}" for n in names if n in block_keys or n in bound_keys)
        raise DeclarationError(
            f"{label}: block={dims}{f' for {used}' if used else ''} has more threads than launch_bounds={bound} "
            f"allows ({bound[0]} per block); make the block smaller or the bound larger"
            + (f", or leave {used} out with restrict" if used else "")
        )


def resolve(rule: Any, function: Any, template_args: dict[str, Any]) -> Any:
    """A block or launch_bounds rule's value for one instantiation (checked at definition)."""
    if function is not None:
        return _rules.call_with(function, template_args)
    if isinstance(rule, (tuple, list)):
        return tuple(template_args[e] if isinstance(e, str) else e for e in rule)
    return template_args[rule] if isinstance(rule, str) else rule
