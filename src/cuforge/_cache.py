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
import os
import re
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
    nvrtc: str,
    cuforge_version: str,
    include_digest: str = "",
    cuda_headers: str = "",
) -> str:
    """A hex digest of the inputs of one NVRTC program (never of its outputs or temp paths).

    ``nvrtc`` identifies the NVRTC library (``_compile.nvrtc_identity``);
    ``headers`` are the in-memory headers passed to NVRTC (their contents count);
    ``include_digest`` covers the files of the declared include directories;
    ``cuda_headers`` the version of the CUDA headers found for cuda_fp16.h and friends.
    """
    inputs = [KEY_SCHEMA, source, list(name_expressions), list(flags), sorted(headers.items()), nvrtc]
    payload = json.dumps([*inputs, cuforge_version, include_digest, cuda_headers], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


_dir_digests: dict[tuple[str, ...], tuple[tuple[Any, ...], str]] = {}
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', re.MULTILINE)


def include_dirs_digest(dirs: tuple[str, ...]) -> str:
    """SHA-256 over the relative paths and contents of every file in ``dirs``.

    Re-hashed only when a file's (size, mtime) changes, so a compile() call that hits the
    memory cache stats the files but reads none.
    """
    if not dirs:
        return ""
    files = []
    for d in dirs:
        for root, _, names in os.walk(d):
            for name in sorted(names):
                path = os.path.join(root, name)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                files.append((d, os.path.relpath(path, d), st.st_size, st.st_mtime_ns))
    files.sort()
    signature = tuple(files)
    cached = _dir_digests.get(dirs)
    if cached is not None and cached[0] == signature:
        return cached[1]
    h = hashlib.sha256()
    for d, rel, _, _ in files:
        h.update(rel.encode() + b"\0")
        try:
            with open(os.path.join(d, rel), "rb") as fh:
                h.update(hashlib.sha256(fh.read()).digest())
        except OSError:
            h.update(b"unreadable")
    digest = h.hexdigest()
    _dir_digests[dirs] = (signature, digest)
    return digest


def template_headers(source: str, dirs: tuple[str, ...]) -> dict[str, str]:
    """Headers ``source`` includes (directly or through each other) that live in the
    template directories ``dirs``: read here and passed to NVRTC in memory, so their
    contents are part of the key and a header edit recompiles."""
    found: dict[str, str] = {}
    pending = _INCLUDE.findall(source)
    while pending:
        name = pending.pop()
        if name in found:
            continue
        for d in dirs:
            path = os.path.join(d, name)
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as fh:
                    found[name] = fh.read()
                pending += _INCLUDE.findall(found[name])
                break
    return found


class MemoryCache:
    """A thread-safe map from key to compiled result, with single-flight compiles."""

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
            from ._disk import counters

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
