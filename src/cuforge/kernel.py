"""The ``@cf.kernel`` decorator: a Python class declares a kernel, this module reads it once.

Annotations become the kernel's parameters (resolved when the class is defined, so mistakes
fail there), the body or template becomes CUDA C++, and the result is a :class:`Kernel`:
compile it with :meth:`Kernel.compile`, launch it by calling it.
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
import keyword
import math
import re
import sys
import threading
from collections.abc import Callable
from typing import Any

from . import _cache, _compile, _config, _cuda, _disk, _fastpath, _launch, _render
from ._elf import cubin_resources
from ._signature import Param, Signature
from ._version import __version__
from .errors import ArgumentError, ArgumentTypeError, CuforgeError, DeclarationError, NoDeviceError, SignatureMismatchError
from .options import CompileOptions, check_arch, to_flags
from .types import ArrayType, DType, IntParam, TypeParam

__all__ = ["CompiledKernel", "Kernel", "kernel"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_CPP_RESERVED = frozenset(
    "alignas alignof asm auto bool break case catch char class const constexpr const_cast continue "
    "decltype default delete do double dynamic_cast else enum explicit export extern false float for "
    "friend goto if inline int long mutable namespace new noexcept nullptr operator private protected "
    "public register reinterpret_cast return short signed sizeof static static_assert static_cast "
    "struct switch template this thread_local throw true try typedef typeid typename union unsigned "
    "using virtual void volatile wchar_t while blockIdx blockDim threadIdx gridDim warpSize".split()
)
_CLASS_KEYS = frozenset(
    {"body", "template", "source", "name", "options", "block", "grid", "preamble", "template_dirs", "autotune"}
)


class CompiledKernel:
    """One kernel compiled for one arch: the binary, its symbol, source and log.

    Attributes
    ----------
    kernel : str
        The kernel's name.
    arch : str
        ``sm_XY`` for a cubin, ``compute_XY`` for PTX.
    code_type : str
        ``"cubin"`` or ``"ptx"``.
    code : bytes
        The binary image.
    lowered_name : str
        The symbol NVRTC reported for the kernel through ``nvrtcGetLoweredName``.
    name_expression : str
        The C++ expression that was looked up.
    source : str
        The rendered CUDA C++ that was compiled.
    log : str
        NVRTC's log (warnings).
    flags : tuple of str
        The NVRTC flags used.
    compile_seconds : float
        Time NVRTC took (when it was compiled, for one read from the disk cache).
    from_cache : bool
        True when read from the persistent cache rather than compiled in this process.
    """

    __module__ = "cuforge"

    def __init__(self, kernel: Kernel, arch: str, result: _compile.CompileResult, expr: str, source: str):
        self.kernel = kernel.label
        self._result = result  # shared by every kernel compiled in the same NVRTC program
        self.arch = arch
        self.code_type = result.code_type
        self.code = result.code
        self.name_expression = expr
        self.lowered_name = result.lowered[expr]
        self.source = source
        self.log = result.log
        self.flags = result.flags
        self.compile_seconds = result.seconds
        self.from_cache = result.from_disk
        self._loaded: dict[int, Any] = {}
        self._lock = threading.Lock()

    @property
    def cubin(self) -> bytes:
        """The ELF cubin (raises if this kernel was compiled to PTX)."""
        if self.code_type != "cubin":
            raise CuforgeError(f"{self.kernel} was compiled to PTX for {self.arch}; use .ptx, or compile with arch='sm_XY'")
        return self.code

    @property
    def ptx(self) -> str:
        """The PTX text (raises if this kernel was compiled to a cubin)."""
        if self.code_type != "ptx":
            raise CuforgeError(
                f"{self.kernel} was compiled to a cubin for {self.arch}; use .cubin, or compile with arch='compute_XY'"
            )
        return self.code.decode()

    def resources(self) -> dict[str, int]:
        """Registers, stack and shared memory per thread/block read from the cubin (no GPU needed)."""
        if self.code_type != "cubin":
            return {}
        return cubin_resources(self.code, self.lowered_name)

    @property
    def registers(self) -> int | None:
        """Registers per thread, from the cubin's metadata (None for PTX)."""
        return self.resources().get("registers")

    def function(self, device: int) -> Any:
        """The cuda.core Kernel loaded on ``device`` (loaded once per device)."""
        fn = self._loaded.get(device)
        if fn is None:
            with self._lock:
                fn = self._loaded.get(device)
                if fn is None:
                    module = _module(self._result, device)
                    fn = self._loaded[device] = _cuda.get_kernel(module, self.lowered_name)
        return fn

    def _repr_html_(self) -> str:
        from ._display import compiled_html

        return compiled_html(self)

    def __repr__(self) -> str:
        return (
            f"<cuforge.CompiledKernel {self.kernel} {self.code_type} for {self.arch}, "
            f"{len(self.code)} bytes, symbol {self.lowered_name}>"
        )


def _decline(*args: Any) -> bool:
    """The fast launch function of a kernel that has none: always the general path."""
    return False


_modules: dict[tuple[int, int], tuple[_compile.CompileResult, Any]] = {}
_modules_lock = threading.Lock()


def _module(result: _compile.CompileResult, device: int) -> Any:
    """The loaded module of one NVRTC program on ``device``: a batch compiled together is
    loaded once, however many of its kernels are used."""
    key = (id(result), device)
    with _modules_lock:
        found = _modules.get(key)
        if found is None:
            found = _modules[key] = (result, _cuda.load_module(result.code, result.code_type))
    return found[1]


class _Decl:
    """A kernel class, read once: shared by a plain kernel and every instantiation of a family."""

    def __init__(self, cls: type, *, name: str | None = None, options: CompileOptions | None = None):
        ns = dict(vars(cls))
        self.cls = cls
        self.label = cls.__qualname__
        self.qualname = f"{cls.__module__}.{cls.__qualname__}"
        label = self.label
        self.tparams: tuple[TypeParam | IntParam, ...] = tuple(v for v in ns.values() if isinstance(v, (TypeParam, IntParam)))
        _check_class_keys(label, ns)
        # C++ naming rules bind generated code only: a source= kernel's names are the user's own.
        self.params = _read_params(cls, label, self.tparams, generated=ns.get("source") is None)
        self.body = self.preamble = None
        self.template: str | None = None
        self.source: str | None = None
        kinds = [k for k in ("body", "template", "source") if ns.get(k) is not None]
        if len(kinds) != 1:
            raise DeclarationError(
                f"{label}: a kernel class needs exactly one of body (the kernel body), template "
                f"(a .cu.j2 file name) or source (full C++ with name=...); found {kinds or 'none'}"
            )
        self.kind = kind = kinds[0]
        for key in (kind, "preamble"):
            if key in ns and not isinstance(ns[key], str):
                raise DeclarationError(f"{label}: {key} must be a string, got {type(ns[key]).__name__}")
        self.name = name or ns.get("name") or cls.__name__
        if not isinstance(self.name, str) or (not _IDENT.match(self.name) and kind != "source"):
            raise DeclarationError(f"{label}: name must be a C++ identifier, got {self.name!r}")
        if kind == "body":
            self.body = _render.Snippet.parse(self.name, "body", ns["body"])
            if ns.get("preamble"):
                self.preamble = _render.Snippet.parse(self.name, "preamble", ns["preamble"])
        elif kind == "template":
            if self.tparams:
                raise DeclarationError(
                    f"{label}: a family (typeparam/intparam) needs body= or source=; a whole-kernel template "
                    f"cannot put several instantiations in one program"
                )
            self.template = ns["template"]
        else:
            if "name" not in ns:
                raise DeclarationError(
                    f"{label}: a source= kernel needs name = '<the __global__ function, or a name "
                    f"expression such as saxpy<float>>'"
                )
            if self.tparams and not _IDENT.match(self.name):
                raise DeclarationError(
                    f"{label}: in a source= family, name is the template's name ({self.name!r} is not an identifier); "
                    f"cuforge appends <{', '.join(t.name for t in self.tparams)}>"
                )
            self.source = ns["source"]
        for t in self.tparams:
            if t.name in {p[0] for p in self.params} or t.name in _CPP_RESERVED or not _IDENT.match(t.name):
                raise DeclarationError(f"{label}: template parameter {t.name!r} clashes with a parameter or C++ name")
        dirs = ns.get("template_dirs", ())
        dirs = (dirs,) if isinstance(dirs, str) else tuple(str(d) for d in dirs)
        self.template_dirs = _render.search_dirs(dirs)
        opts = options if options is not None else ns.get("options", CompileOptions())
        if not isinstance(opts, CompileOptions):
            raise DeclarationError(f"{label}: options must be a cuforge.CompileOptions, got {opts!r}")
        self.options = opts
        self.block = ns.get("block", 256)
        ints = {t.name: t for t in self.tparams if isinstance(t, IntParam)}
        entries = self.block if isinstance(self.block, (tuple, list)) else (self.block,)
        for entry in entries:
            if isinstance(entry, str) and entry not in ints:
                raise DeclarationError(
                    f"{label}: block names {entry!r}, which is not an intparam of this class "
                    f"(intparams: {', '.join(ints) or 'none'})"
                )
        for combo in itertools.product(*(ints[e].values if isinstance(e, str) else (e,) for e in entries)):
            try:
                _launch.dims(combo, "block", label, _launch.BLOCK_LIMIT)
            except ArgumentError as exc:
                raise DeclarationError(str(exc)) from None
        self.grid = ns.get("grid")
        self.autotune = ns.get("autotune")
        self.headers = tuple(
            sorted(
                {h for _, ann in self.params for d in _dtypes_of(ann) if (h := d.header)}
                | {v.header for t in self.tparams if isinstance(t, TypeParam) for v in t.values if v.header}
            )
        )


def _dtypes_of(ann: Any) -> tuple[DType, ...]:
    inner = ann.dtype if isinstance(ann, ArrayType) else ann
    return inner.values if isinstance(inner, TypeParam) else (inner,)


def _substitute(ann: Any, values: dict[str, Any]) -> Any:
    if isinstance(ann, TypeParam):
        return values[ann.name]
    if isinstance(ann, ArrayType) and isinstance(ann.dtype, TypeParam):
        return ArrayType(values[ann.dtype.name], ann.ndim, ann.intent)
    return ann


_KernelBase: Any = _cuda._claunch.KernelBase if _cuda._claunch is not None else object


class Kernel(_KernelBase):
    """A declared kernel: call it to launch, ``.compile()`` to build without launching.

    Created by :func:`kernel`, or as one instantiation of a family (``Axpy[cf.float32, 256]``).

    ``kernel(*args, grid=None, block=None, shared_mem=0, stream=None, **kwargs)`` checks the
    arguments against the declared signature, then launches asynchronously.

    Parameters
    ----------
    *args, **kwargs
        The kernel's arguments, by position or by parameter name.
    grid, block : int or tuple of ints, optional
        Override the launch rule (default: a 1-D grid covering the largest array, or the
        class's ``grid``/``block``).
    shared_mem : int
        Dynamic shared memory in bytes.
    stream : stream-like, optional
        A cuda.core, CuPy or PyTorch stream, anything with ``__cuda_stream__``, or an int
        handle. Default: the current CuPy/PyTorch stream when the arrays come from them,
        else the legacy default stream.
    """

    __module__ = "cuforge"

    def __init__(self, decl: _Decl, template_args: tuple[Any, ...] = ()):
        self._decl = decl
        cls = decl.cls
        self.__name__ = cls.__name__
        self.__qualname__ = cls.__qualname__
        self.__doc__ = cls.__doc__
        self.__wrapped__ = cls
        self.qualname = decl.qualname
        self.name = decl.name
        self.options = decl.options
        self.template_args: dict[str, Any] = {t.name: v for t, v in zip(decl.tparams, template_args)}
        spelled = ", ".join(t.spell(v) for t, v in zip(decl.tparams, template_args))
        self.name_expression = f"{decl.name}<{spelled}>" if decl.tparams else decl.name
        self.label = self.name_expression if decl.tparams else decl.name
        self.signature = Signature(
            tuple(Param(n, i, _substitute(ann, self.template_args)) for i, (n, ann) in enumerate(decl.params))
        )
        raw_block = decl.block if isinstance(decl.block, (tuple, list)) else (decl.block,)
        resolved = tuple(self.template_args[e] if isinstance(e, str) else e for e in raw_block)
        self._block = _launch.dims(resolved, "block", self.label, _launch.BLOCK_LIMIT)
        self._grid_rule = _grid_rule(self.label, decl.grid, self.signature)
        params = self.signature.params
        self._checks = tuple(
            _launch.array_checker(self.label, p) if p.is_array else _launch.scalar_checker(self.label, p) for p in params
        )
        self._writes = frozenset(p.index for p in params if p.is_array and p.type.writes)
        self._packer = _launch.Packer(self.signature)
        self._nparams = len(params)
        self._pieces_cache: tuple[str, str, dict[str, str]] | None = None
        self._by_device: dict[int, tuple[int, CompiledKernel]] = {}
        self._compiled: dict[tuple[str, tuple[str, ...]], CompiledKernel] = {}  # for display
        self._fast = _fastpath.build(self) or _decline

    # ------------------------------------------------------------ rendering and compiling

    def render(self) -> str:
        """The complete CUDA C++ translation unit for this kernel."""
        prelude, unit, _ = self._pieces()
        return prelude + unit

    @property
    def source(self) -> str:
        """The rendered CUDA C++ (the same as :meth:`render`)."""
        return self.render()

    @property
    def lowered_name(self) -> str:
        """The mangled symbol from the latest compile (NVRTC's ``nvrtcGetLoweredName``)."""
        if not self._compiled:
            raise CuforgeError(f"{self.label} is not compiled yet; call .compile(arch='sm_90') or launch it first")
        return next(reversed(self._compiled.values())).lowered_name

    def _context(self) -> dict[str, Any]:
        return {"name": self.name, "params": {p.name: p for p in self.signature.params}, **self.template_args}

    def _pieces(self) -> tuple[str, str, dict[str, str]]:
        """(prelude, unit, #line sources): a program holds one prelude and the units of the
        kernels compiled in it; kernels of one family share their prelude."""
        if self._pieces_cache is not None:
            return self._pieces_cache
        decl, sig = self._decl, self.signature
        line_sources: dict[str, str] = {}
        if decl.source is not None:
            prelude, unit = decl.source, ""
        elif decl.template is not None:
            ctx = {
                **self._context(),
                "params_cpp": sig.cpp(),
                "signature": f"__global__ void {self.name}({sig.cpp()})",
                "includes": _render.includes(decl.headers),
            }
            prelude, unit = "", _render.render_file(self.name, decl.template, decl.template_dirs, ctx)
        else:
            assert decl.body is not None
            body = decl.body.render(self._context())
            body_file = f"{self.label}.body"
            line_sources[body_file] = body
            preamble = ""
            if decl.preamble is not None:
                preamble = decl.preamble.render({"name": self.name, "params": self._context()["params"]})
                line_sources[decl.preamble.line_file] = preamble
            generic = Signature(tuple(Param(n, i, ann) for i, (n, ann) in enumerate(decl.params)))
            prelude, unit = _render.assemble(
                name=self.name,
                template_params=", ".join(f"{'typename' if t.kind == 'type' else 'int'} {t.name}" for t in decl.tparams),
                generic_params_cpp=generic.cpp(),
                params_cpp=sig.cpp(),
                specialization=", ".join(t.spell(v) for t, v in zip(decl.tparams, self.template_args.values())),
                aliases="".join(
                    f"using {t.name} = {t.spell(v)}; " if t.kind == "type" else f"constexpr int {t.name} = {v}; "
                    for t, v in zip(decl.tparams, self.template_args.values())
                ),
                headers=decl.headers,
                body=body,
                body_file=body_file,
                preamble=preamble,
                preamble_file=decl.preamble.line_file if decl.preamble else "",
                comment=f"generated by cuforge {__version__} for {self.qualname}",
            )
        self._pieces_cache = (prelude, unit, line_sources)
        return self._pieces_cache

    def _headers(self) -> dict[str, str]:
        """Headers included from the kernel's template directories, passed to NVRTC in memory."""
        prelude, unit, _ = self._pieces()
        return _cache.template_headers(prelude + unit, (*self._decl.template_dirs, _render.PACKAGE_TEMPLATES))

    def _key(self, flags: tuple[str, ...], options: CompileOptions) -> str:
        prelude, unit, _ = self._pieces()
        return _cache.cache_key(
            source=prelude + unit,
            name_expressions=(self.name_expression,),
            flags=flags,
            headers=self._headers(),
            nvrtc=_compile.nvrtc_identity(),
            cuforge_version=__version__,
            include_digest=_cache.include_dirs_digest(options.include_dirs),
            cuda_headers=_compile.cuda_headers_version(_compile.cuda_include_dir()),
        )

    def compile(self, arch: str | None = None, *, options: CompileOptions | None = None) -> CompiledKernel:
        """Compile for ``arch`` (``"sm_90"``: cubin, ``"compute_90"``: PTX).

        Without ``arch`` the arch of the current device is used (a cubin if NVRTC knows it,
        else PTX). Needs no GPU when ``arch`` is given. Results are cached per process.
        """
        return compile_together([self], arch, options, who=f"{self.label}.compile()")[0]

    def _function(self, device: _cuda.DeviceInfo) -> Any:
        found = self._by_device.get(device.id)
        if found is None:
            ck = self.compile(_device_target(device.cc))
            fn = ck.function(device.id)
            if self._decl.body is None:
                self._check_compiled_params(fn)
            found = self._by_device[device.id] = (int(fn.handle), ck)  # the address _cuda.launch takes
        return found[0]

    def _check_compiled_params(self, fn: Any) -> None:
        """A source= or template kernel's compiled parameters must match the annotations."""
        info = fn.arguments_info
        params = self.signature.params
        for i, (_, size) in enumerate(info):
            if i >= len(params):
                raise SignatureMismatchError(
                    f"{self.label}: the compiled kernel has {len(info)} parameters but {len(params)} are "
                    f"annotated; parameter {i} ({size} bytes) has no annotation; add it to the class"
                )
            if size != params[i].size:
                raise SignatureMismatchError(
                    f"{self.label}: parameter {i} '{params[i].name}' is annotated {params[i].type_name} "
                    f"({params[i].size} bytes), but the compiled kernel's parameter {i} takes {size} bytes; "
                    f"fix the annotation or the C++ signature"
                )
        if len(info) < len(params):
            missing = params[len(info)]
            raise SignatureMismatchError(
                f"{self.label}: parameter '{missing.name}' is annotated but the compiled kernel has only "
                f"{len(info)} parameters; remove the annotation or add the parameter in C++"
            )

    # ------------------------------------------------------------ launching

    def __call__(self, *args: Any, grid: Any = None, block: Any = None, shared_mem: int = 0,
                 stream: Any = None, **kwargs: Any) -> None:  # fmt: skip
        """Check the arguments, then launch asynchronously (see the class docstring). Where the
        C extension is built, ``_claunch.KernelBase`` makes this call instead."""
        if not kwargs and self._fast(args, grid, block, shared_mem, stream):
            return  # the generated function checked and launched (see _fastpath)
        self._launch_general(args, kwargs, grid, block, shared_mem, stream)

    def _launch_general(self, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any, block: Any,
                        shared_mem: Any, stream: Any) -> None:  # fmt: skip
        """Every launch the fast path declines: bind, check (raising on bad input), launch."""
        r = self._resolve(args, kwargs, grid, block, shared_mem, stream)
        if r is None:
            return  # nothing to do: the sizing array is empty
        handle, args, values, infos, grd, blk, sh, staged = r
        if staged:
            self._launch_staged(handle, args, values, infos, grd, blk, shared_mem, sh)
            return
        _cuda.note_launch(self.label, grd, blk, shared_mem)  # named if a later CUDA call reports a fault
        _launch.launch_raw(handle, grd, blk, shared_mem, sh, self._packer.pack(values), self.label)

    def prepare(self, *args: Any, grid: Any = None, block: Any = None, shared_mem: int = 0,
                stream: Any = None, **kwargs: Any) -> _launch.PreparedLaunch:  # fmt: skip
        """Check and pack a launch once; calling the result launches it again with no per-call
        work but the driver call (the fastest path, for loops that repeat one launch).

        The arrays are the same memory on every launch (their contents may change); the
        scalars, grid, block and stream are fixed: prepare again to change them. Host NumPy
        arrays are not accepted (they would need copies on every launch).
        """
        r = self._resolve(args, kwargs, grid, block, shared_mem, stream)
        if r is None:
            raise ArgumentError(f"{self.label}.prepare(): the arrays are empty, so there is nothing to launch")
        handle, args, values, infos, grd, blk, sh, staged = r
        if staged:
            names = ", ".join(repr(self.signature.params[i].name) for i, info in infos if info[6] == "numpy")
            raise ArgumentTypeError(
                f"{self.label}.prepare(): argument(s) {names} are host NumPy arrays; pass device arrays "
                f"(cf.to_device, CuPy, PyTorch) to prepare a launch"
            )
        return _launch.PreparedLaunch(self.label, handle, self._packer, values, grd, blk, shared_mem, sh, keep=args)

    def _resolve(self, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any, block: Any, shared_mem: Any, stream: Any) -> Any:
        """Bind and check the arguments (no CUDA call), then find the device function, the
        stream and whether host arrays need staging. None when there is nothing to launch."""
        if kwargs or len(args) != self._nparams:
            args = self._bind(args, kwargs)
        infos: list[Any] = []  # (parameter index, ArrayInfo) of each array, filled by the checks
        values = [check(a, infos) for check, a in zip(self._checks, args)]
        blk = self._block if block is None else _launch.dims(block, "block", self.label, _launch.BLOCK_LIMIT)
        if grid is None:
            grd = self._grid_rule(args, infos, blk)
            if grd is None:
                return None
        else:
            grd = _launch.dims(grid, "grid", self.label, _launch.GRID_LIMIT)
        if shared_mem.__class__ is not int or shared_mem < 0:
            raise ArgumentError(f"{self.label}: shared_mem expects a non-negative int (bytes), got {shared_mem!r}")
        sh = None if stream is None else _launch.stream_handle(stream, self.label)
        # Checks done: from here on CUDA is used.
        device = _cuda.current_device()
        found = self._by_device.get(device.id)
        handle = found[0] if found is not None else self._function(device)
        staged = misplaced = False
        for _, info in infos:
            if info[4] != device.id:
                if info[6] == "numpy":
                    staged = True
                else:
                    misplaced = True
        if misplaced:  # another device, or memory of unknown origin: look closer, raise if wrong
            _launch.check_devices(self.label, self.signature.params, infos, device.id)
        if sh is None:
            sh = _launch.default_stream(infos, device.id) if infos else 0
        return handle, args, values, infos, grd, blk, sh, staged

    def _launch_staged(self, handle: Any, args: Any, values: list[Any], infos: list[Any],
                       grid: Any, block: Any, shared_mem: int, stream: int) -> None:  # fmt: skip
        """Copy host NumPy arrays in, launch, copy written ones back, and wait."""
        driver = _cuda._driver()
        staged: list[tuple[int, int, int]] = []
        try:
            for i in [i for i, info in infos if info[6] == "numpy"]:
                arr = args[i]
                ptr = _cuda.check(driver.cuMemAlloc(max(arr.nbytes, 1)), "cuMemAlloc")
                staged.append((i, int(ptr), arr.nbytes))
                if arr.nbytes:
                    _cuda.check(driver.cuMemcpyHtoDAsync(ptr, arr.ctypes.data, arr.nbytes, stream), "cuMemcpyHtoDAsync")
                values[i] = int(ptr)
            _cuda.note_launch(self.label, grid, block, shared_mem)
            _launch.launch_raw(handle, grid, block, shared_mem, stream, self._packer.pack(values), self.label)
            for i, ptr, nbytes in staged:
                if i in self._writes and nbytes:
                    _cuda.check(driver.cuMemcpyDtoHAsync(args[i].ctypes.data, ptr, nbytes, stream), "cuMemcpyDtoHAsync")
            _cuda.check(driver.cuStreamSynchronize(stream), "cuStreamSynchronize")
        finally:
            for _, ptr, _ in staged:
                driver.cuMemFree(ptr)

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        names = self.signature.names
        if len(args) > len(names):
            raise ArgumentError(f"{self.label}: takes {len(names)} arguments ({', '.join(names)}), got {len(args)} positional")
        bound = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in names:
                raise ArgumentError(
                    f"{self.label}: unexpected argument {key!r}; the parameters are {', '.join(names)}"
                    f" (launch options: grid, block, shared_mem, stream)"
                )
            if key in bound:
                raise ArgumentError(f"{self.label}: argument '{key}' given twice (by position and by name)")
            bound[key] = value
        missing = [n for n in names if n not in bound]
        if missing:
            raise ArgumentError(
                f"{self.label}: missing argument{'s' if len(missing) > 1 else ''} "
                f"{', '.join(repr(m) for m in missing)}; the signature is {self.signature.describe(self.label)}"
            )
        return tuple(bound[n] for n in names)

    def __repr__(self) -> str:
        return f"<cuforge.Kernel {self.signature.describe(self.label)}>"

    def _repr_html_(self) -> str:
        from ._display import kernel_html

        return kernel_html(self)


if _cuda._claunch is not None:
    # KernelBase makes the same call in C (see _claunch.c): without this Python method, calls
    # reach it with no Python frame or method lookup between the call and the checks.
    del Kernel.__call__


def _device_target(cc: int) -> str:
    """The arch for a device, without loading NVRTC when the disk cache already knows which
    archs this NVRTC supports (a warm start then makes no NVRTC call at all)."""
    disk = _disk.current()
    name = f"nvrtc-archs:{_compile.nvrtc_identity()}"
    record = disk.get_json(name) if disk is not None else None
    if record is not None and isinstance(record.get("archs"), list):
        return _compile.target_for(cc, tuple(record["archs"]))
    archs = _compile.supported_archs()
    if disk is not None:
        disk.put_json(name, {"archs": list(archs)})
    return _compile.target_for(cc, archs)


def compile_together(
    kernels: list[Kernel], arch: str | None, options: CompileOptions | None, *, who: str
) -> list[CompiledKernel]:
    """Compile kernels of one declaration in ONE NVRTC program (one prelude, one unit each,
    one name expression each); kernels already in the memory cache are not compiled again."""
    first = kernels[0]
    if arch is None:
        try:
            arch = _device_target(_cuda.current_device().cc)
        except NoDeviceError as exc:
            arch = str(_config.get("arch"))
            if not arch:
                raise NoDeviceError(f"{who}: {exc}; pass arch='sm_90' (or set CUFORGE_ARCH) to compile without a GPU") from None
    check_arch(arch)
    opts = first.options if options is None else options
    if not isinstance(opts, CompileOptions):
        raise DeclarationError(f"{who}: options must be a cuforge.CompileOptions, got {opts!r}")
    include = _compile.cuda_include_dir()
    flags = to_flags(opts, arch, (include,) if include else ())
    keys = [k._key(flags, opts) for k in kernels]
    found = [_cache.memory.get(key) for key in keys]
    if any(f is None for f in found):
        missing = [key for key, f in zip(keys, found) if f is None]
        with _cache.memory.gates(missing):  # one compile per key in this process
            disk = _disk.current()
            if not _from_disk(kernels, keys, arch, disk):
                lock = disk.locks(missing, _config.cache_lock_seconds()) if disk else contextlib.nullcontext()
                with lock:  # one compile per key across processes
                    if not _from_disk(kernels, keys, arch, disk, recheck=True):
                        _compile_missing(kernels, keys, arch, flags, disk)
    results = [f if f is not None else _cache.memory.peek(key) for f, key in zip(found, keys)]
    for k, ck in zip(kernels, results):
        k._compiled[ck.arch, ck.flags] = ck
    return results


def _from_disk(kernels: list[Kernel], keys: list[str], arch: str, disk: _disk.DiskCache | None, *, recheck: bool = False) -> bool:
    """Fill the memory cache from disk where it can; True when nothing is left to compile."""
    done = True
    for k, key in zip(kernels, keys):
        if _cache.memory.peek(key) is not None:
            continue
        stored = disk.load(key, recheck=recheck) if disk is not None else None
        if stored is None or k.name_expression not in stored.lowered:
            done = False
            continue
        _cache.memory.put(key, CompiledKernel(k, arch, stored, k.name_expression, k.render()))
    return done


def _compile_missing(
    kernels: list[Kernel], keys: list[str], arch: str, flags: tuple[str, ...], disk: _disk.DiskCache | None
) -> None:
    pending = {key: k for k, key in zip(kernels, keys) if _cache.memory.peek(key) is None}
    todo = list(pending.values())
    if not todo:
        return
    first = todo[0]
    prelude = first._pieces()[0]
    units, line_sources = [], {}
    for k in todo:
        _, unit, lines = k._pieces()
        units.append(unit)
        line_sources.update(lines)
    headers: dict[str, str] = {}
    for k in todo:
        headers.update(k._headers())
    result = _compile.compile_program(
        prelude + "".join(units),
        headers=headers,
        program_name=f"{first.name}.cu",
        name_expressions=tuple(dict.fromkeys(k.name_expression for k in todo)),
        flags=flags,
        kernel=first.label if len(todo) == 1 else f"{first.name} ({len(todo)} instantiations)",
        line_sources=line_sources,
    )
    for key, k in pending.items():
        _cache.memory.put(key, CompiledKernel(k, arch, result, k.name_expression, prelude + k._pieces()[1]))
        if disk is not None:
            disk.store(key, result)


def _check_class_keys(label: str, ns: dict[str, Any]) -> None:
    annotated = set(ns.get("__annotations__", {}))
    for key, value in ns.items():
        if key.startswith("__") or key in _CLASS_KEYS or key in annotated or isinstance(value, (TypeParam, IntParam)):
            continue
        if callable(value) or isinstance(value, (staticmethod, classmethod)):
            continue  # helpers (and the grid function) may live on the class
        raise DeclarationError(
            f"{label}: unknown class attribute {key!r}; a kernel class takes annotations for its "
            f"parameters and {', '.join(sorted(_CLASS_KEYS))}"
        )


def _read_params(cls: type, label: str, tparams: tuple[Any, ...], *, generated: bool = True) -> tuple[tuple[str, Any], ...]:
    """(name, annotation) per parameter, in order; annotations may name the class's type parameters."""
    try:
        annotations = inspect.get_annotations(cls, eval_str=True)
    except Exception as exc:
        raise DeclarationError(f"{label}: cannot evaluate the annotations: {exc}") from None
    module_globals = getattr(sys.modules.get(cls.__module__), "__dict__", {})
    params = []
    for name, ann in annotations.items():
        if isinstance(ann, str):  # a quoted annotation under `from __future__ import annotations`
            try:
                ann = eval(ann, dict(module_globals), dict(vars(cls)))
            except Exception as exc:
                raise DeclarationError(f"{label}: cannot evaluate the annotation of '{name}': {exc}") from None
        if not _IDENT.match(name) or keyword.iskeyword(name) or (generated and (name in _CPP_RESERVED or name.startswith("_"))):
            raise DeclarationError(
                f"{label}: parameter name {name!r} cannot be used in C++ (a reserved word, CUDA built-in, "
                f"or leading underscore); rename it"
            )
        inner = ann.dtype if isinstance(ann, ArrayType) else ann
        if not isinstance(ann, (DType, ArrayType, TypeParam)):
            raise DeclarationError(
                f"{label}: parameter '{name}' has annotation {ann!r}; expected a cuforge type such as "
                f"cf.float32, cf.In[cf.float32], cf.Array[cf.float32] or cf.Out[cf.float32]"
            )
        if isinstance(inner, TypeParam) and inner not in tparams:
            raise DeclarationError(f"{label}: parameter '{name}' uses a type parameter that is not declared on this class")
        params.append((name, ann))
    return tuple(params)


def _grid_rule(label: str, rule: Any, sig: Signature) -> Callable[..., Any]:
    """The function computing a launch's grid from its arguments and block."""
    names = sig.names
    arrays = [p.index for p in sig.params if p.is_array]

    def finish(count: int, block: tuple[int, int, int]) -> Any:
        if count <= 0:
            return None
        return _launch.dims(math.ceil(count / block[0]), "grid", label, _launch.GRID_LIMIT)

    if rule is None:
        if not arrays:
            raise DeclarationError(
                f"{label}: with no array parameter there is nothing to size the grid by; set grid = "
                f"'<a size parameter>' or a function on the class, or pass grid= at launch"
            )

        prod = math.prod
        limit = _launch.GRID_LIMIT[0]

        def default(args: Any, infos: list[Any], block: Any) -> Any:
            count = 0
            for _, info in infos:
                size = prod(info[2])
                if size > count:
                    count = size
            if count <= 0:
                return None
            blocks = (count + block[0] - 1) // block[0]
            if blocks > limit:
                return finish(count, block)  # raises with the limit in the message
            return (blocks, 1, 1)

        return default
    if isinstance(rule, str):
        if rule not in names:
            raise DeclarationError(f"{label}: grid = {rule!r} names no parameter; the parameters are {', '.join(names)}")
        i = names.index(rule)
        p = sig.params[i]
        if not p.is_array and not p.dtype.is_integer:
            raise DeclarationError(f"{label}: grid = {rule!r} must name an integer or array parameter, not {p.type!r}")

        def by_param(args: Any, infos: list[Any], block: Any) -> Any:
            if p.is_array:
                return finish(math.prod(next(info for j, info in infos if j == i)[2]), block)
            return finish(int(args[i]), block)

        return by_param
    fn = rule.__func__ if isinstance(rule, staticmethod) else rule
    if not callable(fn):
        raise DeclarationError(f"{label}: grid must be a parameter name or a function, got {rule!r}")
    wanted = list(inspect.signature(fn).parameters)
    unknown = [w for w in wanted if w not in names and w != "block"]
    if unknown:
        raise DeclarationError(
            f"{label}: the grid function asks for {', '.join(unknown)}, which are not parameters ({', '.join(names)}) or 'block'"
        )
    picks = [(w, names.index(w) if w in names else -1) for w in wanted]

    def by_function(args: Any, infos: list[Any], block: Any) -> Any:
        grid = fn(**{w: (block if i < 0 else args[i]) for w, i in picks})
        return _launch.dims(grid, "grid (from the class's grid function)", label, _launch.GRID_LIMIT)

    return by_function


def kernel(cls: type | None = None, *, name: str | None = None, options: CompileOptions | None = None) -> Any:
    """Declare a CUDA kernel from a class (use as ``@cf.kernel`` or ``@cf.kernel(options=...)``).

    The class's annotations are the kernel's parameters, in order: scalar dtypes
    (``cf.float32``) and arrays (``cf.In[...]``, ``cf.Array[...]``, ``cf.Out[...]``).
    Exactly one of ``body`` (a Jinja template of the kernel body; the ``__global__``
    signature is generated), ``template`` (a whole-kernel ``.cu.j2`` file) or ``source``
    (complete C++, with ``name``) gives the code. Optional: ``options``
    (:class:`CompileOptions`), ``block`` (default 256), ``grid`` (a size parameter's name,
    or a function of parameters by name and ``block``), ``preamble`` (device code placed
    before the kernel), ``template_dirs``.

    A class with ``cf.typeparam``/``cf.intparam`` attributes declares a family instead
    (see :class:`Family`). Every declaration is listed in ``cf.registry``.

    Returns
    -------
    Kernel or Family
    """
    if cls is None:
        return lambda c: kernel(c, name=name, options=options)
    if not isinstance(cls, type):
        raise DeclarationError(f"@cuforge.kernel decorates a class, got {cls!r}")
    from .family import Family
    from .registry import registry

    decl = _Decl(cls, name=name, options=options)
    made: Kernel | Family = Family(decl) if decl.tparams else Kernel(decl)
    if decl.autotune is not None and not decl.tparams:
        raise DeclarationError(f"{decl.label}: autotune needs a family (cf.intparam attributes to choose between)")
    registry._add(decl.qualname, made)
    return made
