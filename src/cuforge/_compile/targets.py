"""Which arch a compile is for: a device's (a cubin where NVRTC knows its arch, else PTX for
the newest arch below it), or, with no device, ``CUFORGE_ARCH``. The device's compute
capability comes from the caller: this layer never asks the GPU."""

from __future__ import annotations

from collections.abc import Callable

from .. import _config
from ..errors import NoDeviceError
from . import disk as _disk
from .identity import nvrtc_identity


def target_for(cc: int, archs: tuple[int, ...] | None = None) -> str:
    """The arch to compile for a device of compute capability ``cc`` (90 for 9.0): a cubin
    when NVRTC knows the arch, else PTX for the newest arch it knows below it. ``archs``
    (NVRTC's supported archs, if already known) saves loading NVRTC to ask."""
    if archs is None:
        from .toolchain import supported_archs  # (loads NVRTC: a warm start passes the archs the disk cache knows)

        archs = supported_archs()
    if cc in archs:
        return f"sm_{cc}"
    older = [a for a in archs if a <= cc]
    if not older:
        from .toolchain import nvrtc_version

        raise NoDeviceError(
            f"this NVRTC ({'.'.join(map(str, nvrtc_version()))}) supports archs "
            f"{', '.join(map(str, archs))}, none of which runs on a compute capability "
            f"{cc // 10}.{cc % 10} device; install an NVRTC that supports it"
        )
    return f"compute_{max(older)}"


_targets: dict[int, str] = {}


def device_target(cc: int) -> str:
    """The arch for a device, without loading NVRTC when the disk cache already knows which
    archs this NVRTC supports (a warm start then makes no NVRTC call at all). Remembered per
    process: threads launching for the first time ask at once."""
    found = _targets.get(cc)
    if found is None:
        found = _targets[cc] = _device_target(cc)
    return found


def known_target(cc: int) -> str | None:
    """The arch `device_target` gave for ``cc`` in this process, else None."""
    return _targets.get(cc)


def native_target_found(cc: int) -> None:
    """A cubin for ``sm_{cc}`` came from the caches: its key names this NVRTC, which compiled
    for that arch, so the arch is among those it supports and `device_target` gives it."""
    _targets.setdefault(cc, f"sm_{cc}")


def _device_target(cc: int) -> str:
    disk = _disk.current()
    name = f"nvrtc-archs:{nvrtc_identity()}"
    record = disk.get_json(name) if disk is not None else None
    if record is not None and isinstance(record.get("archs"), list):
        return target_for(cc, tuple(record["archs"]))
    from .toolchain import supported_archs

    archs = supported_archs()
    if disk is not None:
        disk.put_json(name, {"archs": list(archs)})
    return target_for(cc, archs)


def default_arch(who: str, current_cc: Callable[[], int]) -> str:
    """The arch to compile for when none is given: that of the device whose compute
    capability ``current_cc()`` gives (the caller's current GPU; it raises NoDeviceError
    where there is none), else CUFORGE_ARCH."""
    try:
        return device_target(current_cc())
    except NoDeviceError as exc:
        arch = _config.arch()
        if not arch:  # (the launch's advice that exc goes on with is not this call's)
            raise NoDeviceError(
                f"{who}: {str(exc).split('; ')[0]}, so there is no GPU to compile for; pass arch='sm_90' (or set "
                f"CUFORGE_ARCH=sm_90) to compile without one"
            ) from None
        return arch
