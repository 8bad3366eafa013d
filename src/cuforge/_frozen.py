"""`Frozen`: the base of cuforge's hand-written value classes, whose attributes are set once,
when built, as a frozen dataclass's are.

They are written by hand rather than with ``@dataclass``: generating a dataclass's methods
at import costs each fresh process more than a warm launch's own work.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Frozen"]


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
