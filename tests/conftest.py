"""Shared test set-up: the cuforge plugin, cache isolation, kernels compiled once per session.

The `gpu` marker's skips come from cuforge's own pytest plugin: registered by its entry point
when cuforge is installed, and loaded by the top-level conftest.py when it is not (the GPU
machine runs the tests from the source tree).
"""

from __future__ import annotations

import functools
import os
import sys

import pytest

import cuforge as cf
from cuforge import _config
from cuforge._runtime import cuda as _cuda


@functools.lru_cache(maxsize=1)
def gpu_missing_reason() -> str | None:
    try:
        _cuda.current_device()
    except cf.NoDeviceError as exc:
        return str(exc)
    return None


@pytest.fixture(autouse=True, scope="session")
def _session_cache_dir(tmp_path_factory: pytest.TempPathFactory):
    """Set up before any other fixture (the widest scope goes first): nothing, not even a
    module-scoped fixture, touches the user's real cache."""
    with _config.scope(cache_dir=str(tmp_path_factory.mktemp("cuforge-session-cache"))):
        yield


_MAIN = sys.modules["__main__"]  # the session's own, before any test made an IPython shell


@pytest.fixture(autouse=True)
def _main_module_kept():
    """An IPython shell made by a test (or a module's fixture) puts its own module in
    sys.modules["__main__"]; the session's is given back after each test, since a spawn
    start method reads __main__.__spec__."""
    yield
    sys.modules["__main__"] = _MAIN


@pytest.fixture(autouse=True)
def _isolated_cache(_session_cache_dir: None, cuforge_cache_dir):
    """Every test gets its own disk cache directory (the plugin's cuforge_cache_dir fixture)."""
    return cuforge_cache_dir


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
