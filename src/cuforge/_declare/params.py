"""Template parameters of a family: the `TemplateParam` base every kind shares, and type
parameters (`TypeParam`, declared with `typeparam`), which stand for a dtype in annotations
and are ``typename`` parameters in the C++. The value kinds are in `value_params`."""

from __future__ import annotations

from typing import Any

from ..errors import DeclarationError
from .dtypes import DType, dtype_of

__all__ = ["TemplateParam", "TypeParam", "typeparam"]


class TemplateParam:
    """What every template parameter of a family is: a name (the class attribute's), the
    allowed values in order (the first the default), and how a value is written in C++.
    The kinds: `TypeParam`, `IntParam` (and `BoolParam`), `ConstParam`.

    Examples
    --------
    >>> all(isinstance(p, cf.TemplateParam) for p in (cf.typeparam(cf.float32), cf.intparam(8), cf.constparam("N")))
    True
    """

    __module__ = "cuforge"
    kind = "?"
    cpp_kind = "?"  # how a body= kernel's template declares it: typename, int, bool, an enum type
    values: tuple[Any, ...] = ()
    name = "?"

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @property
    def default(self) -> Any:
        """The first allowed value, used where an instantiation does not name one.

        Returns
        -------
        object
        """
        return self.values[0]

    def resolve(self, value: Any, kernel: str) -> Any:  # pragma: no cover - each kind has its own
        """The allowed value ``value`` names (each kind says what it accepts).

        Parameters
        ----------
        value : object
            What an index or an instantiation gave.
        kernel : str
            The family's name, for the error.

        Returns
        -------
        object
        """
        raise NotImplementedError

    def spell(self, value: Any) -> str:  # pragma: no cover - each kind has its own
        """How ``value`` is written in the C++.

        Parameters
        ----------
        value : object

        Returns
        -------
        str
        """
        raise NotImplementedError


class TypeParam(TemplateParam):
    """A family's type parameter: ``T = cf.typeparam(cf.float16, cf.float32)``.

    The first allowed dtype is the default. In annotations it stands for the dtype of the
    instantiation (``x: cf.In[T]``); in the C++ it is a template parameter named as the
    class attribute; in Jinja ``{{ T }}`` renders the instantiation's C++ type and
    ``T.itemsize``, ``T.is_float``, ``T.name`` describe it.

    Examples
    --------
    >>> T = cf.typeparam(cf.float32, cf.float64)
    >>> T.values, T.default
    ((cuforge.float32, cuforge.float64), cuforge.float32)
    """

    __module__ = "cuforge"
    kind = "type"
    cpp_kind = "typename"

    def __init__(self, *dtypes: Any):
        if not dtypes:
            raise DeclarationError("cf.typeparam() needs at least one dtype, e.g. cf.typeparam(cf.float32, cf.float64)")
        resolved = []
        for d in dtypes:
            if not isinstance(d, DType):
                raise DeclarationError(f"cf.typeparam(...) takes cuforge dtypes such as cf.float32, got {d!r}")
            if d in resolved:
                raise DeclarationError(f"cf.typeparam(...) lists {d.name} twice")
            resolved.append(d)
        self.values: tuple[DType, ...] = tuple(resolved)
        self.name = "?"

    @property
    def cpp(self) -> str:
        """How the parameter is spelt in the C++ of an annotation: its name.

        Returns
        -------
        str
        """
        return self.name

    def resolve(self, value: Any, kernel: str) -> DType:
        """The allowed dtype ``value`` names (a DType, a NumPy dtype or a name).

        Parameters
        ----------
        value : DType, numpy.dtype or str
            What an index or an instantiation gave.
        kernel : str
            The family's name, for the error.

        Returns
        -------
        DType

        Raises
        ------
        DeclarationError
            Where ``value`` is not one of the allowed dtypes.
        """
        found = dtype_of(value) if not isinstance(value, (bool, int)) else None
        if found is None or found not in self.values:
            allowed = ", ".join(v.name for v in self.values)
            raise DeclarationError(f"{kernel}: template parameter {self.name} allows {allowed}; got {value!r}")
        return found

    def spell(self, value: DType) -> str:
        """How ``value`` is written in the C++ (``float``).

        Parameters
        ----------
        value : DType

        Returns
        -------
        str
        """
        return value.cpp

    def __repr__(self) -> str:
        return f"cuforge.typeparam({', '.join(v.name for v in self.values)})"


def typeparam(*dtypes: Any) -> TypeParam:
    """Declare a family's type parameter.

    Parameters
    ----------
    *dtypes : DType
        The allowed dtypes, in order; the first is the default.

    Returns
    -------
    TypeParam

    Raises
    ------
    DeclarationError
        With no dtype, a dtype listed twice, or something that is not a cuforge dtype.

    Examples
    --------
    >>> @cf.kernel
    ... class Fill:
    ...     T = cf.typeparam(cf.float32, cf.float64)
    ...     out: cf.Out[T]
    ...     value: T
    ...     body = "out[threadIdx.x] = value;"
    >>> Fill[cf.float64]
    <cuforge.Kernel Fill<double>(out: Out[float64], value: float64)>
    """
    return TypeParam(*dtypes)
