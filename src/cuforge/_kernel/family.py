"""Kernel families: one declaration, instantiated by dtype and integer parameters.

A class with ``cf.typeparam`` / ``cf.intparam`` / ``cf.boolparam`` / ``cf.constparam``
attributes becomes a `Family`. Each combination of values (those the class's
``restrict`` keeps) is a `Kernel` (an explicit specialization of one C++
function template); several are compiled together in one NVRTC program. Calling the family
infers its type parameters from the arrays and takes the integer parameters' defaults, or
the choices `autotune` measured and stored on disk.
"""

from __future__ import annotations

import _thread  # (threading's lock and thread-local types, without importing threading on a warm start)
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .._compile import cache as _cache
from .._compile.artifact import CompiledKernel
from .._compile.targets import default_arch
from .._declare.declaration import Declaration
from .._declare.launch_rules import CALL_OPTIONS
from .._declare.params import TemplateParam
from .._declare.spelling import spell_combination, spell_value
from .._launch import general as _launch
from .._runtime import cuda as _cuda
from ..errors import CompileError, DeclarationError, NoDeviceError
from ..options import CompileOptions
from .kernel import Kernel, current_cc, refuse_compile_in_capture

if TYPE_CHECKING:
    from concurrent.futures import Future

    from .autotune import Tuner
    from .inference import TypeInference

__all__ = ["Family"]

_FREE = object()  # a template parameter a call or an index leaves to its default


class Family:
    """A kernel declared for several dtypes and integer parameters.

    ``F[cf.float64, 512]`` and ``F.instantiate(T=cf.float64, BLOCK=512)`` give one
    instantiation (a [`Kernel`][cuforge.Kernel]); ``F[cf.float64]`` takes defaults for the rest;
    ``F(*args)`` infers type parameters from the arrays and launches.

    Examples
    --------
    >>> @cf.kernel
    ... class Axpy:
    ...     T = cf.typeparam(cf.float32, cf.float64)
    ...     BLOCK = cf.intparam(256, 128)
    ...     a: T
    ...     x: cf.In[T]
    ...     y: cf.Array[T]
    ...     n: cf.int64
    ...     block = "BLOCK"
    ...     body = "long long i = blockIdx.x * (long long)BLOCK + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i];"
    >>> Axpy[cf.float64, 128]
    <cuforge.Kernel Axpy<double, 128>(a: float64, x: In[float64], y: Array[float64], n: int64)>
    >>> Axpy.select(2.0, np.ones(4), np.ones(4), 4).name_expression
    'Axpy<double, 256>'
    """

    __module__ = "cuforge"

    def __init__(self, decl: Declaration):
        self._decl = decl
        self.__name__ = decl.cls.__name__
        self.__qualname__ = decl.cls.__qualname__
        self.__doc__ = decl.cls.__doc__
        self.__wrapped__ = decl.cls
        self.name = decl.name
        self.qualname = decl.qualname
        self.template_params: tuple[TemplateParam, ...] = decl.template_params
        self._names = tuple(n for n, _ in decl.params)
        self._instances: dict[tuple[Any, ...], Kernel] = {}
        self._lock = _thread.allocate_lock()
        self._inference: TypeInference | None = None  # made by the first call that infers types
        # the combinations restrict keeps (None: all of them), looked up where a call's is not
        self._kept = frozenset(decl.combinations) if decl.restrict is not None else None
        self._tuner = None if decl.autotune is None else _tuner(decl, self._candidate)

    # ------------------------------------------------------------ instantiations

    def _instance(self, values: tuple[Any, ...]) -> Kernel:
        found = self._instances.get(values)
        if found is None:
            with self._lock:
                found = self._instances.get(values)
                if found is None:
                    found = Kernel(self._decl, values, self)  # it pickles as its family and values
                    self._instances[values] = found
        return found

    def __getitem__(self, key: Any) -> Kernel:
        """One instantiation, by its template arguments in declaration order.

        Parameters
        ----------
        key : value or tuple of values
            A DType for a type parameter, an int (or bool) for an int (bool) parameter, the C++
            spelling for a constparam; the parameters left out take their defaults (or, where
            ``restrict`` leaves those out, the first combination it keeps).

        Returns
        -------
        Kernel

        Raises
        ------
        DeclarationError
            For too many values, one the parameter does not allow, or a combination the
            class's ``restrict`` leaves out.
        """
        given = key if isinstance(key, tuple) else (key,)
        template_params = self.template_params
        if len(given) > len(template_params):
            raise DeclarationError(
                f"{self._decl.label}[...] takes at most {len(template_params)} values "
                f"({', '.join(t.name for t in template_params)}), got {len(given)}"
            )
        values: list[Any] = [t.resolve(v, self._decl.label) for t, v in zip(template_params, given)]
        values += [_FREE] * (len(template_params) - len(given))
        return self._instance(self._complete(tuple(values)))

    def instantiate(self, **values: Any) -> Kernel:
        """One instantiation by parameter name.

        Parameters
        ----------
        **values
            Template parameter name to value; those left out take their defaults.

        Returns
        -------
        Kernel

        Raises
        ------
        DeclarationError
            For an unknown name, a value the parameter does not allow, or a combination the
            class's ``restrict`` leaves out.

        Examples
        --------
        >>> Axpy.instantiate(T=cf.float64) is Axpy[cf.float64, 256]
        True
        """
        names = [t.name for t in self.template_params]
        unknown = [k for k in values if k not in names]
        if unknown:
            raise DeclarationError(
                f"{self._decl.label}.instantiate(): unknown template parameter(s) {', '.join(unknown)}; "
                f"the family's are {', '.join(names)}"
            )
        return self._instance(
            self._complete(
                tuple(t.resolve(values[t.name], self._decl.label) if t.name in values else _FREE for t in self.template_params)
            )
        )

    def instantiations(self) -> list[Kernel]:
        """Every allowed combination (those the class's ``restrict`` keeps).

        Returns
        -------
        list of Kernel
            In declaration order, the last parameter varying fastest.

        Examples
        --------
        >>> [k.name_expression for k in Axpy.instantiations()]
        ['Axpy<float, 256>', 'Axpy<float, 128>', 'Axpy<double, 256>', 'Axpy<double, 128>']
        """
        return [self._instance(c) for c in self._decl.combinations]

    def precompile(
        self, arch: str | None = None, *, instances: Iterable[Kernel] | None = None, options: CompileOptions | None = None
    ) -> list[CompiledKernel]:
        """Compile every instantiation (or ``instances``); cached ones are skipped. A small family
        is one NVRTC program; a heavy one is split across worker processes (see the guide's
        compile speed page).

        Parameters
        ----------
        arch : str, optional
            As for [`Kernel.compile`][cuforge.Kernel.compile].
        instances : iterable of Kernel, optional
            Instantiations of this family to compile (default: all).
        options : CompileOptions, optional
            Instead of the class's.

        Returns
        -------
        list of CompiledKernel
            In the order of ``instances``.

        Raises
        ------
        CompileError
            After compiling the others, naming each instantiation that failed in Python terms
            (``BlockSort[uint32, 1024, 16]``), with its compiler messages.
        DeclarationError
            For an instance that is not of this family.

        Examples
        --------
        >>> len(Axpy.precompile(arch="sm_90"))
        4
        """
        who = f"{self._decl.label}.precompile()"
        chosen = self.instantiations() if instances is None else list(instances)
        for k in chosen:
            if not isinstance(k, Kernel) or k.family is not self:
                raise DeclarationError(f"{who}: {k!r} is not an instantiation of this family")
        if not chosen:
            return []
        arch = default_arch(who, current_cc) if arch is None else arch
        results, failed = _cache.compile_each(chosen, arch, options, who=who, guard=refuse_compile_in_capture)
        if failed:
            raise failed_instantiations(who, failed, len(chosen))
        return [ck for ck in results if ck is not None]

    def precompile_async(self, arch: str | None = None, *, instances: Iterable[Kernel] | None = None,
                         options: CompileOptions | None = None) -> Future[list[CompiledKernel]]:  # fmt: skip
        """[`precompile`][cuforge.Family.precompile] on cuforge's compile thread. Launches meanwhile wait for the
        instantiations they need.

        Parameters
        ----------
        arch, instances, options
            As for [`precompile`][cuforge.Family.precompile].

        Returns
        -------
        concurrent.futures.Future
            Of the list of [`CompiledKernel`][cuforge.CompiledKernel].

        Examples
        --------
        >>> len(Axpy.precompile_async(arch="sm_90").result())
        4
        """
        chosen = None if instances is None else list(instances)
        from .._compile import parallel as _parallel  # (imported on first use: start-up)

        return _parallel.in_background(self.precompile, arch, instances=chosen, options=options)

    # ------------------------------------------------------------ launching

    def __call__(self, *args: Any, grid: Any = None, block: Any = None, shared_mem: int = 0,
                 stream: Any = None, **kwargs: Any) -> None:  # fmt: skip
        """Infer the type parameters from the arrays, pick the integer parameters (defaults, or
        autotuned), and launch that instantiation with the same arguments.

        Parameters
        ----------
        *args, **kwargs
            The kernel's arguments, and the launch options ``device``, ``cooperative``,
            ``cluster`` as for a [`Kernel`][cuforge.Kernel] call.
        grid, block, shared_mem, stream
            As for a [`Kernel`][cuforge.Kernel] call (a ``grid`` or ``block`` given skips
            autotuning, which times a GPU: on the CPU the integer parameters take their defaults).

        Raises
        ------
        ArgumentTypeError
            Where the arrays bound to a type parameter match no allowed dtype, or disagree.
        """
        options: dict[str, Any] = {}
        if kwargs and not kwargs.keys().isdisjoint(CALL_OPTIONS):  # device=, cooperative=, ...: for the instantiation
            options = {k: kwargs[k] for k in CALL_OPTIONS if k in kwargs}
            kwargs = {k: v for k, v in kwargs.items() if k not in options}
        bound = args if not kwargs and len(args) == len(self._names) else self._bind(args, kwargs)
        types = self._types(bound)
        chosen: dict[str, int] = {}
        if self._tuner is not None and grid is None and block is None and not _cuda.runs_on_cpu(options):  # (tuning times a GPU)
            try:
                chosen = self._tuner.choice(types, bound, shared_mem)
            except NoDeviceError as exc:  # named as a launch of an instantiation is
                raise _cuda.no_device_for(self.name, exc, "precompile") from None
        self._instance(self._values(types, chosen))(*bound, grid=grid, block=block, shared_mem=shared_mem, stream=stream,
                                                    **options)  # fmt: skip

    def select(self, *args: Any, **kwargs: Any) -> Kernel:
        """The instantiation a call with these arguments would launch (type parameters inferred,
        integer parameters at their defaults; autotuning is not consulted).

        Parameters
        ----------
        *args, **kwargs
            The kernel's arguments.

        Returns
        -------
        Kernel
        """
        bound = args if not kwargs and len(args) == len(self._names) else self._bind(args, kwargs)
        types = self._types(bound)
        return self._instance(self._values(types, {}))

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        return _launch.bind(self[()]._plan, args, kwargs)

    def _values(self, types: tuple[Any, ...], chosen: dict[str, int]) -> tuple[Any, ...]:
        """The instantiation of a call: its types, the autotuned choices, defaults for the rest
        (where ``restrict`` leaves that out, the first combination it keeps)."""
        return self._complete(tuple(ty if ty is not None else chosen.get(t.name, _FREE)
                                    for t, ty in zip(self.template_params, types)))  # fmt: skip

    def _types(self, bound: tuple[Any, ...]) -> Any:
        """The type parameters a call's arguments set (``inference``, made on first use)."""
        if self._inference is None:
            from .inference import TypeInference  # (a call that infers types: off start-up)

            self._inference = TypeInference(self._decl)
        return self._inference.types(bound)

    def _candidate(self, types: tuple[Any, ...], choice: dict[str, int]) -> Kernel | None:
        """The instantiation of a call's types with an autotune candidate's values, or None
        where ``restrict`` leaves it out."""
        values = self._completion(tuple(ty if ty is not None else choice.get(t.name, _FREE)
                                        for t, ty in zip(self.template_params, types)))  # fmt: skip
        return None if values is None else self._instance(values)

    def _completion(self, fixed: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """The combination with the ``fixed`` values and defaults for the rest (``_FREE``), or,
        where ``restrict`` leaves that out, the first one it keeps with the fixed values."""
        values = tuple(t.default if v is _FREE else v for t, v in zip(self.template_params, fixed))
        if self._kept is None or values in self._kept:
            return values
        for combo in self._decl.combinations:
            if all(v is _FREE or v == c for v, c in zip(fixed, combo)):
                return combo
        return None

    def _complete(self, fixed: tuple[Any, ...]) -> tuple[Any, ...]:
        found = self._completion(fixed)
        if found is None:
            given = [(t, v) for t, v in zip(self.template_params, fixed) if v is not _FREE]
            spelled = spell_combination(tuple(t for t, _ in given), tuple(v for _, v in given))
            every = "" if len(given) == len(fixed) else "every combination with "
            raise DeclarationError(
                f"{self._decl.label}: {every}{spelled} is left out by the class's restrict {self._decl.restrict}; "
                f"{self.name}.instantiations() lists the combinations it keeps"
            )
        return found

    def tuning(self) -> list[dict[str, Any]]:
        """The autotuning table of this process.

        Returns
        -------
        list of dict
            Per key: the candidates' times, the choice, and whether it was timed now or read
            from disk.
        """
        return [] if self._tuner is None else [dict(row) for row in self._tuner.table]

    def _repr_html_(self) -> str:
        from .display import family_html

        return family_html(self, [ck for inst in self._instances.values() for ck in inst._compiled.values()])

    def torch_op(self, name: str, **options: Any) -> Any:
        """Register the family as a PyTorch operator, each call launching the instantiation its
        tensors' dtypes pick (imports PyTorch).

        Parameters
        ----------
        name : str
            ``"namespace::name"``.
        **options
            See [`cuforge.torch.custom_op`][cuforge.torch.custom_op].

        Returns
        -------
        torch._ops.OpOverload
            The operator, ``torch.ops.namespace.name.default``.
        """
        from ..integrations.torch import custom_op

        return custom_op(self, name, **options)

    def jax_op(self, **options: Any) -> Any:
        """The family as a JAX operation, each traced call using the instantiation its arrays'
        dtypes pick (imports JAX).

        Parameters
        ----------
        **options
            See [`cuforge.jax.op`][cuforge.jax.op].

        Returns
        -------
        callable
            The op: call it on JAX arrays, under ``jax.jit``, ``jax.vmap`` and ``jax.grad``.
        """
        from ..integrations.jax import op

        return op(self, **options)

    def __repr__(self) -> str:
        tps = ", ".join(f"{t.name} in ({', '.join(spell_value(v) for v in t.values)})" for t in self.template_params)
        return f"<cuforge.Family {self.name}[{tps}]>"


def spelled(kernel: Kernel) -> str:
    """An instantiation as Python code names it: ``BlockSort[uint32, 1024, 16]``,
    ``Scan["cub::BLOCK_SCAN_RAKING"]``."""
    return f"{kernel.__name__}[{', '.join(spell_value(v) for v in kernel.template_args.values())}]"


def failed_instantiations(who: str, failed: list[tuple[Kernel, CompileError]], total: int) -> CompileError:
    """One error for the instantiations that did not compile, each named in Python terms with
    its own message; the log, source and flags are the first failure's."""
    names = ", ".join(spelled(k) for k, _ in failed)
    detail = "\n\n".join(f"{spelled(k)}: {exc}" for k, exc in failed)
    first = failed[0][1]
    return CompileError(
        f"{who}: {len(failed)} of {total} instantiations failed to compile: {names} (the other {total - len(failed)} "
        f"compiled); leave those combinations out of the family, or fix the source for them\n\n{detail}",
        log=first.log, source=first.source, options=first.options,
    )  # fmt: skip


def _tuner(decl: Declaration, candidate: Any) -> Tuner:
    """The autotuner of a family that declares ``autotune`` (imported for those only: start-up)."""
    from .autotune import Tuner, checked

    at = checked(decl.autotune, decl)
    assert at is not None  # (decl.autotune is set)
    return Tuner(at, decl, candidate)
