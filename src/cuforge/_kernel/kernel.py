"""`Kernel`: one declared kernel (or one instantiation of a family), to compile or call.

A `Kernel` is made from a declaration (``_declare``) by the ``@cf.kernel`` decorator
(``decorator.py``) or by its `Family`. Its source is `KernelSource`'s (``source.py``); compiles
go through the caches (``_compile``); `Loader` loads it on each device. Calls reach the C
launcher (``_csrc/``) first, which hands those it declines to the general path (``_launch``);
what it does on a device besides a call is `OnDevice`'s (``device.py``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._compile import cache as _cache
from .._compile import identity as _identity
from .._compile.artifact import CompiledKernel
from .._compile.identity import CompileUnit
from .._compile.targets import default_arch
from .._declare import kinds as _kinds
from .._declare import launch_rules as _launch_rules
from .._declare import rules as _rules
from .._declare.declaration import Declaration, substitute
from .._declare.instantiations import resolve
from .._declare.signature import Param, Signature, param_specs
from .._launch import general as _launch
from .._launch.claunch import c_launcher
from .._launch.plan import LaunchPlan
from .._runtime import cuda as _cuda
from .._runtime import limits as _limits
from ..errors import CuforgeError, NoDeviceError
from ..options import CompileOptions
from .device import OnDevice
from .loader import Loader
from .source import KernelSource

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = ["CompiledKernel", "Kernel"]


class _PythonCall:
    """Where cuforge's C extension is not built, Kernel's call is this Python method: every
    call takes the general path (see docs/guide/types.md, "Without a C compiler")."""

    _launch_general: Callable[..., None]  # Kernel's: what the C launcher hands a declined call

    def __call__(self, *args: Any, grid: Any = None, block: Any = None, shared_mem: int = 0,
                 stream: Any = None, **kwargs: Any) -> None:  # fmt: skip
        self._launch_general(args, kwargs, grid, block, shared_mem, stream)


# With the extension, calls reach KernelBase's tp_call in C, with no Python frame between:
# KernelBase comes first among Kernel's bases, and no other base defines __call__.
_KernelBase: Any = _cuda.claunch.KernelBase if _cuda.claunch is not None else _PythonCall


class Kernel(_KernelBase, OnDevice):
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
    >>> x, y = np.ones(4, np.float32), np.zeros(4, np.float32)  # doctest: +LAUNCH
    >>> Saxpy(2.0, x, y, 4)  # doctest: +LAUNCH
    >>> y  # doctest: +LAUNCH
    array([2., 2., 2., 2.], dtype=float32)
    """

    __module__ = "cuforge"

    def __init__(self, decl: Declaration, template_args: tuple[Any, ...] = (), family: Any = None):
        self._decl = decl
        cls = decl.cls
        self.__name__ = cls.__name__
        self.__qualname__ = cls.__qualname__
        self.__doc__ = cls.__doc__
        self.__wrapped__ = cls
        self.qualname = decl.qualname  # module.Class: the Python name pickling and cf.registry use
        self.name = decl.name  # the C++ function's name (or a prebuilt module's entry point)
        self.options = decl.options
        self.template_args: dict[str, Any] = {t.name: v for t, v in zip(decl.template_params, template_args)}
        spelled = ", ".join(t.spell(v) for t, v in zip(decl.template_params, template_args))
        # the C++ name expression NVRTC looks up (``Axpy<float, 256>``), and a build's entries are keyed by
        self.name_expression = f"{decl.name}<{spelled}>" if decl.template_params else decl.name
        # what messages call it: the name expression, but a prebuilt entry point's lowered name is unreadable
        self.label = self.name_expression if decl.template_params else cls.__name__ if decl.module is not None else decl.name
        self.signature = Signature(
            tuple(Param(n, i, substitute(ann, self.template_args)) for i, (n, ann) in enumerate(decl.params))
        )
        specs = param_specs(self.signature)
        block = _launch_rules.dims(resolve(decl.block, decl.block_function, self.template_args), "block", self.label,
                                   _launch_rules.BLOCK_LIMIT)  # fmt: skip
        bounds = None if decl.launch_bounds is None else _rules.bounds(
            resolve(decl.launch_bounds, decl.bounds_function, self.template_args))  # fmt: skip
        smem = (None if decl.shared_mem is None
                else _launch_rules.SharedMemRule(self.label, decl.shared_mem, specs, self.template_args))  # fmt: skip
        self._source = KernelSource(decl, self.label, self.signature, self.template_args, self.name_expression, bounds)
        # what both launch paths read, built once (see _launch and _csrc/)
        self._plan = LaunchPlan(self.label, self.signature, specs, block=block, smem=smem, kind=decl.launch_kind,
                                grid=_launch_rules.GridRule(self.label, decl.grid, specs, self.template_args),
                                module=decl.module, load=self._function)  # fmt: skip
        self._loader = Loader(self, self._plan, decl.module, decl.body is None, self._use_launcher)
        self._family = family
        self._compiled: dict[tuple[str, tuple[str, ...]], CompiledKernel] = {}  # for display
        self._fast = c_launcher(self._plan)
        self._plan.cpu = self._cpu_entry
        self._plan.cpu_library = self._cpu_library
        self._plan.cpu_check = self._cpu_checked
        self._cpu: int | None = None  # the entry's address in its CPU library, once built
        self._cpu_lib: Any = None
        self._cpu_check: Any = None  # its checked build, once made
        if decl.source is not None and decl.module is None:
            _cache.note_source_kernel(decl.source, self)  # compiled with the other kernels of its source

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
        prelude, unit, _ = self._source.pieces()
        return prelude + unit

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

    def _headers(self) -> dict[str, str]:
        return self._source.headers()

    def _compile_unit(self) -> CompileUnit:
        """What compiling this kernel takes: its rendered pieces, headers, options and links.

        Returns
        -------
        CompileUnit
        """
        prelude, unit, line_sources = self._source.pieces()
        decl = self._decl
        return CompileUnit(
            label=self.label, name=self.name, qualname=self.qualname, name_expression=self.name_expression,
            prelude=prelude, unit=unit, line_sources=line_sources, headers=self._headers(), options=self.options,
            links=tuple(decl.link), source_text=decl.source, declaration=id(decl), family=bool(decl.template_params),
            on_compiled=self._keep_compiled,
        )  # fmt: skip

    def _keep_compiled(self, ck: CompiledKernel) -> None:
        self._compiled[ck.arch, ck.flags] = ck

    def _key(self, flags: tuple[str, ...], options: CompileOptions) -> str:
        return _identity.key_of(self._compile_unit(), flags, options)

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
            raise self._source.prebuilt("compile()")
        who = f"{self.label}.compile()"
        arch = default_arch(who, current_cc) if arch is None else arch
        return _cache.compile_together([self], arch, options, who=who, guard=refuse_compile_in_capture)[0]

    def _from_caches(self, arch: str) -> CompiledKernel | None:
        """The kernel compiled for ``arch`` (its class's options) from the memory or disk cache,
        else None, compiling nothing."""
        found = _cache.cached_together([self], arch, who=f"{self.label}.compile()")
        return None if found is None else found[0]

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
        """The kernel on ``device``, compiled and loaded on its first launch there."""
        return self._loader.function(device)

    def _cpu_entry(self) -> int:
        """The kernel compiled for the CPU (on its first launch there): its entry's address.
        Kernels declared over the same source= text (a %%cuda cell's) are built with it, in one
        library, so that they share its module variables as they do on a GPU."""
        if self._cpu is None:
            self._cpu_build(checked=False)
        assert self._cpu is not None  # set by the build, with its group's
        return self._cpu

    def _cpu_checked(self) -> Any:
        """The kernel's checked CPU build (a checked launch's: ``_launch.check``), made on first use."""
        if self._cpu_check is None:
            self._cpu_build(checked=True)
        return self._cpu_check

    def _cpu_build(self, *, checked: bool) -> None:
        if self._decl.module is not None:
            raise CuforgeError(
                f"{self.label}: the kernel is prebuilt (module={self._decl.module!r}), GPU code with no source to "
                f"compile for the CPU; launch it on a GPU (device='cuda'), or declare it from its CUDA C++ source"
            )
        from .._cpu import library as _cpu_library  # (the CPU backend loads on its first use)

        unit = self._compile_unit()
        links = self._cpu_links(unit)
        group: list[tuple[Kernel, CompileUnit]] = [(self, unit)]
        if unit.source_text is not None:
            for k in _cache.kernels_over(unit.source_text):
                if isinstance(k, Kernel) and k is not self and (k._cpu_check if checked else k._cpu) is None:
                    other = k._compile_unit()
                    if _cache.same_program(unit, other):
                        group.append((k, other))
        source = unit.prelude + "".join(dict.fromkeys(u.unit for _, u in group))
        lines = {name: text for _, u in group for name, text in u.line_sources.items()}
        program = _cpu_library.build(self.label, source, line_sources=lines, headers=unit.headers, options=unit.options,
                                     entries=[(k.name_expression, len(k._plan.specs)) for k, _ in group], links=links,
                                     checked=checked)  # fmt: skip
        grid_sync = _kinds.uses_grid_sync(source)
        for k, _ in group:
            if checked:
                from .._launch.check import CheckedBuild

                k._cpu_check = CheckedBuild(program.entries[k.name_expression], program.library, program.path, lines,
                                            k._cpu_loaded)  # fmt: skip
            else:
                k._cpu, k._cpu_lib = program.entries[k.name_expression], program.library
            k._plan.grid_sync = k._plan.grid_sync or grid_sync

    def _cpu_loaded(self) -> Any:
        """The kernel's unchecked CPU library where it is built, else None."""
        return self._cpu_lib

    def _cpu_links(self, unit: CompileUnit) -> list[str]:
        """The kernel's ``link=`` sources, compiled into its CPU library with it; prebuilt GPU
        code (a Module) is refused."""
        for i, item in enumerate(unit.links):
            if not isinstance(item, str):
                raise CuforgeError(
                    f"{self.label}: link[{i}] is prebuilt GPU code ({item!r}), which cannot run on the CPU: only CUDA "
                    f"C++ sources in link= are compiled for it; launch the kernel on a GPU (device='cuda')"
                )
        return list(unit.links)

    def _launch_on_cpu(self) -> None:
        """Calls that name no device run on the CPU (``%%cuda --device cpu``)."""
        self._plan.on_cpu = True
        self._fast = None

    def _cpu_library(self) -> Any:
        """The kernel's CPU library (built on first use): where its module variables are."""
        self._cpu_entry()
        return self._cpu_lib

    def _use_launcher(self, launcher: Any) -> None:
        """Calls go to ``launcher`` (a C Launcher), or with None to the general path."""
        self._fast = None if self._plan.on_cpu else launcher

    @property
    def family(self) -> Any:
        """The [`Family`][cuforge.Family] this kernel is an instantiation of (None for a kernel
        declared alone).

        Returns
        -------
        Family or None
        """
        return self._family

    # ------------------------------------------------------------ launching

    def _launch_general(self, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any, block: Any,
                        shared_mem: Any, stream: Any) -> None:  # fmt: skip
        """Every call the C launcher declines: bind, check (raising on bad input), launch."""
        plan = self._plan
        if _cuda.runs_on_cpu(kwargs, plan.on_cpu):
            from .._launch import cpu as _cpu_launch  # (the CPU backend loads on its first use)

            kwargs = {k: v for k, v in kwargs.items() if k != "device"}
            return _cpu_launch.launch(plan, args, kwargs, grid, block, shared_mem, stream)
        checked = _launch.check_and_pack(plan, args, kwargs, grid, block, shared_mem, stream)
        if checked is not None:  # None: the sizing array is empty, nothing to do
            try:
                _launch.launch_checked(plan, checked)
            except NoDeviceError as exc:
                raise _cuda.no_device_for(self.label, exc, cpu_cannot=self._cpu_cannot()) from None

    def _cpu_cannot(self) -> str:
        """Why the CPU cannot run this kernel, '' where it can (for a message: never on a launch)."""
        if self._decl.module is not None:
            return f"it is prebuilt (module={self._decl.module!r}): GPU code, with no source to compile for the CPU"
        from .._cpu.translate import cpu_refusal

        try:
            what = cpu_refusal(self.render())
        except CuforgeError:  # (a body that does not render says so when it is compiled)
            return ""
        return f"it uses {what}, which the CPU backend cannot run" if what else ""

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
        torch._ops.OpOverload
            The operator, ``torch.ops.mylib.saxpy.default``.

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

    def jax_op(self, **options: Any) -> Any:
        """This kernel as a JAX operation: a function of JAX arrays that XLA runs as one FFI
        call (imports JAX).

        Parameters
        ----------
        **options
            ``outputs=``, ``sizes=``, ``backward=``, ``setup_context=``, ``vmap_method=``,
            ``batch=``: see [`cuforge.jax.op`][cuforge.jax.op].

        Returns
        -------
        callable
            The op: call it on JAX arrays, under ``jax.jit``, ``jax.vmap`` and ``jax.grad``.
        """
        from ..integrations.jax import op

        return op(self, **options)

    def __repr__(self) -> str:
        return f"<cuforge.Kernel {self.signature.describe(self.label)}>"

    def _repr_html_(self) -> str:
        from .display import kernel_html

        return kernel_html(self, list(self._compiled.values()))


def run_on_cpu(kernels: list[Kernel], prefer: bool = True, check: bool = False) -> None:
    """Build ``kernels`` for the CPU now (a compile error shows here), and with ``prefer`` make
    the CPU where their calls that name no device run (``%%cuda --device cpu``; without it,
    their calls follow the thread's choice, as a ``%%cuda`` cell's do where the CPU is chosen).
    With ``check`` (``%%cuda --check``), their calls on the CPU run checked unless a call's
    ``check=False`` says otherwise, and the checked build is made now."""
    for k in kernels:
        if prefer:
            k._launch_on_cpu()
        if check:
            k._plan.check_calls = True
            k._cpu_checked()
        else:
            k._cpu_entry()


def current_cc() -> int:
    """The current GPU's compute capability (NoDeviceError without one): what a compile with
    no arch given is for."""
    return _cuda.current_device().cc


def refuse_compile_in_capture(label: str) -> None:
    """Refuse a first compile (NVRTC) inside cf.graph(): it is asked for before NVRTC runs."""
    from .._launch.capture import capture_in_thread  # (imported by the first compile, not at start-up)

    capture = capture_in_thread()
    if capture is not None:
        raise capture.refuse(
            f"{label}: its first compile (NVRTC) would run inside cf.graph(); compile before the capture: "
            f"launch it once, or call .compile() (Family.precompile() for a family), then open the capture"
        )
