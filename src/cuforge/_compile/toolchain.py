"""The NVRTC (and nvJitLink) that compile, asked through cuda.bindings: versions, the archs
NVRTC knows. Each question loads the library, so none is asked on a warm start: what
identifies them for cache keys without a load is ``identity``'s."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from ..errors import CompileError
from ..options import arch_number


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


@functools.lru_cache(maxsize=1)
def nvjitlink_identity() -> str:
    """nvJitLink's version, for the keys of kernels it links."""
    try:
        from cuda.bindings import nvjitlink

        return "nvjitlink:{}.{}".format(*nvjitlink.version())
    except Exception:  # no nvJitLink: cuda.core falls back to the driver's linker
        return "nvjitlink:none"
