"""The in-process compile cache: one compile per key, even when threads ask at once.

Keys hash a versioned tuple of everything that changes the binary (rendered source, name
expressions, NVRTC flags, in-memory headers, NVRTC version, cuforge version). The
persistent disk layer (a separate piece) plugs in where ``kernel.compile_together`` finds a
key missing: a disk hit fills the memory layer the same way a compile does.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections.abc import Iterator, Mapping
from typing import Any

KEY_SCHEMA = 1


def cache_key(
    *,
    source: str,
    name_expressions: tuple[str, ...],
    flags: tuple[str, ...],
    headers: Mapping[str, str],
    nvrtc_version: tuple[int, int],
    cuforge_version: str,
) -> str:
    """A hex digest of the inputs of one NVRTC program (never of its outputs or temp paths)."""
    inputs = [KEY_SCHEMA, source, list(name_expressions), list(flags), sorted(headers.items()), list(nvrtc_version)]
    payload = json.dumps([*inputs, cuforge_version], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


class MemoryCache:
    """A thread-safe map from key to compiled result, with single-flight compiles."""

    def __init__(self) -> None:
        self._items: dict[str, Any] = {}
        self._inflight: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

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
            self.hits += 1
        return found

    def peek(self, key: str) -> Any:
        """The cached value for ``key`` or None, counting nothing."""
        return self._items.get(key)

    def put(self, key: str, value: Any) -> None:
        with self._lock:
            self._items.setdefault(key, value)
            self.misses += 1

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


memory = MemoryCache()
