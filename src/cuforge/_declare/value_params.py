"""A family's value template parameters (C++'s non-type template parameters): `IntParam`
(``int``), `BoolParam` (``bool``) and `ConstParam` (C++ constants as C++ spells them, such as
enumerators), with their declaring functions `intparam`, `boolparam` and `constparam`."""

from __future__ import annotations

import operator
import re
from typing import Any

from ..errors import DeclarationError
from .params import TemplateParam

__all__ = ["BoolParam", "ConstParam", "IntParam", "boolparam", "constparam", "intparam"]


class IntParam(TemplateParam):
    """A family's integer parameter: ``BLOCK = cf.intparam(256, 128, 512)``; the first is the default.

    It becomes an ``int`` template parameter, and ``{{ BLOCK }}`` renders its value.

    Examples
    --------
    >>> cf.intparam(256, 128, 512).default
    256
    """

    __module__ = "cuforge"
    kind = "int"
    cpp_kind = "int"

    def __init__(self, *values: int):
        if not values:
            raise DeclarationError("cf.intparam() needs at least one value, e.g. cf.intparam(256, 128)")
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int) or not -(2**31) <= v < 2**31:
                hint = "; for a C++ bool use cf.boolparam()" if isinstance(v, bool) else ""
                raise DeclarationError(f"cf.intparam(...) takes ints that fit a C++ int, got {v!r}{hint}")
        if len(set(values)) != len(values):
            raise DeclarationError(f"cf.intparam{values!r} lists a value twice")
        self.values: tuple[int, ...] = tuple(values)
        self.name = "?"

    def resolve(self, value: Any, kernel: str) -> int:
        """The allowed value ``value`` names.

        Parameters
        ----------
        value : int
            What an index or an instantiation gave (any integer, not a bool).
        kernel : str
            The family's name, for the error.

        Returns
        -------
        int

        Raises
        ------
        DeclarationError
            Where ``value`` is not one of the allowed values.
        """
        try:
            as_int = None if isinstance(value, bool) else operator.index(value)
        except TypeError:
            as_int = None
        if as_int is None or as_int not in self.values:
            allowed = ", ".join(map(str, self.values))
            raise DeclarationError(f"{kernel}: template parameter {self.name} allows {allowed}; got {value!r}")
        return as_int

    def spell(self, value: int) -> str:
        """How ``value`` is written in the C++.

        Parameters
        ----------
        value : int

        Returns
        -------
        str
        """
        return str(value)

    def __repr__(self) -> str:
        return f"cuforge.intparam({', '.join(map(str, self.values))})"


class BoolParam(IntParam):
    """A family's bool parameter: ``POW2 = cf.boolparam()`` (default False) or
    ``cf.boolparam(True)``. A C++ ``bool`` template parameter: ``POW2`` is ``true`` or
    ``false`` in the C++, and ``{{ POW2 }}`` renders the same (``{% if POW2 %}`` works).

    Examples
    --------
    >>> cf.boolparam().values, cf.boolparam(True).spell(True)
    ((False, True), 'true')
    """

    __module__ = "cuforge"
    kind = "bool"
    cpp_kind = "bool"

    def __init__(self, default: bool = False):
        if not isinstance(default, bool):
            raise DeclarationError(f"cf.boolparam(default) takes True or False, got {default!r}")
        self.values: tuple[int, ...] = (default, not default)
        self.name = "?"

    def resolve(self, value: Any, kernel: str) -> int:
        """``value`` itself, which must be True or False.

        Parameters
        ----------
        value : bool
        kernel : str
            The family's name, for the error.

        Returns
        -------
        bool

        Raises
        ------
        DeclarationError
            Where ``value`` is not a bool.
        """
        if value is True or value is False:
            return value
        raise DeclarationError(f"{kernel}: template parameter {self.name} is a bool: True or False; got {value!r}")

    def spell(self, value: int) -> str:
        """``true`` or ``false``, as C++ spells them.

        Parameters
        ----------
        value : bool

        Returns
        -------
        str
        """
        return "true" if value else "false"

    def __repr__(self) -> str:
        return f"cuforge.boolparam({self.values[0]!r})"


# (strings: re compiles them when a constparam is first declared)
_CPP_CONSTANT = r"-?[0-9]+[uUlL]*\Z|(::)?[A-Za-z_]\w*(::[A-Za-z_]\w*)*\Z"
_CPP_TYPE = r"(::)?[A-Za-z_]\w*(::[A-Za-z_]\w*)*( [A-Za-z_]\w*)*\Z"


class ConstParam(TemplateParam):
    """A family's parameter whose values are C++ constants as C++ spells them: enumerators
    such as CUB's ``cub::BLOCK_SCAN_RAKING``, or named constants. The first is the default.

    The values go into the name expressions (``scan<cub::BLOCK_SCAN_RAKING>``) and ``{{ ALGO }}``
    as written. A ``source=`` family declares the template parameter's type in its own C++;
    a ``body=`` family needs ``cpp_type`` to declare it.

    Examples
    --------
    >>> p = cf.constparam("cub::BLOCK_SCAN_RAKING", "cub::BLOCK_SCAN_WARP_SCANS", cpp_type="cub::BlockScanAlgorithm")
    >>> p.default, p.cpp_kind
    ('cub::BLOCK_SCAN_RAKING', 'cub::BlockScanAlgorithm')
    """

    __module__ = "cuforge"
    kind = "const"

    def __init__(self, *spellings: str, cpp_type: str | None = None):
        if not spellings:
            raise DeclarationError(
                'cf.constparam() needs at least one C++ constant, e.g. cf.constparam("cub::BLOCK_SCAN_RAKING", '
                '"cub::BLOCK_SCAN_WARP_SCANS", cpp_type="cub::BlockScanAlgorithm")'
            )
        for v in spellings:
            if not isinstance(v, str) or not re.match(_CPP_CONSTANT, v):
                raise DeclarationError(
                    f"cf.constparam(...) takes C++ constants as strings: a (qualified) name such as "
                    f"'cub::BLOCK_SCAN_RAKING' or an integer literal; got {v!r}"
                )
        if len(set(spellings)) != len(spellings):
            raise DeclarationError(f"cf.constparam{spellings!r} lists a value twice")
        if cpp_type is not None and (not isinstance(cpp_type, str) or not re.match(_CPP_TYPE, cpp_type)):
            raise DeclarationError(
                f"cf.constparam(..., cpp_type=...) takes the C++ type of the template parameter, such as "
                f"'cub::BlockScanAlgorithm' or 'unsigned int'; got {cpp_type!r}"
            )
        self.values: tuple[str, ...] = tuple(spellings)
        self.cpp_type = cpp_type
        self.name = "?"

    @property
    def cpp_kind(self) -> str:  # type: ignore[override]
        """The C++ type that declares the parameter in a ``body=`` kernel's template.

        Returns
        -------
        str
            ``cpp_type``, or ``"?"`` where none was given (a ``source=`` family needs none).
        """
        return self.cpp_type or "?"

    def resolve(self, value: Any, kernel: str) -> str:
        """``value`` itself, which must be one of the declared spellings.

        Parameters
        ----------
        value : str
        kernel : str
            The family's name, for the error.

        Returns
        -------
        str

        Raises
        ------
        DeclarationError
            Where ``value`` is not one of the declared spellings.
        """
        if isinstance(value, str) and value in self.values:
            return value
        allowed = ", ".join(self.values)
        raise DeclarationError(f"{kernel}: template parameter {self.name} allows {allowed}; got {value!r}")

    def spell(self, value: str) -> str:
        """``value`` as written.

        Parameters
        ----------
        value : str

        Returns
        -------
        str
        """
        return value

    def __repr__(self) -> str:
        typed = f", cpp_type={self.cpp_type!r}" if self.cpp_type else ""
        return f"cuforge.constparam({', '.join(map(repr, self.values))}{typed})"


def intparam(*values: int) -> IntParam:
    """Declare a family's integer parameter (a C++ ``int`` template parameter).

    Parameters
    ----------
    *values : int
        The allowed values, in order; the first is the default.

    Returns
    -------
    IntParam

    Raises
    ------
    DeclarationError
        With no value, a value listed twice, or one that is not an int fitting a C++ int.

    Examples
    --------
    >>> @cf.kernel
    ... class Tiled:
    ...     TILE = cf.intparam(16, 32)
    ...     x: cf.Array[cf.float32]
    ...     body = "x[threadIdx.x] *= TILE;"
    >>> [k.template_args["TILE"] for k in Tiled.instantiations()]
    [16, 32]
    """
    return IntParam(*values)


def boolparam(default: bool = False) -> BoolParam:
    """Declare a family's bool parameter (a C++ ``bool`` template parameter).

    Parameters
    ----------
    default : bool
        The value used where an instantiation does not name one.

    Returns
    -------
    BoolParam

    Raises
    ------
    DeclarationError
        Where ``default`` is not a bool.

    Examples
    --------
    >>> @cf.kernel
    ... class Reduce:
    ...     POW2 = cf.boolparam()
    ...     x: cf.Array[cf.float32]
    ...     body = "if (POW2) x[0] = 1;"
    >>> Reduce[True].name_expression
    'Reduce<true>'
    """
    return BoolParam(default)


def constparam(*spellings: str, cpp_type: str | None = None) -> ConstParam:
    """Declare a family's parameter whose values are C++ constants (enumerators such as CUB's
    ``BlockScanAlgorithm``), given as C++ spells them.

    Parameters
    ----------
    *spellings : str
        The allowed values, in order; the first is the default. Each a (qualified) name or an
        integer literal.
    cpp_type : str, optional
        The C++ type of the template parameter (``"cub::BlockScanAlgorithm"``): needed by a
        ``body=`` family, whose generated template declares it (its header goes in
        ``preamble``); a ``source=`` family declares it in its own C++.

    Returns
    -------
    ConstParam

    Raises
    ------
    DeclarationError
        With no value, a value listed twice, or one that is no C++ name or integer literal.

    Examples
    --------
    >>> @cf.kernel
    ... class Pick:
    ...     MODE = cf.constparam("Mode::Fast", "Mode::Exact", cpp_type="Mode")
    ...     x: cf.Array[cf.float32]
    ...     preamble = "enum class Mode { Fast, Exact };"
    ...     body = "if (MODE == Mode::Exact) x[threadIdx.x] = 0;"
    >>> Pick["Mode::Exact"].name_expression
    'Pick<Mode::Exact>'
    """
    return ConstParam(*spellings, cpp_type=cpp_type)
