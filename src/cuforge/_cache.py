"""The in-process compile cache: one compile per key, even when threads ask at once.

Keys hash a versioned tuple of everything that changes the binary (rendered source, name
expressions, NVRTC flags, in-memory headers, NVRTC version, cuforge version). The
persistent disk layer (a separate piece) plugs in behind :meth:`MemoryCache.get_or_compile`:
a disk hit fills the memory layer the same way a compile does.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

KEY_SCHEMA = 1
T = TypeVar("T")


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

    def get_or_compile(self, key: str, compile: Callable[[], T]) -> tuple[T, bool]:
        """The cached value for ``key`` and True, or ``compile()``'s result and False."""
        found = self._items.get(key)
        if found is not None:
            self.hits += 1
            return found, True
        with self._lock:
            gate = self._inflight.setdefault(key, threading.Lock())
        with gate:
            found = self._items.get(key)
            if found is not None:
                self.hits += 1
                return found, True
            value = compile()
            self._items[key] = value
            self.misses += 1
        with self._lock:
            self._inflight.pop(key, None)
        return value, False

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


memory = MemoryCache()
