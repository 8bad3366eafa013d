"""`Loader`: one kernel's functions on each device, compiled (or read from the caches, or
from an ahead-of-time build, or a prebuilt module's entry point) and loaded on the first
launch there, with the device's limits for it."""

from __future__ import annotations

import _thread  # (threading's lock and thread-local types, without importing threading on a warm start)
from collections.abc import Callable
from typing import Any

from .. import _config
from .._compile.targets import device_target, known_target, native_target_found
from .._declare import kinds as _kinds
from .._launch.claunch import c_launcher
from .._launch.plan import LaunchPlan
from .._runtime import cuda as _cuda
from .._runtime import limits as _limits
from ..errors import SignatureMismatchError


class Loader:
    """Loads ``kernel`` on devices into ``plan.loaded`` (the dict both launch paths read).
    One thread loads while the others wait, so that threads launching for the first time at
    once do the work once."""

    __slots__ = ("__weakref__", "check_params", "kernel", "lock", "plan", "prebuilt", "use_launcher")

    def __init__(self, kernel: Any, plan: LaunchPlan, prebuilt: Any, check_params: bool,
                 use_launcher: Callable[[Any], None]) -> None:  # fmt: skip
        """``prebuilt``: the Module whose entry point the kernel binds, or None to compile it;
        ``check_params``: whether a compile's parameters are checked against the annotations
        (a ``source=`` or template kernel's, which cuforge did not generate);
        ``use_launcher(launcher)`` points the kernel's calls at a C Launcher (None: the general path)."""
        self.kernel, self.plan, self.prebuilt = kernel, plan, prebuilt
        self.check_params, self.use_launcher = check_params, use_launcher
        self.lock = _thread.allocate_lock()

    def function(self, device: _cuda.DeviceInfo) -> _limits.Loaded:
        """The kernel on ``device``, loaded there on first use."""
        found = self.plan.loaded.get(device.id)
        if found is None:
            with self.lock:
                found = self.plan.loaded.get(device.id)
                if found is None:
                    found = self.load(device)
        return found

    def load(self, device: _cuda.DeviceInfo) -> _limits.Loaded:
        kernel, module = self.kernel, self.prebuilt
        if module is not None:  # prebuilt: its entry point, checked against the annotations
            handle = module._kernel_handle(kernel.name, who=self.plan.label, user=self)
            self.check_compiled_params(handle)
            return self._loaded(handle, module, device)
        if _config.build_dir():  # an ahead-of-time build: its fatbin, no NVRTC
            from .._compile import build as _build  # (imported where a build is in use: start-up)

            build = _build.current()
            if build is not None and build.serves(device.cc) and (served := build.image_for(kernel)) is not None:
                module = build.loaded(served[0], _image_module)
                return self._loaded(module._kernel_handle(served[1], who=self.plan.label, user=self), module, device)
            if not _build.nvrtc_available():
                raise _build.missing(kernel, build)
        ck = self._native(device.cc) or kernel.compile(device_target(device.cc))
        handle = _cuda.compiled.handle(ck)
        if self.check_params:
            self.check_compiled_params(handle)
        if _kinds.uses_grid_sync(ck.source) and not self.plan.grid_sync:
            self.plan.grid_sync = True
            self.use_launcher(None)  # the general path refuses it without cooperative=True, before the launch
        return self._loaded(handle, ck, device)

    def _native(self, cc: int) -> Any:
        """The kernel's cubin for the device's own arch where the caches hold it, before the
        process knows which archs NVRTC supports: asking reads a record of its own from the
        disk cache, a warm start's last read but the kernel's."""
        if known_target(cc) is not None:
            return None
        ck = self.kernel._from_caches(f"sm_{cc}")
        if ck is not None:
            native_target_found(cc)
        return ck

    def _loaded(self, handle: int, origin: Any, device: _cuda.DeviceInfo) -> _limits.Loaded:
        """Record ``handle`` (a CUkernel, from ``origin``: a CompiledKernel or a Module) as
        loaded on ``device``, with its limits there."""
        loaded = self.plan.loaded[device.id] = _limits.Loaded(handle, origin, *_limits.load_limits(handle, device), device)
        return loaded

    def forget(self) -> None:
        """The module was unloaded: drop every loaded function, and the C launcher's memory of
        them; the next call reaches the general path, which raises (see Module.unload)."""
        with self.lock:
            self.plan.loaded.clear()
            self.use_launcher(c_launcher(self.plan))

    def check_compiled_params(self, handle: int) -> None:
        """A source= or template kernel's compiled parameters must match the annotations."""
        info = _cuda.kernel_param_sizes(handle)
        label, params = self.plan.label, self.plan.signature.params
        for i, size in enumerate(info):
            if i >= len(params):
                raise SignatureMismatchError(
                    f"{label}: the compiled kernel has {len(info)} parameters but {len(params)} are "
                    f"annotated; parameter {i} ({size} bytes) has no annotation; add it to the class"
                )
            if size != params[i].size:
                raise SignatureMismatchError(
                    f"{label}: parameter {i} '{params[i].name}' is annotated {params[i].type_name} "
                    f"({params[i].size} bytes), but the compiled kernel's parameter {i} takes {size} bytes; "
                    f"fix the annotation or the C++ signature"
                )
        if len(info) < len(params):
            missing = params[len(info)]
            raise SignatureMismatchError(
                f"{label}: parameter '{missing.name}' is annotated but the compiled kernel has only "
                f"{len(info)} parameters; remove the annotation or add the parameter in C++"
            )


def _image_module(image: Any) -> Any:
    """A build's fatbin (``_compile.build.Image``) as a Module, loaded on first use."""
    from .._runtime.module import Module

    return Module(image.path, code_type=image.code_type)
