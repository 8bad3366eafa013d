"""`KernelSource`: one kernel's C++ (assembled from its declaration and template arguments)
and what identifies a compile of it (its inputs and cache key).

A program holds one prelude and the units of the kernels compiled in it; kernels of one
family share their prelude. Nothing here needs NVRTC or a GPU.
"""

from __future__ import annotations

from typing import Any

from .._compile.headers import template_headers
from .._declare import render as _render
from .._declare import rules as _rules
from .._declare.declaration import Declaration
from .._declare.render import CppBool
from .._declare.signature import Param, Signature
from .._version import __version__
from ..errors import CuforgeError


class KernelSource:
    """The source side of one kernel (one instantiation): rendered once, on first use."""

    __slots__ = ("_cache", "decl", "label", "launch_bounds", "name", "name_expression", "qualname", "signature",
                 "template_args")  # fmt: skip

    def __init__(self, decl: Declaration, label: str, signature: Signature, template_args: dict[str, Any],
                 name_expression: str, launch_bounds: Any) -> None:  # fmt: skip
        self.decl, self.label, self.signature, self.template_args = decl, label, signature, template_args
        self.name, self.qualname, self.name_expression = decl.name, decl.qualname, name_expression
        self.launch_bounds = launch_bounds
        self._cache: tuple[str, str, dict[str, str]] | None = None

    def prebuilt(self, what: str) -> CuforgeError:
        return CuforgeError(
            f"{self.label}.{what}: the kernel is prebuilt (module={self.decl.module!r}, entry {self.name!r}); "
            f"it has no source to render or compile"
        )

    def context(self) -> dict[str, Any]:
        values = {k: CppBool(v) if isinstance(v, bool) else v for k, v in self.template_args.items()}
        return {"name": self.name, "params": {p.name: p for p in self.signature.params}, **values}

    def pieces(self) -> tuple[str, str, dict[str, str]]:
        """(prelude, unit, #line sources)."""
        if self._cache is not None:
            return self._cache
        decl = self.decl
        if decl.module is not None:
            raise self.prebuilt("render()")
        line_sources: dict[str, str] = {}
        if decl.source is not None:
            prelude, unit = decl.source, ""
            # A family's name expressions spell its template arguments: the headers of those
            # types (cuforge::complex's) come first, for every instantiation alike (they share
            # the prelude), and #line keeps the user's line numbers.
            if decl.template_params and decl.headers:
                source_file = f"{decl.name}.source"
                prelude = f'{_render.includes(decl.headers)}#line 1 "{source_file}"\n{decl.source}'
                line_sources[source_file] = decl.source
        elif decl.template is not None:
            sig = self.signature
            ctx = {
                **self.context(),
                "params_cpp": sig.cpp(),
                "signature": f"__global__ void {self.name}({sig.cpp()})",
                "includes": _render.includes(decl.headers),
            }
            prelude, unit = "", _render.render_file(self.name, decl.template, decl.template_dirs, ctx)
        else:
            prelude, unit = self._assembled(line_sources)
        self._cache = (prelude, unit, line_sources)
        return self._cache

    def _assembled(self, line_sources: dict[str, str]) -> tuple[str, str]:
        """A ``body`` kernel's prelude and unit, noting the #line sources it names."""
        decl = self.decl
        assert decl.body is not None
        body = decl.body.render(self.context())
        body_file = f"{self.label}.body"
        line_sources[body_file] = body
        preamble = ""
        if decl.preamble is not None:
            preamble = decl.preamble.render({"name": self.name, "params": self.context()["params"]})
            line_sources[decl.preamble.line_file] = preamble
        generic = Signature(tuple(Param(n, i, ann) for i, (n, ann) in enumerate(decl.params)))
        values = self.template_args.values()
        return _render.assemble(
            name=self.name,
            template_params=", ".join(f"{t.cpp_kind} {t.name}" for t in decl.template_params),
            generic_params_cpp=generic.cpp(),
            params_cpp=self.signature.cpp(),
            specialization=", ".join(t.spell(v) for t, v in zip(decl.template_params, values)),
            aliases="".join(
                f"using {t.name} = {t.spell(v)}; " if t.kind == "type"
                else f"[[maybe_unused]] constexpr {t.cpp_kind} {t.name} = {t.spell(v)}; "
                for t, v in zip(decl.template_params, values)
            ),
            headers=decl.headers,
            body=body,
            body_file=body_file,
            preamble=preamble,
            preamble_file=decl.preamble.line_file if decl.preamble else "",
            launch_bounds=_rules.spell_bounds(self.launch_bounds),
            comment=f"generated by cuforge {__version__} for {self.qualname}",
        )  # fmt: skip

    def headers(self) -> dict[str, str]:
        """Headers included from the kernel's template directories, passed to NVRTC in memory."""
        prelude, unit, _ = self.pieces()
        return template_headers(prelude + unit, (*self.decl.template_dirs, _render.PACKAGE_TEMPLATES))
