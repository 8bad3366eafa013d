"""The HTML tables of compiled kernels (``_repr_html_``): the rows that the displays of a
compiled kernel, a kernel and a family share.

Resource figures come from the driver where the kernel is loaded and this thread has a
device (the runtime tells them), else from the cubin's metadata (registers, stack, static
shared memory).
"""

from __future__ import annotations

from html import escape
from typing import Any

_STYLE = "font-family:monospace;border-collapse:collapse"
_CELL = "border:1px solid #ccc;padding:2px 6px;text-align:left"

COMPILED_HEAD = ["instantiation", "arch", "code", "registers", "shared B", "local B", "compile", "from"]


def table(head: list[str], rows: list[list[Any]]) -> str:
    th = "".join(f'<th style="{_CELL}">{escape(h)}</th>' for h in head)
    body = "".join("<tr>" + "".join(f'<td style="{_CELL}">{escape(str(c))}</td>' for c in row) + "</tr>" for row in rows)
    return f'<table style="{_STYLE}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def resources(ck: Any) -> dict[str, Any]:
    """Registers, shared, local memory of a CompiledKernel: from the driver if it is loaded
    and this thread has a device, else from the cubin."""
    found = ck._loader.driver_resources(ck) if ck._loader is not None else None
    if found is not None:
        return found
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


def compiled_html(ck: Any) -> str:
    return (
        f'<div class="cuforge-compiled"><p><b>cuforge.CompiledKernel</b> <code>{escape(ck.name_expression)}</code> '
        f"symbol <code>{escape(ck.lowered_name)}</code>, {len(ck.code)} bytes</p>"
        f"{table(COMPILED_HEAD, compiled_rows([ck]))}</div>"
    )
