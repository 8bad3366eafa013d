"""The annotations that declare array parameters: ``cf.Array[...]``, ``cf.In[...]``,
``cf.Out[...]`` and ``cf.Optional[...]`` build `ArrayType` values (element dtype, optional
rank, intent), resolved when a kernel class is defined."""

from __future__ import annotations

from typing import Any, ClassVar

from .._frozen import Frozen
from ..errors import DeclarationError
from .dtypes import DType
from .params import TypeParam

__all__ = ["Array", "ArrayType", "In", "Optional", "Out"]


INTENTS = {"inout": "Array", "in": "In", "out": "Out"}


class ArrayType(Frozen):
    """A device-array parameter: element dtype, optional fixed rank, and intent.

    Built by ``cf.Array[dtype]``, ``cf.In[dtype]`` or ``cf.Out[dtype]``, optionally with a
    rank: ``cf.Array[cf.float32, 2]``; ``cf.Optional[...]`` of one sets ``optional``: the
    argument may then be None (or left out), which passes a null pointer.

    Examples
    --------
    >>> t = cf.In[cf.float32, 2]
    >>> t.dtype is cf.float32, t.ndim, t.writes
    (True, 2, False)
    """

    __module__ = "cuforge"

    dtype: Any  # a DType, or a family's type parameter
    ndim: int | None
    intent: str  # "inout", "in" or "out"
    optional: bool  # None passes a null pointer

    __match_args__ = ("dtype", "ndim", "intent", "optional")

    def __init__(self, dtype: Any, ndim: int | None, intent: str, optional: bool = False) -> None:
        self.__dict__.update(dtype=dtype, ndim=ndim, intent=intent, optional=optional)

    def _key(self) -> tuple[Any, ...]:
        return self.dtype, self.ndim, self.intent, self.optional

    def __eq__(self, other: object) -> bool:
        return self._key() == other._key() if other.__class__ is self.__class__ else NotImplemented  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._key())

    @property
    def writes(self) -> bool:
        """Whether the kernel may write the array (``Array`` and ``Out``).

        Returns
        -------
        bool
        """
        return self.intent != "in"

    def __repr__(self) -> str:
        rank = f", {self.ndim}" if self.ndim is not None else ""
        name = getattr(self.dtype, "name", self.dtype)
        text = f"{INTENTS[self.intent]}[{name}{rank}]"
        return f"Optional[{text}]" if self.optional else text


class _ArrayFactory:
    _intent: ClassVar[str]

    def __class_getitem__(cls, item: Any) -> ArrayType:
        dtype, ndim = item if isinstance(item, tuple) and len(item) == 2 else (item, None)
        if isinstance(item, tuple) and len(item) not in (1, 2):
            raise DeclarationError(
                f"{cls.__name__}[...] takes a dtype and optionally a rank, got {item!r}; "
                f"write {cls.__name__}[cf.float32] or {cls.__name__}[cf.float32, 2]"
            )
        if not isinstance(dtype, (DType, TypeParam)):
            raise DeclarationError(f"{cls.__name__}[...] needs a cuforge dtype such as cf.float32, got {dtype!r}")
        if ndim is not None and (isinstance(ndim, bool) or not isinstance(ndim, int) or ndim < 1):
            raise DeclarationError(f"{cls.__name__}[{dtype!r}, {ndim!r}]: the rank must be a positive int")
        return ArrayType(dtype, ndim, cls._intent)


class Array(_ArrayFactory):
    """A read-write array parameter: ``cf.Array[cf.float32]`` renders ``float*``.

    Examples
    --------
    >>> cf.Array[cf.float32], cf.Array[cf.float32, 2].ndim
    (Array[float32], 2)
    """

    __module__ = "cuforge"
    _intent = "inout"


class In(_ArrayFactory):
    """A read-only array parameter: rendered ``const T* __restrict__``.

    Examples
    --------
    >>> cf.In[cf.float16].writes
    False
    """

    __module__ = "cuforge"
    _intent = "in"


class Out(_ArrayFactory):
    """A write-only array parameter: rendered ``T* __restrict__`` (do not pass one buffer for
    two ``Out``/``In`` parameters).

    Examples
    --------
    >>> cf.Out[cf.int32].writes
    True
    """

    __module__ = "cuforge"
    _intent = "out"


class Optional:
    """An array parameter that may be null: ``cf.Optional[cf.Out[cf.float32]]``.

    The argument may be None, or left out of the call (its default is None): the kernel then
    gets a null pointer, and the grid's default rule (the largest array) skips it. Any other
    argument is checked as the inner type says. The C++ is the inner type's (``float*
    __restrict__``): the kernel tests the pointer before using it.

    Examples
    --------
    >>> cf.Optional[cf.Out[cf.float32]]
    Optional[Out[float32]]
    >>> cf.Optional[cf.In[cf.float16, 2]].optional
    True
    """

    __module__ = "cuforge"

    def __class_getitem__(cls, item: Any) -> ArrayType:
        if not isinstance(item, ArrayType):
            raise DeclarationError(
                f"Optional[...] takes an array parameter type such as cf.In[cf.float32], got {item!r}; only a "
                f"pointer can be null, so a scalar cannot be Optional"
            )
        return ArrayType(item.dtype, item.ndim, item.intent, optional=True)
