"""Rich notebook display of kernels, families and compiled kernels (``_repr_html_``).

Resource figures come from the loaded function's attributes where the kernel has been
loaded on a GPU, else from the cubin's metadata (registers, stack, static shared memory).
"""

from __future__ import annotations

from html import escape
from typing import Any

from .._compile.html import COMPILED_HEAD as _COMPILED_HEAD
from .._compile.html import compiled_rows
from .._compile.html import table as _table


def kernel_html(k: Any, compiled: list[Any]) -> str:
    """A Kernel, with the CompiledKernels it has made."""
    sig = k.signature
    params = _table(["parameter", "type", "C++"], [[p.name, p.type_name, p.cpp()] for p in sig.params])
    done = _table(_COMPILED_HEAD, compiled_rows(compiled)) if compiled else "<p><i>not compiled yet</i></p>"
    doc = f"<p>{escape(k.__doc__.strip())}</p>" if k.__doc__ else ""
    return (
        f'<div class="cuforge-kernel"><p><b>cuforge.Kernel</b> <code>{escape(sig.describe(k.label))}</code></p>'
        f"{doc}{params}<p>compiled:</p>{done}</div>"
    )


def family_html(f: Any, compiled: list[Any]) -> str:
    """A Family, with the CompiledKernels its instantiations have made."""
    tps = _table(
        ["template parameter", "allowed", "default"],
        [
            [t.name, ", ".join(getattr(v, "name", str(v)) for v in t.values), getattr(t.default, "name", t.default)]
            for t in f.template_params
        ],
    )
    done = _table(_COMPILED_HEAD, compiled_rows(compiled)) if compiled else "<p><i>no instantiation compiled yet</i></p>"
    tuning = ""
    if f.tuning():
        rows = [
            [r["types"], r["key"], r["choice"], r["from"], ", ".join(f"{c}: {ms:.4f} ms" for c, ms in r["times_ms"])]
            for r in f.tuning()
        ]
        tuning = "<p>autotuning:</p>" + _table(["types", "key", "choice", "from", "times"], rows)
    first = f[()]
    return (
        f'<div class="cuforge-family"><p><b>cuforge.Family</b> <code>{escape(first.signature.describe(f.name))}</code> '
        f"({len(f.instantiations())} instantiations)</p>{tps}<p>compiled:</p>{done}{tuning}</div>"
    )
