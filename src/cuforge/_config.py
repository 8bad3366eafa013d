"""Every CUFORGE_* setting, read in one place.

Settings are read from the environment when asked for (not at import), so a test or a
notebook can change them; :func:`scope` overrides them for a block without touching
``os.environ``.

======================  =========================================================
CUFORGE_TEMPLATE_PATH   extra template directories (os.pathsep separated)
CUFORGE_CUDA_INCLUDE    directory holding the CUDA headers (cuda_fp16.h, ...);
                        default: found by cuda.pathfinder
CUFORGE_CACHE_DIR       where cuforge keeps what outlives a process (autotuning
                        choices); default: platformdirs' user cache dir
======================  =========================================================
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["cache_dir", "ensure_dir", "get", "scope"]

_DEFAULTS: dict[str, Any] = {
    "template_path": "",
    "cuda_include": "",
    "cache_dir": "",
}
SCHEMA = "v1"  # the layout of what cuforge writes under the cache dir
_overrides: dict[str, Any] = {}


def get(name: str) -> Any:
    """The current value of setting ``name`` (``"template_path"``, ...)."""
    if name in _overrides:
        return _overrides[name]
    if name not in _DEFAULTS:
        raise KeyError(f"unknown cuforge setting {name!r}; known: {', '.join(_DEFAULTS)}")
    return os.environ.get("CUFORGE_" + name.upper(), _DEFAULTS[name])


@contextlib.contextmanager
def scope(**settings: Any) -> Iterator[None]:
    """Override settings inside a ``with`` block (tests, notebooks)."""
    unknown = set(settings) - set(_DEFAULTS)
    if unknown:
        raise KeyError(f"unknown cuforge setting(s) {sorted(unknown)}; known: {', '.join(_DEFAULTS)}")
    saved = dict(_overrides)
    _overrides.update(settings)
    try:
        yield
    finally:
        _overrides.clear()
        _overrides.update(saved)


def cache_dir() -> Path:
    """The directory for this schema's persistent data (not created here)."""
    configured = str(get("cache_dir"))
    if configured:
        return Path(configured) / SCHEMA
    import platformdirs

    return platformdirs.user_cache_path("cuforge") / SCHEMA


def ensure_dir(path: Path) -> Path:
    """Create ``path`` (and its parents) readable by the owner only, since it holds executable code."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path
