"""`LaunchPlan`: what both launch paths read of one kernel instantiation, built once when it
is made, and the `Packer` that lays its parameters out for the driver.

The general path (``general``), prepared launches, graph capture, module variables and the
C launcher's set-up take this record, not the kernel: its fields are the signature's checks
and layout, the launch rules, the launch kind and the functions loaded per device.
"""

from __future__ import annotations

import _thread  # (threading's lock and thread-local types, without importing threading on a warm start)
import ctypes
import struct
from collections.abc import Callable
from typing import Any

from .._declare import kinds as _kinds
from .._declare.launch_rules import GridRule, SharedMemRule
from .._declare.signature import ParamSpec, Signature
from .._runtime import cuda as _cuda
from .._runtime import limits as _limits
from .checks import checker


class Packer:
    """Packs checked values into a per-thread C-ABI parameter buffer.

    The driver copies the parameters when it is called, so one buffer per thread is reused by
    every launch of the kernel from that thread.
    """

    __slots__ = ("_tls", "complex_at", "offsets", "size", "struct")

    def __init__(self, specs: tuple[ParamSpec, ...]):
        fmt, pos = "=", 0
        for s in specs:
            fmt += "x" * (s.offset - pos) + s.pack
            pos = s.offset + s.size
        self.struct = struct.Struct(fmt)
        self.offsets = tuple(s.offset for s in specs)
        self.size = max(self.struct.size, 8)
        self.complex_at = tuple(s.index for s in specs if s.dtype.is_complex and not s.is_array)
        self._tls = _thread._local()

    def _new_buffer(self) -> tuple[Any, Any, int]:
        """(parameter buffer, void* array pointing at each parameter in it, that array's address)."""
        buf = ctypes.create_string_buffer(self.size)
        base = ctypes.addressof(buf)
        n = max(len(self.offsets), 1)
        ptrs = (ctypes.c_void_p * n)(*[base + o for o in self.offsets] or [base])
        return buf, ptrs, ctypes.addressof(ptrs)

    def standalone(self, values: list[Any]) -> tuple[Any, Any, int]:
        """A buffer of its own holding ``values``: (buffer, void* array, its address)."""
        buf, ptrs, addr = self._new_buffer()
        self.struct.pack_into(buf, 0, *self._flat(values))
        return buf, ptrs, addr

    def _flat(self, values: list[Any]) -> list[Any]:
        if not self.complex_at:
            return values
        flat: list[Any] = []
        for i, v in enumerate(values):
            flat += (v.real, v.imag) if i in self.complex_at else (v,)
        return flat

    def to_bytes(self, values: list[Any]) -> bytes:
        """The packed parameters (what the C launcher's check_and_pack reports, for tests)."""
        return self.struct.pack(*self._flat(values))

    def pack(self, values: list[Any]) -> int:
        """Pack ``values`` into this thread's buffer and return the address for ``kernelParams``."""
        bufs = getattr(self._tls, "bufs", None)
        if bufs is None:
            bufs = self._tls.bufs = self._new_buffer()
        if self.complex_at:
            values = self._flat(values)
        self.struct.pack_into(bufs[0], 0, *values)
        return bufs[2]  # type: ignore[no-any-return]


class LaunchPlan:
    """One kernel instantiation as the launch layer sees it.

    ``loaded`` maps a device id to the function loaded there (the C launcher reads the same
    dict); ``load(device_info)`` compiles and loads it on a device's first launch, filling
    ``loaded``. ``grid_sync`` is found at that first load (the source syncs the whole grid).
    ``seen_grid`` and ``seen_block`` keep the last ``grid=``/``block=`` objects a call passed,
    with their checked dims (see ``general.check_and_pack``), and ``config`` the general path's
    last launch configuration: (grid, block, shared_mem, kind, its `LaunchConfig`).
    """

    __slots__ = ("attrs", "block", "check_calls", "checks", "config", "cpu", "cpu_check", "cpu_library", "grid", "grid_sync",
                 "host_checks", "kind", "label", "load", "loaded", "module", "on_cpu", "packer", "seen_block", "seen_grid",
                 "signature", "smem", "specs")  # fmt: skip

    def __init__(self, label: str, signature: Signature, specs: tuple[ParamSpec, ...], *, block: tuple[int, int, int],
                 grid: GridRule, smem: SharedMemRule | None, kind: _kinds.LaunchKind, module: Any,
                 load: Callable[[_cuda.DeviceInfo], _limits.Loaded]) -> None:  # fmt: skip
        self.label, self.signature, self.specs = label, signature, specs
        self.checks = tuple(checker(label, s) for s in specs)
        self.packer = Packer(specs)
        self.block, self.grid, self.smem, self.kind = block, grid, smem, kind
        self.module = module  # a prebuilt kernel's Module (launches refuse once it is unloaded), else None
        self.load = load
        self.loaded: dict[int, _limits.Loaded] = {}
        self.attrs: bytes | None = None  # cuLaunchKernelEx's launch attributes of a plain launch
        self.grid_sync = False
        # the CPU backend: the checks of a launch there (host memory in place), made on its first
        # launch, and what compiles the kernel for it and gives its entry's address
        self.host_checks: tuple[Callable[[Any, Any], Any], ...] | None = None
        self.cpu: Callable[[], int] | None = None
        self.cpu_library: Callable[[], Any] | None = None  # the kernel's loaded CPU library (ctypes.CDLL)
        self.cpu_check: Callable[[], Any] | None = None  # its checked build (a _launch.check.CheckedBuild)
        self.on_cpu = False  # calls that name no device run on the CPU (%%cuda --device cpu)
        self.check_calls: bool | None = None  # calls on the CPU run checked (%%cuda --check); None: CUFORGE_CHECK's
        self.seen_grid: tuple[Any, Any] = (None, None)  # (the object, its dims): dims once set
        self.seen_block: tuple[Any, Any] = (None, None)
        self.config: tuple[Any, ...] = (None, None, None, None, None)
