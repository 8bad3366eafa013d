"""`TypeInference`: a family's type parameters read off a call's arguments (the dtypes of the
arrays annotated with them), with the error that names the cast where none fits."""

from __future__ import annotations

from typing import Any

from .._declare.annotations import ArrayType
from .._declare.declaration import Declaration
from .._declare.dtypes import DType
from .._declare.params import TypeParam
from .._declare.spelling import cast_to, describe
from .._declare.vectors import VectorDType
from .._runtime.arrays import array_arg
from ..errors import ArgumentTypeError

__all__ = ["TypeInference"]


class TypeInference:
    """Where each type parameter of ``decl`` is read off the arguments: its array parameters
    (an Optional one given None sets nothing)."""

    __slots__ = ("label", "names", "optional", "sources", "template_params")

    def __init__(self, decl: Declaration) -> None:
        self.label, self.template_params = decl.label, decl.template_params
        self.names = tuple(n for n, _ in decl.params)
        self.optional = frozenset(i for i, (_, ann) in enumerate(decl.params) if isinstance(ann, ArrayType) and ann.optional)
        self.sources = {
            t.name: tuple(i for i, (_, ann) in enumerate(decl.params) if isinstance(ann, ArrayType) and ann.dtype is t)
            for t in decl.template_params
            if isinstance(t, TypeParam)
        }

    def types(self, bound: tuple[Any, ...]) -> tuple[DType | None, ...]:
        """Per template parameter, in order: the dtype of a type parameter, None for the others."""
        return tuple(self.infer(t, bound) if isinstance(t, TypeParam) else None for t in self.template_params)

    def infer(self, t: TypeParam, bound: tuple[Any, ...]) -> DType:
        """The first allowed dtype (in declaration order) that every array bound to ``t`` can
        be: its own dtype, or a vector type whose lanes are that dtype and whose length is
        the array's last dimension. An Optional array given None (or left out) sets nothing;
        where no array sets ``t``, it takes its default."""
        common: list[DType] = []  # what every array so far fits, best first
        first = ""
        for i in self.sources[t.name]:
            if bound[i] is None and i in self.optional:
                continue
            arg = array_arg(bound[i])
            name = self.names[i]
            fits = _fitting(t.values, arg)
            if not fits:
                raise ArgumentTypeError(f"{self.label}: argument '{name}' sets {t.name}, {_no_fit(t, name, arg, bound[i])}")
            kept = [v for v in common if v in fits] if first else fits
            if not kept:
                raise ArgumentTypeError(
                    f"{self.label}: arguments '{first}' ({common[0].name}) and '{name}' "
                    f"({fits[0].name}) must share {t.name}; cast one of them"
                )
            common, first = kept, first or name
        return common[0] if common else t.default


def _fitting(values: tuple[DType, ...], arg: Any) -> list[DType]:
    """The allowed dtypes an array can be bound to: a vector type of its dtype as long as its
    last dimension first (that dimension says it holds vectors), then its own dtype."""
    if arg is None:
        return []
    dt, shape = arg.dtype, arg.shape
    vectors = [v for v in values if isinstance(v, VectorDType) and v.element is dt and shape and shape[-1] == v.lanes]
    return vectors + [v for v in values if v is dt]


def _no_fit(t: TypeParam, name: str, arg: Any, value: Any) -> str:
    """The rest of the error for an argument that fits none of ``t``'s dtypes: what it got
    and the cast that fixes it (indexing the family cannot: it takes the same dtypes)."""
    vectors = any(isinstance(v, VectorDType) for v in t.values)
    if arg is None:
        got = describe(value)
    else:
        got = f"an array of {arg.dtype.name}" + (f" of shape {arg.shape}" if vectors else "")
    want = t.values[0]
    origin = None if arg is None else arg.origin
    if isinstance(want, VectorDType):
        cast = f"{cast_to(name, value, origin, want.element)} with shape (..., {want.lanes})"
    else:
        cast = cast_to(name, value, origin, want)
    allowed = ", ".join(v.name for v in t.values)
    return f"which allows {allowed}; got {got}; cast it to one of those (e.g. {cast}): the family has no other instantiations"
