"""A kernel's program compiled for the CPU: its translation unit (``translate``), built by the
host compiler into a shared object (``store``: cached like a cubin) and loaded once per
process, with the address of each kernel's entry. (Module variables are found in the library
by name: ``runtime.variable``.)"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from .._compile.headers import cccl_include_dir, cuda_include_dir
from .._compile.identity import include_dirs_digest
from ..options import CompileOptions, define_flags
from . import runtime as _runtime
from . import store as _store
from . import toolchain as _toolchain


class Program(NamedTuple):
    """One program loaded for the CPU: entry addresses by name expression."""

    library: ctypes.CDLL
    entries: dict[str, int]
    path: str


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


_lock = threading.Lock()
_programs: dict[tuple[str, ...], Program] = {}


def build(label: str, source: str, *, line_sources: Mapping[str, str], headers: Mapping[str, str],
          options: CompileOptions, entries: Sequence[tuple[str, int]], links: Sequence[str] = ()) -> Program:  # fmt: skip
    """``source`` (a rendered program) built for the CPU and loaded, once per process, with
    ``entries``: each kernel's name expression and number of parameters. The key is the
    rendered source and the entries (the translation unit is a function of them and of
    cuforge's CPU sources, which enter the key): a warm start translates nothing. ``links``
    (CUDA C++ sources: a class's ``link=``) are translation units of their own in the library."""
    _runtime.library()  # kernel libraries call into it: loaded first, its symbols global
    flags = flags_of(options)
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
                return [translation_unit(label, source, line_sources, entries, linked=linked)] + [
                    translation_unit(f"{label}.link{i}", text, {}, (), linked=True) for i, text in enumerate(links)
                ]

            def lines() -> dict[tuple[str, int], tuple[str, bool]]:
                from .translate import excerpt_lines

                return excerpt_lines(label, source, line_sources, entries)

            path = _store.shared_object(keyed, headers=dict(headers), include_dirs=dirs, flags=flags, label=label,
                                        key_extra=extra, build=unit, excerpts=lines)  # fmt: skip
            lib = _store.load(path)
            found = _programs[memo] = Program(
                lib,
                {e: ctypes.cast(getattr(lib, f"cuforge_entry_{i}"), ctypes.c_void_p).value or 0
                 for i, (e, _) in enumerate(entries)},
                path,
            )  # fmt: skip
    return found
