"""Shared test set-up: GPU detection for the `gpu` marker and kernels compiled once per session."""

from __future__ import annotations

import functools
import os

import pytest

import cuforge as cf
from cuforge import _config, _cuda


@functools.lru_cache(maxsize=1)
def gpu_missing_reason() -> str | None:
    try:
        _cuda.current_device()
    except cf.NoDeviceError as exc:
        return str(exc)
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    reason = gpu_missing_reason()
    if reason:
        skip = pytest.mark.skip(reason=f"needs a CUDA GPU: {reason}")
        for item in gpu_items:
            item.add_marker(skip)


@pytest.fixture(autouse=True, scope="session")
def _session_cache_dir(tmp_path_factory: pytest.TempPathFactory):
    """Set up before any other fixture (the widest scope goes first): nothing, not even a
    module-scoped fixture, touches the user's real cache."""
    with _config.scope(cache_dir=str(tmp_path_factory.mktemp("cuforge-session-cache"))):
        yield


@pytest.fixture(autouse=True)
def cuforge_cache_dir(tmp_path_factory: pytest.TempPathFactory, _session_cache_dir: None):
    """Every test gets its own disk cache directory."""
    path = tmp_path_factory.mktemp("cuforge-cache")
    with _config.scope(cache_dir=str(path)):
        yield path


@cf.kernel
class Saxpy:
    """y <- a*x + y"""

    a: cf.float32
    x: cf.In[cf.float32]
    y: cf.Array[cf.float32]
    n: cf.int64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
    """


@pytest.fixture(scope="session")
def saxpy() -> cf.Kernel:
    return Saxpy


@pytest.fixture(scope="session")
def saxpy_sm90(saxpy: cf.Kernel) -> cf.CompiledKernel:
    """Compiled once per session: NVRTC costs 15-250 ms on CI's machines."""
    return saxpy.compile(arch="sm_90")


ROOT_TEMPLATES = os.path.join(os.path.dirname(__file__), "..", "templates")


@cf.kernel
class Scale:
    """The user-level example template templates/scale.cu.j2."""

    factor: cf.float32
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int64
    name = "scale"
    template = "scale.cu.j2"
    template_dirs = (ROOT_TEMPLATES,)


@pytest.fixture(scope="session")
def scale() -> cf.Kernel:
    return Scale
