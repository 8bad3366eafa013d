"""Using an ahead-of-time build: ``python -m cuforge build`` (``_builder``) writes fatbins
and a manifest, and a process with ``cf.use_build(DIR)`` (or ``CUFORGE_BUILD_DIR``) loads
kernels from them with no NVRTC call.

A build holds one fatbin per declaration (a kernel, or a family with all its
instantiations), made with nvFatbin from one cubin (or PTX) per arch. One per declaration,
not per Python module: a fatbin holds one image per arch, and separate declarations are
separate NVRTC programs, which only relocatable code and a link could merge.

``manifest.json`` lists, per instantiation: the qualified name, template arguments, name
expression, lowered name, signature, archs, the SHA-256 of its rendered source and its
fatbin. At run time a kernel is served from the build when its name expression and source
digest match an entry and the build covers the device; anything else compiles as usual
where NVRTC is present, and raises a clear error where it is not.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from typing import Any

from . import _compile, _config
from ._prebuilt import Module
from .errors import CompileError, ConfigError
from .options import arch_number

MANIFEST = "manifest.json"
SCHEMA = 1


def source_digest(kernel: Any) -> str:
    """SHA-256 of a kernel's rendered source: a build entry serves only the source it was built from."""
    return hashlib.sha256(kernel.render().encode()).hexdigest()


# ---------------------------------------------------------------- using a build


class Build:
    """A build directory, read: its manifest's entries by (qualified name, name expression)."""

    def __init__(self, root: str):
        self.root = os.path.abspath(root)
        path = os.path.join(self.root, MANIFEST)
        try:
            with open(path, encoding="utf-8") as fh:
                manifest = json.load(fh)
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"cuforge build directory {self.root}: cannot read {MANIFEST} ({exc}); "
                f"make it with python -m cuforge build PKG.MODULE -o {root}"
            ) from None
        if manifest.get("schema") != SCHEMA:
            raise ConfigError(f"{path}: schema {manifest.get('schema')!r}, expected {SCHEMA}; rebuild it")
        self.archs: list[str] = manifest["archs"]
        self.entries = {(e["qualname"], e["name_expression"]): e for e in manifest["kernels"]}
        self._modules: dict[str, Module] = {}
        self._lock = threading.Lock()

    def serves(self, cc: int) -> bool:
        """Whether the build has an image a compute capability ``cc`` device runs."""
        for arch in self.archs:
            kind, n = arch.split("_", 1)[0], arch_number(arch)
            if (kind == "sm" and n // 10 == cc // 10 and n <= cc) or (kind == "compute" and n <= cc):
                return True
        return False

    def module_for(self, kernel: Any) -> tuple[Module, str] | None:
        """(the fatbin's Module, the lowered name) serving ``kernel``, or None."""
        entry = self.entries.get((kernel.qualname, kernel.name_expression))
        if entry is None or entry["source_sha256"] != source_digest(kernel):
            return None
        with self._lock:
            module = self._modules.get(entry["fatbin"])
            if module is None:
                module = self._modules[entry["fatbin"]] = Module(os.path.join(self.root, entry["fatbin"]), code_type="fatbin")
        return module, entry["lowered_name"]


_current: tuple[str, Build] | None = None


def current() -> Build | None:
    """The build in use (``cf.use_build`` or ``CUFORGE_BUILD_DIR``), or None."""
    global _current
    root = _config.build_dir()
    if not root:
        return None
    if _current is None or _current[0] != root:
        _current = (root, Build(root))
    return _current[1]


def use_build(path: str | os.PathLike[str] | None) -> None:
    """Serve kernels from an ahead-of-time build in this process, without NVRTC.

    Parameters
    ----------
    path : str, os.PathLike or None
        The build directory ``python -m cuforge build`` made; None stops. Overrides
        ``CUFORGE_BUILD_DIR``.

    Raises
    ------
    CuforgeError
        Where ``path`` holds no readable build (no manifest, another schema).

    Examples
    --------
    ``cf.use_build("build/")`` serves the kernels of ``build/``; this stops:

    >>> cf.use_build(None)
    """
    root = "" if path is None else os.fspath(path)
    if root:
        Build(root)  # fail now, not at the first launch
    _config._overrides["build_dir"] = root


def nvrtc_available() -> bool:
    try:
        _compile.nvrtc_version()
    except Exception:
        return False
    return True


def missing(kernel: Any, build: Build | None) -> CompileError:
    """The error for a kernel that must be compiled where NVRTC is not available."""
    where = f"the build at {build.root} does not have it (or was made from other source)" if build else "no build is in use"
    return CompileError(
        f"{kernel.label}: NVRTC is not available to compile {kernel.name_expression}, and {where}; add its module to "
        f"python -m cuforge build, or install NVRTC (the nvidia-cuda-nvrtc wheel)",
        log="", source="", options=(),
    )  # fmt: skip

