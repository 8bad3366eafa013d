"""How the instantiations a compile needs are split into NVRTC programs, and where those run.

NVRTC compiles one program at a time in a process (two threads, even calling it with the GIL
released, take as long as one after the other), so compiling in parallel takes processes. A
process costs its start (importing cuforge and loading NVRTC), which only heavy programs
repay, while batching many small instantiations in one program is what makes a small family
fast (each program pays NVRTC's fixed cost once). So:

- a family whose source is small (one instantiation's under ``LARGE`` characters, with no
  ``#pragma unroll``) is one program, in this process;
- otherwise its first missing instantiation is compiled alone here, and timed. If the rest,
  at that pace, would take under ``CUFORGE_COMPILE_SPLIT_S`` (default 1 s) they are one more
  program here; else they are dealt round-robin into one program per worker process
  (``CUFORGE_COMPILE_WORKERS``, default: the CPUs this process may use; 1 turns this off),
  compiled at once, with a progress bar where a terminal and tqdm are present;
- the pace measured is remembered for the declaration, so its next compile in the process
  splits (or not) without timing one first;
- a family whose source declares module variables (``__constant__``, ``__device__``) is one
  program per instantiation, so that each instantiation has its own (``Kernel.set_global``).

Sources that include CCCL's headers are left batched: their cost is parsing the headers,
which one program pays once, and which precompiled headers (``pch``) spare the next
program in the process; a worker would parse them again.
"""

from __future__ import annotations

import atexit
import os
import re
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import _config
from ..errors import CompileError
from . import nvrtc as _compile
from . import pch as _pch
from .artifact import CompileResult
from .identity import CompileUnit
from .stats import counters

if TYPE_CHECKING:  # multiprocessing and concurrent.futures.process slow `import cuforge`: imported on use
    from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor

__all__ = ["compile_groups", "fell_back", "in_background", "progress_line"]

LARGE = 2000  # characters of rendered source past which a family may be split
_pace: dict[int, float] = {}  # CompileUnit.declaration -> seconds per instantiation, measured
_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None
_background: ThreadPoolExecutor | None = None


def _after_fork() -> None:
    """A fork's child has only the forking thread: a lock another one held would never open,
    and the executors' threads (the compile thread, the worker pool's manager) are gone, so
    work given to them would never run. The child makes its own."""
    global _lock, _pool, _background
    _lock, _pool, _background = threading.Lock(), None, None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def compile_groups(todo: list[CompileUnit], flags: tuple[str, ...], spec_of: Callable[[list[CompileUnit]], dict[str, Any]]
                   ) -> list[tuple[list[CompileUnit], CompileResult]]:  # fmt: skip
    """Compile the units ``todo`` (of one declaration, with its siblings), as the module
    docstring says: [(units, the result of the one program that compiled them)]."""
    lead = todo[0]
    workers = _config.compile_workers()
    alone = spec_of(todo[:1])  # one instantiation's program: what is judged, and what is timed
    if len(todo) == 1:
        return [(todo, _compile.compile_program(**alone))]
    if lead.family and _VARIABLE.search(alone["source"]):
        # module variables (__constant__, __device__): each instantiation gets its own module, and so its own
        return [([k], _compile.compile_program(**spec_of([k]))) for k in todo]
    if workers < 2 or not _may_split(alone["source"]):
        return _batched(todo, spec_of)
    pace = _pace.get(lead.declaration)
    done: list[tuple[list[Any], CompileResult]] = []
    rest = todo
    if pace is None:  # time one instantiation, here
        first = _compile.compile_program(**alone)
        pace = _pace[lead.declaration] = first.seconds
        done.append((todo[:1], first))
        rest = todo[1:]
    if pace * len(rest) < _config.compile_split_seconds() or len(rest) < 2:
        return [*done, *_batched(rest, spec_of)]
    chunks = [rest[i :: min(workers, len(rest))] for i in range(min(workers, len(rest)))]
    return done + _in_processes(chunks, spec_of, workers)


# A module variable: `__constant__ float taps[3];`, `__device__ unsigned calls;` (a __device__
# function has a parenthesis before its first semicolon or brace).
_VARIABLE = re.compile(r"\b__constant__\b|\b__device__\b[^;{()]*;")
# What NVRTC says when instantiations declare one `extern __shared__` array with different
# element types: in one program they are one entity; each alone compiles.
_CLASH = re.compile(r"declaration is incompatible with previous")
# How a fallen-back batch's results begin their log (``_batched``).
_FELL_BACK = re.compile(r"cuforge: these \d+ instantiations could not share one NVRTC program")


def fell_back(log: str) -> bool:
    """Whether the result with this log is one of a batch that ``_batched`` compiled one
    instantiation at a time (its log says so first), wherever it was since read from."""
    return _FELL_BACK.match(log) is not None


def _batched(todo: list[Any], spec_of: Callable[[list[Any]], dict[str, Any]]) -> list[tuple[list[Any], CompileResult]]:
    """``todo`` as one program, or, where its instantiations' declarations clash (an
    ``extern __shared__ T temp[]`` for several T), one program each: said in each result's
    log and counted in ``cache_stats().batch_fallbacks``."""
    try:
        return [(todo, _compile.compile_program(**spec_of(todo)))]
    except CompileError as exc:
        if len(todo) < 2 or not _CLASH.search(exc.log):
            raise
    note = (f"cuforge: these {len(todo)} instantiations could not share one NVRTC program (their declarations "
            f"clash, as extern __shared__ arrays of different types do), so each was compiled alone")  # fmt: skip
    counters.add(batch_fallbacks=1)
    out = []
    for k in todo:
        result = _compile.compile_program(**spec_of([k]))
        out.append(([k], result._replace(log=f"{note}\n{result.log}".strip())))
    return out


def _may_split(source: str) -> bool:
    return (len(source) >= LARGE or "#pragma unroll" in source) and not _pch.includes_cccl(source)


def _in_processes(chunks: list[list[Any]], spec_of: Callable[[list[Any]], dict[str, Any]],
                  workers: int) -> list[tuple[list[Any], CompileResult]]:  # fmt: skip
    pool = _processes(workers)
    specs = [spec_of(chunk) for chunk in chunks]
    futures = [pool.submit(_compile.compile_program, **spec) for spec in specs]
    bar = _progress(len(chunks), f"{specs[0]['kernel']}: {sum(map(len, chunks))} instantiations")
    out = []
    try:
        for chunk, future in zip(chunks, futures):
            result = future.result()  # a CompileError raised there is raised here
            counters.add(compiles=1, compile_seconds=result.seconds)  # (the worker counted it in its own process)
            out.append((chunk, result))
            if bar is not None:
                bar.update(1)
    finally:
        for future in futures:
            future.cancel()
        if bar is not None:
            bar.close()
    return out


def _processes(workers: int) -> ProcessPoolExecutor:
    """The worker processes, started on first use ('spawn': a fork after CUDA started would
    not be safe) and kept for the process's later compiles."""
    global _pool
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with _lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
            atexit.register(_pool.shutdown, wait=False, cancel_futures=True)
        return _pool


def progress_line(line: str, done: int, total: int) -> None:
    """Step ``done`` of ``total`` of a compile reported on stderr (``python -m cuforge build``,
    ``registry.precompile``): on a terminal, one line rewritten in place and ended at the last
    step; else (a CI log, a pipe) a line per step."""
    if sys.stderr.isatty():
        print(f"\r{line}", end="\n" if done >= total else "", file=sys.stderr)
    else:
        print(line, file=sys.stderr)


def _progress(total: int, what: str) -> Any:
    """A tqdm bar where a terminal shows it and tqdm is installed, else None."""
    if not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=what, unit="program", leave=False)


def in_background(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[Any]:
    """Run ``fn`` on cuforge's compile thread: Kernel.compile_async and
    Family.precompile_async. A launch that needs the same kernel meanwhile waits for it (the
    memory cache lets one compile of a key run at a time) rather than compiling it again."""
    global _background
    from concurrent.futures import ThreadPoolExecutor

    with _lock:
        if _background is None:
            _background = ThreadPoolExecutor(max_workers=2, thread_name_prefix="cuforge-compile")
    return _background.submit(fn, *args, **kwargs)
