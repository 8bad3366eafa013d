"""Using an ahead-of-time build: ``python -m cuforge build`` (``_kernel/aot.py``) writes fatbins
and a manifest, and a process with ``cf.use_build(DIR)`` (or ``CUFORGE_BUILD_DIR``) loads
kernels from them with no NVRTC call.

A build holds one fatbin per NVRTC program (made with nvFatbin from one cubin, or PTX, per
arch): a kernel, a family's instantiations, or every class declared over one ``source=``
text, as one process compiles them, so that what shares its module variables in-process
(``__constant__``, ``__device__``) shares them when served from the build.

``manifest.json`` lists, per instantiation: the qualified name, template arguments, name
expression, lowered name, signature, archs, fatbin, and ``inputs``: the compile's identity
less the arch and the toolchain (``identity.compile_inputs``: cuforge's version, digests of
the source, headers, include directories' files and linked inputs, the options and the
defines), the same record the compile cache keys by. The toolchain (NVRTC, CUDA headers,
nvJitLink) is recorded once for the build and not checked: a build made with another NVRTC
is served where there is none. At run time a kernel is served from the build when its name
expression and inputs match an entry and the build covers the device. A stale entry is never
served: the kernel compiles where NVRTC is present (with a `StaleBuildWarning`
naming the inputs that changed), and raises a ``CompileError`` saying so where it is not.

This module reads and checks the manifest and says which fatbin (an `Image`) serves a kernel;
loading it is the caller's (the kernel layer's), once per image of a build (`Build.loaded`).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import warnings
from collections.abc import Callable
from types import FrameType
from typing import Any, NamedTuple, TypeVar

from .. import _config
from ..errors import CompileError, ConfigError
from ..options import arch_number, to_flags
from . import identity as _identity
from .identity import Compilable
from .toolchain import nvrtc_version

MANIFEST = "manifest.json"
SCHEMA = 2

# What a message calls each of identity.compile_inputs' names.
_SAID = {"cuforge": "another cuforge version", "source": "other source", "name_expression": "another name expression",
         "options": "other options", "defines": "other defines=", "headers": "other header contents",
         "include_dirs": "other include_dirs= contents", "link": "other link= inputs"}  # fmt: skip


class StaleBuildWarning(UserWarning):
    """A build's entry for a kernel was made from other inputs: the kernel is compiled instead."""

    __module__ = "cuforge"


def inputs_of(kernel: Compilable, arch: str) -> dict[str, str]:
    """The kernel's compile inputs (``identity.inputs_of``) with its class's options, as the
    build records them for its entry and a serving process checks them (no NVRTC call)."""
    unit = kernel._compile_unit()
    opts = _identity.resolve_options(unit, None, unit.label)
    return _identity.inputs_of(unit, to_flags(opts, arch), opts)


def changes(kernel: Any, entry: dict[str, Any]) -> str:
    """What differs between ``kernel``'s inputs and those its build entry was made with
    ("" when none): each changed input named, options and defines with both values."""
    was, now = entry["inputs"], inputs_of(kernel, entry["archs"][0])
    said = []
    for name, value in now.items():
        if was.get(name) == value:
            continue
        if name in ("cuforge", "options", "defines"):
            said.append(f"{_SAID[name]} (was {was.get(name) or 'none'}; now {value or 'none'})")
        else:
            said.append(_SAID.get(name, f"another {name}"))
    return f"the build's entry for {kernel.label} was made with {' and '.join(said)}" if said else ""


# ---------------------------------------------------------------- using a build


class Image(NamedTuple):
    """A build's fatbin: its file, to load."""

    path: str
    code_type: str  # "fatbin"


T = TypeVar("T")


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
        self._loaded: dict[str, Any] = {}  # image path -> what the caller loaded from it
        self._lock = threading.Lock()

    def serves(self, cc: int) -> bool:
        """Whether the build has an image a compute capability ``cc`` device runs."""
        for arch in self.archs:
            kind, n = arch.split("_", 1)[0], arch_number(arch)
            if (kind == "sm" and n // 10 == cc // 10 and n <= cc) or (kind == "compute" and n <= cc):
                return True
        return False

    def image_for(self, kernel: Any) -> tuple[Image, str] | None:
        """(the fatbin, the lowered name) serving ``kernel``, or None (warning where its entry
        is stale and NVRTC can compile it instead)."""
        entry = self.entries.get((kernel.qualname, kernel.name_expression))
        if entry is None:
            return None
        stale = changes(kernel, entry)
        if stale:
            if nvrtc_available():
                warnings.warn(f"{stale}; compiling it instead (rebuild with python -m cuforge build)", StaleBuildWarning,
                              stacklevel=_user_stacklevel())  # fmt: skip
            return None
        return Image(os.path.join(self.root, entry["fatbin"]), "fatbin"), entry["lowered_name"]

    def loaded(self, image: Image, load: Callable[[Image], T]) -> T:
        """``load(image)``, called once per image of this build: the kernels of one program
        share what it loads (and so their module variables)."""
        with self._lock:
            found = self._loaded.get(image.path)
            if found is None:
                found = self._loaded[image.path] = load(image)
        return found  # type: ignore[no-any-return]


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _user_stacklevel() -> int:
    """The ``stacklevel`` of the first frame outside cuforge (the user's launch), for a warning
    raised by the caller of this function: however deep in cuforge the load that warns runs."""
    frame: FrameType | None = sys._getframe(1)  # the caller, which warns: stacklevel 1
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


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

    Warns
    -----
    StaleBuildWarning
        Later, for a kernel whose build entry was made from other inputs (source, options,
        defines, headers, linked inputs): it is compiled instead.

    Examples
    --------
    ``cf.use_build("build/")`` serves the kernels of ``build/``; this stops:

    >>> cf.use_build(None)
    """
    root = "" if path is None else os.fspath(path)
    if root:
        Build(root)  # fail now, not at the first launch
    _config.override(build_dir=root)


def nvrtc_available() -> bool:
    try:
        nvrtc_version()
    except Exception:
        return False
    return True


def missing(kernel: Any, build: Build | None) -> CompileError:
    """The error for a kernel that must be compiled where NVRTC is not available."""
    if build is None:
        where, fix = "no build is in use", "add its module to python -m cuforge build"
    else:
        entry = build.entries.get((kernel.qualname, kernel.name_expression))
        stale = changes(kernel, entry) if entry is not None else ""
        where = f"{stale} (the build at {build.root})" if stale else f"the build at {build.root} does not have it"
        fix = "rebuild it with python -m cuforge build" if stale else "add its module to python -m cuforge build"
    return CompileError(
        f"{kernel.label}: NVRTC is not available to compile {kernel.name_expression}, and {where}; {fix}, "
        f"or install NVRTC (the nvidia-cuda-nvrtc wheel)",
        log="", source="", options=(),
    )  # fmt: skip
