"""Compile options: a frozen value class, which is a dataclass to ``dataclasses``, and the
pure function that turns it into NVRTC flags.

Building options never touches the GPU or NVRTC; the arch is chosen later, by
``compile(arch=...)`` or from the device in use.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from ._frozen import Frozen
from .errors import DeclarationError

__all__ = ["CompileOptions", "define_flags", "to_flags"]

_STDS = ("c++11", "c++14", "c++17", "c++20")


def is_identifier(name: str) -> bool:
    """Whether ``name`` is a C identifier (ASCII letters, digits and ``_``, not starting with a digit)."""
    return name.isascii() and name.isidentifier()


def _fail(option: str, expected: str, got: Any) -> DeclarationError:
    return DeclarationError(f"CompileOptions: {option} expects {expected}, got {got!r}")


class _Dataclass:
    """The class attributes ``dataclasses`` reads (``__dataclass_fields__``,
    ``__dataclass_params__``), those of a frozen keyword-only dataclass with the owner's
    fields and defaults (its ``__init__``'s), made when first read: so ``dataclasses.fields``,
    ``asdict``, ``replace`` and ``is_dataclass`` take the owner as they take a dataclass, and
    a process that never asks does not generate one (a cost of every fresh process)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type) -> Any:
        import dataclasses

        defaults = owner.__init__.__kwdefaults__  # type: ignore[misc]
        twin = dataclasses.make_dataclass(owner.__name__, [(n, Any, dataclasses.field(default=d)) for n, d in defaults.items()],
                                          frozen=True, kw_only=True)  # fmt: skip
        for name in ("__dataclass_fields__", "__dataclass_params__"):
            setattr(owner, name, getattr(twin, name))
        return getattr(owner, self.name)


class CompileOptions(Frozen):
    """Options for NVRTC, settable per kernel class and per ``compile()`` call.

    Parameters
    ----------
    std : str
        C++ dialect: ``"c++11"``, ``"c++14"``, ``"c++17"`` (default) or ``"c++20"``.
    fast_math : bool
        ``-use_fast_math`` (implies ftz, approximate division and square root).
    ftz : bool or None
        Flush denormals to zero; None leaves NVRTC's default.
    maxrregcount : int or None
        Cap on registers per thread.
    lineinfo : bool
        Emit line information for profilers (``-lineinfo``).
    debug : bool
        Device debug information (``-G``); slow code.
    lto : bool
        Compile to LTO-IR (``-dlto``) and link with nvJitLink, so that functions from the
        class's ``link`` inputs can be inlined across translation units.
    relocatable : bool
        Relocatable device code (``-rdc=true``), linked with nvJitLink; set for you when a
        class has ``link`` inputs.
    defines : mapping or iterable of (name, value)
        Preprocessor macros; a value of None defines the name with no value.
    include_dirs : iterable of str
        Extra include directories.
    extra : iterable of str
        Further NVRTC flags, passed as they are.

    Raises
    ------
    DeclarationError
        For a value NVRTC would not take (checked when built, with no GPU).

    Examples
    --------
    >>> opts = cf.CompileOptions(std="c++20", fast_math=True, defines={"N": 4})
    >>> opts.replace(lineinfo=True).lineinfo
    True
    """

    __module__ = "cuforge"
    __match_args__ = ()
    __dataclass_fields__ = _Dataclass()
    __dataclass_params__ = _Dataclass()

    std: str
    fast_math: bool
    ftz: bool | None
    maxrregcount: int | None
    lineinfo: bool
    debug: bool
    lto: bool
    relocatable: bool
    defines: tuple[tuple[str, str | None], ...]
    include_dirs: tuple[str, ...]
    extra: tuple[str, ...]

    # The fields, their order and their defaults are this signature's.
    def __init__(self, *, std: str = "c++17", fast_math: bool = False, ftz: bool | None = None,
                 maxrregcount: int | None = None, lineinfo: bool = False, debug: bool = False, lto: bool = False,
                 relocatable: bool = False, defines: tuple[tuple[str, str | None], ...] = (), include_dirs: tuple[str, ...] = (),
                 extra: tuple[str, ...] = ()) -> None:  # fmt: skip
        self.__dict__.update(std=std, fast_math=fast_math, ftz=ftz, maxrregcount=maxrregcount, lineinfo=lineinfo,
                             debug=debug, lto=lto, relocatable=relocatable, defines=defines, include_dirs=include_dirs,
                             extra=extra)  # fmt: skip
        self._check()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in _FIELDS)

    def __eq__(self, other: object) -> bool:
        return self._values() == other._values() if other.__class__ is self.__class__ else NotImplemented  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in _FIELDS)})"

    def _check(self) -> None:
        if self.std not in _STDS:
            raise _fail("std", f"one of {', '.join(_STDS)}", self.std)
        for name in ("fast_math", "lineinfo", "debug", "lto", "relocatable"):
            if not isinstance(getattr(self, name), bool):
                raise _fail(name, "a bool", getattr(self, name))
        if self.ftz is not None and not isinstance(self.ftz, bool):
            raise _fail("ftz", "a bool or None", self.ftz)
        rr = self.maxrregcount
        if rr is not None and (isinstance(rr, bool) or not isinstance(rr, int) or not 16 <= rr <= 255):
            raise _fail("maxrregcount", "an int from 16 to 255 or None", rr)
        object.__setattr__(self, "defines", _normalize_defines(self.defines))
        object.__setattr__(self, "include_dirs", _str_tuple("include_dirs", self.include_dirs))
        object.__setattr__(self, "extra", _str_tuple("extra", self.extra))

    def replace(self, **changes: Any) -> CompileOptions:
        """A copy with the given fields changed (validated like a new instance).

        Parameters
        ----------
        **changes
            Field name to new value.

        Returns
        -------
        CompileOptions

        Raises
        ------
        DeclarationError
            For an unknown field or a value that is not valid.
        """
        try:
            return type(self)(**{**dict(zip(_FIELDS, self._values())), **changes})
        except TypeError as exc:
            raise DeclarationError(f"CompileOptions: {exc}; the fields are {', '.join(_FIELDS)}") from None


_FIELDS = tuple(CompileOptions.__init__.__kwdefaults__)  # type: ignore[misc,arg-type]


def _normalize_defines(defines: Any) -> tuple[tuple[str, str | None], ...]:
    items: Iterable[Any] = defines.items() if isinstance(defines, Mapping) else defines
    out = []
    for item in items:
        name, value = (item, None) if isinstance(item, str) else item
        if not isinstance(name, str) or not is_identifier(name):
            raise _fail("defines", "C identifiers as names", name)
        out.append((name, None if value is None else str(value)))
    return tuple(out)


def _str_tuple(option: str, values: Any) -> tuple[str, ...]:
    if isinstance(values, (str, os.PathLike)):
        values = (values,)
    out = tuple(os.fspath(v) if isinstance(v, os.PathLike) else v for v in values)
    if not all(isinstance(v, str) for v in out):
        raise _fail(option, "strings", values)
    return out


def _arch_number_text(arch: str) -> str | None:
    """The digits of an arch spelled ``(sm|compute)_DIGITS[a|f]`` (``"90"`` for ``sm_90a``), else
    None. Read by hand: every compile, a warm start's included, checks its arch, and a regular
    expression would be compiled for it in each process."""
    kind, sep, rest = arch.partition("_")
    if not sep or kind not in ("sm", "compute"):
        return None
    number = rest[:-1] if rest.endswith(("a", "f")) else rest
    return number if number.isdecimal() else None  # (str.isdecimal: the digits a regex's \d matches)


def check_arch(arch: Any) -> str:
    """Validate an arch string such as ``"sm_90"`` and return it."""
    if not isinstance(arch, str) or _arch_number_text(arch) is None:
        raise DeclarationError(f"arch expects a string like 'sm_90' (or 'compute_90' for PTX), got {arch!r}")
    return arch


def arch_number(arch: str) -> int:
    """The compute capability an arch names, as an int: 90 for ``sm_90``, ``compute_90`` or
    ``sm_90a``."""
    return int(_arch_number_text(check_arch(arch)))  # type: ignore[arg-type]  # a number: checked by check_arch


def define_flags(options: CompileOptions) -> list[str]:
    """``-DNAME`` or ``-DNAME=VALUE`` per define: NVRTC's flags and the CPU backend's host
    compiler's alike (each one argument, never split by a shell)."""
    return [f"-D{n}" if v is None else f"-D{n}={v}" for n, v in options.defines]


def to_flags(options: CompileOptions, arch: str, include_dirs: Iterable[str] = ()) -> tuple[str, ...]:
    """NVRTC flags for ``options`` targeting ``arch`` (``sm_XY`` gives a cubin, ``compute_XY`` PTX).

    A pure function: the same inputs always give the same flags, in the same order.
    """
    flags = [f"-arch={check_arch(arch)}", f"-std={options.std}"]
    if options.fast_math:
        flags.append("-use_fast_math")
    if options.ftz is not None:
        flags.append(f"-ftz={'true' if options.ftz else 'false'}")
    if options.maxrregcount is not None:
        flags.append(f"-maxrregcount={options.maxrregcount}")
    if options.lineinfo:
        flags.append("-lineinfo")
    if options.debug:
        flags.append("-G")
    if options.lto or options.relocatable:
        flags.append("-rdc=true")
    if options.lto:
        flags.append("-dlto")
    flags += define_flags(options)
    flags += [f"-I{d}" for d in (*options.include_dirs, *include_dirs)]
    flags += options.extra
    return tuple(flags)
