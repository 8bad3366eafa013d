"""The headers a compile is given: the CUDA runtime's and CCCL's include directories (found
in NVIDIA's wheels, else through cuda.pathfinder), and the template headers a source includes,
read so that NVRTC gets them in memory and their contents enter the compile's identity."""

from __future__ import annotations

import functools
import importlib.machinery
import os
import re
import sys

from .. import _config

_INCLUDE = r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]'  # (a string: re compiles it on first use)


@functools.lru_cache(maxsize=1)
def nvidia_roots() -> tuple[str, ...]:
    """The directories of the ``nvidia`` namespace package, where NVIDIA's wheels install.

    Asked of the path finder (the one that finds packages on ``sys.path``, namespace ones
    included): importing ``importlib.util`` for its ``find_spec`` costs a warm start more than
    the search."""
    found = sys.modules.get("nvidia")
    if found is not None:
        return tuple(getattr(found, "__path__", ()))
    spec = importlib.machinery.PathFinder.find_spec("nvidia")
    return tuple(spec.submodule_search_locations or ()) if spec is not None else ()


def _headers(libname: str, wheel_dir: str, marker: str) -> str | None:
    """A header directory: the CUDA 13 wheel's, found with a stat per site directory, else
    cuda.pathfinder's answer. Pathfinder looks in the wheels first too, but importing it is
    slower than a warm start, which needs these directories for its cache key; a test holds
    the two answers equal."""
    for root in nvidia_roots():
        if os.path.isfile(os.path.join(root, wheel_dir, marker)):
            return os.path.join(root, wheel_dir)
    try:
        from cuda.pathfinder import find_nvidia_header_directory
    except ImportError:
        return None
    found = find_nvidia_header_directory(libname)
    return str(found) if found else None


@functools.lru_cache(maxsize=4)
def _find_cuda_include(configured: str) -> str | None:
    return configured or _headers("cudart", os.path.join("cu13", "include"), "cuda_runtime_api.h")


def cuda_include_dir() -> str | None:
    """Directory of the CUDA runtime headers (cuda_fp16.h, cuda_bf16.h, cuComplex.h)."""
    return _find_cuda_include(_config.cuda_include())


@functools.lru_cache(maxsize=1)
def cccl_include_dir() -> str | None:
    """Directory of CCCL's headers (libcu++, CUB, Thrust, <nv/target>, which the runtime's
    cooperative_groups.h includes), from the nvidia-cuda-cccl wheel or a toolkit."""
    return _headers("cccl", os.path.join("cu13", "include", "cccl"), os.path.join("cuda", "version"))


def include_dirs() -> tuple[str, ...]:
    """The header directories every compile gets: the CUDA runtime's, then CCCL's."""
    return tuple(d for d in (cuda_include_dir(), cccl_include_dir()) if d)


def template_headers(source: str, dirs: tuple[str, ...]) -> dict[str, str]:
    """Headers ``source`` includes (directly or through each other) that live in the
    template directories ``dirs``: read here and passed to NVRTC in memory, so their
    contents are part of the key and a header edit recompiles."""
    found: dict[str, str] = {}
    if "include" not in source:  # (most bodies: no regex compiled on a warm start)
        return found
    pending = re.findall(_INCLUDE, source, re.MULTILINE)
    while pending:
        name = pending.pop()
        if name in found:
            continue
        for d in dirs:
            path = os.path.join(d, name)
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as fh:
                    found[name] = fh.read()
                pending += re.findall(_INCLUDE, found[name], re.MULTILINE)
                break
    return found
