"""Linking device code with nvJitLink, through cuda.core's ``Linker``: a kernel compiled as
relocatable code or LTO-IR (``CompileOptions(lto=True)``, or a class's ``link = [...]``)
joined with the modules and sources it lists, into one cubin (or PTX) to load."""

from __future__ import annotations

from typing import Any

from ..errors import CompileError
from . import nvrtc as _compile
from .identity import CompileUnit


def object_code(item: Any) -> Any:
    """A cuda.core ObjectCode for a link input: a cuforge Module, or an ObjectCode already."""
    from cuda.core import ObjectCode

    if isinstance(item, ObjectCode):
        return item
    return getattr(ObjectCode, f"from_{item.code_type}")(item.code, name=item.name)


def link(inputs: list[Any], arch: str, *, lto: bool, who: str = "link") -> Any:
    """Link ``inputs`` (Modules or ObjectCodes) for ``arch``: a cubin for ``sm_XY``, PTX for
    ``compute_XY`` (which nvJitLink emits only from LTO-IR)."""
    from cuda.core import Linker, LinkerOptions

    ptx = arch.startswith("compute_")
    sm = arch.replace("compute_", "sm_")
    try:
        linker = Linker(*[object_code(i) for i in inputs], options=LinkerOptions(arch=sm, link_time_optimization=lto, ptx=ptx))
        return linker.link("ptx" if ptx else "cubin")
    except Exception as exc:
        log = ""
        try:
            log = linker.get_error_log()  # type: ignore[possibly-undefined]
        except Exception:
            pass
        raise CompileError(
            f"{who}: nvJitLink failed to link for {arch}: {type(exc).__name__}: {exc}"
            + (f"\n{log}" if log else "")
            + "\n(every extern __device__ function must be defined in exactly one input; compile inputs with "
            "CompileOptions(lto=True) or as relocatable code)",
            log=log,
            source="",
            options=(arch,),
        ) from None


def link_result(result: Any, kernel: CompileUnit, arch: str, flags: tuple[str, ...]) -> Any:
    """The loadable result of a relocatable or LTO compile: its code linked with the
    kernel's ``links`` (Modules as they are; sources compiled with the same flags)."""
    from cuda.core import ObjectCode  # imported on first use: `import cuforge` stays free of cuda.core

    lto = "-dlto" in flags
    if arch.startswith("compute_") and not lto:
        raise CompileError(
            f"{kernel.label}: PTX of relocatable code cannot be linked; compile for sm_XY, or with CompileOptions(lto=True)",
            log="", source="", options=flags,
        )  # fmt: skip
    inputs: list[Any] = [ObjectCode.from_ltoir(result.code) if lto else ObjectCode.from_cubin(result.code)]
    for i, item in enumerate(kernel.links):
        if isinstance(item, str):
            part = _compile.compile_program(item, program_name=f"{kernel.name}.link{i}.cu", name_expressions=(),
                                            flags=flags, kernel=f"{kernel.label} (link[{i}])")  # fmt: skip
            item = ObjectCode.from_ltoir(part.code) if lto else ObjectCode.from_cubin(part.code)
        inputs.append(item)
    linked = link(inputs, arch, lto=lto, who=kernel.label)
    code = linked.code.encode() if isinstance(linked.code, str) else bytes(linked.code)
    return result._replace(code=code, code_type="ptx" if arch.startswith("compute_") else "cubin")
