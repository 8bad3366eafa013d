"""The process-wide cache counters behind `cuforge.cache_stats` (NVRTC compiles are
counted where they happen, in ``nvrtc``, and host compiles in ``_cpu.store``; hits and
writes in ``store``, ``disk`` and ``_cpu.store``)."""

from __future__ import annotations

import _thread  # (threading's lock and thread-local types, without importing threading on a warm start)
import os
from typing import Any

from .._frozen import Record


class CacheStats(Record):
    """Process-wide cache counters (see [`cuforge.cache_stats`][cuforge.cache_stats]).

    Examples
    --------
    >>> stats = cf.cache_stats()
    >>> stats.compiles >= 0 and stats.memory_hits >= 0
    True
    """

    memory_hits: int
    disk_hits: int
    compiles: int
    compile_seconds: float
    disk_errors: int
    disk_writes: int
    pch_creations: int  # NVRTC precompiled headers made (see _pch)
    pch_hits: int  # compiles that used one
    batch_fallbacks: int  # batches compiled one instantiation at a time, their declarations clashing
    cpu_compiles: int  # shared objects the host C++ compiler built for the CPU backend

    __module__ = "cuforge"
    __slots__ = ()

    def __new__(cls, memory_hits: int, disk_hits: int, compiles: int, compile_seconds: float, disk_errors: int,
                disk_writes: int, pch_creations: int = 0, pch_hits: int = 0, batch_fallbacks: int = 0,
                cpu_compiles: int = 0) -> Any:  # fmt: skip
        return tuple.__new__(cls, (memory_hits, disk_hits, compiles, compile_seconds, disk_errors, disk_writes,
                                   pch_creations, pch_hits, batch_fallbacks, cpu_compiles))  # fmt: skip


class _Counters:
    def __init__(self) -> None:
        self.lock = _thread.allocate_lock()
        self.reset()

    def reset(self) -> None:
        self.memory_hits = self.disk_hits = self.compiles = self.disk_errors = self.disk_writes = 0
        self.pch_creations = self.pch_hits = self.batch_fallbacks = self.cpu_compiles = 0
        self.compile_seconds = 0.0

    def add(self, **deltas: float) -> None:
        with self.lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)


counters = _Counters()


def _after_fork() -> None:  # a fork's child has only the forking thread: a lock another one held would never open
    counters.lock = _thread.allocate_lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def cache_stats(reset: bool = False) -> CacheStats:
    """Counters of this process: memory and disk hits, NVRTC compiles and their seconds,
    disk errors (damaged or unreadable entries, failed writes), disk writes, NVRTC
    precompiled headers made and used, batches compiled one instantiation at a time, and
    shared objects the host C++ compiler built for the CPU (their hits and disk entries
    count with the kernels').

    Parameters
    ----------
    reset : bool
        Return the counts and set them to zero.

    Returns
    -------
    CacheStats

    Examples
    --------
    >>> _ = cf.cache_stats(reset=True)
    >>> cf.cache_stats().compiles
    0
    """
    with counters.lock:
        snap = CacheStats(
            counters.memory_hits, counters.disk_hits, counters.compiles,
            counters.compile_seconds, counters.disk_errors, counters.disk_writes, counters.pch_creations,
            counters.pch_hits, counters.batch_fallbacks, counters.cpu_compiles,
        )  # fmt: skip
        if reset:
            counters.reset()
    return snap
