"""The registry of declared kernels and families, by qualified name.

``@cf.kernel`` adds every declaration; declaring the same qualified name again (a re-run
notebook cell) replaces the entry. `Registry.precompile` compiles everything, one
NVRTC program per family, optionally in a thread pool (NVRTC compiles programs in parallel).
"""

from __future__ import annotations

import _thread  # (threading's lock and thread-local types, without importing threading on a warm start)
import contextlib
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .. import _config
from ..errors import DeclarationError
from ..options import CompileOptions
from .family import Family
from .kernel import Kernel

__all__ = ["Registry", "registry"]


class Registry(Mapping[str, Any]):
    """Every declared kernel and family, by qualified name (``module.Class``): ``cf.registry``.

    Examples
    --------
    >>> @cf.kernel
    ... class Listed:
    ...     x: cf.Array[cf.float32]
    ...     body = ""
    >>> cf.registry[Listed.qualname] is Listed
    True
    """

    __module__ = "cuforge"

    def __init__(self) -> None:
        self._items: dict[str, Any] = {}
        self._lock = _thread.allocate_lock()

    def _add(self, qualname: str, obj: Any) -> None:
        with self._lock:
            self._items.pop(qualname, None)  # re-declared: the new one replaces it, listed last
            self._items[qualname] = obj

    def __getitem__(self, qualname: str) -> Any:
        """The kernel or family declared as ``qualname``.

        Parameters
        ----------
        qualname : str
            ``module.Class``.

        Returns
        -------
        Kernel or Family

        Raises
        ------
        KeyError
            Listing what is registered.
        """
        try:
            return self._items[qualname]
        except KeyError:
            raise KeyError(
                f"no kernel named {qualname!r} is registered; registered: {', '.join(self._items) or 'none'}"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def precompile(
        self,
        arch: str | None = None,
        *,
        kernels: Iterable[Any] | None = None,
        options: CompileOptions | None = None,
        workers: int | None = None,
        progress: bool | None = None,
    ) -> dict[str, list[Any]]:
        """Compile every instantiation of every registered kernel (or of ``kernels``: objects or
        qualified names). Each family compiles as [`Family.precompile`][cuforge.Family.precompile] does: one NVRTC
        program, or split across worker processes when it is heavy. ``workers`` sets how many
        (``CUFORGE_COMPILE_WORKERS`` for this call), and above 1 also starts several
        declarations' compiles from threads, which overlap their rendering and disk-cache work
        (NVRTC itself runs one compile at a time in a process). ``progress`` (default: when
        stderr is a terminal) prints progress on stderr: on a terminal one line rewritten in place,
        elsewhere a line per declaration.

        Parameters
        ----------
        arch : str, optional
            As for [`Kernel.compile`][cuforge.Kernel.compile].
        kernels : iterable, optional
            Kernels, families or qualified names (default: everything registered).
        options : CompileOptions, optional
            Instead of each class's.
        workers : int, optional
            Worker processes (default: ``CUFORGE_COMPILE_WORKERS``).
        progress : bool, optional
            Print a progress line (default: when stderr is a terminal).

        Returns
        -------
        dict of str to list of CompiledKernel
            By qualified name.

        Raises
        ------
        CompileError
            Naming the instantiation that failed.

        Examples
        --------
        >>> compiled = cf.registry.precompile(arch="sm_90", kernels=[Listed])
        >>> list(compiled) == [Listed.qualname]
        True
        """
        chosen = list(self._items.values()) if kernels is None else [self[k] if isinstance(k, str) else k for k in kernels]
        for obj in chosen:
            if not isinstance(obj, (Kernel, Family)):
                raise DeclarationError(f"registry.precompile(): {obj!r} is not a cuforge kernel or family")
        from .._compile.parallel import progress_line  # (the compiling side: imported on use, not by `import cuforge`)

        show = sys.stderr.isatty() if progress is None else progress
        done, total = 0, sum(len(o.instantiations()) if isinstance(o, Family) else 1 for o in chosen)
        lock = _thread.allocate_lock()

        def one(obj: Any) -> tuple[str, list[Any]]:
            nonlocal done
            built = obj.precompile(arch, options=options) if isinstance(obj, Family) else [obj.compile(arch, options=options)]
            with lock:
                done += len(built)
                if show:
                    progress_line(f"cuforge: compiled {done}/{total} kernels", done, total)
            return obj.qualname, built

        with _config.scope(compile_workers=str(workers)) if workers else contextlib.nullcontext():
            if workers and workers > 1 and len(chosen) > 1:
                from concurrent.futures import ThreadPoolExecutor  # (where the registry compiles: start-up)

                with ThreadPoolExecutor(max_workers=workers) as pool:
                    results = list(pool.map(one, chosen))
            else:
                results = [one(obj) for obj in chosen]
        return dict(results)

    def __repr__(self) -> str:
        rows = "".join(f"\n  {name}: {obj!r}" for name, obj in self._items.items())
        return f"<cuforge.registry: {len(self)} declared{rows}>"


registry = Registry()


def _after_fork() -> None:  # a fork's child has only the forking thread: a lock another one held would never open
    registry._lock = _thread.allocate_lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
