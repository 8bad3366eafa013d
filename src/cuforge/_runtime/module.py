"""`Module`: device code built elsewhere (a cubin, PTX, a fatbin or LTO-IR), loaded
with the driver's ``cuLibraryLoadData`` and launched with the same checked call as any kernel.

A class binds a signature to one of its entry points (``module = "kernels.fatbin"``,
``name = "saxpy"``); ``Kernel`` then loads it where it would otherwise compile. Loading is
lazy: the file is read on first use, and loaded as a context-independent library, which the
driver brings onto each device the first time a kernel of it runs there (no cuda.core
import, so that serving an ahead-of-time build starts as fast as the disk cache). LTO-IR is
linked (nvJitLink, through cuda.core's ``Linker``) for the device's arch when it is loaded,
or with a kernel that lists the module in ``link``.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import weakref
from collections.abc import Mapping
from typing import Any

from .._compile import link as _link
from .._compile import targets as _targets
from .._compile.elf import cubin_entries
from ..errors import DeclarationError, LaunchError, NoDeviceError
from . import device as _device
from . import faults as _faults
from . import libcuda as _libcuda
from . import loading as _loading

__all__ = ["Module"]

_SUFFIXES = {".cubin": "cubin", ".ptx": "ptx", ".fatbin": "fatbin", ".fatbinary": "fatbin", ".ltoir": "ltoir", ".lto": "ltoir"}
_FATBIN_MAGIC = b"\x50\xed\x55\xba"
_LTOIR_MAGIC = b"\xedCN\x7f"
_PTX_ENTRY = re.compile(rb"\.entry\s+([A-Za-z_$.][\w$.]*)")


def library_of(origin: Any) -> int:
    """The CUlibrary a loaded kernel came from: a prebuilt Module's, or its compiled program's."""
    return origin._loaded_library() if isinstance(origin, Module) else _loading.compiled.library(origin)  # type: ignore[no-any-return]


def sniff(code: bytes) -> str | None:
    """The code type of an image from its first bytes (None: not recognised)."""
    if code[:4] == b"\x7fELF":
        return "cubin"
    if code[:4] == _FATBIN_MAGIC:
        return "fatbin"
    if code[:4] == _LTOIR_MAGIC:
        return "ltoir"
    if b".version" in code[:4096] and b".target" in code[:4096]:
        return "ptx"
    return None


class Module:
    """Prebuilt device code: a cubin, PTX, fatbin or LTO-IR, from a path or from bytes.

    ``functions()`` lists its entry points; ``unload()`` frees it, after which its kernels
    raise [`LaunchError`][cuforge.errors.LaunchError] instead of launching. A kernel class binds a signature to one
    of its entry points with ``module = ...`` and ``name = ...``.

    Parameters
    ----------
    code : str, os.PathLike or bytes
        The file to load, or the image itself.
    code_type : str, optional
        ``"cubin"``, ``"ptx"``, ``"fatbin"`` or ``"ltoir"``; default: from the file's suffix
        or the image's first bytes.
    symbols : mapping, optional
        Name expressions to lowered names (``{"saxpy<float>": "_Z5saxpyIfEvT_PKS0_PS0_x"}``),
        as ``python -m cuforge build`` writes in its manifest, so that a class may bind a
        template specialisation by its C++ name.
    name : str, optional
        What errors call the module (default: the file name, or ``"<bytes>"``).

    Raises
    ------
    DeclarationError
        For a path with no file, or code whose type cannot be told.

    Examples
    --------
    >>> @cf.kernel
    ... class Fill:
    ...     out: cf.Out[cf.float32]
    ...     n: cf.int64
    ...     name = "fill"
    ...     source = 'extern "C" __global__ void fill(float* out, long long n) { if (threadIdx.x < n) out[threadIdx.x] = 1; }'
    >>> module = cf.Module(Fill.compile(arch="sm_90").cubin)
    >>> module.code_type, module.functions()
    ('cubin', ['fill'])
    >>> @cf.kernel
    ... class PrebuiltFill:
    ...     module = cf.Module(Fill.compile(arch="sm_90").cubin)   # or a path: "kernels.fatbin"
    ...     name = "fill"
    ...     out: cf.Out[cf.float32]
    ...     n: cf.int64
    """

    __module__ = "cuforge"

    def __init__(self, code: str | os.PathLike[str] | bytes, *, code_type: str | None = None,
                 symbols: Mapping[str, str] | None = None, name: str | None = None) -> None:  # fmt: skip
        self.path: str | None = None
        self._code: bytes | None = None
        if isinstance(code, (bytes, bytearray, memoryview)):
            self._code = bytes(code)
            guessed = sniff(self._code)
        elif isinstance(code, (str, os.PathLike)):
            self.path = os.path.abspath(os.fspath(code))
            if not os.path.isfile(self.path):
                raise DeclarationError(f"cuforge.Module: no file at {self.path}; give the path of a cubin, PTX, fatbin or LTO-IR")
            guessed = _SUFFIXES.get(os.path.splitext(self.path)[1].lower())
        else:
            raise DeclarationError(f"cuforge.Module: code expects a path or bytes, got {type(code).__name__}")
        self.code_type = code_type or guessed
        if self.code_type not in ("cubin", "ptx", "fatbin", "ltoir"):
            raise DeclarationError(
                f"cuforge.Module: cannot tell the code type of {name or self.path or 'the bytes'} (got {self.code_type!r}); "
                f"pass code_type='cubin', 'ptx', 'fatbin' or 'ltoir'"
            )
        self.name = name or (os.path.basename(self.path) if self.path else "<bytes>")
        self.symbols = dict(symbols or {})
        self._library: Any = None  # the CUlibrary, once loaded
        self._unloaded = False
        self._users: weakref.WeakSet[Any] = weakref.WeakSet()  # what loaded its kernels: forgotten at unload
        self._lock = threading.Lock()

    @property
    def code(self) -> bytes:
        """The image's bytes (read from the file on first use).

        Returns
        -------
        bytes
        """
        if self._code is None:
            assert self.path is not None
            with open(self.path, "rb") as fh:
                self._code = fh.read()
        return self._code

    @property
    def digest(self) -> str:
        """SHA-256 of the image (part of the cache key of a kernel that links it).

        Returns
        -------
        str
            Hexadecimal.
        """
        return hashlib.sha256(self.code).hexdigest()

    @property
    def loaded(self) -> bool:
        """False once [`unload`][cuforge.Module.unload] has run.

        Returns
        -------
        bool
        """
        return not self._unloaded

    def functions(self) -> list[str]:
        """The kernel entry points (lowered names). Cubin and PTX are read without a GPU;
        a fatbin is asked of the driver; LTO-IR is linked first, for the current GPU's arch
        (or ``CUFORGE_ARCH``).

        Returns
        -------
        list of str

        Raises
        ------
        NoDeviceError
            For a fatbin or LTO-IR where no GPU and no ``CUFORGE_ARCH`` says which image.
        """
        self._check_loaded(f"{self.name}.functions()")
        if self.code_type == "ptx":
            return [m.decode() for m in _PTX_ENTRY.findall(self.code)]
        if self.code_type == "cubin":
            return cubin_entries(self.code)
        if self.code_type == "ltoir":
            arch = _targets.default_arch(f"{self.name}.functions()", lambda: _device.current_device().cc)
            return cubin_entries(_link.link([self], arch, lto=True).code)
        try:
            _device.current_device()
        except NoDeviceError as exc:
            raise NoDeviceError(f"{self.name}.functions(): listing a fatbin's kernels asks the driver: {exc}") from None
        drv = _libcuda.bindings()
        library = self._loaded_library()
        count = _faults.check(drv.cuLibraryGetKernelCount(library), "cuLibraryGetKernelCount")
        kernels = _faults.check(drv.cuLibraryEnumerateKernels(count, library), "cuLibraryEnumerateKernels")
        return [_faults.check(drv.cuKernelGetName(k), "cuKernelGetName").decode() for k in kernels]

    def unload(self) -> None:
        """Free the module. Its kernels forget their loaded functions; a later launch of one
        raises [`LaunchError`][cuforge.errors.LaunchError] naming the kernel (it does not crash)."""
        with self._lock:
            self._unloaded = True
            for user in list(self._users):
                user.forget()
            self._users.clear()
            library, self._library = self._library, None
            if library is not None:
                _loading.unload_library(library)  # best effort: the kernels are already forgotten

    def _check_loaded(self, who: str) -> None:
        """Raise [`LaunchError`][cuforge.errors.LaunchError] if the module was unloaded: what
        a launch of one of its kernels checks first.

        Parameters
        ----------
        who : str
            What the error names as refused (a kernel's label, ``"Graph.launch()"``).
        """
        if self._unloaded:
            raise LaunchError(f"{who}: module {self.name} was unloaded (Module.unload()); load it again with cf.Module(...)")

    def _loaded_library(self) -> Any:
        """The module loaded as a CUlibrary (LTO-IR linked first, for the current device's arch)."""
        with self._lock:
            if self._library is None:
                code, code_type = self.code, str(self.code_type)
                if code_type == "ltoir":
                    arch = _targets.device_target(_device.current_device().cc).replace("compute_", "sm_")
                    linked = _link.link([self], arch, lto=True)
                    code, code_type = bytes(linked.code), "cubin"
                self._library = _loading.load_library(code, code_type)
            return self._library

    def _kernel_handle(self, name: str, *, who: str, user: Any) -> int:
        """The CUkernel handle of entry ``name``, for a cuforge kernel that binds it: ``user``
        (what loaded it) forgets it again, through its ``forget()``, when the module is
        unloaded. Called when the kernel loads.

        Parameters
        ----------
        name : str
            A lowered name, or a name expression in ``symbols``.
        who : str
            The kernel's label, for errors.
        user : object
            Held weakly; its ``forget()`` is called by `unload`.

        Returns
        -------
        int
            The CUkernel handle.
        """
        self._check_loaded(who)
        symbol = self.symbols.get(name, name)
        try:
            handle = _loading.library_kernel(self._loaded_library(), symbol)
        except Exception as exc:
            try:
                entries = ", ".join(self.functions()) or "none"
            except Exception:
                entries = "unknown"
            raise LaunchError(
                f"{who}: module {self.name} has no kernel {symbol!r} ({type(exc).__name__}: {exc}); its "
                f"kernels: {entries}; set name = one of them, or give symbols= to map a C++ name to its lowered name"
            ) from None
        self._users.add(user)
        return handle

    def __reduce__(self) -> tuple[Any, ...]:
        """A module travels as its path where it came from a file (workers usually share the
        file system), else as its bytes; never as a loaded library."""
        code = self.path if self.path is not None else self.code
        return (Module, (code,), {"code_type": self.code_type, "symbols": self.symbols, "name": self.name})

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.code_type, self.symbols, self.name = state["code_type"], state["symbols"], state["name"]

    def __repr__(self) -> str:
        state = "" if self.loaded else ", unloaded"
        return f"<cuforge.Module {self.name} ({self.code_type}{state})>"
