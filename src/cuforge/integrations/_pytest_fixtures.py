"""The pytest plugin's cache fixtures: an isolated disk-cache directory and a compile counter."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def cuforge_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An empty disk-cache directory for this test; the previous setting is restored after."""
    from .. import _config

    path = tmp_path_factory.mktemp("cuforge-cache")
    with _config.scope(cache_dir=str(path)):
        yield path


class CompileCounter:
    """NVRTC compiles and cache hits since the fixture started (see ``cuforge.cache_stats``)."""

    def __init__(self) -> None:
        from .._compile import stats as _stats

        self._stats = _stats.cache_stats
        self._start = self._stats()

    @property
    def count(self) -> int:
        """NVRTC programs compiled during the test so far."""
        return self._stats().compiles - self._start.compiles

    @property
    def disk_hits(self) -> int:
        return self._stats().disk_hits - self._start.disk_hits

    @property
    def memory_hits(self) -> int:
        return self._stats().memory_hits - self._start.memory_hits

    def reset(self) -> None:
        self._start = self._stats()

    def __repr__(self) -> str:
        return f"<cuforge compile counter: {self.count} compiles, {self.disk_hits} disk hits, {self.memory_hits} memory hits>"


@pytest.fixture
def cuforge_compile_counter() -> CompileCounter:
    """Counts NVRTC compiles during the test: ``assert cuforge_compile_counter.count == 0``."""
    return CompileCounter()
