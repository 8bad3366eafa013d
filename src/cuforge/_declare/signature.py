"""Resolved kernel parameters: what each annotation means, computed once at definition.

A `Param` is a declared parameter (name, position, annotation); a `ParamSpec`
is the one record the launch paths read for it: its layout in the parameter buffer and the
facts its checks need. The C launcher reads the same records (see ``_claunch/``).
"""

from __future__ import annotations

from typing import Any

from .._frozen import Record
from .annotations import ArrayType
from .dtypes import DType

POINTER_SIZE = 8


class Param(Record):
    """One kernel parameter: its name, position and declared type (a DType or ArrayType)."""

    __slots__ = ()
    name: str
    index: int  # type: ignore[assignment]  # (the field shadows tuple.index, as a NamedTuple may)
    type: Any

    def __new__(cls, name: Any, index: Any, type: Any) -> Any:
        return tuple.__new__(cls, (name, index, type))

    @property
    def is_array(self) -> bool:
        return isinstance(self.type, ArrayType)

    @property
    def size(self) -> int:
        """Bytes the parameter takes in the kernel's parameter buffer."""
        return POINTER_SIZE if self.is_array else self.type.itemsize

    @property
    def align(self) -> int:
        return POINTER_SIZE if self.is_array else self.type.align

    @property
    def dtype(self) -> DType:
        return self.type.dtype if self.is_array else self.type

    def cpp(self) -> str:
        """The C++ declaration of this parameter."""
        t = self.type
        if not isinstance(t, ArrayType):
            return f"{t.cpp} {self.name}"
        if t.intent == "in":
            return f"const {t.dtype.cpp}* __restrict__ {self.name}"
        if t.intent == "out":
            return f"{t.dtype.cpp}* __restrict__ {self.name}"
        return f"{t.dtype.cpp}* {self.name}"

    @property
    def type_name(self) -> str:
        """The declared type as users write it: ``float32``, ``In[float32]``."""
        return repr(self.type) if self.is_array else self.type.name

    def describe(self) -> str:
        return f"{self.name}: {self.type_name}"


class Signature(Record):
    """The ordered parameters of a kernel."""

    __slots__ = ()
    params: tuple[Param, ...]

    def __new__(cls, params: Any) -> Any:
        return tuple.__new__(cls, (params,))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def cpp(self) -> str:
        return ", ".join(p.cpp() for p in self.params)

    def describe(self, name: str) -> str:
        return f"{name}({', '.join(p.describe() for p in self.params)})"

    def headers(self) -> tuple[str, ...]:
        """CUDA headers the parameter types need, in a stable order."""
        found = {p.dtype.header for p in self.params if p.dtype.header}
        return tuple(sorted(found))

    def layout(self) -> tuple[tuple[int, int], ...]:
        """(offset, size) of each parameter in the kernel's parameter buffer (C ABI)."""
        out, offset = [], 0
        for p in self.params:
            offset = -(-offset // p.align) * p.align
            out.append((offset, p.size))
            offset += p.size
        return tuple(out)


class ParamSpec(Record):
    """Everything a launch needs to know of one resolved parameter, built once per kernel.

    ``ckind`` is ``a`` for an array, else the dtype's C kind (``DType.ckind``); ``lo``/``hi``
    bound an integer, ``limit`` is a float's largest finite value, ``ndim`` an array's rank
    (-1: any). ``pack`` is the ``struct`` code of the value in the buffer (``Q``: a pointer).
    ``optional``: an array that may be None (a null pointer; ``cf.Optional``).
    """

    __slots__ = ()
    name: str
    index: int  # type: ignore[assignment]  # (shadows tuple.index)
    type: Any  # a DType or an ArrayType
    dtype: DType
    is_array: bool
    ckind: str
    pack: str
    offset: int
    size: int
    lo: int
    hi: int
    limit: float
    ndim: int
    writes: bool
    optional: bool

    def __new__(cls, name: Any, index: Any, type: Any, dtype: Any, is_array: Any, ckind: Any, pack: Any, offset: Any,
                size: Any, lo: Any, hi: Any, limit: Any, ndim: Any, writes: Any, optional: Any) -> Any:
        return tuple.__new__(cls, (name, index, type, dtype, is_array, ckind, pack, offset, size, lo, hi, limit, ndim,
                                   writes, optional))

    @property
    def type_name(self) -> str:
        return repr(self.type) if self.is_array else self.dtype.name


def param_specs(signature: Signature) -> tuple[ParamSpec, ...]:
    """The ParamSpec of each parameter of a resolved signature (no type parameter left)."""
    specs = []
    for p, (offset, size) in zip(signature.params, signature.layout()):
        dt = p.dtype
        lo, hi = dt.range or (0, 0)
        arr = p.type if p.is_array else None
        specs.append(ParamSpec(
            name=p.name, index=p.index, type=p.type, dtype=dt, is_array=arr is not None,
            ckind="a" if arr is not None else dt.ckind, pack="Q" if arr is not None else dt.pack,
            offset=offset, size=size, lo=lo, hi=hi, limit=dt.max_finite or 0.0,
            ndim=-1 if arr is None or arr.ndim is None else arr.ndim, writes=arr is not None and arr.writes,
            optional=arr is not None and arr.optional,
        ))  # fmt: skip
    return tuple(specs)
