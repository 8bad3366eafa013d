"""The Jinja environment, and assembly of a kernel's full CUDA C++ source.

One configuration for every template: StrictUndefined (a missing variable is an error, not
an empty string), no autoescape (this is C++, not HTML), trailing newlines kept and no
block trimming, so a rendered body has the same line numbers as its template wherever no
loop expands. Generated source carries ``#line`` directives, so NVRTC reports errors at the
user's body line (``Saxpy.body(3)``), not at a line of generated code.
"""

from __future__ import annotations

import functools
import os
import re
import textwrap
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .. import _config
from ..errors import TemplateError

if TYPE_CHECKING:
    import jinja2

# Jinja2 is imported by the functions that render, not with cuforge: many kernels have no
# Jinja syntax at all.
PACKAGE_TEMPLATES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "templates")


class CppBool(int):
    """A bool template value in Jinja: true in ``{% if %}``, rendered as C++ spells it."""

    def __str__(self) -> str:
        return "true" if self else "false"

    __repr__ = __str__


@functools.lru_cache(maxsize=32)
def environment(dirs: tuple[str, ...] = ()) -> jinja2.Environment:
    """The strict environment over ``dirs`` plus the package's own templates."""
    import jinja2

    loader = jinja2.FileSystemLoader([*dirs, PACKAGE_TEMPLATES])
    return jinja2.Environment(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        auto_reload=True,
    )


def search_dirs(extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Template directories: a kernel's own, then CUFORGE_TEMPLATE_PATH."""
    configured = tuple(_config.template_path())
    return tuple(os.path.abspath(d) for d in (*extra, *configured))


def _template_line(tb: TracebackType | None, filename: str) -> int | None:
    """The template line a Jinja error was raised at (Jinja rewrites tracebacks so template
    frames carry the template's own file name and line)."""
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _error(kernel: str, where: str, exc: BaseException, filename: str, text: str | None) -> TemplateError:
    import jinja2

    line = getattr(exc, "lineno", None) or _template_line(exc.__traceback__, filename)
    shown = ""
    if line is not None and text is not None:
        lines = text.split("\n")
        if 0 < line <= len(lines):
            shown = f"\n  {line:>4} | {lines[line - 1]}"
    at = f" line {line}" if line is not None else ""
    hint = ""
    if isinstance(exc, jinja2.UndefinedError) and where == "preamble":
        # one preamble serves every instantiation of a family: no instantiation's values are in it
        hint = ("; a preamble is shared by every instantiation, so only `name` and `params` are defined in it, not "
                "template parameters: write a C++ template (template <typename T> __device__ T f(T v)) or move it "
                "into the body")  # fmt: skip
    elif isinstance(exc, jinja2.UndefinedError):
        hint = "; only declared values (template parameters, `name`, `params`) are defined"
    text_of = getattr(exc, "message", None) or str(exc)
    return TemplateError(f"{kernel}: cannot render {where}{at}: {text_of}{hint}{shown}")


def dedent_body(body: str) -> str:
    """A body as written in a class: drop one leading blank line and common indentation.

    Line 1 of the result is what error messages call line 1 of the body.
    """
    if body.startswith("\n"):
        body = body[1:]
    elif body.startswith("\r\n"):
        body = body[2:]
    return textwrap.dedent(body).rstrip() + "\n"


_JINJA_MARKS = ("{{", "{%", "{#")
# Names Jinja reads as constants or operators inside ``{{ }}``, never as a template value.
_JINJA_WORDS = frozenset({"true", "false", "none", "True", "False", "None", "and", "or", "not", "in", "is", "if",
                          "else", "recursive"})  # fmt: skip


def _substitutions(text: str) -> tuple[str, ...] | None:
    """``text`` as (text, name, text, name, ..., text) when its only Jinja syntax is
    ``{{ NAME }}`` placeholders, else None (Jinja renders it).

    Such a body renders to its text with ``str(value)`` in place of each placeholder, as
    Jinja's output of a variable does without autoescape; anything else Jinja could read
    differently (a filter, an attribute, ``{{-``, a comment or a tag, a carriage return,
    which its lexer turns into a newline) is left to Jinja.
    """
    if "{%" in text or "{#" in text or "\r" in text:
        return None
    first, *rest = text.split("{{")
    pieces = [first]
    for part in rest:
        inner, sep, after = part.partition("}}")
        name = inner.strip(" \t\n")
        if not sep or not (name.isascii() and name.isidentifier()) or name in _JINJA_WORDS:
            return None
        pieces += [name, after]
    return tuple(pieces)


class Snippet:
    """A parsed Jinja snippet (a body or preamble) and the text it came from.

    ``template`` is None for plain C++ (rendered as is) and for a snippet whose only Jinja is
    ``{{ NAME }}`` placeholders (``pieces``): neither imports Jinja, which a warm start then
    does not pay for. The rendered text, and so every cache key made from it, is Jinja's.
    """

    __slots__ = ("kernel", "pieces", "template", "text", "where")

    def __init__(self, kernel: str, where: str, text: str, template: jinja2.Template | None,
                 pieces: tuple[str, ...] | None = None) -> None:  # fmt: skip
        self.kernel, self.where, self.text = kernel, where, text  # where: "body" or "preamble", the #line file suffix
        self.template, self.pieces = template, pieces

    @classmethod
    def parse(cls, kernel: str, where: str, raw: str) -> Snippet:
        text = dedent_body(raw)
        if not any(mark in text for mark in _JINJA_MARKS):
            return cls(kernel, where, text, None)
        pieces = _substitutions(text)
        if pieces is not None:
            return cls(kernel, where, text, None, pieces)
        return cls(kernel, where, text, _compile(kernel, where, text))

    def render(self, context: Mapping[str, Any]) -> str:
        pieces = self.pieces
        if pieces is not None:
            if all(name in context for name in pieces[1::2]):
                out = "".join(p if i % 2 == 0 else str(context[p]) for i, p in enumerate(pieces))
                return out if out.endswith("\n") else out + "\n"
            # a name that is not a template value (a Jinja global, or undefined): Jinja's
            # reading and its error message
            self.template, self.pieces = _compile(self.kernel, self.where, self.text), None
        if self.template is None:
            return self.text
        import jinja2

        try:
            out = self.template.render(context)
        except jinja2.TemplateError as exc:
            raise _error(self.kernel, self.where, exc, "<template>", self.text) from None
        return out if out.endswith("\n") else out + "\n"

    @property
    def line_file(self) -> str:
        return f"{self.kernel}.{self.where}"


def _compile(kernel: str, where: str, text: str) -> jinja2.Template:
    import jinja2

    try:
        return environment().from_string(text)
    except jinja2.TemplateSyntaxError as exc:
        raise _error(kernel, where, exc, "<template>", text) from None


def render_file(kernel: str, name: str, dirs: tuple[str, ...], context: Mapping[str, Any]) -> str:
    """Render the whole-kernel template ``name`` found in ``dirs`` or the package."""
    import jinja2

    env = environment(dirs)
    try:
        tmpl = env.get_template(name)
    except jinja2.TemplateNotFound:
        searched = ", ".join(env.loader.searchpath) if isinstance(env.loader, jinja2.FileSystemLoader) else ""
        raise TemplateError(
            f"{kernel}: template {name!r} not found in {searched}; pass its directory with "
            f"template_dirs=[...] on the class or CUFORGE_TEMPLATE_PATH"
        ) from None
    except jinja2.TemplateSyntaxError as exc:
        raise _error(kernel, f"template {name!r}", exc, exc.filename or "", exc.source) from None
    try:
        return tmpl.render(context)
    except jinja2.TemplateError as exc:
        source = None
        if tmpl.filename and os.path.exists(tmpl.filename):
            with open(tmpl.filename, encoding="utf-8") as fh:
                source = fh.read()
        raise _error(kernel, f"template {name!r}", exc, tmpl.filename or "", source) from None


def includes(headers: tuple[str, ...]) -> str:
    return "".join(f"#include <{h}>\n" for h in headers)


_INCLUDE_PREFIX = r"(?:[ \t]*(?:#[ \t]*include\b[^\n]*|//[^\n]*)?\n)*"  # (a string: re compiles it on first use)


def split_includes(preamble: str) -> tuple[str, str, int]:
    """(the preamble's leading ``#include`` lines, the rest, the rest's first line number).

    The includes go first in the program, before any ``#line``: NVRTC makes no precompiled
    header for a program whose include prefix holds a ``#line`` directive (warning 20283).
    """
    m = re.match(_INCLUDE_PREFIX, preamble)
    leading = preamble[: m.end()] if m else ""
    return leading, preamble[len(leading) :], leading.count("\n") + 1


def assemble(
    *,
    name: str,
    template_params: str,
    generic_params_cpp: str,
    params_cpp: str,
    specialization: str,
    aliases: str,
    headers: tuple[str, ...],
    body: str,
    body_file: str,
    preamble: str = "",
    preamble_file: str = "",
    comment: str = "",
    launch_bounds: str = "",
) -> tuple[str, str]:
    """(prelude, unit) of a body-declared kernel.

    A plain kernel's unit is its ``__global__`` function. A family's prelude declares the
    function template, and each instantiation's unit is an explicit specialization whose body
    was rendered with that instantiation's values; it starts with ``using T = float;`` /
    ``constexpr int BLOCK = 256;`` so C++ can name the template parameters too. Units of one
    family can share one program: one translation unit, one name expression each.
    ``launch_bounds`` (``"__launch_bounds__(256, 1) "``) goes into the definition, so each
    instantiation may have its own.
    """
    parts = [f"// {comment}\n" if comment else "", includes(headers)]
    if preamble:
        leading, rest, first = split_includes(preamble)
        parts += [leading, f'#line {first} "{preamble_file}"\n' if rest else "", rest]
    if template_params:
        parts.append(f'#line 1 "{name}.cu"\ntemplate <{template_params}>\n__global__ void {name}({generic_params_cpp});\n')
        head = f"template <>\n__global__ void {launch_bounds}{name}<{specialization}>({params_cpp})\n{{\n{aliases}\n"
    else:
        head = f"__global__ void {launch_bounds}{name}({params_cpp})\n{{\n"
    unit = f'#line 1 "{name}.cu"\n{head}#line 1 "{body_file}"\n{body}}}\n'
    return "".join(parts), unit
