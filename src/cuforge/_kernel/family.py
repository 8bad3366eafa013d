"""Kernel families: one declaration, instantiated by dtype and integer parameters.

A class with ``cf.typeparam`` / ``cf.intparam`` / ``cf.boolparam`` / ``cf.constparam``
attributes becomes a `Family`. Each combination of values (those the class's
``restrict`` keeps) is a `Kernel` (an explicit specialization of one C++
function template); several are compiled together in one NVRTC program. Calling the family
infers its type parameters from the arrays and takes the integer parameters' defaults, or
the choices `autotune` measured and stored on disk.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .._compile import cache as _cache
from .._compile import disk as _disk
from .._compile.artifact import CompiledKernel
from .._compile.targets import default_arch
from .._declare.annotations import ArrayType
from .._declare.declaration import Declaration
from .._declare.dtypes import DType
from .._declare.params import TemplateParam, TypeParam
from .._declare.spelling import describe, spell_combination, spell_value
from .._declare.value_params import IntParam
from .._declare.vectors import VectorDType
from .._launch import general as _launch
from .._runtime import cuda as _cuda
from .._runtime.arrays import array_arg, scratch_copy
from ..errors import ArgumentTypeError, CompileError, DeclarationError, DeviceFaultError, NoDeviceError
from ..options import CompileOptions
from .kernel import Kernel, current_cc, refuse_compile_in_capture

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = ["Autotune", "Family", "autotune"]

timing_runs = 0  # candidate timings made by autotuning in this process (tests count them)
_FREE = object()  # a template parameter a call or an index leaves to its default


class Autotune:
    """What a family tunes: candidate values of integer parameters, and the arguments whose
    sizes key the choice (rounded up to a power of two). Built by [`autotune`][cuforge.autotune].

    Examples
    --------
    >>> cf.autotune(BLOCK=[128, 256], key=["n"]).candidates
    {'BLOCK': (128, 256)}
    """

    __module__ = "cuforge"

    def __init__(self, key: Sequence[str] = (), warmup: int = 2, repeat: int = 10, **candidates: Iterable[int]):
        if not candidates:
            raise DeclarationError("cf.autotune(...) needs candidates, e.g. cf.autotune(BLOCK=[128, 256], key=['n'])")
        self.candidates = {name: tuple(values) for name, values in candidates.items()}
        self.key = (key,) if isinstance(key, str) else tuple(key)
        self.warmup, self.repeat = int(warmup), int(repeat)

    def __repr__(self) -> str:
        cands = ", ".join(f"{k}={list(v)}" for k, v in self.candidates.items())
        return f"cuforge.autotune({cands}, key={list(self.key)})"


def autotune(*, key: Sequence[str] = (), warmup: int = 2, repeat: int = 10, **candidates: Iterable[int]) -> Autotune:
    """Declare autotuning for a family: ``autotune = cf.autotune(BLOCK=[128, 256, 512], key=["n"])``.

    On the first call for a key on a GPU, each candidate is timed with CUDA events on scratch
    copies of the written arrays (the caller's outputs are never touched), the fastest is
    chosen, and the choice is stored in the disk cache per (GPU, kernel, instantiation
    source, key).

    Parameters
    ----------
    key : sequence of str
        Parameters whose sizes (an array's element count, an integer's value, rounded up to a
        power of two) key the choice.
    warmup, repeat : int
        Untimed and timed launches of each candidate.
    **candidates : iterable of int
        For each integer template parameter to tune, the values to try.

    Returns
    -------
    Autotune

    Raises
    ------
    DeclarationError
        With no candidates (and, when the class is defined, for a name that is not one of its
        integer parameters or a value it does not allow).

    Examples
    --------
    >>> @cf.kernel
    ... class Tuned:
    ...     BLOCK = cf.intparam(128, 256, 512)
    ...     x: cf.Array[cf.float32]
    ...     n: cf.int64
    ...     block = "BLOCK"
    ...     autotune = cf.autotune(BLOCK=[128, 256, 512], key=["n"])
    ...     body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) x[i] += 1;"
    >>> x = cf.zeros(1 << 16, cf.float32)  # doctest: +GPU
    >>> Tuned(x, 1 << 16)  # times 128, 256 and 512 on a scratch copy of x, then launches  # doctest: +GPU
    >>> len(Tuned.tuning()), float(x.to_numpy()[0])  # doctest: +GPU
    (1, 1.0)
    """
    return Autotune(key, warmup, repeat, **candidates)


def _shape(value: Any) -> tuple[int, ...]:
    arg = array_arg(value)
    return arg.shape if arg is not None else ()


def _origin(value: Any) -> str | None:
    arg = array_arg(value)
    return arg.origin if arg is not None else None


def _fitting(values: tuple[DType, ...], arg: Any) -> list[DType]:
    """The allowed dtypes an array can be bound to: a vector type of its dtype as long as its
    last dimension first (that dimension says it holds vectors), then its own dtype."""
    if arg is None:
        return []
    dt, shape = arg.dtype, arg.shape
    vectors = [v for v in values if isinstance(v, VectorDType) and v.element is dt and shape and shape[-1] == v.lanes]
    return vectors + [v for v in values if v is dt]


def _no_fit(t: TypeParam, name: str, arg: Any, value: Any) -> str:
    """The rest of the error for an argument that fits none of ``t``'s dtypes: what it got
    and the cast that fixes it (indexing the family cannot: it takes the same dtypes)."""
    vectors = any(isinstance(v, VectorDType) for v in t.values)
    if arg is None:
        got = describe(value)
    else:
        got = f"an array of {arg.dtype.name}" + (f" of shape {arg.shape}" if vectors else "")
    want = t.values[0]
    if isinstance(want, VectorDType):
        cast = f"{name}.astype({_numpy_name(want.element)}) with shape (..., {want.lanes})"
    else:
        cast = f"{name}.astype({_numpy_name(want)})"
    allowed = ", ".join(v.name for v in t.values)
    return f"which allows {allowed}; got {got}; cast it to one of those (e.g. {cast}): the family has no other instantiations"


def _numpy_name(dtype: DType) -> str:
    return "ml_dtypes.bfloat16" if dtype.name == "bfloat16" else f"numpy.{dtype.name}"


def _bucket(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


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
        self.template_params: tuple[TemplateParam, ...] = decl.tparams
        self._names = tuple(n for n, _ in decl.params)
        self._instances: dict[tuple[Any, ...], Kernel] = {}
        self._lock = threading.Lock()
        # Where each type parameter can be read off the arguments: its array parameters (an
        # Optional one given None sets nothing).
        self._optional = frozenset(i for i, (_, ann) in enumerate(decl.params) if isinstance(ann, ArrayType) and ann.optional)
        self._type_sources = {
            t.name: tuple(i for i, (_, ann) in enumerate(decl.params) if isinstance(ann, ArrayType) and ann.dtype is t)
            for t in decl.tparams
            if isinstance(t, TypeParam)
        }
        # the combinations restrict keeps (None: all of them), looked up where a call's is not
        self._kept = frozenset(decl.combinations) if decl.restrict is not None else None
        self._autotune = self._check_autotune(decl.autotune)
        self._choices: dict[tuple[Any, ...], dict[str, int]] = {}
        self._table: list[dict[str, Any]] = []

    # ------------------------------------------------------------ instantiations

    def _check_autotune(self, at: Any) -> Autotune | None:
        if at is None:
            return None
        label = self._decl.label
        if not isinstance(at, Autotune):
            raise DeclarationError(f"{label}: autotune must be cf.autotune(...), got {at!r}")
        ints = {t.name: t for t in self.template_params if isinstance(t, IntParam)}
        for name, values in at.candidates.items():
            if name not in ints:
                raise DeclarationError(
                    f"{label}: autotune candidate {name!r} is not an intparam of this family "
                    f"(intparams: {', '.join(ints) or 'none'})"
                )
            for v in values:
                ints[name].resolve(v, label)
        for k in at.key:
            if k not in self._names:
                raise DeclarationError(
                    f"{label}: autotune key {k!r} names no parameter; the parameters are {', '.join(self._names)}"
                )
            ann = dict(self._decl.params)[k]
            if not isinstance(ann, ArrayType) and not (isinstance(ann, DType) and ann.is_integer):
                raise DeclarationError(f"{label}: autotune key {k!r} must be an integer or array parameter")
        return at

    def _instance(self, values: tuple[Any, ...]) -> Kernel:
        found = self._instances.get(values)
        if found is None:
            with self._lock:
                found = self._instances.get(values)
                if found is None:
                    found = Kernel(self._decl, values)
                    found._family = self  # an instantiation pickles as its family and values
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
        tparams = self.template_params
        if len(given) > len(tparams):
            raise DeclarationError(
                f"{self._decl.label}[...] takes at most {len(tparams)} values "
                f"({', '.join(t.name for t in tparams)}), got {len(given)}"
            )
        values: list[Any] = [t.resolve(v, self._decl.label) for t, v in zip(tparams, given)]
        values += [_FREE] * (len(tparams) - len(given))
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
            if not isinstance(k, Kernel) or k._decl is not self._decl:
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
            The kernel's arguments.
        grid, block, shared_mem, stream
            As for a [`Kernel`][cuforge.Kernel] call (a ``grid`` or ``block`` given skips autotuning).

        Raises
        ------
        ArgumentTypeError
            Where the arrays bound to a type parameter match no allowed dtype, or disagree.
        """
        bound = args if not kwargs and len(args) == len(self._names) else self._bind(args, kwargs)
        types = tuple(self._infer(t, bound) if isinstance(t, TypeParam) else None for t in self.template_params)
        at = self._autotune
        chosen: dict[str, int] = {}
        if at is not None and grid is None and block is None:
            try:
                chosen = self._choice(types, bound, stream, shared_mem)
            except NoDeviceError as exc:  # named as a launch of an instantiation is
                raise _cuda.no_device_for(self.name, exc, "precompile") from None
        self._instance(self._values(types, chosen))(*bound, grid=grid, block=block, shared_mem=shared_mem, stream=stream)

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
        types = tuple(self._infer(t, bound) if isinstance(t, TypeParam) else None for t in self.template_params)
        return self._instance(self._values(types, {}))

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        return _launch.bind(self[()]._plan, args, kwargs)

    def _infer(self, t: TypeParam, bound: tuple[Any, ...]) -> DType:
        """The first allowed dtype (in declaration order) that every array bound to ``t`` can
        be: its own dtype, or a vector type whose lanes are that dtype and whose length is
        the array's last dimension. An Optional array given None (or left out) sets nothing;
        where no array sets ``t``, it takes its default."""
        common: list[DType] = []  # what every array so far fits, best first
        first = ""
        for i in self._type_sources[t.name]:
            if bound[i] is None and i in self._optional:
                continue
            arg = array_arg(bound[i])
            name = self._names[i]
            fits = _fitting(t.values, arg)
            if not fits:
                raise ArgumentTypeError(f"{self._decl.label}: argument '{name}' sets {t.name}, {_no_fit(t, name, arg, bound[i])}")
            kept = [v for v in common if v in fits] if first else fits
            if not kept:
                raise ArgumentTypeError(
                    f"{self._decl.label}: arguments '{first}' ({common[0].name}) and '{name}' "
                    f"({fits[0].name}) must share {t.name}; cast one of them"
                )
            common, first = kept, first or name
        return common[0] if common else t.default

    # ------------------------------------------------------------ autotuning

    def _choice(self, types: tuple[Any, ...], bound: tuple[Any, ...], stream: Any, shared_mem: Any = 0) -> dict[str, int]:
        at = self._autotune
        assert at is not None
        buckets = tuple(
            _bucket(math.prod(_shape(bound[self._names.index(k)])))
            if isinstance(dict(self._decl.params)[k], ArrayType)
            else _bucket(int(bound[self._names.index(k)]))
            for k in at.key
        )
        memo = (types, buckets)
        found = self._choices.get(memo)
        if found is not None:
            return found
        candidates, kernels = [], []
        for combo in itertools.product(*at.candidates.values()):
            c = dict(zip(at.candidates, combo))
            values = self._completion(tuple(ty if ty is not None else c.get(t.name, _FREE)
                                            for t, ty in zip(self.template_params, types)))  # fmt: skip
            if values is not None:  # restrict keeps it
                candidates.append(c)
                kernels.append(self._instance(values))
        if not kernels:
            typed = [(t, ty) for t, ty in zip(self.template_params, types) if ty is not None]
            where = f" for {spell_combination(*zip(*typed))}" if typed else ""
            raise DeclarationError(
                f"{self._decl.label}: the class's restrict {self._decl.restrict} leaves out every autotune candidate"
                f"{where}; add candidates it keeps"
            )
        device = _cuda.current_device()
        source_hash = hashlib.sha256("".join(k.render() for k in kernels).encode()).hexdigest()[:16]
        key_text = ",".join(f"{k}={b}" for k, b in zip(at.key, buckets)) or "-"
        types_text = ",".join(ty.name for ty in types if ty is not None)
        record_key = f"{device.name}|{types_text}|{key_text}|{source_hash}"
        store = _TuningStore(self.qualname)
        record = store.get(record_key)
        origin = "disk"
        if record is None or record.get("choice") not in candidates:
            from .._launch.capture import capture_in_thread

            capture = capture_in_thread()
            if capture is not None:
                raise capture.refuse(
                    f"{self._decl.label}: autotuning would time {len(kernels)} candidates here, which a CUDA graph "
                    f"cannot hold; call the family once with these shapes before cf.graph(), so the choice is made"
                )
            times = self._time(kernels, bound, at, shared_mem)
            best = min(range(len(kernels)), key=lambda i: times[i])
            record = {"choice": candidates[best], "times_ms": [[c, t] for c, t in zip(candidates, times)]}
            store.put(record_key, record)
            origin = "timed"
        self._choices[memo] = dict(record["choice"])
        self._table.append(
            {
                "types": types_text,
                "key": key_text,
                "gpu": device.name,
                "choice": dict(record["choice"]),
                "times_ms": record["times_ms"],
                "from": origin,
            }
        )
        return self._choices[memo]

    def _values(self, types: tuple[Any, ...], chosen: dict[str, int]) -> tuple[Any, ...]:
        """The instantiation of a call: its types, the autotuned choices, defaults for the rest
        (where ``restrict`` leaves that out, the first combination it keeps)."""
        return self._complete(tuple(ty if ty is not None else chosen.get(t.name, _FREE)
                                    for t, ty in zip(self.template_params, types)))  # fmt: skip

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

    def _time(self, kernels: list[Kernel], bound: tuple[Any, ...], at: Autotune, shared_mem: Any = 0) -> list[float]:
        """Milliseconds per launch of each candidate, on scratch copies of the arrays it writes
        (an Optional one given None stays None), with the call's dynamic shared memory (a candidate launched without what its
        ``extern __shared__`` array needs would fault the GPU). A fault is named as the
        candidate's, while tuning."""
        global timing_runs

        params = kernels[0].signature.params
        keep: list[Any] = []
        args = []
        for p, value in zip(params, bound):
            if p.is_array and value is not None and (p.type.writes or _origin(value) == "numpy"):  # None: Optional
                copy = scratch_copy(value, p.dtype)
                keep.append(copy)
                args.append(copy)
            else:
                args.append(value)
        driver = _cuda.bindings()
        start = _cuda.check(driver.cuEventCreate(0), "cuEventCreate")
        stop = _cuda.check(driver.cuEventCreate(0), "cuEventCreate")
        times = []
        try:
            for k in kernels:
                where = f"autotuning {self._decl.label}: candidate {k.name_expression} (shared_mem={shared_mem})"
                try:
                    for _ in range(at.warmup):
                        k(*args, stream=0, shared_mem=shared_mem)
                    _cuda.check(driver.cuEventRecord(start, 0), "cuEventRecord")
                    for _ in range(at.repeat):
                        k(*args, stream=0, shared_mem=shared_mem)
                    _cuda.check(driver.cuEventRecord(stop, 0), "cuEventRecord")
                    _cuda.check(driver.cuEventSynchronize(stop), where)
                except DeviceFaultError as exc:  # reported by whichever call came next: say it was the tuning
                    raise DeviceFaultError(f"{where} faulted the GPU: {exc}") from None
                ms = _cuda.check(driver.cuEventElapsedTime(start, stop), "cuEventElapsedTime")
                times.append(float(ms) / at.repeat)
                timing_runs += 1
        finally:
            driver.cuEventDestroy(start)
            driver.cuEventDestroy(stop)
        return times

    def tuning(self) -> list[dict[str, Any]]:
        """The autotuning table of this process.

        Returns
        -------
        list of dict
            Per key: the candidates' times, the choice, and whether it was timed now or read
            from disk.
        """
        return [dict(row) for row in self._table]

    def _repr_html_(self) -> str:
        from .display import family_html

        return family_html(self)

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
        callable
            The operator.
        """
        from ..integrations.torch import custom_op

        return custom_op(self, name, **options)

    def __repr__(self) -> str:
        tps = ", ".join(f"{t.name} in ({', '.join(spell_value(v) for v in t.values)})" for t in self.template_params)
        return f"<cuforge.Family {self.name}[{tps}]>"


def spelled(kernel: Kernel) -> str:
    """An instantiation as Python code names it: ``BlockSort[uint32, 1024, 16]``,
    ``Scan["cub::BLOCK_SCAN_RAKING"]``."""
    return f"{kernel._decl.cls.__name__}[{', '.join(spell_value(v) for v in kernel.template_args.values())}]"


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


class _TuningStore:
    """Autotuning choices of one family, as checksummed JSON records in the disk cache (the
    same directory, atomic writes and damage checks as compiled kernels). With the disk
    cache off, choices last for the process only."""

    def __init__(self, qualname: str):
        self.prefix = f"tune:{qualname}|"

    def get(self, key: str) -> dict[str, Any] | None:
        disk = _disk.current()
        return disk.get_json(self.prefix + key) if disk is not None else None

    def put(self, key: str, record: dict[str, Any]) -> None:
        disk = _disk.current()
        if disk is not None:
            disk.put_json(self.prefix + key, record)
