"""What the compile layer is given of a kernel: a `CompileUnit`, built by the kernel layer
(``Kernel.compile_unit``), so that compiling reads records, not kernels."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..options import CompileOptions


@dataclass(frozen=True, eq=False)
class CompileUnit:
    """One kernel's part of an NVRTC program.

    A program holds one ``prelude`` and the ``unit`` of each kernel compiled in it (kernels
    of one family share their prelude); ``source`` is what one kernel alone compiles.
    """

    label: str  # the kernel as messages name it: "Axpy[float32, 256]"
    name: str  # the C++ name, for the program's name
    qualname: str  # the declaring class's module and name: an ahead-of-time build's entries
    name_expression: str  # what NVRTC looks up: "Axpy<float, 256>"
    prelude: str
    unit: str
    line_sources: Mapping[str, str]  # #line file names -> their text, for error messages
    headers: Mapping[str, str]  # template headers, given to NVRTC in memory
    options: CompileOptions  # the class's
    links: tuple[Any, ...]  # what it is linked with: Modules, ObjectCodes, CUDA C++ sources
    source_text: str | None  # the source= text it is declared over, if any
    declaration: int  # one value per declaration: a family's instantiations share it
    family: bool  # an instantiation of a template
    on_compiled: Callable[[Any], None]  # told of each CompiledKernel made for it, sibling compiles included

    @property
    def source(self) -> str:
        """The translation unit of this kernel alone."""
        return self.prelude + self.unit


class Compilable(Protocol):
    """What the compile layer takes: an object that describes its compile."""

    def compile_unit(self) -> CompileUnit: ...
