"""Every CUFORGE_* setting, read in one place.

Settings are read from the environment when asked for (not at import), so a test or a
notebook can change them; :func:`scope` overrides them for a block without touching
``os.environ``.

======================  =========================================================
CUFORGE_TEMPLATE_PATH   extra template directories (os.pathsep separated)
CUFORGE_CUDA_INCLUDE    directory holding the CUDA headers (cuda_fp16.h, ...);
                        default: found by cuda.pathfinder
======================  =========================================================
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

__all__ = ["get", "scope"]

_DEFAULTS: dict[str, Any] = {
    "template_path": "",
    "cuda_include": "",
}
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
