"""`KernelTemplate`: the instantiations a templated ``%%cuda`` cell made, by template arguments."""

from __future__ import annotations

from typing import Any

from .._declare.dtypes import DType
from ..errors import DeclarationError
from .kernel import Kernel

__all__ = ["KernelTemplate"]


class KernelTemplate:
    """A templated ``%%cuda`` kernel (kept here, not in the IPython adapter, so that a worker
    without IPython can unpickle one): index it by its template arguments (``k[cf.float32, 256]``
    or ``k["float", 256]``); call it directly when it has one instantiation.

    Examples
    --------
    A cell ``%%cuda --instantiate 'scale<float>' --instantiate 'scale<double>'`` binds one:

    >>> scale[cf.float64]  # doctest: +SKIP
    <cuforge.Kernel scale<double>(x: Array[float64], a: float64, n: int32)>
    """

    __module__ = "cuforge"

    def __init__(self, name: str, instances: dict[tuple[str, ...], Kernel]):
        self.name = name
        self.instances = instances

    def __getitem__(self, args: Any) -> Kernel:
        """One instantiation the cell made.

        Parameters
        ----------
        args : DType, str or int, or a tuple of them
            The template arguments (``cf.float32``, ``"float"``, ``256``).

        Returns
        -------
        Kernel

        Raises
        ------
        DeclarationError
            For arguments the cell did not instantiate; it lists those it did.
        """
        args = args if isinstance(args, tuple) else (args,)
        spelled = tuple(a.cpp if isinstance(a, DType) else str(a) for a in args)
        found = self.instances.get(spelled)
        if found is None:
            have = ", ".join(f"{self.name}<{', '.join(k)}>" for k in self.instances)
            raise DeclarationError(f"{self.name}<{', '.join(spelled)}> was not instantiated; the cell made {have}")
        return found

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        """Launch the only instantiation.

        Parameters
        ----------
        *args, **kwargs
            As for a [`Kernel`][cuforge.Kernel] call.

        Raises
        ------
        DeclarationError
            Where the cell made more than one instantiation: index it instead.
        """
        if len(self.instances) != 1:
            raise DeclarationError(
                f"{self.name} has {len(self.instances)} instantiations; index it, e.g. {self.name}[cf.float32, 256]"
            )
        next(iter(self.instances.values()))(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<cuforge.KernelTemplate {self.name}: {', '.join(k.name_expression for k in self.instances.values())}>"
