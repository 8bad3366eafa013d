"""The stores of compiled kernels behind one interface (`Store`: ``get``, ``put``): the
in-process `MemoryCache` here, the persistent ``disk.DiskCache`` beside it. Both key by
``identity.cache_key``."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any, Protocol, TypeVar

from .stats import counters

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
        self._inflight: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def gates(self, keys: list[str]) -> Iterator[None]:
        """Hold the compile gates of ``keys`` (taken in sorted order, so two batches that share
        keys cannot deadlock): inside, re-check the cache, compile what is missing, put it."""
        with self._lock:
            locks = [self._inflight.setdefault(k, threading.Lock()) for k in sorted(set(keys))]
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
