"""The ``@cf.kernel`` decorator: a Python class declares a kernel, this module reads it once.

Annotations become the kernel's parameters (resolved when the class is defined, so mistakes
fail there), the body or template becomes CUDA C++, and the result is a :class:`Kernel`:
compile it with :meth:`Kernel.compile`, launch it by calling it.
"""

from __future__ import annotations

import inspect
import keyword
import math
import re
import sys
import threading
from collections.abc import Callable
from typing import Any

from . import _cache, _compile, _cuda, _launch, _render
from ._elf import cubin_resources
from ._signature import Param, Signature
from ._version import __version__
from .errors import ArgumentError, CuforgeError, DeclarationError, SignatureMismatchError
from .options import CompileOptions, check_arch, to_flags
from .types import ArrayType, DType

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
_CLASS_KEYS = frozenset({"body", "template", "source", "name", "options", "block", "grid", "preamble", "template_dirs"})


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
        Time NVRTC took.
    """

    __module__ = "cuforge"

    def __init__(self, kernel: Kernel, arch: str, result: _compile.CompileResult, expr: str, source: str):
        self.kernel = kernel.name
        self.arch = arch
        self.code_type = result.code_type
        self.code = result.code
        self.name_expression = expr
        self.lowered_name = result.lowered[expr]
        self.source = source
        self.log = result.log
        self.flags = result.flags
        self.compile_seconds = result.seconds
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
                    fn = self._loaded[device] = _cuda.load(self.code, self.code_type, self.lowered_name)
        return fn

    def __repr__(self) -> str:
        return (
            f"<cuforge.CompiledKernel {self.kernel} {self.code_type} for {self.arch}, "
            f"{len(self.code)} bytes, symbol {self.lowered_name}>"
        )


class Kernel:
    """A declared kernel: call it to launch, ``.compile()`` to build without launching.

    Created by :func:`kernel`; not instantiated directly.
    """

    __module__ = "cuforge"

    def __init__(self, cls: type, *, name: str | None = None, options: CompileOptions | None = None):
        ns = dict(vars(cls))
        self.__name__ = cls.__name__
        self.__qualname__ = cls.__qualname__
        self.__doc__ = cls.__doc__
        self.__wrapped__ = cls
        self.qualname = f"{cls.__module__}.{cls.__qualname__}"
        label = cls.__qualname__
        _check_class_keys(label, ns)
        self.signature = Signature(_read_params(cls, label))
        self._body = self._preamble = self._template = self._source = None
        kinds = [k for k in ("body", "template", "source") if ns.get(k) is not None]
        if len(kinds) != 1:
            raise DeclarationError(
                f"{label}: a kernel class needs exactly one of body (the kernel body), template "
                f"(a .cu.j2 file name) or source (full C++ with name=...); found {kinds or 'none'}"
            )
        kind = kinds[0]
        for key in (kind, "preamble"):
            if key in ns and not isinstance(ns[key], str):
                raise DeclarationError(f"{label}: {key} must be a string, got {type(ns[key]).__name__}")
        self.name = name or ns.get("name") or cls.__name__
        if not isinstance(self.name, str) or (kind != "source" and not _IDENT.match(self.name)):
            raise DeclarationError(f"{label}: name must be a C++ identifier, got {self.name!r}")
        if kind == "body":
            self._body = _render.Snippet.parse(self.name, "body", ns["body"])
            if ns.get("preamble"):
                self._preamble = _render.Snippet.parse(self.name, "preamble", ns["preamble"])
        elif kind == "template":
            self._template = ns["template"]
        else:
            if "name" not in ns:
                raise DeclarationError(
                    f"{label}: a source= kernel needs name = '<the __global__ function, or a name "
                    f"expression such as saxpy<float>>'"
                )
            self._source = ns["source"]
        dirs = ns.get("template_dirs", ())
        dirs = (dirs,) if isinstance(dirs, str) else tuple(str(d) for d in dirs)
        self._template_dirs = _render.search_dirs(dirs)
        opts = options if options is not None else ns.get("options", CompileOptions())
        if not isinstance(opts, CompileOptions):
            raise DeclarationError(f"{label}: options must be a cuforge.CompileOptions, got {opts!r}")
        self.options = opts
        try:
            self._block = _launch.dims(ns.get("block", 256), "block", label, _launch.BLOCK_LIMIT)
        except ArgumentError as exc:
            raise DeclarationError(str(exc)) from None
        self._grid_rule = _grid_rule(label, ns.get("grid"), self.signature)
        params = self.signature.params
        self._checks = tuple(
            _launch.array_checker(self.name, p) if p.is_array else _launch.scalar_checker(self.name, p) for p in params
        )
        self._writes = frozenset(p.index for p in params if p.is_array and p.type.writes)
        self._packer = _launch.Packer(self.signature)
        self._nparams = len(params)
        self._rendered: tuple[str, dict[str, str]] | None = None
        self._by_device: dict[int, tuple[Any, CompiledKernel]] = {}

    # ------------------------------------------------------------ rendering and compiling

    def render(self) -> str:
        """The complete CUDA C++ translation unit for this kernel."""
        return self._render()[0]

    def _context(self) -> dict[str, Any]:
        return {"name": self.name, "params": {p.name: p for p in self.signature.params}}

    def _render(self) -> tuple[str, dict[str, str]]:
        if self._rendered is not None:
            return self._rendered
        sig = self.signature
        line_sources: dict[str, str] = {}
        if self._source is not None:
            source = self._source
        elif self._template is not None:
            ctx = {
                **self._context(),
                "params_cpp": sig.cpp(),
                "signature": f"__global__ void {self.name}({sig.cpp()})",
                "includes": _render.includes(sig.headers()),
            }
            source = _render.render_file(self.name, self._template, self._template_dirs, ctx)
        else:
            assert self._body is not None
            ctx = self._context()
            body = self._body.render(ctx)
            preamble = self._preamble.render(ctx) if self._preamble else ""
            line_sources[self._body.line_file] = body
            if self._preamble:
                line_sources[self._preamble.line_file] = preamble
            source = _render.assemble(
                name=self.name,
                template_params="",
                params_cpp=sig.cpp(),
                headers=sig.headers(),
                body=body,
                body_file=self._body.line_file,
                preamble=preamble,
                preamble_file=self._preamble.line_file if self._preamble else "",
                comment=f"generated by cuforge {__version__} for {self.qualname}",
            )
        self._rendered = (source, line_sources)
        return self._rendered

    def compile(self, arch: str | None = None, *, options: CompileOptions | None = None) -> CompiledKernel:
        """Compile for ``arch`` (``"sm_90"``: cubin, ``"compute_90"``: PTX).

        Without ``arch`` the arch of the current device is used (a cubin if NVRTC knows it,
        else PTX). Needs no GPU when ``arch`` is given. Results are cached per process.
        """
        if arch is None:
            try:
                arch = _compile.target_for(_cuda.current_device().cc)
            except CuforgeError as exc:
                raise type(exc)(f"{self.name}.compile(): {exc}; pass arch='sm_90' to compile without a GPU") from None
        check_arch(arch)
        opts = self.options if options is None else options
        if not isinstance(opts, CompileOptions):
            raise DeclarationError(f"{self.name}.compile(): options must be a cuforge.CompileOptions, got {opts!r}")
        source, line_sources = self._render()
        include = _compile.cuda_include_dir()
        flags = to_flags(opts, arch, (include,) if include else ())
        expr = self.name
        key = _cache.cache_key(
            source=source,
            name_expressions=(expr,),
            flags=flags,
            headers={},
            nvrtc_version=_compile.nvrtc_version(),
            cuforge_version=__version__,
        )

        def build() -> CompiledKernel:
            result = _compile.compile_program(
                source,
                program_name=f"{self.name}.cu",
                name_expressions=(expr,),
                flags=flags,
                kernel=self.name,
                line_sources=line_sources,
            )
            return CompiledKernel(self, arch, result, expr, source)

        return _cache.memory.get_or_compile(key, build)[0]

    def _function(self, device: _cuda.DeviceInfo) -> Any:
        found = self._by_device.get(device.id)
        if found is None:
            ck = self.compile(_compile.target_for(device.cc))
            fn = ck.function(device.id)
            if self._body is None:
                self._check_compiled_params(fn)
            found = self._by_device[device.id] = (fn.handle, ck)
        return found[0]

    def _check_compiled_params(self, fn: Any) -> None:
        """A source= or template kernel's compiled parameters must match the annotations."""
        info = fn.arguments_info
        params = self.signature.params
        for i, (_, size) in enumerate(info):
            if i >= len(params):
                raise SignatureMismatchError(
                    f"{self.name}: the compiled kernel has {len(info)} parameters but {len(params)} are "
                    f"annotated; parameter {i} ({size} bytes) has no annotation; add it to the class"
                )
            if size != params[i].size:
                raise SignatureMismatchError(
                    f"{self.name}: parameter {i} '{params[i].name}' is annotated {params[i].type_name} "
                    f"({params[i].size} bytes), but the compiled kernel's parameter {i} takes {size} bytes; "
                    f"fix the annotation or the C++ signature"
                )
        if len(info) < len(params):
            missing = params[len(info)]
            raise SignatureMismatchError(
                f"{self.name}: parameter '{missing.name}' is annotated but the compiled kernel has only "
                f"{len(info)} parameters; remove the annotation or add the parameter in C++"
            )

    # ------------------------------------------------------------ launching

    def __call__(self, *args: Any, grid: Any = None, block: Any = None, shared_mem: int = 0,
                 stream: Any = None, **kwargs: Any) -> None:  # fmt: skip
        """Check the arguments against the declared signature, then launch asynchronously.

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
        if kwargs or len(args) != self._nparams:
            args = self._bind(args, kwargs)
        infos: list[Any] = []  # (parameter index, ArrayInfo) of each array, filled by the checks
        values = [check(a, infos) for check, a in zip(self._checks, args)]
        blk = self._block if block is None else _launch.dims(block, "block", self.name, _launch.BLOCK_LIMIT)
        if grid is None:
            grd = self._grid_rule(args, infos, blk)
            if grd is None:
                return  # nothing to do: the sizing array is empty
        else:
            grd = _launch.dims(grid, "grid", self.name, _launch.GRID_LIMIT)
        if shared_mem.__class__ is not int or shared_mem < 0:
            raise ArgumentError(f"{self.name}: shared_mem expects a non-negative int (bytes), got {shared_mem!r}")
        sh = None if stream is None else _launch.stream_handle(stream, self.name)
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
            _launch.check_devices(self.name, self.signature.params, infos, device.id)
        if sh is None:
            sh = _launch.default_stream(infos, device.id) if infos else 0
        if staged:
            self._launch_staged(handle, args, values, infos, grd, blk, shared_mem, sh)
            return
        err = _cuda.driver.cuLaunchKernel(
            handle, grd[0], grd[1], grd[2], blk[0], blk[1], blk[2], shared_mem, sh, self._packer.pack(values), 0
        )[0]
        if err:  # CUresult is an IntEnum: CUDA_SUCCESS is 0
            _launch.raise_launch_error(err, grd, blk, shared_mem, self.name)

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
            _launch.launch_raw(handle, grid, block, shared_mem, stream, self._packer.pack(values), self.name)
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
            raise ArgumentError(f"{self.name}: takes {len(names)} arguments ({', '.join(names)}), got {len(args)} positional")
        bound = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in names:
                raise ArgumentError(
                    f"{self.name}: unexpected argument {key!r}; the parameters are {', '.join(names)}"
                    f" (launch options: grid, block, shared_mem, stream)"
                )
            if key in bound:
                raise ArgumentError(f"{self.name}: argument '{key}' given twice (by position and by name)")
            bound[key] = value
        missing = [n for n in names if n not in bound]
        if missing:
            raise ArgumentError(
                f"{self.name}: missing argument{'s' if len(missing) > 1 else ''} "
                f"{', '.join(repr(m) for m in missing)}; the signature is {self.signature.describe(self.name)}"
            )
        return tuple(bound[n] for n in names)

    def __repr__(self) -> str:
        return f"<cuforge.Kernel {self.signature.describe(self.name)}>"


def _check_class_keys(label: str, ns: dict[str, Any]) -> None:
    annotated = set(ns.get("__annotations__", {}))
    for key, value in ns.items():
        if key.startswith("__") or key in _CLASS_KEYS or key in annotated:
            continue
        if callable(value) or isinstance(value, (staticmethod, classmethod)):
            continue  # helpers (and the grid function) may live on the class
        raise DeclarationError(
            f"{label}: unknown class attribute {key!r}; a kernel class takes annotations for its "
            f"parameters and {', '.join(sorted(_CLASS_KEYS))}"
        )


def _read_params(cls: type, label: str) -> tuple[Param, ...]:
    try:
        annotations = inspect.get_annotations(cls, eval_str=True)
    except Exception as exc:
        raise DeclarationError(f"{label}: cannot evaluate the annotations: {exc}") from None
    module_globals = getattr(sys.modules.get(cls.__module__), "__dict__", {})
    params = []
    for index, (name, ann) in enumerate(annotations.items()):
        if isinstance(ann, str):  # a quoted annotation under `from __future__ import annotations`
            try:
                ann = eval(ann, dict(module_globals), dict(vars(cls)))
            except Exception as exc:
                raise DeclarationError(f"{label}: cannot evaluate the annotation of '{name}': {exc}") from None
        if not _IDENT.match(name) or keyword.iskeyword(name) or name in _CPP_RESERVED or name.startswith("_"):
            raise DeclarationError(
                f"{label}: parameter name {name!r} cannot be used in C++ (a reserved word, CUDA built-in, "
                f"or leading underscore); rename it"
            )
        if not isinstance(ann, (DType, ArrayType)):
            raise DeclarationError(
                f"{label}: parameter '{name}' has annotation {ann!r}; expected a cuforge type such as "
                f"cf.float32, cf.In[cf.float32], cf.Array[cf.float32] or cf.Out[cf.float32]"
            )
        params.append(Param(name, index, ann))
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

    Returns
    -------
    Kernel
    """
    if cls is None:
        return lambda c: Kernel(c, name=name, options=options)
    if not isinstance(cls, type):
        raise DeclarationError(f"@cuforge.kernel decorates a class, got {cls!r}")
    return Kernel(cls, name=name, options=options)
