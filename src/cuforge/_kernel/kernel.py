"""`Kernel`: one declared kernel (or one instantiation of a family), to compile or call.

``_decl`` reads the class once; a `Kernel` renders it (``_render``), compiles it
through the caches (``_cache``, ``_compile``), and launches it: the C launcher (``_csrc/``)
takes the common calls, and the general path (``_launch``, ``_checks``) takes the rest. The
``@cf.kernel`` decorator that makes one is in ``kernel.py``, above ``family.py``.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from .. import _config
from .._compile import cache as _cache
from .._compile.artifact import CompiledKernel
from .._declare import kinds as _kinds
from .._declare import launch_rules as _launch_rules
from .._declare import render as _render
from .._declare import rules as _rules
from .._declare.declaration import _Decl, _substitute, resolve
from .._declare.signature import Param, Signature, param_specs
from .._declare.types import CppBool, DType
from .._launch import general as _launch
from .._launch.checks import checker
from .._runtime import cuda as _cuda
from .._runtime import limits as _limits
from .._version import __version__
from ..errors import ArgumentError, ArgumentTypeError, CuforgeError, DeclarationError, NoDeviceError, SignatureMismatchError
from ..options import CompileOptions

if TYPE_CHECKING:
    from concurrent.futures import Future

    from .._launch.general import PreparedLaunch

__all__ = ["CompiledKernel", "Kernel", "KernelTemplate"]


class _PythonCall:
    """Where cuforge's C extension is not built, Kernel's call is this Python method: every
    call takes the general path (see docs/guide/types.md, "Without a C compiler")."""

    label: str  # set by Kernel

    def __call__(self, *args: Any, grid: Any = None, block: Any = None, shared_mem: int = 0,
                 stream: Any = None, **kwargs: Any) -> None:  # fmt: skip
        checked = _launch.check_and_pack(self, args, kwargs, grid, block, shared_mem, stream)
        if checked is not None:  # None: the sizing array is empty, nothing to do
            try:
                _launch.launch_checked(self, checked)
            except NoDeviceError as exc:
                raise _cuda.no_device_for(self.label, exc) from None


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _names_the_kernel(method: _Method) -> _Method:
    """``method`` of a Kernel, whose NoDeviceError (no GPU) names the kernel and its own
    compile call, as a launch's does (``_cuda.no_device_for``)."""

    @functools.wraps(method)
    def named(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except NoDeviceError as exc:
            raise _cuda.no_device_for(self.label, exc) from None

    return named  # type: ignore[return-value]


# With the extension, calls reach KernelBase's tp_call in C, with no Python frame between.
_KernelBase: Any = _cuda.claunch.KernelBase if _cuda.claunch is not None else _PythonCall


class Kernel(_KernelBase):
    """A declared kernel: call it to launch, ``.compile()`` to build without launching.

    Created by [`kernel`][cuforge.kernel], or as one instantiation of a family (``Axpy[cf.float32, 256]``).

    ``kernel(*args, grid=None, block=None, shared_mem=0, stream=None, **kwargs)`` checks the
    arguments against the declared signature, then launches asynchronously.

    Notes
    -----
    The call takes:

    - ``*args, **kwargs``: the kernel's arguments, by position or by parameter name;
    - ``grid``, ``block`` (an int or a tuple of 1 to 3 ints): override the launch rule
      (default: a 1-D grid covering the largest array, or the class's ``grid``/``block``);
    - ``shared_mem`` (int): dynamic shared memory in bytes (default: the class's rule, else 0);
    - ``stream``: a cuda.core, CuPy or PyTorch stream, anything with ``__cuda_stream__``, or
      an int handle (default: the current CuPy/PyTorch stream when the arrays come from them,
      else the legacy default stream);
    - ``device`` (int), ``cooperative`` (bool), ``cluster`` (tuple), ``non_portable_cluster``:
      see the guide's launch kinds and devices pages.

    It raises [`ArgumentError`][cuforge.errors.ArgumentError] or
    [`ArgumentTypeError`][cuforge.errors.ArgumentTypeError] on bad input, before any CUDA call,
    and [`NoDeviceError`][cuforge.errors.NoDeviceError] where no GPU can be used.

    Examples
    --------
    >>> @cf.kernel
    ... class Saxpy:
    ...     a: cf.float32
    ...     x: cf.In[cf.float32]
    ...     y: cf.Array[cf.float32]
    ...     n: cf.int64
    ...     body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i];"
    >>> Saxpy
    <cuforge.Kernel Saxpy(a: float32, x: In[float32], y: Array[float32], n: int64)>
    >>> x, y = cf.to_device(np.ones(4, np.float32)), cf.zeros(4, cf.float32)  # doctest: +GPU
    >>> Saxpy(2.0, x, y, 4)  # doctest: +GPU
    >>> y.to_numpy()  # doctest: +GPU
    array([2., 2., 2., 2.], dtype=float32)
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
        # What both launch paths read, built once: see _launch and _csrc/.
        self._specs = param_specs(self.signature)
        self._block = _launch_rules.dims(resolve(decl.block, decl.block_function, self.template_args), "block", self.label,
                                   _launch_rules.BLOCK_LIMIT)  # fmt: skip
        self._launch_bounds = None if decl.launch_bounds is None else _rules.bounds(
            resolve(decl.launch_bounds, decl.bounds_function, self.template_args))  # fmt: skip
        self._grid = _launch_rules.GridRule(self.label, decl.grid, self._specs, self.template_args)
        # the last grid= and block= objects a call passed, with their dims (see check_and_pack)
        self._seen_grid: tuple[Any, tuple[int, int, int] | None] = (None, None)
        self._seen_block: tuple[Any, tuple[int, int, int] | None] = (None, None)
        self._smem = (None if decl.shared_mem is None
                      else _launch_rules.SharedMemRule(self.label, decl.shared_mem, self._specs, self.template_args))  # fmt: skip
        self._checks = tuple(checker(self.label, s) for s in self._specs)
        self._packer = _launch.Packer(self._specs)
        self._family: Any = None  # the Family this is an instantiation of (set by it)
        self._kind = decl.launch_kind  # cooperative, clustered or plain (see _kinds)
        self._attrs: bytes | None = None  # cuLaunchKernelEx's launch attributes of a plain launch
        self._grid_sync = False  # the source syncs the grid: found when it is first loaded
        self._pieces_cache: tuple[str, str, dict[str, str]] | None = None
        self._by_device: dict[int, _limits.Loaded] = {}
        self._load_lock = threading.Lock()
        self._compiled: dict[tuple[str, tuple[str, ...]], CompiledKernel] = {}  # for display
        self._fast = _launch.c_launcher(self)
        if decl.source is not None and decl.module is None:
            _cache.note_source_kernel(self)  # compiled with the other kernels of its source

    # ------------------------------------------------------------ rendering and compiling

    def render(self) -> str:
        """The complete CUDA C++ translation unit for this kernel.

        Returns
        -------
        str

        Raises
        ------
        TemplateError
            Where the body, preamble or template does not render.
        """
        prelude, unit, _ = self._pieces()
        return prelude + unit

    def _prebuilt(self, what: str) -> CuforgeError:
        return CuforgeError(
            f"{self.label}.{what}: the kernel is prebuilt (module={self._decl.module!r}, entry {self.name!r}); "
            f"it has no source to render or compile"
        )

    @property
    def source(self) -> str:
        """The rendered CUDA C++ (the same as [`render`][cuforge.Kernel.render]).

        Returns
        -------
        str
        """
        return self.render()

    @property
    def lowered_name(self) -> str:
        """The mangled symbol from the latest compile (NVRTC's ``nvrtcGetLoweredName``).

        Returns
        -------
        str

        Raises
        ------
        CuforgeError
            Before the kernel is compiled.
        """
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
                template_params=", ".join(f"{t.cpp_kind} {t.name}" for t in decl.tparams),
                generic_params_cpp=generic.cpp(),
                params_cpp=sig.cpp(),
                specialization=", ".join(t.spell(v) for t, v in zip(decl.tparams, self.template_args.values())),
                aliases="".join(
                    f"using {t.name} = {t.spell(v)}; " if t.kind == "type"
                    else f"[[maybe_unused]] constexpr {t.cpp_kind} {t.name} = {t.spell(v)}; "
                    for t, v in zip(decl.tparams, self.template_args.values())
                ),
                headers=decl.headers,
                body=body,
                body_file=body_file,
                preamble=preamble,
                preamble_file=decl.preamble.line_file if decl.preamble else "",
                launch_bounds=_rules.spell_bounds(self._launch_bounds),
                comment=f"generated by cuforge {__version__} for {self.qualname}",
            )
        self._pieces_cache = (prelude, unit, line_sources)
        return self._pieces_cache

    def _headers(self) -> dict[str, str]:
        """Headers included from the kernel's template directories, passed to NVRTC in memory."""
        prelude, unit, _ = self._pieces()
        return _cache.template_headers(prelude + unit, (*self._decl.template_dirs, _render.PACKAGE_TEMPLATES))

    def _inputs(self, flags: tuple[str, ...], options: CompileOptions) -> dict[str, str]:
        """The kernel's own inputs to a compile with ``flags`` (``_cache.compile_inputs``): what
        its cache key and an ahead-of-time build's entry both hold. Needs no NVRTC."""
        prelude, unit, _ = self._pieces()
        return _cache.compile_inputs(
            source=prelude + unit,
            name_expression=self.name_expression,
            flags=flags,
            headers=self._headers(),
            include_digest=_cache.include_dirs_digest(options.include_dirs),
            links=tuple(i.digest if not isinstance(i, str) else i for i in self._decl.link),
        )

    def _key(self, flags: tuple[str, ...], options: CompileOptions) -> str:
        linked = bool(self._decl.link) or "-rdc=true" in flags
        return _cache.cache_key(self._inputs(flags, options), flags, _cache.toolchain(linked=linked))

    def compile(self, arch: str | None = None, *, options: CompileOptions | None = None) -> CompiledKernel:
        """Compile with NVRTC, or read the compiled kernel from the caches.

        Parameters
        ----------
        arch : str, optional
            ``"sm_90"`` for a cubin, ``"compute_90"`` for PTX. Default: the current device's
            (a cubin if NVRTC knows it, else PTX), else ``CUFORGE_ARCH``. Needs no GPU when
            given.
        options : CompileOptions, optional
            Instead of the class's ``options``.

        Returns
        -------
        CompiledKernel

        Raises
        ------
        CompileError
            With NVRTC's messages, lines numbered as in the body.
        NoDeviceError
            Without ``arch``, where there is no GPU and no ``CUFORGE_ARCH``.

        Examples
        --------
        >>> @cf.kernel
        ... class Twice:
        ...     x: cf.Array[cf.float32]
        ...     body = "x[threadIdx.x] *= 2;"
        >>> ck = Twice.compile(arch="sm_90")
        >>> ck.lowered_name, ck.code_type
        ('_Z5TwicePf', 'cubin')
        """
        if self._decl.module is not None:
            raise self._prebuilt("compile()")
        return _cache.compile_together([self], arch, options, who=f"{self.label}.compile()")[0]

    def compile_async(self, arch: str | None = None, *, options: CompileOptions | None = None) -> Future[CompiledKernel]:
        """[`compile`][cuforge.Kernel.compile] on cuforge's compile thread, so that a notebook or a server goes on
        meanwhile. A launch that needs the kernel before it is done waits for that compile;
        it does not start another.

        Parameters
        ----------
        arch : str, optional
            As for [`compile`][cuforge.Kernel.compile].
        options : CompileOptions, optional
            As for [`compile`][cuforge.Kernel.compile].

        Returns
        -------
        concurrent.futures.Future
            Of the [`CompiledKernel`][cuforge.CompiledKernel]; its ``result()`` raises what
            [`compile`][cuforge.Kernel.compile] would.

        Examples
        --------
        >>> @cf.kernel
        ... class Half:
        ...     x: cf.Array[cf.float32]
        ...     body = "x[threadIdx.x] *= 0.5f;"
        >>> Half.compile_async(arch="sm_90").result().lowered_name
        '_Z4HalfPf'
        """
        from .._compile import parallel as _parallel  # (the modules off the launch path are imported on first use: start-up)

        return _parallel.in_background(self.compile, arch, options=options)

    def _function(self, device: _cuda.DeviceInfo) -> _limits.Loaded:
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

    def _load(self, device: _cuda.DeviceInfo) -> _limits.Loaded:
        module = self._decl.module
        if module is not None:  # prebuilt: its entry point, checked against the annotations
            handle = module._kernel(self, self.name)
            self._check_compiled_params(handle)
            return self._loaded(handle, module, device)
        if _config.build_dir():  # an ahead-of-time build: its fatbin, no NVRTC
            from .._compile import build as _build  # (imported where a build is in use: start-up)

            build = _build.current()
            served = build.module_for(self) if build is not None and build.serves(device.cc) else None
            if served is not None:
                return self._loaded(served[0]._kernel(self, served[1]), served[0], device)
            if not _build.nvrtc_available():
                raise _build.missing(self, build)
        ck = self.compile(_cache.device_target(device.cc))
        handle = _cuda.compiled.handle(ck)
        if self._decl.body is None:
            self._check_compiled_params(handle)
        if _kinds.uses_grid_sync(ck.source) and not self._grid_sync:
            self._grid_sync = True
            self._fast = None  # the general path refuses it without cooperative=True, before the launch
        return self._loaded(handle, ck, device)

    def _loaded(self, handle: int, origin: Any, device: _cuda.DeviceInfo) -> _limits.Loaded:
        """Record ``handle`` (a CUkernel, from ``origin``: a CompiledKernel or a Module) as
        loaded on ``device``, with its limits there."""
        loaded = self._by_device[device.id] = _limits.Loaded(handle, origin, *_limits.load_limits(handle, device), device)
        return loaded

    def _forget_loads(self) -> None:
        """Its module was unloaded: drop every loaded function, and the C launcher's memory of
        them; the next call reaches the general path, which raises (see Module.unload)."""
        with self._load_lock:
            self._by_device.clear()
            self._fast = _launch.c_launcher(self)

    @property
    @_names_the_kernel
    def attributes(self) -> _limits.KernelAttributes:
        """Registers, local memory, static shared memory, the most threads per block and the
        most dynamic shared memory a launch may ask, on the current device (loads the kernel).

        Returns
        -------
        KernelAttributes

        Raises
        ------
        NoDeviceError
            Where there is no GPU (``compile(...).resources()`` reads a cubin without one).
        """
        loaded = self._function(_cuda.current_device())
        return _limits.KernelAttributes(
            registers=_cuda.kernel_attribute(loaded.handle, "NUM_REGS", loaded.device.id),
            local_bytes=_cuda.kernel_attribute(loaded.handle, "LOCAL_SIZE_BYTES", loaded.device.id),
            static_shared_bytes=loaded.static_shared,
            max_threads_per_block=loaded.max_threads,
            max_dynamic_shared_bytes=loaded.max_shared,
            device=loaded.device.id,
        )

    @_names_the_kernel
    def occupancy(self, block: Any = None, shared_mem: int = 0) -> int:
        """Active blocks per SM, on the current device (loads the kernel).

        Parameters
        ----------
        block : int or tuple of ints, optional
            Default: the class's block.
        shared_mem : int
            Dynamic shared memory per block, in bytes.

        Returns
        -------
        int
            Blocks of this kernel one SM runs at once; times the SM count, the most a
            cooperative launch may ask.

        Raises
        ------
        ArgumentError
            For a block or shared memory that is not valid.

        Examples
        --------
        >>> Saxpy.occupancy(block=256) >= 1  # doctest: +GPU
        True
        """
        blk = self._block if block is None else _launch_rules.dims(block, "block", self.label, _launch_rules.BLOCK_LIMIT)
        if shared_mem.__class__ is not int or shared_mem < 0:
            raise ArgumentError(f"{self.label}.occupancy(): shared_mem expects an int >= 0 (bytes), got {shared_mem!r}")
        loaded = self._function(_cuda.current_device())
        return _limits.blocks_per_sm(loaded, blk[0] * blk[1] * blk[2], shared_mem)

    def _check_compiled_params(self, handle: int) -> None:
        """A source= or template kernel's compiled parameters must match the annotations."""
        info = _cuda.kernel_param_sizes(handle)
        params = self.signature.params
        for i, size in enumerate(info):
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
            try:
                _launch.launch_checked(self, checked)
            except NoDeviceError as exc:
                raise _cuda.no_device_for(self.label, exc) from None

    @_names_the_kernel
    def prepare(self, *args: Any, grid: Any = None, block: Any = None, shared_mem: int = 0,
                stream: Any = None, **kwargs: Any) -> PreparedLaunch:  # fmt: skip
        """Check and pack a launch once; calling the result launches it again with no per-call
        work but the driver call (the fastest path, for loops that repeat one launch).

        The arrays are the same memory on every launch (their contents may change); the
        scalars, grid, block and stream are fixed: prepare again to change them. Host NumPy
        arrays are not accepted (they would need copies on every launch).

        Parameters
        ----------
        *args, **kwargs
            The kernel's arguments, as for a call.
        grid, block, shared_mem, stream
            As for a call.

        Returns
        -------
        PreparedLaunch

        Raises
        ------
        ArgumentError, ArgumentTypeError
            As a call would, and for host NumPy arrays or empty arrays.

        Examples
        --------
        >>> step = Saxpy.prepare(2.0, x, y, 4)  # doctest: +GPU
        >>> for _ in range(3):  # doctest: +GPU
        ...     step()
        >>> y.to_numpy()  # doctest: +GPU
        array([8., 8., 8., 8.], dtype=float32)
        """
        checked = _launch.check_and_pack(self, args, kwargs, grid, block, shared_mem, stream)
        if checked is None:
            raise ArgumentError(f"{self.label}.prepare(): the arrays are empty, so there is nothing to launch")
        with _cuda.on_device(_launch.target_device(self, checked)) as info:
            checked, handle, sh, staged = _launch.place(self, checked, info)
        if staged:
            names = ", ".join(repr(self._specs[i].name) for i, arg in checked.arrays if arg.origin == "numpy")
            raise ArgumentTypeError(
                f"{self.label}.prepare(): argument(s) {names} are host NumPy arrays; pass device arrays "
                f"(cf.to_device, CuPy, PyTorch) to prepare a launch"
            )
        return _launch.PreparedLaunch(self, checked, handle, sh, stream)

    @_names_the_kernel
    def set_global(self, name: str, value: Any, *, stream: Any = None, device: int | None = None) -> None:
        """Write host data into a module variable (``__constant__`` or ``__device__``, at
        namespace scope). Loads the kernel on the device first.

        Parameters
        ----------
        name : str
            The variable, as the preamble or source declares it.
        value : array-like
            Host data whose size in bytes is the variable's.
        stream : stream-like, optional
            The copy's stream (default: the legacy default stream).
        device : int, optional
            Default: the thread's device.

        Raises
        ------
        ArgumentError
            For a name the module does not have.
        ArgumentTypeError
            For a size that is not the variable's (both are given).

        Examples
        --------
        >>> @cf.kernel
        ... class Scaled:
        ...     x: cf.Array[cf.float32]
        ...     preamble = "__constant__ float factor;"
        ...     body = "x[threadIdx.x] *= factor;"
        >>> Scaled.set_global("factor", np.array([3.0], np.float32))  # doctest: +GPU
        """
        from .._launch import globals as _globals

        _globals.set_global(self, name, value, stream=stream, device=device)

    @_names_the_kernel
    def get_global(self, name: str, dtype: Any = "uint8", *, device: int | None = None) -> Any:
        """Read a module variable back, after the device's work so far.

        Parameters
        ----------
        name : str
            The variable.
        dtype : dtype-like
            How to view its bytes (default: ``uint8``).
        device : int, optional
            Default: the thread's device.

        Returns
        -------
        numpy.ndarray

        Raises
        ------
        ArgumentError
            For a name the module does not have.

        Examples
        --------
        >>> Scaled.get_global("factor", np.float32)  # doctest: +GPU
        array([3.], dtype=float32)
        """
        from .._launch import globals as _globals

        return _globals.get_global(self, name, dtype, device=device)

    def torch_op(self, name: str, **options: Any) -> Any:
        """Register this kernel as a PyTorch operator (imports PyTorch).

        Parameters
        ----------
        name : str
            ``"namespace::name"`` (``"mylib::saxpy"``).
        **options
            ``outputs=``, ``sizes=``, ``backward=``, ``setup_context=``: see
            [`cuforge.torch.custom_op`][cuforge.torch.custom_op].

        Returns
        -------
        callable
            The operator (``torch.ops.mylib.saxpy``).

        Examples
        --------
        >>> import torch  # doctest: +GPU
        >>> saxpy = Saxpy.torch_op("cuforge_doctest::saxpy", sizes={"n": lambda x: x.numel()})  # doctest: +GPU
        >>> y = torch.zeros(4, device="cuda")  # doctest: +GPU
        >>> saxpy(2.0, torch.ones(4, device="cuda"), y)  # mutates y  # doctest: +GPU
        >>> y.tolist()  # doctest: +GPU
        [2.0, 2.0, 2.0, 2.0]
        """
        from ..integrations.torch import custom_op

        return custom_op(self, name, **options)

    def __reduce__(self) -> tuple[Any, ...]:
        """By reference where the class can be imported, else by declaration (see _pickling)."""
        from . import pickling as _pickling

        return _pickling.reduce_kernel(self)

    def __repr__(self) -> str:
        return f"<cuforge.Kernel {self.signature.describe(self.label)}>"

    def _repr_html_(self) -> str:
        from .display import kernel_html

        return kernel_html(self)


class KernelTemplate:
    """A templated ``%%cuda`` kernel (kept here, not in the IPython adapter, so that a worker
    without IPython can unpickle one): index it by its template arguments (``k[cf.float32, 256]``
    or ``k["float", 256]``); call it directly when it has one instantiation.

    Examples
    --------
    A cell ``%%cuda --instantiate 'scale<float>' --instantiate 'scale<double>'`` binds one:

    >>> scale[cf.float64]  # doctest: +SKIP
    <cuforge.Kernel scale<double>(x: Array[float64], a: float64, n: int32)>
    """

    __module__ = "cuforge"

    def __init__(self, name: str, instances: dict[tuple[str, ...], Kernel]):
        self.name = name
        self.instances = instances

    def __getitem__(self, args: Any) -> Kernel:
        """One instantiation the cell made.

        Parameters
        ----------
        args : DType, str or int, or a tuple of them
            The template arguments (``cf.float32``, ``"float"``, ``256``).

        Returns
        -------
        Kernel

        Raises
        ------
        DeclarationError
            For arguments the cell did not instantiate; it lists those it did.
        """
        args = args if isinstance(args, tuple) else (args,)
        spelled = tuple(a.cpp if isinstance(a, DType) else str(a) for a in args)
        found = self.instances.get(spelled)
        if found is None:
            have = ", ".join(f"{self.name}<{', '.join(k)}>" for k in self.instances)
            raise DeclarationError(f"{self.name}<{', '.join(spelled)}> was not instantiated; the cell made {have}")
        return found

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        """Launch the only instantiation.

        Parameters
        ----------
        *args, **kwargs
            As for a [`Kernel`][cuforge.Kernel] call.

        Raises
        ------
        DeclarationError
            Where the cell made more than one instantiation: index it instead.
        """
        if len(self.instances) != 1:
            raise DeclarationError(
                f"{self.name} has {len(self.instances)} instantiations; index it, e.g. {self.name}[cf.float32, 256]"
            )
        next(iter(self.instances.values()))(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<cuforge.KernelTemplate {self.name}: {', '.join(k.name_expression for k in self.instances.values())}>"
