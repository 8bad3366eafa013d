""":class:`Kernel`: one declared kernel (or one instantiation of a family), to compile or call.

``_decl`` reads the class once; a :class:`Kernel` renders it (``_render``), compiles it
through the caches (``_cache``, ``_compile``), and launches it: the C launcher (``_csrc/``)
takes the common calls, and the general path (``_launch``, ``_checks``) takes the rest. The
``@cf.kernel`` decorator that makes one is in ``kernel.py``, above ``family.py``.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from . import _build, _cache, _compile, _cuda, _globals, _kinds, _launch, _parallel, _pickling, _render
from ._checks import checker
from ._compile import CompiledKernel
from ._decl import _Decl, _substitute
from ._signature import Param, Signature, param_specs
from ._version import __version__
from .errors import ArgumentError, ArgumentTypeError, CuforgeError, DeclarationError, SignatureMismatchError
from .options import CompileOptions
from .types import CppBool, DType

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = ["CompiledKernel", "Kernel", "KernelTemplate"]

_CPP_KIND = {"type": "typename", "int": "int", "bool": "bool"}  # a template parameter's kind, as C++ declares it


class _PythonCall:
    """Where cuforge's C extension is not built, Kernel's call is this Python method: every
    call takes the general path (see README, "Without a C compiler")."""

    def __call__(self, *args: Any, grid: Any = None, block: Any = None, shared_mem: int = 0,
                 stream: Any = None, **kwargs: Any) -> None:  # fmt: skip
        checked = _launch.check_and_pack(self, args, kwargs, grid, block, shared_mem, stream)
        if checked is not None:  # None: the sizing array is empty, nothing to do
            _launch.launch_checked(self, checked)


# With the extension, calls reach KernelBase's tp_call in C, with no Python frame between.
_KernelBase: Any = _cuda._claunch.KernelBase if _cuda._claunch is not None else _PythonCall


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
        # what messages call it: the C++ name, but a prebuilt entry point's lowered name is unreadable
        self.label = self.name_expression if decl.tparams else cls.__name__ if decl.module is not None else decl.name
        self.signature = Signature(
            tuple(Param(n, i, _substitute(ann, self.template_args)) for i, (n, ann) in enumerate(decl.params))
        )
        raw_block = decl.block if isinstance(decl.block, (tuple, list)) else (decl.block,)
        resolved = tuple(self.template_args[e] if isinstance(e, str) else e for e in raw_block)
        # What both launch paths read, built once: see _launch and _csrc/.
        self._specs = param_specs(self.signature)
        self._block = _launch.dims(resolved, "block", self.label, _launch.BLOCK_LIMIT)
        self._grid = _launch.GridRule(self.label, decl.grid, self._specs, self.template_args)
        self._smem = (None if decl.shared_mem is None
                      else _launch.SharedMemRule(self.label, decl.shared_mem, self._specs, self.template_args))  # fmt: skip
        self._checks = tuple(checker(self.label, s) for s in self._specs)
        self._packer = _launch.Packer(self._specs)
        self._family: Any = None  # the Family this is an instantiation of (set by it)
        self._kind = decl.launch_kind  # cooperative, clustered or plain (see _kinds)
        self._attrs: bytes | None = None  # cuLaunchKernelEx's launch attributes of a plain launch
        self._grid_sync = False  # the source syncs the grid: found when it is first loaded
        self._pieces_cache: tuple[str, str, dict[str, str]] | None = None
        self._by_device: dict[int, _kinds.Loaded] = {}
        self._load_lock = threading.Lock()
        self._compiled: dict[tuple[str, tuple[str, ...]], CompiledKernel] = {}  # for display
        self._fast = _launch.c_launcher(self)
        if decl.source is not None and decl.module is None:
            _cache.note_source_kernel(self)  # compiled with the other kernels of its source

    # ------------------------------------------------------------ rendering and compiling

    def render(self) -> str:
        """The complete CUDA C++ translation unit for this kernel."""
        prelude, unit, _ = self._pieces()
        return prelude + unit

    def _prebuilt(self, what: str) -> CuforgeError:
        return CuforgeError(
            f"{self.label}.{what}: the kernel is prebuilt (module={self._decl.module!r}, entry {self.name!r}); "
            f"it has no source to render or compile"
        )

    @property
    def source(self) -> str:
        """The rendered CUDA C++ (the same as :meth:`render`)."""
        return self.render()

    @property
    def lowered_name(self) -> str:
        """The mangled symbol from the latest compile (NVRTC's ``nvrtcGetLoweredName``)."""
        if self._decl.module is not None:
            return self._decl.module.symbols.get(self.name, self.name)
        if not self._compiled:
            raise CuforgeError(f"{self.label} is not compiled yet; call .compile(arch='sm_90') or launch it first")
        return next(reversed(self._compiled.values())).lowered_name

    def _context(self) -> dict[str, Any]:
        values = {k: CppBool(v) if isinstance(v, bool) else v for k, v in self.template_args.items()}
        return {"name": self.name, "params": {p.name: p for p in self.signature.params}, **values}

    def _pieces(self) -> tuple[str, str, dict[str, str]]:
        """(prelude, unit, #line sources): a program holds one prelude and the units of the
        kernels compiled in it; kernels of one family share their prelude."""
        if self._pieces_cache is not None:
            return self._pieces_cache
        decl, sig = self._decl, self.signature
        if decl.module is not None:
            raise self._prebuilt("render()")
        line_sources: dict[str, str] = {}
        if decl.source is not None:
            prelude, unit = decl.source, ""
            # A family's name expressions spell its template arguments: the headers of those
            # types (cuforge::complex's) come first, for every instantiation alike (they share
            # the prelude), and #line keeps the user's line numbers.
            if decl.tparams and decl.headers:
                source_file = f"{decl.name}.source"
                prelude = f'{_render.includes(decl.headers)}#line 1 "{source_file}"\n{decl.source}'
                line_sources[source_file] = decl.source
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
                template_params=", ".join(f"{_CPP_KIND[t.kind]} {t.name}" for t in decl.tparams),
                generic_params_cpp=generic.cpp(),
                params_cpp=sig.cpp(),
                specialization=", ".join(t.spell(v) for t, v in zip(decl.tparams, self.template_args.values())),
                aliases="".join(
                    f"using {t.name} = {t.spell(v)}; " if t.kind == "type"
                    else f"[[maybe_unused]] constexpr {_CPP_KIND[t.kind]} {t.name} = {t.spell(v)}; "
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
        links = tuple(i.digest if not isinstance(i, str) else i for i in self._decl.link)
        if links or "-rdc=true" in flags:
            links += (_compile.nvjitlink_identity(),)
        return _cache.cache_key(
            source=prelude + unit,
            name_expressions=(self.name_expression,),
            flags=flags,
            headers=self._headers(),
            nvrtc=_compile.nvrtc_identity(),
            cuforge_version=__version__,
            include_digest=_cache.include_dirs_digest(options.include_dirs),
            cuda_headers=_compile.cuda_headers_version(_compile.cuda_include_dir()),
            links=links,
        )

    def compile(self, arch: str | None = None, *, options: CompileOptions | None = None) -> CompiledKernel:
        """Compile for ``arch`` (``"sm_90"``: cubin, ``"compute_90"``: PTX).

        Without ``arch`` the arch of the current device is used (a cubin if NVRTC knows it,
        else PTX). Needs no GPU when ``arch`` is given. Results are cached per process.
        """
        if self._decl.module is not None:
            raise self._prebuilt("compile()")
        return _cache.compile_together([self], arch, options, who=f"{self.label}.compile()")[0]

    def compile_async(self, arch: str | None = None, *, options: CompileOptions | None = None) -> Future[CompiledKernel]:
        """:meth:`compile` on cuforge's compile thread: a ``concurrent.futures.Future`` of the
        CompiledKernel, so that a notebook or a server goes on meanwhile. A launch that needs
        the kernel before it is done waits for that compile; it does not start another."""
        return _parallel.in_background(self.compile, arch, options=options)

    def _function(self, device: _cuda.DeviceInfo) -> _kinds.Loaded:
        """The kernel on ``device``: compiled (or read from the caches) and loaded on its first
        launch there, with its limits (see ``_kinds``). One thread does it while the others
        wait, so that threads launching for the first time at once do the work once."""
        found = self._by_device.get(device.id)
        if found is None:
            with self._load_lock:
                found = self._by_device.get(device.id)
                if found is None:
                    found = self._load(device)
        return found

    def _load(self, device: _cuda.DeviceInfo) -> _kinds.Loaded:
        module = self._decl.module
        if module is not None:  # prebuilt: its entry point, checked against the annotations
            fn = module._kernel(self, self.name)
            self._check_compiled_params(fn)
            return self._loaded(fn, module, device)
        build = _build.current()
        if build is not None:  # an ahead-of-time build: its fatbin, no NVRTC
            served = build.module_for(self) if build.serves(device.cc) else None
            if served is not None:
                return self._loaded(served[0]._kernel(self, served[1]), served[0], device)
            if not _build.nvrtc_available():
                raise _build.missing(self, build)
        ck = self.compile(_cache.device_target(device.cc))
        fn = ck.function(device.id)
        if self._decl.body is None:
            self._check_compiled_params(fn)
        if _kinds.uses_grid_sync(ck.source) and not self._grid_sync:
            self._grid_sync = True
            self._fast = None  # the general path refuses it without cooperative=True, before the launch
        return self._loaded(fn, ck, device)

    def _loaded(self, fn: Any, origin: Any, device: _cuda.DeviceInfo) -> _kinds.Loaded:
        """Record ``fn`` (cuda.core's Kernel, from ``origin``: a CompiledKernel or a Module) as
        loaded on ``device``, with its limits there."""
        loaded = self._by_device[device.id] = _kinds.Loaded(int(fn.handle), origin, *_kinds.load_limits(fn, device), fn, device)
        return loaded

    def _forget_loads(self) -> None:
        """Its module was unloaded: drop every loaded function, and the C launcher's memory of
        them; the next call reaches the general path, which raises (see Module.unload)."""
        with self._load_lock:
            self._by_device.clear()
            self._fast = _launch.c_launcher(self)

    @property
    def attributes(self) -> _kinds.KernelAttributes:
        """Registers, local memory, static shared memory, the most threads per block and the
        most dynamic shared memory a launch may ask, on the current device (loads the kernel)."""
        loaded = self._function(_cuda.current_device())
        attrs = loaded.function.attributes[loaded.device.id]
        return _kinds.KernelAttributes(
            registers=int(attrs.num_regs),
            local_bytes=int(attrs.local_size_bytes),
            static_shared_bytes=loaded.static_shared,
            max_threads_per_block=loaded.max_threads,
            max_dynamic_shared_bytes=loaded.max_shared,
            device=loaded.device.id,
        )

    def occupancy(self, block: Any = None, shared_mem: int = 0) -> int:
        """Active blocks per SM for ``block`` (default: the class's) and ``shared_mem`` bytes
        of dynamic shared memory, on the current device (loads the kernel)."""
        blk = self._block if block is None else _launch.dims(block, "block", self.label, _launch.BLOCK_LIMIT)
        if shared_mem.__class__ is not int or shared_mem < 0:
            raise ArgumentError(f"{self.label}.occupancy(): shared_mem expects an int >= 0 (bytes), got {shared_mem!r}")
        loaded = self._function(_cuda.current_device())
        return _kinds.blocks_per_sm(loaded, blk[0] * blk[1] * blk[2], shared_mem)

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

    def _launch_general(self, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any, block: Any,
                        shared_mem: Any, stream: Any) -> None:  # fmt: skip
        """Every call the C launcher declines: bind, check (raising on bad input), launch."""
        checked = _launch.check_and_pack(self, args, kwargs, grid, block, shared_mem, stream)
        if checked is not None:  # None: the sizing array is empty, nothing to do
            _launch.launch_checked(self, checked)

    def prepare(self, *args: Any, grid: Any = None, block: Any = None, shared_mem: int = 0,
                stream: Any = None, **kwargs: Any) -> _launch.PreparedLaunch:  # fmt: skip
        """Check and pack a launch once; calling the result launches it again with no per-call
        work but the driver call (the fastest path, for loops that repeat one launch).

        The arrays are the same memory on every launch (their contents may change); the
        scalars, grid, block and stream are fixed: prepare again to change them. Host NumPy
        arrays are not accepted (they would need copies on every launch).
        """
        checked = _launch.check_and_pack(self, args, kwargs, grid, block, shared_mem, stream)
        if checked is None:
            raise ArgumentError(f"{self.label}.prepare(): the arrays are empty, so there is nothing to launch")
        info, restore = _cuda.enter_device(_launch.target_device(self, checked))
        try:
            handle, sh, staged = _launch.place(self, checked, info)
        finally:
            if restore is not None:
                _cuda.set_context(restore)
        if staged:
            names = ", ".join(repr(self._specs[i].name) for i, arg in checked.arrays if arg.origin == "numpy")
            raise ArgumentTypeError(
                f"{self.label}.prepare(): argument(s) {names} are host NumPy arrays; pass device arrays "
                f"(cf.to_device, CuPy, PyTorch) to prepare a launch"
            )
        return _launch.PreparedLaunch(self, checked, handle, sh, stream)

    def set_global(self, name: str, value: Any, *, stream: Any = None, device: int | None = None) -> None:
        """Write host data into the module variable ``name`` (``__constant__`` or
        ``__device__``, at namespace scope) on ``device`` (default: the thread's), on ``stream``;
        the size must match the variable's. Loads the kernel there first."""
        _globals.set_global(self, name, value, stream=stream, device=device)

    def get_global(self, name: str, dtype: Any = "uint8", *, device: int | None = None) -> Any:
        """The module variable ``name`` as a host NumPy array of ``dtype``, after the device's
        work so far."""
        return _globals.get_global(self, name, dtype, device=device)

    def torch_op(self, name: str, **options: Any) -> Any:
        """Register this kernel as the PyTorch operator ``name`` (``"mylib::saxpy"``); see
        :func:`cuforge.torch.custom_op` for ``outputs=``, ``sizes=``, ``backward=`` and
        ``setup_context=``. Imports PyTorch."""
        from .torch import custom_op

        return custom_op(self, name, **options)

    def __reduce__(self) -> tuple[Any, ...]:
        """By reference where the class can be imported, else by declaration (see _pickling)."""
        return _pickling.reduce_kernel(self)

    def __repr__(self) -> str:
        return f"<cuforge.Kernel {self.signature.describe(self.label)}>"

    def _repr_html_(self) -> str:
        from ._display import kernel_html

        return kernel_html(self)


class KernelTemplate:
    """A templated ``%%cuda`` kernel (kept here, not in the IPython adapter, so that a worker
    without IPython can unpickle one): index it by its template arguments (``k[cf.float32, 256]``
    or ``k["float", 256]``); call it directly when it has one instantiation."""

    __module__ = "cuforge"

    def __init__(self, name: str, instances: dict[tuple[str, ...], Kernel]):
        self.name = name
        self.instances = instances

    def __getitem__(self, args: Any) -> Kernel:
        args = args if isinstance(args, tuple) else (args,)
        spelled = tuple(a.cpp if isinstance(a, DType) else str(a) for a in args)
        found = self.instances.get(spelled)
        if found is None:
            have = ", ".join(f"{self.name}<{', '.join(k)}>" for k in self.instances)
            raise DeclarationError(f"{self.name}<{', '.join(spelled)}> was not instantiated; the cell made {have}")
        return found

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        if len(self.instances) != 1:
            raise DeclarationError(
                f"{self.name} has {len(self.instances)} instantiations; index it, e.g. {self.name}[cf.float32, 256]"
            )
        next(iter(self.instances.values()))(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<cuforge.KernelTemplate {self.name}: {', '.join(k.name_expression for k in self.instances.values())}>"
