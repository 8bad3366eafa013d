"""A kernel's program compiled for the CPU: its translation unit (``translate``), built by the
host compiler into a shared object (``store``: cached like a cubin) and loaded once per
process, with the address of each kernel's entry. (Module variables are found in the library
by name: ``runtime.variable``.)"""

from __future__ import annotations

import _thread  # (threading's lock and thread-local types, without importing threading on a warm start)
import ctypes
import os
from collections.abc import Mapping, Sequence
from typing import Any

from .._compile.headers import cccl_include_dir, cuda_include_dir
from .._compile.identity import include_dirs_digest
from .._frozen import Record
from ..options import CompileOptions, define_flags
from . import runtime as _runtime
from . import store as _store
from . import toolchain as _toolchain


class Program(Record):
    """One program loaded for the CPU: entry addresses by name expression."""

    __slots__ = ()
    library: ctypes.CDLL
    entries: dict[str, int]
    sha256: str  # of the shared object's bytes

    def __new__(cls, library: Any, entries: Any, sha256: Any) -> Any:
        return tuple.__new__(cls, (library, entries, sha256))

    @property
    def path(self) -> str:
        """Where binutils read the library (the checked mode's variables and report lines)."""
        return _store.file_of(self.library)


def flags_of(options: CompileOptions) -> tuple[str, ...]:
    """The host compiler's flags for ``options`` (the std, defines, debug; the rest is NVRTC's)."""
    compiler = _toolchain.find_compiler()
    flags = list(_toolchain.compile_flags(compiler, debug=options.debug))
    flags = [f for f in flags if not f.startswith("-std=")] + [f"-std={options.std}"]
    if options.fast_math:
        flags.append("-ffast-math")
    flags += ["-fvisibility=hidden", "-Wno-attributes", *define_flags(options)]
    return tuple(flags)


def include_dirs(options: CompileOptions) -> tuple[str, ...]:
    """Where a CPU compile finds headers: cuforge's (first, so that its shims win), the CUDA
    runtime's and CCCL's, then the class's own."""
    found = [_runtime.INCLUDE] + [d for d in (cuda_include_dir(), cccl_include_dir()) if d]
    return tuple(found) + tuple(options.include_dirs)


_lock = _thread.allocate_lock()
_programs: dict[tuple[str, ...], Program] = {}


def _after_fork() -> None:  # a fork's child has only the forking thread: a lock another one held would never open
    global _lock
    _lock = _thread.allocate_lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def build(label: str, source: str, *, line_sources: Mapping[str, str], headers: Mapping[str, str],
          options: CompileOptions, entries: Sequence[tuple[str, int]], links: Sequence[str] = (),
          checked: bool = False) -> Program:  # fmt: skip
    """``source`` (a rendered program) built for the CPU and loaded, once per process, with
    ``entries``: each kernel's name expression and number of parameters. The key is the
    rendered source and the entries (the translation unit is a function of them and of
    cuforge's CPU sources, which enter the key): a warm start translates nothing. ``links``
    (CUDA C++ sources: a class's ``link=``) are translation units of their own in the library.
    ``checked``: the build a checked launch runs (``check.py``), with flags of its own: where every
    access of the kernel is an index into an array parameter, its indexed build (``indexed.py``),
    else (or where that build fails to compile, whose message the instrumented build then gives)
    the instrumented one."""
    _runtime.library()  # kernel libraries call into it: loaded first, its symbols global
    flags = flags_of(options)
    if checked:
        from . import check as _check

        _check.library()  # its __tsan_* functions are what the checked build calls
        rewritten = None if links else _rewritten(source)
        if rewritten is not None:
            from ..errors import CompileError

            try:
                return _build(label, source, line_sources, headers, options, entries, links, "indexed",
                              flags + _check.indexed_flags(_toolchain.find_compiler()), rewritten)  # fmt: skip
            except CompileError:
                _rewrites[source] = None  # (not tried again)
        flags += _check.flags(_toolchain.find_compiler())
    return _build(label, source, line_sources, headers, options, entries, links, "checked" if checked else "", flags,
                  source)  # fmt: skip


def _rewritten(source: str) -> str | None:
    """``source`` as its indexed build compiles it, or None where it has none (remembered per source)."""
    if source not in _rewrites:
        from .indexed import rewrite

        _rewrites[source] = rewrite(source)
    return _rewrites[source]


_rewrites: dict[str, str | None] = {}


def _build(label: str, source: str, line_sources: Mapping[str, str], headers: Mapping[str, str], options: CompileOptions,
           entries: Sequence[tuple[str, int]], links: Sequence[str], checked: str, flags: tuple[str, ...],
           translated: str) -> Program:  # fmt: skip
    """``build``'s work, for one build (``checked``: "", "checked" or "indexed") with its flags; the
    key is ``source``'s, the translation unit ``translated``'s (an indexed build's rewrite)."""
    dirs = include_dirs(options)
    keyed = "\0".join((source, *(f"{e}\0{n}" for e, n in entries), *(f"link\0{text}" for text in links)))
    memo = (keyed, *flags, *dirs, *sorted(f"{k}\0{v}" for k, v in headers.items()))
    found = _programs.get(memo)
    if found is not None:
        return found
    with _lock:
        found = _programs.get(memo)
        if found is None:
            extra = (_runtime.sources_digest(), include_dirs_digest(tuple(options.include_dirs)), _toolchain.host_cpu())

            def unit() -> list[str]:
                from .translate import translation_unit  # (only a build translates)

                linked = bool(links)
                return [translation_unit(label, translated, line_sources, entries, linked=linked, checked=checked)] + [
                    translation_unit(f"{label}.link{i}", text, {}, (), linked=True, checked=bool(checked))
                    for i, text in enumerate(links)
                ]

            def lines() -> dict[tuple[str, int], tuple[str, bool]]:
                from .translate import excerpt_lines

                return excerpt_lines(label, source, line_sources, entries)

            lib, sha = _store.shared_object(keyed, headers=dict(headers), include_dirs=dirs, flags=flags, label=label,
                                            key_extra=extra, build=unit, excerpts=lines)  # fmt: skip
            found = _programs[memo] = Program(
                lib,
                {e: ctypes.cast(getattr(lib, f"cuforge_entry_{i}"), ctypes.c_void_p).value or 0
                 for i, (e, _) in enumerate(entries)},
                sha,
            )  # fmt: skip
    return found
