"""``python -m cuforge build``: compile every kernel and family instantiation that Python
modules register, for several archs, into fatbins (nvFatbin) and a manifest (see ``_build``
for the layout and how a process uses it)."""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Any

from . import _cache
from ._build import MANIFEST, SCHEMA, source_digest
from ._version import __version__
from .errors import ConfigError
from .family import Family
from .registry import registry


def declarations(modules: list[str]) -> list[Any]:
    """The kernels and families the Python modules register (imported here), prebuilt ones aside."""
    found = []
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise ConfigError(f"cuforge build: cannot import {name!r}: {exc}") from None
        mine = [obj for obj in registry.values() if obj._decl.cls.__module__ == name and obj._decl.module is None]
        if not mine:
            raise ConfigError(f"cuforge build: module {name!r} declares no kernel (nothing decorated with @cf.kernel)")
        found += mine
    return found


def _fatbin(images: list[tuple[str, Any]], identifier: str) -> bytes:
    """One fatbin from (arch, CompiledKernel) pairs, through nvFatbin."""
    from cuda.bindings import nvfatbin

    handle = nvfatbin.create([], 0)
    try:
        for arch, ck in images:
            number = arch.split("_", 1)[1]
            if ck.code_type == "ptx":
                nvfatbin.add_ptx(handle, ck.code + b"\0", len(ck.code) + 1, number, identifier, "")
            else:
                nvfatbin.add_cubin(handle, ck.code, len(ck.code), number, identifier)
        out = bytearray(nvfatbin.size(handle))
        nvfatbin.get(handle, out)
        return bytes(out)
    finally:
        nvfatbin.destroy(handle)


def build(modules: list[str], archs: list[str], out: str, *, progress: bool = False) -> dict[str, Any]:
    """Compile every kernel and family instantiation the modules register, for every arch,
    into ``out``: a fatbin per declaration and ``manifest.json``. Returns the manifest."""
    decls = declarations(modules)
    os.makedirs(out, exist_ok=True)
    entries = []
    total, done = len(decls) * len(archs), 0
    for obj in decls:
        kernels = obj.instantiations() if isinstance(obj, Family) else [obj]
        images: list[tuple[str, list[Any]]] = []
        for arch in archs:
            images.append((arch, _cache.compile_together(kernels, arch, None, who=f"cuforge build {obj._decl.label}")))
            done += 1
            if progress:
                print(f"\rcuforge build: {done}/{total} {obj._decl.label} for {arch}", end="", file=sys.stderr)
        file = f"{obj._decl.qualname}.fatbin"
        # One NVRTC program per arch holds every instantiation: its image serves them all.
        with open(os.path.join(out, file), "wb") as fh:
            fh.write(_fatbin([(arch, cks[0]) for arch, cks in images], obj._decl.qualname))
        for i, k in enumerate(kernels):
            entries.append({
                "qualname": k.qualname,
                "template_args": {n: k._decl.tparams[j].spell(v) for j, (n, v) in enumerate(k.template_args.items())},
                "name_expression": k.name_expression,
                "lowered_name": images[0][1][i].lowered_name,
                "signature": k.signature.describe(k.label),
                "archs": list(archs),
                "source_sha256": source_digest(k),
                "fatbin": file,
            })  # fmt: skip
    if progress:
        print(file=sys.stderr)
    manifest = {"schema": SCHEMA, "cuforge": __version__, "archs": list(archs), "kernels": entries}
    tmp = os.path.join(out, f".{MANIFEST}.{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1)
    os.replace(tmp, os.path.join(out, MANIFEST))
    return manifest
