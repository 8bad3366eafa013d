"""The NVRTC (and nvJitLink) that compile, and the CUDA headers they are given: versions, the
archs NVRTC knows, and identities for cache keys that need no NVRTC load where a wheel is
installed."""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Sequence
from typing import Any

from ..errors import CompileError
from ..options import arch_number
from .headers import cccl_include_dir, nvidia_roots


def nvrtc_api() -> Any:
    """cuda.bindings' ``nvrtc`` module (imported on first use: start-up)."""
    from cuda.bindings import nvrtc

    return nvrtc


def check(result: Any, call: str) -> Any:
    """Unwrap a cuda.bindings NVRTC result tuple, raising on failure."""
    err, *rest = result
    if int(err) != 0:
        _, msg = nvrtc_api().nvrtcGetErrorString(err)
        raise CompileError(f"NVRTC {call} failed: {msg.decode()}", log="", source="", options=())
    return rest[0] if len(rest) == 1 else rest


@functools.lru_cache(maxsize=1)
def nvrtc_version() -> tuple[int, int]:
    major, minor = check(nvrtc_api().nvrtcVersion(), "nvrtcVersion")
    return (int(major), int(minor))


@functools.lru_cache(maxsize=1)
def supported_archs() -> tuple[int, ...]:
    return tuple(int(a) for a in check(nvrtc_api().nvrtcGetSupportedArchs(), "nvrtcGetSupportedArchs"))


def check_supported(flags: Sequence[str], kernel: str) -> None:
    """An arch this NVRTC does not know is a clear error, not NVRTC's "invalid value"."""
    arch = next((f[len("-arch=") :] for f in flags if f.startswith("-arch=")), None)
    if arch is not None and arch_number(arch) not in supported_archs():
        have = ", ".join(f"sm_{a}" for a in supported_archs())
        raise CompileError(
            f"{kernel}: NVRTC {'.'.join(map(str, nvrtc_version()))} does not compile for {arch}; it knows {have} "
            f"(and compute_XY of each); pass one of them", log="", source="", options=tuple(flags),
        )  # fmt: skip


def _fingerprint(path: str) -> str:
    st = os.stat(path)
    return f"{os.path.basename(path)}:{st.st_size}:{st.st_mtime_ns}"


@functools.lru_cache(maxsize=4)
def cuda_headers_version(include_dir: str | None) -> str:
    """Identity of the CUDA headers NVRTC is given (cuda_runtime_api.h's size and mtime, and
    CCCL's cuda/version: a new toolkit, runtime or CCCL wheel changes them). Keys system
    headers by toolkit without reading them."""
    if not include_dir:
        return "none"
    marks = []
    for path in (os.path.join(include_dir, "cuda_runtime_api.h"), os.path.join(cccl_include_dir() or "", "cuda", "version")):
        try:
            marks.append(_fingerprint(path))
        except OSError:
            marks.append("unknown")
    return ";".join(marks)


@functools.lru_cache(maxsize=1)
def nvrtc_identity() -> str:
    """What identifies the NVRTC that compiles, for cache keys, without loading it.

    cuda.bindings finds NVRTC through cuda.pathfinder, which prefers an NVIDIA wheel in
    site-packages; that library file's size and mtime identify it (a wheel upgrade changes
    them) at the cost of a few stats. Loading NVRTC just to ask its version is too slow for a
    warm start; it is done only when no wheel is found (a system toolkit).
    """
    path = nvrtc_wheel_library()
    if path is not None:
        with contextlib.suppress(OSError):
            return f"wheel:{_fingerprint(path)}"
    return "nvrtc:{}.{}".format(*nvrtc_version())


@functools.lru_cache(maxsize=1)
def nvrtc_wheel_library() -> str | None:
    """The NVRTC library file of an NVIDIA wheel (what cuda.bindings loads), or None where
    NVRTC comes from a system toolkit."""
    roots = nvidia_roots()
    for root in roots:  # the wheels' known places first: a few stats, no directory listing
        for sub in ("cu13/lib/libnvrtc.so.13", "cuda_nvrtc/lib/libnvrtc.so.12", "cu12/lib/libnvrtc.so.12"):
            if os.path.isfile(os.path.join(root, sub)):
                return os.path.join(root, sub)
    import glob  # (only where the known places have none: glob imports fnmatch and its regexes)

    for root in roots:
        for pattern in ("*/lib/libnvrtc.so*", "*/bin/nvrtc64*.dll", "*/bin/*/nvrtc64*.dll"):
            for path in sorted(glob.glob(os.path.join(root, pattern))):
                if "builtins" not in path and "alt" not in os.path.basename(path) and os.path.isfile(path):
                    return path
    return None


@functools.lru_cache(maxsize=1)
def nvjitlink_identity() -> str:
    """nvJitLink's version, for the keys of kernels it links."""
    try:
        from cuda.bindings import nvjitlink

        return "nvjitlink:{}.{}".format(*nvjitlink.version())
    except Exception:  # no nvJitLink: cuda.core falls back to the driver's linker
        return "nvjitlink:none"
