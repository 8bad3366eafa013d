"""The CUDA driver backend's face: what the layers above call, gathered from the modules that
own it (`device`: the device state; `faults`; `loading`; `launch`: the launch entry and
`LaunchConfig`). The C launcher is configured with this module (it calls
``current_device()``). The runtime's own modules import from the modules that own each
name, never from here: this module is for the layers above."""

from __future__ import annotations

from .device import (
    ON_CPU,
    DeviceInfo,
    context_error,
    core_device,
    current_context,
    current_device,
    device_info,
    enter_device,
    gpu_available,
    gpu_only,
    no_device_for,
    on_cpu,
    on_device,
    parse_device,
    pointer_device,
    runs_on_cpu,
    set_context,
    set_default_device,
    set_device,
    state,
    synchronize,
)
from .faults import (
    STICKY,
    check,
    error_text,
    fault,
    last_launch,
    note_launch,
)
from .launch import LaunchConfig
from .libcuda import bindings, claunch
from .loading import (
    compiled,
    kernel_attribute,
    kernel_param_sizes,
)

__all__ = [
    "ON_CPU",
    "DeviceInfo",
    "context_error",
    "core_device",
    "current_context",
    "current_device",
    "device_info",
    "enter_device",
    "gpu_available",
    "gpu_only",
    "no_device_for",
    "on_cpu",
    "on_device",
    "parse_device",
    "runs_on_cpu",
    "pointer_device",
    "set_context",
    "set_default_device",
    "set_device",
    "state",
    "synchronize",
    "STICKY",
    "check",
    "error_text",
    "fault",
    "last_launch",
    "note_launch",
    "LaunchConfig",
    "bindings",
    "claunch",
    "compiled",
    "kernel_attribute",
    "kernel_param_sizes",
]
