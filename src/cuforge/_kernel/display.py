"""Rich notebook display of kernels, families and compiled kernels (``_repr_html_``).

Resource figures come from the loaded function's attributes where the kernel has been
loaded on a GPU, else from the cubin's metadata (registers, stack, static shared memory).
"""

from __future__ import annotations

from html import escape
from typing import Any

_STYLE = "font-family:monospace;border-collapse:collapse"
_CELL = "border:1px solid #ccc;padding:2px 6px;text-align:left"


def _table(head: list[str], rows: list[list[Any]]) -> str:
    th = "".join(f'<th style="{_CELL}">{escape(h)}</th>' for h in head)
    body = "".join("<tr>" + "".join(f'<td style="{_CELL}">{escape(str(c))}</td>' for c in row) + "</tr>" for row in rows)
    return f'<table style="{_STYLE}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def resources(ck: Any) -> dict[str, Any]:
    """Registers, shared, local memory of a CompiledKernel: from the driver if it is loaded
    and this thread has a device, else from the cubin."""
    from .._runtime import cuda as _cuda

    info = getattr(_cuda._tls, "device", None)
    if ck._handle is not None and info is not None:
        return {
            "registers": _cuda.kernel_attribute(ck._handle, "NUM_REGS", info.id),
            "shared_bytes": _cuda.kernel_attribute(ck._handle, "SHARED_SIZE_BYTES", info.id),
            "local_bytes": _cuda.kernel_attribute(ck._handle, "LOCAL_SIZE_BYTES", info.id),
            "source": "GPU",
        }
    res = ck.resources()
    return {
        "registers": res.get("registers", "?"),
        "shared_bytes": res.get("shared_bytes", "?"),
        "local_bytes": res.get("frame_bytes", "?"),
        "source": "cubin" if res else "n/a (PTX)",
    }


def compiled_rows(cks: list[Any]) -> list[list[Any]]:
    rows = []
    for ck in cks:
        r = resources(ck)
        rows.append(
            [
                ck.name_expression,
                ck.arch,
                ck.code_type,
                r["registers"],
                r["shared_bytes"],
                r["local_bytes"],
                f"{ck.compile_seconds * 1e3:.1f} ms",
                "disk cache" if ck.from_cache else "NVRTC",
            ]
        )
    return rows


_COMPILED_HEAD = ["instantiation", "arch", "code", "registers", "shared B", "local B", "compile", "from"]


def kernel_html(k: Any) -> str:
    sig = k.signature
    params = _table(["parameter", "type", "C++"], [[p.name, p.type_name, p.cpp()] for p in sig.params])
    compiled = list(k._compiled.values())
    done = _table(_COMPILED_HEAD, compiled_rows(compiled)) if compiled else "<p><i>not compiled yet</i></p>"
    doc = f"<p>{escape(k.__doc__.strip())}</p>" if k.__doc__ else ""
    return (
        f'<div class="cuforge-kernel"><p><b>cuforge.Kernel</b> <code>{escape(sig.describe(k.label))}</code></p>'
        f"{doc}{params}<p>compiled:</p>{done}</div>"
    )


def family_html(f: Any) -> str:
    tps = _table(
        ["template parameter", "allowed", "default"],
        [
            [t.name, ", ".join(getattr(v, "name", str(v)) for v in t.values), getattr(t.default, "name", t.default)]
            for t in f.template_params
        ],
    )
    compiled = [ck for inst in f._instances.values() for ck in inst._compiled.values()]
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


def compiled_html(ck: Any) -> str:
    return (
        f'<div class="cuforge-compiled"><p><b>cuforge.CompiledKernel</b> <code>{escape(ck.name_expression)}</code> '
        f"symbol <code>{escape(ck.lowered_name)}</code>, {len(ck.code)} bytes</p>"
        f"{_table(_COMPILED_HEAD, compiled_rows([ck]))}</div>"
    )
