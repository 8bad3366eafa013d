"""A checked launch on the CPU (``check=True`` at a call, ``CUFORGE_CHECK=1``): the kernel's
checked build run under cuforge's checker (``_cpu/check.cpp``), which refuses an access
outside the kernel's arrays, shared memory and module variables before it happens and reports
uninitialised reads, data races and warp or barrier misuse as `KernelCheckError` subclasses
naming the kernel, the bug, the block and thread, the array or variable with the index and
its extent, and the line of the body.

What it cannot see is memory that belongs to none of those: a pointer made from an integer,
memory reached through a pointer stored in an array. Accesses there are not checked.
"""

from __future__ import annotations

import ctypes
import math
import warnings
from typing import Any, NamedTuple

from .._cpu import check as _check
from .._cpu import runtime as _cpu_runtime
from ..errors import (
    BarrierMisuseError,
    KernelCheckError,
    MisalignedAccessError,
    OutOfBoundsError,
    RaceError,
    UninitializedReadError,
    WarpMisuseError,
)
from .plan import LaunchPlan

__all__ = ["CheckedBuild", "launch"]

INTENTS = {"in": 0, "out": 1, "inout": 2}
_KINDS: tuple[tuple[str, type[KernelCheckError]], ...] = (
    ("out-of-bounds", OutOfBoundsError), ("misaligned", MisalignedAccessError),
    ("uninitialized", UninitializedReadError), ("data race", RaceError), ("warp misuse", WarpMisuseError),
)  # fmt: skip


class CheckedBuild(NamedTuple):
    """A kernel's checked CPU build: its entry, library, path and source lines, and the
    kernel's unchecked library where it is loaded (its module variables are the ones
    set_global and get_global use: a checked launch copies them in and back)."""

    entry: int
    library: Any
    path: str
    line_sources: dict[str, str]
    unchecked: Any  # a callable: the unchecked library, or None where it is not built


# library path -> (name, address, bytes) of its module variables (a None name: another data object of it)
_variables: dict[str, list[tuple[bytes | None, int, int]]] = {}


def _variables_of(build: CheckedBuild) -> list[tuple[bytes | None, int, int]]:
    found = _variables.get(build.path)
    if found is None:
        found = []
        names, others = _check.variables(build.path)
        # A module variable is a plain name at namespace scope (`__device__ float table[4]`); a
        # mangled or reserved one (a leading underscore: the C++ ABI's, a statically linked
        # runtime's data, as the H200 image's checked libraries carry) is left alone. (A variable
        # in a namespace is mangled too: it is not checked.)
        names = tuple(n for n in names if not n.startswith("_"))
        for name in names:
            at = _check.address_of(build.library, name)
            if at is not None and at[1]:
                found.append((name.encode(), *at))
        base = _check.load_base(build.entry)  # (its static locals and guard variables, cuforge's own)
        if base is not None:
            found += [(None, base + offset, size) for offset, size in others if size]
        _variables[build.path] = found
    return found


def launch(plan: LaunchPlan, values: list[Any], arrays: list[tuple[int, Any]], grid: tuple[int, int, int],
           block: tuple[int, int, int], shared_mem: int, cooperative: bool, cluster: Any) -> tuple[int, str]:  # fmt: skip
    """Run a checked call: (status, message) as ``_cpu.runtime.run`` gives them, a report
    already raised."""
    if plan.cpu_check is None:
        raise KernelCheckError(f"{plan.label}: this kernel has no checked CPU build")
    build: CheckedBuild = plan.cpu_check()
    names = []
    table = (_check.CheckArray * max(len(arrays), 1))()
    for j, (i, arg) in enumerate(arrays):
        spec = plan.specs[i]
        itemsize = spec.dtype.itemsize
        name = f"parameter '{spec.name}' ({spec.type_name})".encode()
        names.append(name)
        # the floating-point numbers it holds (a complex's parts, a vector's lanes), where the checker looks for marks
        element = getattr(spec.dtype, "element", None) or spec.dtype
        floating = element.itemsize // (2 if element.kind == "c" else 1) if element.kind in "fc" else 0
        table[j] = _check.CheckArray(arg.ptr, math.prod(arg.shape) * itemsize, 0, itemsize, INTENTS[spec.type.intent], i, name,
                                     floating, element.name == "bfloat16")  # fmt: skip
    variables = _variables_of(build)
    vtable = (_check.CheckVar * max(len(variables), 1))(*[_check.CheckVar(a, n, name) for name, a, n in variables])
    check = _check.CheckLaunch(len(arrays), len(variables), table, vtable)
    synced = _sync_in(build, variables)
    try:
        status, message = _check.run(build.entry, grid, block, shared_mem, plan.packer.pack(values), check,
                                     cooperative=cooperative, cluster=cluster)  # fmt: skip
    finally:
        for dst, src, n in synced:
            ctypes.memmove(src, dst, n)
    where = f"{plan.label} (grid={grid}, block={block}) on the CPU"
    if status == _check.CHECKED:
        if check.file:  # (a report made after the blocks, at a source line rather than a code address)
            line = _check.source_line(check.file.decode(), int(check.line), build.line_sources)
        else:
            line = _check.where(check.library.decode() or build.path, int(check.pc), build.line_sources)
        message = message.replace("@LINE@", line)
        cls = next((c for prefix, c in _KINDS if message.startswith(prefix)), KernelCheckError)
        raise cls(f"{where}, checked: {message}")
    if status == _cpu_runtime.FAILED and "lane" in message:
        raise WarpMisuseError(f"{where}: {message}")
    if status == _cpu_runtime.FAILED and ("__syncthreads" in message or ".sync()" in message):
        raise BarrierMisuseError(f"{where}: {message}")
    if status == 0 and check.unchecked and plan.label not in _warned_unchecked:
        _warn_unchecked(plan.label, build, check)
    return status, message


def _warn_unchecked(label: str, build: CheckedBuild, check: Any) -> None:
    """Warn (once per kernel) that the kernel's own code reached memory the checker does not know."""
    path = check.library.decode() or build.path
    lines = [_check.own_line(path, int(pc), build.line_sources) for pc in check.unknown if pc]
    mine = [line for line in lines if line]
    if not mine:
        return  # (cuforge's runtime, inlined into the kernel: its own memory)
    _warned_unchecked.add(label)
    warnings.warn(f"cuforge checks: {label}: its code reached memory that is none of its arrays, shared memory or module "
                  f"variables (a pointer made from an integer or read from memory, another block's shared memory in a "
                  f"cluster), whose accesses are not checked: at {mine[0]}", RuntimeWarning, stacklevel=6)  # fmt: skip


_warned_unchecked: set[str] = set()  # (the kernels warned of, once each)


def _sync_in(build: CheckedBuild, variables: list[tuple[bytes | None, int, int]]) -> list[tuple[int, int, int]]:
    """Copy the unchecked library's module variables (what set_global wrote) into the checked
    one's: (checked address, unchecked address, bytes) of each, to copy back after."""
    plain = build.unchecked()
    if plain is None or not variables:
        return []
    pairs = []
    for name, address, size in variables:
        if name is None:
            continue
        found = _check.address_of(plain, name.decode())
        if found is not None and found[1] == size:
            ctypes.memmove(address, found[0], size)
            pairs.append((address, found[0], size))
    return pairs
