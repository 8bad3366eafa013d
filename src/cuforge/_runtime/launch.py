"""The launch entry: `LaunchConfig`, a launch's shape as one value, and the driver call that
takes it: cuforge's C extension (cuLaunchKernelEx, or cuLaunchKernel on a driver before CUDA
12.0) or, where it is not built or ``CUFORGE_LAUNCHER=bindings``, cuda.bindings'.

`entry_for` picks the entry; the device state binds it when the first device is made
current (``state.launch``). Every entry is called as ``launch(function, config, stream,
params)`` and returns the CUresult as an int. The C launcher's own path launches from its C
struct and never builds a LaunchConfig.
"""

from __future__ import annotations

import ctypes
import functools
import os
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import _config
from .._frozen import Record
from ..errors import LaunchError
from . import libcuda as _libcuda
from .faults import check, error_text
from .libcuda import claunch as _claunch

if TYPE_CHECKING:
    from .._declare.kinds import LaunchKind

CUDA_ERROR_NOT_SUPPORTED = 801

# CUlaunchAttributeID values (cuda.h, stable since CUDA 12.0) and the value field each sets.
_ATTR_COOPERATIVE, _ATTR_CLUSTER_DIMENSION, _ATTR_PROGRAMMATIC_SERIALIZATION = 2, 4, 6
_ATTR_INT_FIELDS = {_ATTR_COOPERATIVE: "cooperative", _ATTR_PROGRAMMATIC_SERIALIZATION: "programmaticStreamSerializationAllowed"}
_RECORD = 72  # bytes of one CUlaunchAttribute: the id, padding, a 64-byte value


class LaunchConfig(Record):
    """How one launch runs: its grid and block, dynamic shared memory, and launch kind.

    `attributes` turns it into cuLaunchKernelEx's attribute list, `bindings` into
    cuda.bindings' ``CUlaunchConfig``."""

    __slots__ = ()
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int
    cooperative: bool
    cluster: tuple[int, int, int] | None
    programmatic_serialization: bool

    def __new__(cls, grid: Any, block: Any, shared_mem: Any = 0, cooperative: Any = False, cluster: Any = None,
                programmatic_serialization: Any = False) -> Any:
        return tuple.__new__(cls, (grid, block, shared_mem, cooperative, cluster, programmatic_serialization))

    @classmethod
    def of(cls, grid: tuple[int, int, int], block: tuple[int, int, int], shared_mem: int, kind: LaunchKind) -> LaunchConfig:
        """The configuration of a checked launch of ``kind``."""
        return cls(grid, block, shared_mem, kind.cooperative, kind.cluster)

    def attributes(self) -> bytes | None:
        """The launch-attribute list handed to cuLaunchKernelEx, as CUlaunchAttribute records;
        None when no attribute is set (made once per combination)."""
        if not self.cooperative and self.cluster is None and not self.programmatic_serialization:
            return None
        return _attribute_records(self.cooperative, self.cluster, self.programmatic_serialization)

    def bindings(self, stream: int) -> Any:
        """cuda.bindings' ``CUlaunchConfig`` for a launch on ``stream``."""
        driver = _libcuda.bindings()
        cfg = driver.CUlaunchConfig()
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = self.grid
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = self.block
        cfg.sharedMemBytes, cfg.hStream = self.shared_mem, driver.CUstream(stream)
        attrs = self.attributes()
        if attrs:
            cfg.attrs = [_bindings_attribute(driver, attrs[i : i + _RECORD]) for i in range(0, len(attrs), _RECORD)]
            cfg.numAttrs = len(attrs) // _RECORD
        return cfg


@functools.cache
def _attribute_records(cooperative: bool, cluster: tuple[int, int, int] | None, programmatic_serialization: bool) -> bytes:
    records = []
    if cooperative:
        records.append(struct.pack("<I4xi60x", _ATTR_COOPERATIVE, 1))
    if cluster is not None:
        records.append(struct.pack("<I4x3I52x", _ATTR_CLUSTER_DIMENSION, *cluster))
    if programmatic_serialization:
        records.append(struct.pack("<I4xi60x", _ATTR_PROGRAMMATIC_SERIALIZATION, 1))
    return b"".join(records)


def _bindings_attribute(driver: Any, record: bytes) -> Any:
    attr = driver.CUlaunchAttribute()
    ident = int.from_bytes(record[:4], "little")
    attr.id = driver.CUlaunchAttributeID(ident)
    if ident == _ATTR_CLUSTER_DIMENSION:
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = struct.unpack_from("<3I", record, 8)
    else:  # cooperative, programmatic stream serialization: an int
        setattr(attr.value, _ATTR_INT_FIELDS[ident], struct.unpack_from("<i", record, 8)[0])
    return attr


# ---------------------------------------------------------------- the entries


def c_launch(function: int, config: LaunchConfig, stream: int, params: int) -> int:
    """The launch through cuforge's C extension."""
    return _claunch.launch(function, config.grid, config.block, config.shared_mem, stream, params,  # type: ignore[no-any-return]
                           config.attributes())  # fmt: skip


class BindingsLaunch:
    """The launch through cuda.bindings' cuLaunchKernelEx. A configuration object is kept per
    (LaunchConfig, stream) and a function object per handle: building them costs more than
    the call. The last launch's are also kept with its LaunchConfig object, which the general
    path hands again to a loop's every launch: comparing it costs less than hashing it."""

    def __init__(self) -> None:
        self.driver = _libcuda.bindings()
        self.configs: dict[tuple[LaunchConfig, int], Any] = {}
        self.functions: dict[int, Any] = {}
        self.last: tuple[Any, ...] = (None, None, None, None, None)  # (config, stream, function, theirs)

    def __call__(self, function: int, config: LaunchConfig, stream: int, params: int) -> int:
        last = self.last
        if last[0] is config and last[1] == stream and last[2] == function:
            return self.driver.cuLaunchKernelEx(last[3], last[4], params, 0)[0]  # type: ignore[no-any-return]
        key = (config, stream)
        cfg = self.configs.get(key)
        if cfg is None:
            if len(self.configs) >= 1024:
                self.configs.clear()
            cfg = self.configs[key] = config.bindings(stream)
        f = self.functions.get(function)
        if f is None:
            f = self.functions[function] = self.driver.CUfunction(function)
        self.last = (config, stream, function, cfg, f)  # one object: threads read it whole
        return self.driver.cuLaunchKernelEx(cfg, f, params, 0)[0]  # type: ignore[no-any-return]


def bindings_launch_legacy(function: int, config: LaunchConfig, stream: int, params: int) -> int:
    """cuLaunchKernel through cuda.bindings, for a driver before CUDA 12.0 (no launch attributes)."""
    if config.attributes():
        return CUDA_ERROR_NOT_SUPPORTED
    return _libcuda.bindings().cuLaunchKernel(function, *config.grid, *config.block, config.shared_mem,  # type: ignore[no-any-return]
                                              stream, params, 0)[0]  # fmt: skip


def prepared(launch: Callable[..., int], function: int, config: LaunchConfig, stream: int, params: int) -> Callable[[], int]:
    """One launch bound to its arguments, called with none: through the C extension straight
    (no Python frame per call), else through ``launch``."""
    if launch is c_launch:
        return functools.partial(_claunch.launch, function, config.grid, config.block, config.shared_mem, stream,
                                 params, config.attributes())  # fmt: skip
    return functools.partial(launch, function, config, stream, params)


def entry_for(kind: str | None = None) -> tuple[Callable[..., int], str]:
    """The driver's launch and its name: "c" (cuforge's C extension, cuLaunchKernelEx),
    "c-legacy" (cuLaunchKernel, a driver before CUDA 12.0) or "bindings" (cuda.bindings:
    every call then takes the general Python path; see docs/guide/types.md, "Without a C
    compiler"). ``kind`` None reads ``CUFORGE_LAUNCHER`` ("auto": C when built).

    The C launcher calls the entry point cuGetProcAddress gives for the CUDA 12.0 ABI of
    cuLaunchKernelEx (cuLaunchKernel where the driver predates it), picked as cuda.bindings
    picks its own: ``CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM=1`` makes stream 0 the
    per-thread default stream in both.
    """
    kind = kind or _config.launcher()
    if kind == "c" and _claunch is None:
        raise LaunchError("CUFORGE_LAUNCHER=c, but cuforge's C launcher is not built; "
                          "reinstall cuforge from a wheel, or where a C compiler is present")  # fmt: skip
    if _claunch is None or kind == "bindings":
        if _claunch is not None:
            _claunch.set_entry(0, True)  # the C Launchers then decline every call to the general path
        return _bindings_entry(), "bindings"
    ptds = bool(int(os.environ.get("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM") or 0))
    flag = _libcuda.PER_THREAD_DEFAULT_STREAM if ptds else _libcuda.LEGACY_STREAM
    for name, ex in (("cuLaunchKernelEx", True), ("cuLaunchKernel", False)):
        err, address = _libcuda.address(name, 12000, flag)
        if err == 0 and address:
            _claunch.set_entry(address, ex)
            return c_launch, "c" if ex else "c-legacy"
    if kind == "c":  # a driver older than CUDA 12.0
        raise LaunchError(f"CUFORGE_LAUNCHER=c, but cuGetProcAddress found no launch entry point for the CUDA 12.0 "
                          f"ABI ({error_text(err)}); update the NVIDIA driver or unset CUFORGE_LAUNCHER")  # fmt: skip
    _claunch.set_entry(0, True)
    return _bindings_entry(), "bindings"


def _bindings_entry() -> Callable[..., int]:
    version = check(_libcuda.get("cuDriverGetVersion", ctypes.c_int), "cuDriverGetVersion")
    return BindingsLaunch() if version >= 12000 else bindings_launch_legacy
