"""SHA-256 for cache keys and every check of what the cache reads, without OpenSSL where
that is cheaper.

``hashlib`` loads OpenSSL (``_hashlib``), which costs a fresh process more than hashing a
kernel's source, a cache record or a CPU kernel's shared object with Python's own SHA-256
(``_sha256``; ``_sha2`` from Python 3.12). OpenSSL's is several times faster per byte,
so data of `LARGE` bytes or more (a big cubin or fatbin) goes to it. Both are SHA-256: the
digests, and so every key and every integrity check, are the same either way.
"""

from __future__ import annotations

from typing import Any

try:
    from _sha256 import sha256 as _builtin  # Python 3.11
except ImportError:
    try:
        from _sha2 import sha256 as _builtin  # type: ignore[no-redef]  # Python 3.12 on
    except ImportError:  # (a Python built without its own hashes)
        _builtin = None  # type: ignore[assignment]

__all__ = ["LARGE", "hexdigest", "sha256"]

# Past about this size, Python's SHA-256 costs more than loading OpenSSL (docs/benchmarks.md)
LARGE = 1 << 20


def sha256(data: bytes = b"") -> Any:
    """A SHA-256 object over ``data`` (more may be added with ``update``): Python's own for
    data under `LARGE` bytes, OpenSSL's otherwise. Feed large inputs to ``hashlib`` instead."""
    if _builtin is not None and len(data) < LARGE:
        return _builtin(data)
    import hashlib

    return hashlib.sha256(data)


def hexdigest(data: bytes) -> str:
    """The SHA-256 of ``data``, in hex."""
    return sha256(data).hexdigest()
