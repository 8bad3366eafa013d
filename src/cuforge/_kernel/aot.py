"""``python -m cuforge build``: compile every kernel and family instantiation that Python
modules register, for several archs, into fatbins (nvFatbin) and a manifest (see ``_compile/build.py``
for the layout and how a process uses it).

An instantiation that cannot compile (its source, or ptxas: too much shared memory for
that combination) is left out and named in ``manifest["failed"]``, in Python terms; the rest
are built and written. The command line then exits with status 1, listing them.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from typing import Any

from .._compile import cache as _cache
from .._compile.build import MANIFEST, SCHEMA, inputs_of
from .._compile.identity import toolchain
from .._compile.parallel import progress_line
from .._version import __version__
from ..errors import ConfigError
from .family import Family, spelled
from .kernel import refuse_compile_in_capture
from .registry import registry


def precompile_cpu(chosen: list[Any], progress: bool = False) -> int:
    """Build every instantiation of the kernels and families ``chosen`` for the CPU backend,
    into the disk cache (``python -m cuforge precompile --device cpu``); how many were built."""
    kernels = [k for obj in chosen for k in (obj.instantiations() if isinstance(obj, Family) else [obj])]
    for done, k in enumerate(kernels, 1):
        k._cpu_entry()  # (kernels over one source= text are built together, once)
        if progress:
            progress_line(f"cuforge: built {done}/{len(kernels)} kernels for the CPU", done, len(kernels))
    return len(kernels)


def declarations(modules: list[str]) -> list[Any]:
    """The kernels and families the Python modules register (imported here), prebuilt ones aside.
    Errors say what went wrong; the command line puts its own name before them."""
    found = []
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise ConfigError(f"cannot import {name!r}: {exc}") from None
        mine = [obj for obj in registry.values() if obj.__wrapped__.__module__ == name and obj._decl.module is None]
        if not mine:
            raise ConfigError(f"module {name!r} declares no kernel (nothing decorated with @cf.kernel)")
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


def _programs(decls: list[Any]) -> list[list[Any]]:
    """The declarations that one process compiles together: those whose kernels are one NVRTC
    program in-process (``_compile.cache.same_program``: one ``source=`` text, options, links and
    prelude) are one image in the build; any other declaration is compiled alone."""
    groups: list[list[Any]] = []
    for obj in decls:
        one = _representative(obj)
        for group in groups:
            other = _representative(group[0])
            if one is not None and other is not None and _cache.same_program(one._compile_unit(), other._compile_unit()):
                group.append(obj)
                break
        else:
            groups.append([obj])
    return groups


def _representative(obj: Any) -> Any:
    """A kernel of the declaration ``obj`` (a family's instantiations share its prelude), or None
    for a family with no instantiation."""
    if not isinstance(obj, Family):
        return obj
    return next(iter(obj.instantiations()), None)


def build(modules: list[str], archs: list[str], out: str, *, progress: bool = False) -> dict[str, Any]:
    """Compile every kernel and family instantiation the modules register, for every arch,
    into ``out``: a fatbin per NVRTC program and ``manifest.json``. Returns the manifest, whose
    ``failed`` lists the instantiations that did not compile (left out of the build)."""
    decls = declarations(modules)
    os.makedirs(out, exist_ok=True)
    entries: list[dict[str, Any]] = []
    failed: dict[int, dict[str, Any]] = {}
    groups = _programs(decls)
    total, done = len(groups) * len(archs), 0
    for group in groups:
        kernels = [k for obj in group for k in (obj.instantiations() if isinstance(obj, Family) else [obj])]
        label = " + ".join(obj.__qualname__ for obj in group)
        images: dict[int, list[Any]] = {id(k): [] for k in kernels}
        for arch in archs:
            compiled, errors = _cache.compile_each(kernels, arch, None, who=f"cuforge build {label}",
                                                   guard=refuse_compile_in_capture)  # fmt: skip
            for k, exc in errors:
                failed.setdefault(id(k), {"kernel": spelled(k) if k.family is not None else k.label, "qualname": k.qualname,
                                          "name_expression": k.name_expression, "arch": arch, "error": str(exc)})  # fmt: skip
            for k, ck in zip(kernels, compiled):
                images[id(k)].append(ck)
            done += 1
            if progress:
                progress_line(f"cuforge build: {done}/{total} {label} for {arch}", done, total)
        built = [k for k in kernels if id(k) not in failed]
        entries += _write_fatbins(built, images, archs, group[0].qualname, out)
    manifest = {"schema": SCHEMA, "cuforge": __version__, "archs": list(archs), "toolchain": toolchain(linked=True),
                "kernels": entries, "failed": list(failed.values())}  # fmt: skip
    tmp = os.path.join(out, f".{MANIFEST}.{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1)
    os.replace(tmp, os.path.join(out, MANIFEST))
    return manifest


def _write_fatbins(kernels: list[Any], images: dict[int, list[Any]], archs: list[str], qualname: str,
                   out: str) -> list[dict[str, Any]]:  # fmt: skip
    """One fatbin per NVRTC program among ``kernels`` (kernels whose image is the same one for
    every arch), and their manifest entries. A family split across worker processes, or
    whose module variables give each instantiation its own program, has several."""
    programs: dict[tuple[str, ...], list[Any]] = {}
    for k in kernels:
        programs.setdefault(tuple(hashlib.sha256(ck.code).hexdigest() for ck in images[id(k)]), []).append(k)
    entries = []
    for i, members in enumerate(programs.values()):
        file = f"{qualname}.fatbin" if len(programs) == 1 else f"{qualname}.{i}.fatbin"
        with open(os.path.join(out, file), "wb") as fh:
            fh.write(_fatbin(list(zip(archs, images[id(members[0])])), qualname))
        for k in members:
            entries.append({
                "qualname": k.qualname,
                "template_args": {t.name: t.spell(v) for t, v in zip(k.family.template_params, k.template_args.values())}
                                  if k.family is not None else {},
                "name_expression": k.name_expression,
                "lowered_name": images[id(k)][0].lowered_name,
                "signature": k.signature.describe(k.label),
                "archs": list(archs),
                "inputs": inputs_of(k, archs[0]),
                "fatbin": file,
            })  # fmt: skip
    return entries
