"""The bases of cuforge's hand-written value classes: `Frozen`, whose attributes are set once,
when built, as a frozen dataclass's are, and `Record`, a tuple with named fields, as a
NamedTuple is.

They are written by hand rather than with ``@dataclass`` or ``NamedTuple``: generating
their methods at import costs each fresh process more than a warm launch's own work.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = ["Frozen", "Record"]

try:  # NamedTuple's own accessor (in C): a field read costs what a NamedTuple's does
    from collections import _tuplegetter  # type: ignore[attr-defined]
except ImportError:  # (another Python)
    from operator import itemgetter

    def _tuplegetter(index: int, doc: str | None) -> Any:
        return property(itemgetter(index), doc=doc)


class Frozen:
    """Attributes set in ``__init__`` (through ``__dict__`` or ``object.__setattr__``) and
    never after: assigning or deleting one raises ``dataclasses.FrozenInstanceError``, as a
    frozen dataclass does."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise _frozen(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise _frozen(f"cannot delete field {name!r}")


def _frozen(message: str) -> AttributeError:
    from dataclasses import FrozenInstanceError  # (on a mistake only)

    return FrozenInstanceError(message)


class Record(tuple):  # type: ignore[type-arg]
    """A tuple with named fields: what a NamedTuple gives (unpacking, equality, hashing,
    ``_fields``, ``_field_defaults``, ``_make``, ``_replace``, ``_asdict``, match args, its
    repr, pickling), written once.

    A subclass sets ``__slots__ = ()``, annotates its fields in order, as a NamedTuple's body
    does, and writes the ``__new__`` that takes them (``tuple.__new__(cls, (...))``, with any
    defaults); each field gets NamedTuple's accessor.
    """

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    _field_defaults: ClassVar[dict[str, Any]] = {}
    __match_args__: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        # The body's own annotations, in order (cuforge's modules keep them as strings: from
        # __future__ import annotations); inspect.get_annotations would import inspect
        cls._fields = tuple(cls.__dict__.get("__annotations__", {}))  # noqa: RUF063
        cls.__match_args__ = cls._fields  # type: ignore[misc]  # (set per class, as NamedTuple does)
        defaults = cls.__new__.__defaults__ or ()
        cls._field_defaults = dict(zip(cls._fields[len(cls._fields) - len(defaults) :], defaults))
        for index, name in enumerate(cls._fields):
            setattr(cls, name, _tuplegetter(index, f"Alias for field number {index}"))

    @classmethod
    def _make(cls, iterable: Any) -> Any:
        values = tuple(iterable)
        if len(values) != len(cls._fields):
            raise TypeError(f"Expected {len(cls._fields)} arguments, got {len(values)}")
        return tuple.__new__(cls, values)

    def _replace(self, **changes: Any) -> Any:
        values = [changes.pop(name, value) for name, value in zip(self._fields, self)]
        if changes:
            raise TypeError(f"Got unexpected field names: {list(changes)!r}")
        return tuple.__new__(type(self), values)

    def _asdict(self) -> dict[str, Any]:
        return dict(zip(self._fields, self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={v!r}' for n, v in zip(self._fields, self))})"

    def __getnewargs__(self) -> tuple[Any, ...]:
        return tuple(self)
