"""Compiling through the stores: one compile per key, even when threads (or processes) ask
at once.

The memory store (`memory`, a `MemoryCache`) is looked in first, then the disk store
(``disk.current()``); a key neither holds is compiled (``parallel`` splits the programs) and
put in both. Keys are ``identity.key_of``. Kernels come in as `Compilable` objects, read
only through their `CompileUnit`.
"""

from __future__ import annotations

import _thread  # (threading's lock and thread-local types, without importing threading on a warm start)
import contextlib
import os
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

from .. import _config
from ..errors import CompileError
from ..options import CompileOptions, check_arch, to_flags
from . import disk as _disk
from .artifact import CompiledKernel
from .headers import include_dirs
from .identity import Compilable, CompileUnit, key_of, resolve_options
from .stats import counters

__all__ = ["compile_each", "compile_together", "memory", "note_source_kernel", "same_program"]

V = TypeVar("V")


class Store(Protocol[V]):
    """Compiled code by cache key: ``get`` gives None on a miss; ``put`` never loses the
    caller's value (a store that cannot keep it says so and goes on)."""

    def get(self, key: str) -> V | None: ...

    def put(self, key: str, value: V) -> None: ...


class MemoryCache:
    """A thread-safe map from key to compiled kernel, with single-flight compiles."""

    def __init__(self) -> None:
        self._items: dict[str, Any] = {}
        self._inflight: dict[str, _thread.LockType] = {}
        self._lock = _thread.allocate_lock()

    @contextlib.contextmanager
    def gates(self, keys: list[str]) -> Iterator[None]:
        """Hold the compile gates of ``keys`` (taken in sorted order, so two batches that share
        keys cannot deadlock): inside, re-check the cache, compile what is missing, put it."""
        with self._lock:
            locks = [self._inflight.setdefault(k, _thread.allocate_lock()) for k in sorted(set(keys))]
        with contextlib.ExitStack() as stack:
            for lock in locks:
                stack.enter_context(lock)
            yield

    def get(self, key: str) -> Any:
        """The cached value for ``key``, or None (counts a hit when found)."""
        found = self._items.get(key)
        if found is not None:
            counters.add(memory_hits=1)
        return found

    def peek(self, key: str) -> Any:
        """The cached value for ``key`` or None, counting nothing."""
        return self._items.get(key)

    def put(self, key: str, value: Any) -> None:
        with self._lock:
            self._items.setdefault(key, value)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


memory = MemoryCache()

Guard = Callable[[str], None]  # called with a kernel's label before NVRTC runs for it; raises to refuse


def compile_together(kernels: Sequence[Compilable], arch: str, options: CompileOptions | None, *, who: str,
                     guard: Guard | None = None) -> list[CompiledKernel]:  # fmt: skip
    """Compile kernels of one declaration (one prelude, one unit each, one name expression
    each), with the kernels declared over the same source= text: one NVRTC program, or
    several when a heavy family is split (``parallel``); kernels already in the memory cache
    are not compiled again. ``guard`` runs before NVRTC does (not for a cache hit)."""
    units, keys, found, flags, opts = _look_up(kernels, arch, options, who)
    if any(f is None for f in found):
        missing = [key for key, f in zip(keys, found) if f is None]
        siblings = _siblings(kernels, units[0], options, flags, opts)
        with memory.gates(missing + [key for _, key in siblings]):  # one compile per key in this process
            disk = _disk.current()
            if not _from_disk(units, keys, arch, disk):
                lock = disk.locks(missing, _config.cache_lock_seconds()) if disk else contextlib.nullcontext()
                with lock:  # one compile per key across processes
                    if not _from_disk(units, keys, arch, disk, recheck=True):
                        _compile_with_siblings(units, keys, siblings, arch, flags, disk, guard)
    return _results(units, keys, found)


Found = tuple[list[CompileUnit], list[str], list[CompiledKernel | None], tuple[str, ...], CompileOptions]


def _look_up(kernels: Sequence[Compilable], arch: str, options: CompileOptions | None, who: str) -> Found:
    """The kernels' units, keys and memory-cache entries (None where absent) for ``arch``, and
    the flags and options of their compile."""
    units = [k._compile_unit() for k in kernels]
    opts = resolve_options(units[0], options, who)
    flags = to_flags(opts, check_arch(arch), include_dirs())
    keys = [key_of(u, flags, opts) for u in units]
    return units, keys, [memory.get(key) for key in keys], flags, opts


def cached_together(kernels: Sequence[Compilable], arch: str, *, who: str) -> list[CompiledKernel] | None:
    """`compile_together` (default options) where the memory or disk cache holds every kernel,
    else None, without compiling."""
    units, keys, found, _, _ = _look_up(kernels, arch, None, who)
    if any(f is None for f in found) and not _from_disk(units, keys, arch, _disk.current()):
        return None
    return _results(units, keys, found)


def _results(units: list[CompileUnit], keys: list[str], found: list[CompiledKernel | None]) -> list[CompiledKernel]:
    """Each unit's compiled kernel: found first, else what the memory cache holds for it now
    (read from disk or compiled since), each unit told of its own."""
    results = [f if f is not None else memory.peek(key) for f, key in zip(found, keys)]
    for u, ck in zip(units, results):
        u.on_compiled(ck)
    return results


Compiled = CompiledKernel


def compile_each(kernels: Sequence[Compilable], arch: str, options: CompileOptions | None, *, who: str,
                 guard: Guard | None = None) -> tuple[list[Compiled | None], list[tuple[Any, CompileError]]]:  # fmt: skip
    """`compile_together`, where one kernel that cannot compile (its source, or ptxas: too
    much shared memory) keeps none of the others from compiling: (the results, None for a
    failed kernel; the (kernel, error) of each failure). Where the program fails, each kernel is
    compiled alone (those compiled meanwhile come from the memory cache)."""
    try:
        return list(compile_together(kernels, arch, options, who=who, guard=guard)), []
    except CompileError as exc:
        if len(kernels) == 1:
            return [None], [(kernels[0], exc)]
    results: list[Compiled | None] = []
    failed: list[tuple[Any, CompileError]] = []
    for k in kernels:
        try:
            results += compile_together([k], arch, options, who=who, guard=guard)
        except CompileError as exc:
            results.append(None)
            failed.append((k, exc))
    return results, failed


_by_source: dict[str, weakref.WeakSet[Any]] = {}  # a source= text -> the kernels declared over it
_source_lock = _thread.allocate_lock()


def _after_fork() -> None:  # a fork's child has only the forking thread: a lock another one held would never open
    global _source_lock
    _source_lock = _thread.allocate_lock()
    memory._lock = _thread.allocate_lock()
    memory._inflight.clear()  # (the gates of compiles that other threads ran)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def note_source_kernel(source: str, kernel: Compilable) -> None:
    """Remember a kernel declared over the source= text ``source``: its siblings compile with it."""
    with _source_lock:
        _by_source.setdefault(source, weakref.WeakSet()).add(kernel)


def kernels_over(source: str) -> list[Compilable]:
    """The kernels declared over the source= text ``source`` (alive), in no set order."""
    with _source_lock:
        return list(_by_source.get(source, ()))


def _siblings(kernels: Sequence[Compilable], first: CompileUnit, options: CompileOptions | None, flags: tuple[str, ...],
              opts: CompileOptions) -> list[tuple[CompileUnit, str]]:  # fmt: skip
    """(unit, key) of the other kernels declared over the same source= text as ``first``, with
    the same options, not compiled yet: one source is one NVRTC program, as CuPy's RawModule
    makes it (a family's instantiations and sibling declarations alike)."""
    if options is not None or first.source_text is None:
        return []
    with _source_lock:
        group = list(_by_source.get(first.source_text, ()))
    out = []
    for kernel in group:
        if any(kernel is k for k in kernels):
            continue
        s = kernel._compile_unit()
        if same_program(first, s) and memory.peek(key := key_of(s, flags, opts)) is None:
            out.append((s, key))
    return out


def same_program(a: CompileUnit, b: CompileUnit) -> bool:
    """Whether ``a`` and ``b`` compile as one NVRTC program: declared over one source= text,
    with the same options and links, and the same prelude (a source= family whose name
    expressions need cuforge's headers has them before the text; a plain kernel over that
    text does not). The in-process cache and the ahead-of-time build both group by it."""
    if a.source_text is None or a.source_text != b.source_text:
        return False
    return a.options == b.options and a.links == b.links and a.prelude == b.prelude


def _compile_with_siblings(units: list[CompileUnit], keys: list[str], siblings: list[tuple[CompileUnit, str]], arch: str,
                           flags: tuple[str, ...], disk: _disk.DiskCache | None, guard: Guard | None) -> None:  # fmt: skip
    """Compile ``units`` with the siblings that neither memory nor disk holds; where that
    program fails, ``units`` alone, so that a sibling's own mistake is reported when it is
    compiled, not here."""
    others = [(s, key) for s, key in siblings if memory.peek(key) is None]
    others = [(s, key) for s, key in others if not _from_disk([s], [key], arch, disk)]
    if not others:
        _compile_missing(units, keys, arch, flags, disk, guard)
        return
    try:
        _compile_missing(units + [s for s, _ in others], keys + [key for _, key in others], arch, flags, disk, guard)
    except CompileError:
        _compile_missing(units, keys, arch, flags, disk, guard)
        return
    for s, key in others:
        s.on_compiled(memory.peek(key))


def _from_disk(units: list[CompileUnit], keys: list[str], arch: str, disk: _disk.DiskCache | None, *,
               recheck: bool = False) -> bool:  # fmt: skip
    """Fill the memory cache from disk where it can; True when nothing is left to compile."""
    done = True
    for u, key in zip(units, keys):
        if memory.peek(key) is not None:
            continue
        stored = disk.get(key, recheck=recheck) if disk is not None else None
        if stored is None or u.name_expression not in stored.lowered:
            done = False
            continue
        memory.put(key, CompiledKernel(u, arch, stored, u.name_expression, u.source))
    return done


def _compile_missing(units: list[CompileUnit], keys: list[str], arch: str, flags: tuple[str, ...],
                     disk: _disk.DiskCache | None, guard: Guard | None) -> None:  # fmt: skip
    pending = {key: u for u, key in zip(units, keys) if memory.peek(key) is None}
    todo = list(pending.values())
    if not todo:
        return
    from . import link as _link  # (NVRTC's side: imported by the first compile, not at start-up)
    from . import parallel as _parallel

    first = todo[0]
    if guard is not None:
        guard(first.label)
    key_of_unit = {id(u): key for key, u in pending.items()}
    for group, result in _parallel.compile_groups(todo, flags, lambda group: program_spec(group, first, flags)):
        if "-rdc=true" in flags:
            result = _link.link_result(result, group[0], arch, flags)
        for u in group:
            key = key_of_unit[id(u)]
            memory.put(key, CompiledKernel(u, arch, result, u.name_expression, first.prelude + u.unit))
            if disk is not None:
                disk.put(key, result)


def program_spec(group: list[CompileUnit], first: CompileUnit, flags: tuple[str, ...]) -> dict[str, Any]:
    """``nvrtc.compile_program``'s arguments for one NVRTC program of ``group``: the prelude
    of ``first`` (the compile's first unit, whose prelude they all share), then each unit."""
    line_sources: dict[str, str] = {}
    headers: dict[str, str] = {}
    for u in group:
        line_sources.update(u.line_sources)
        headers.update(u.headers)
    return {
        "source": first.prelude + "".join(u.unit for u in group),
        "headers": headers,
        "program_name": f"{first.name}.cu",
        "name_expressions": tuple(dict.fromkeys(u.name_expression for u in group)),
        "flags": flags,
        "kernel": group[0].label if len(group) == 1 else f"{first.name} ({len(group)} instantiations)",
        "line_sources": line_sources,
    }
