"""Every CUFORGE_* setting, read in one place.

Settings are read from the environment when asked for (not at import), so a test or a
notebook can change them; `scope` overrides them for a block without touching
``os.environ``.

======================  =========================================================
CUFORGE_TEMPLATE_PATH   extra template directories (os.pathsep separated)
CUFORGE_CUDA_INCLUDE    directory holding the CUDA headers (cuda_fp16.h, ...);
                        default: found by cuda.pathfinder
CUFORGE_ARCH            the arch compile() uses when no GPU is present (e.g. sm_90);
                        default: none (compile() then asks for arch=)
CUFORGE_CACHE           0 turns the disk cache off (default 1)
CUFORGE_CACHE_DIR       where cuforge keeps what outlives a process (compiled
                        kernels, autotuning choices); default: platformdirs'
                        user cache dir, with a schema subfolder
CUFORGE_CACHE_MAX_MB    size cap of the disk cache in MiB (default 256); least
                        recently used entries are evicted past it
CUFORGE_CACHE_LOCK_S    how long a process waits for another compiling the same
                        kernel before compiling it itself (default 60)
CUFORGE_LAUNCHER        how launches reach the driver: auto (cuforge's C
                        extension when it was built, else cuda.bindings), c, or
                        bindings
CUFORGE_BUILD_DIR       a directory made by python -m cuforge build: kernels found
                        there load from its fatbins, with no NVRTC call
CUFORGE_PCH             NVRTC's precompiled headers within a process: auto (for
                        sources including CCCL's headers: CUB, Thrust, libcu++,
                        cooperative groups), 1 (any include) or 0 (off)
CUFORGE_PCH_HEAP_MB     the NVRTC heap that holds precompiled headers (default 400)
CUFORGE_COMPILE_WORKERS processes a heavy family's compile may use (default: the
                        CPUs this process may run on; 1: compile in this process)
CUFORGE_COMPILE_SPLIT_S the compile time, in seconds, past which a heavy family's
                        instantiations are split across them (default 1)
CUFORGE_DEVICE          where launches run when a call does not say: cuda (the
                        default; cuda:N for GPU N) or cpu (cuforge's CPU
                        backend); read once per
                        process, when launches first need it (set_default_device
                        changes it after)
CUFORGE_CPU_THREADS     the CPU backend's worker threads (default: one per core)
CUFORGE_CHECK           1: launches on the CPU run checked (out-of-bounds accesses,
                        uninitialised reads, races, warp and barrier misuse are
                        reported as errors); a call's check= says otherwise
CUFORGE_CPU_TIMEOUT     seconds a CPU launch may run before it is stopped with
                        LaunchTimeoutError (default 0: no limit, 60 with
                        CUFORGE_CHECK=1; the pytest plugin's default is 60); read
                        when the CPU backend loads and when settings change
                        through this module
======================  =========================================================
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "arch", "build_dir", "cache_dir", "cache_path", "cache_enabled", "cache_lock_seconds", "cache_max_bytes", "check",
    "compile_split_seconds", "compile_workers", "cpu_timeout", "cuda_include", "device",
    "get", "launcher", "on_change", "overrides_of", "pch", "pch_heap_bytes", "restore_overrides", "scope", "set_cache",
    "template_path",
]  # fmt: skip

_DEFAULTS: dict[str, Any] = {
    "template_path": "",
    "cuda_include": "",
    "cache_dir": "",
    "cache": "1",
    "cache_max_mb": "256",
    "cache_lock_s": "60",
    "arch": "",
    "launcher": "auto",
    "build_dir": "",
    "pch": "auto",
    "pch_heap_mb": "400",
    "compile_workers": "",
    "compile_split_s": "1",
    "device": "cuda",
    "cpu_threads": "",
    "check": "0",
    "cpu_timeout": "0",
}
SCHEMA = "v2"  # the layout of what cuforge writes under the cache dir (v1: cuda.core's file names)
_overrides: dict[str, Any] = {}
_watchers: list[Callable[[], None]] = []


def on_change(watcher: Callable[[], None]) -> None:
    """Call ``watcher()`` after each change of settings through this module (`scope`,
    `override`, `restore_overrides`, `set_cache`): a setting that native code keeps (the CPU
    launches' time limit) follows them without a look at it per launch."""
    _watchers.append(watcher)


def _changed() -> None:
    for watcher in _watchers:
        watcher()


def get(name: str) -> Any:
    """The current value of setting ``name`` (``"template_path"``, ...)."""
    if name in _overrides:
        return _overrides[name]
    if name not in _DEFAULTS:
        raise KeyError(f"unknown cuforge setting {name!r}; known: {', '.join(_DEFAULTS)}")
    return os.environ.get("CUFORGE_" + name.upper(), _DEFAULTS[name])


def _check_known(settings: dict[str, Any]) -> None:
    unknown = set(settings) - set(_DEFAULTS)
    if unknown:
        raise KeyError(f"unknown cuforge setting(s) {sorted(unknown)}; known: {', '.join(_DEFAULTS)}")


@contextlib.contextmanager
def scope(**settings: Any) -> Iterator[None]:
    """Override settings inside a ``with`` block (tests, notebooks)."""
    _check_known(settings)
    saved = dict(_overrides)
    _overrides.update(settings)
    _changed()
    try:
        yield
    finally:
        _overrides.clear()
        _overrides.update(saved)
        _changed()


def overrides_of(*names: str) -> dict[str, Any]:
    """The overrides of settings ``names`` now (a name not overridden is absent), which
    `restore_overrides` puts back."""
    return {name: _overrides[name] for name in names if name in _overrides}


def restore_overrides(names: tuple[str, ...], saved: dict[str, Any]) -> None:
    """Put back the overrides of ``names`` as `overrides_of` saw them (absent: read from the
    environment again), leaving every other setting as it is now."""
    for name in names:
        if name in saved:
            _overrides[name] = saved[name]
        else:
            _overrides.pop(name, None)
    _changed()


def override(**settings: Any) -> None:
    """Set settings for the rest of the process, over the environment (``cf.use_build``)."""
    _check_known(settings)
    _overrides.update(settings)
    _changed()


def cache_dir() -> Path:
    """Where the disk cache is (or would be, where it is off): the directory of compiled
    kernels, GPU and CPU builds alike, and autotuning results, as configured now
    (``cf.set_cache(path=...)``, else ``CUFORGE_CACHE_DIR``, else the user cache directory),
    with the cache's schema folder. Nothing is created here.

    Returns
    -------
    pathlib.Path
        An absolute path: a relative setting names one folder even if the working
        directory changes.

    Examples
    --------
    >>> cf.cache_dir().name
    'v2'
    """
    from pathlib import Path  # (the warm path uses cache_path: pathlib imports urllib and ipaddress)

    return Path(cache_path())


def cache_path() -> str:
    """`cache_dir` as a string, which cuforge's own reads and writes use."""
    configured = str(get("cache_dir"))
    if configured:
        return os.path.join(os.path.abspath(configured), SCHEMA)
    return os.path.join(_user_cache_dir(), SCHEMA)


def _user_cache_dir() -> str:
    """platformdirs' ``user_cache_dir("cuforge")``. On Linux, with an absolute
    ``XDG_CACHE_HOME`` or ``HOME``, its answer is spelled here: importing platformdirs
    (tempfile, shutil, random, compression modules) would cost a warm start more than the
    launch. Anything else (another system, Android, no usable home) asks platformdirs."""
    android = os.environ.get("ANDROID_DATA") == "/data" and os.environ.get("ANDROID_ROOT") == "/system"
    if sys.platform == "linux" and not android:
        xdg, home = os.environ.get("XDG_CACHE_HOME", ""), os.environ.get("HOME", "")
        if xdg.startswith("/"):
            return os.path.join(xdg, "cuforge")
        if home.startswith("/"):
            return os.path.join(home.rstrip("/") + "/.cache", "cuforge")
    import platformdirs

    return platformdirs.user_cache_dir("cuforge")


def _number(name: str) -> float:
    value = get(name)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"CUFORGE_{name.upper()} expects a number, got {value!r}; fix or unset it") from None


def build_dir() -> str:
    """CUFORGE_BUILD_DIR (or cf.use_build): the ahead-of-time build in use ('' for none)."""
    return str(get("build_dir")).strip()


def arch() -> str:
    """CUFORGE_ARCH: the arch to compile for where no GPU says which ('' when unset)."""
    return str(get("arch")).strip()


def launcher() -> str:
    """CUFORGE_LAUNCHER: ``auto``, ``c`` or ``bindings``."""
    value = str(get("launcher")).strip().lower()
    if value not in ("auto", "c", "bindings"):
        raise ConfigError(f"CUFORGE_LAUNCHER expects auto, c or bindings, got {value!r}; unset it to launch from C when built")
    return value


def device() -> str:
    """CUFORGE_DEVICE: ``cuda``, ``cuda:N`` (GPU N) or ``cpu``, where a launch that names no device runs."""
    value = str(get("device")).strip().lower()
    gpu = value.partition(":")[2]
    if value not in ("cuda", "cpu") and not (value.startswith("cuda:") and gpu.isascii() and gpu.isdigit()):
        raise ConfigError(f"CUFORGE_DEVICE expects cuda, cuda:N (GPU N) or cpu, got {value!r}; unset it to launch on the GPU")
    return value


def check() -> bool:
    """CUFORGE_CHECK: whether launches on the CPU run checked (a call's ``check=`` wins)."""
    value = str(get("check")).strip().lower()
    mapped = {"1": True, "on": True, "true": True, "yes": True, "0": False, "off": False, "false": False, "no": False,
              "": False}.get(value)  # fmt: skip
    if mapped is None:
        raise ConfigError(f"CUFORGE_CHECK expects 1 or 0, got {value!r}; unset it to launch unchecked")
    return mapped


def pch() -> str:
    """CUFORGE_PCH: ``auto``, ``1`` (on for any include) or ``0`` (off)."""
    value = str(get("pch")).strip().lower()
    mapped = {"auto": "auto", "1": "1", "on": "1", "true": "1", "0": "0", "off": "0", "false": "0"}.get(value)
    if mapped is None:
        raise ConfigError(f"CUFORGE_PCH expects auto, 1 or 0, got {value!r}; unset it for auto")
    return mapped


def pch_heap_bytes() -> int:
    """CUFORGE_PCH_HEAP_MB in bytes."""
    return int(_number("pch_heap_mb") * 2**20)


def compile_workers() -> int:
    """CUFORGE_COMPILE_WORKERS (default: the CPUs this process may run on)."""
    value = str(get("compile_workers")).strip()
    if not value:
        try:
            return len(os.sched_getaffinity(0))
        except AttributeError:  # not Linux
            return os.cpu_count() or 1
    workers = _number("compile_workers")
    if workers < 1 or workers != int(workers):
        raise ConfigError(f"CUFORGE_COMPILE_WORKERS expects a whole number >= 1, got {value!r}")
    return int(workers)


def compile_split_seconds() -> float:
    """CUFORGE_COMPILE_SPLIT_S."""
    return _number("compile_split_s")


CHECKED_CPU_TIMEOUT = 60.0  # (the pytest plugin's: a kernel that never ends fails, as it does in a test)


def cpu_timeout() -> float:
    """CUFORGE_CPU_TIMEOUT: seconds a CPU launch may run (0: no limit); where it is not set and
    CUFORGE_CHECK=1 is, CHECKED_CPU_TIMEOUT (the checked mode is a testing mode: a launch that
    never ends, a kernel's deadlock, is then a LaunchTimeoutError, not a hang)."""
    if "cpu_timeout" not in _overrides and "CUFORGE_CPU_TIMEOUT" not in os.environ:
        with contextlib.suppress(ConfigError):  # (a bad CUFORGE_CHECK is reported where it is read for a launch)
            if check():
                return CHECKED_CPU_TIMEOUT
    seconds = _number("cpu_timeout")
    if not seconds >= 0:  # (NaN too)
        raise ConfigError(f"CUFORGE_CPU_TIMEOUT expects seconds >= 0 (0: no limit), got {get('cpu_timeout')!r}; fix or unset it")
    return seconds


def template_path() -> list[str]:
    """CUFORGE_TEMPLATE_PATH as a list of directories."""
    return [p for p in str(get("template_path")).split(os.pathsep) if p]


def cuda_include() -> str:
    """CUFORGE_CUDA_INCLUDE ('' when unset: cuda.pathfinder finds the headers)."""
    return str(get("cuda_include"))


def cache_enabled() -> bool:
    return str(get("cache")).strip().lower() not in ("0", "false", "no", "off", "")


def cache_max_bytes() -> int:
    return int(_number("cache_max_mb") * 1024 * 1024)


def cache_lock_seconds() -> float:
    return _number("cache_lock_s")


def set_cache(*, enabled: bool | None = None, path: str | os.PathLike[str] | None = None, max_mb: float | None = None) -> None:
    """Configure the disk cache for this process (overrides CUFORGE_CACHE*).

    Parameters
    ----------
    enabled : bool, optional
        False turns the disk layer off (the in-memory cache stays).
    path : path-like, optional
        The cache directory (a schema subfolder is used inside it).
    max_mb : float, optional
        The size cap in MiB.
    """
    if enabled is not None:
        _overrides["cache"] = "1" if enabled else "0"
    if path is not None:
        _overrides["cache_dir"] = os.fspath(path)
    if max_mb is not None:
        if max_mb <= 0:
            raise ValueError(f"set_cache: max_mb expects a positive size in MiB, got {max_mb!r}")
        _overrides["cache_max_mb"] = str(max_mb)
    _changed()
