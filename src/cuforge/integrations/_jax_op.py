"""A JAX operation's launch from a cuforge kernel's declaration (``integrations/jax.py`` wraps
it for jit, vmap and grad): the positions of a call's values, the outputs XLA allocates, the
sizes, and, when the call is traced, the checked launch handed to XLA as an FFI call.

Everything here runs when a function is traced (shapes and dtypes are static then): the
per-call work is the FFI handler's (``_jax_ffi.cpp``)."""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._declare import kinds as _kinds
from .._declare.annotations import ArrayType
from .._declare.dtypes import DType
from .._declare.params import TypeParam
from .._launch.abstract import abstract_launch, stand_in
from ..errors import ArgumentError, ArgumentTypeError, DeclarationError
from . import _jax_ffi

VMAP_METHODS = ("sequential", "sequential_unrolled")


class JaxOpSpec:
    """What an op's calls share, read once from the kernel's declaration. A call's values, in
    the kernel's parameter names: its inputs (the op's arguments), the outputs XLA allocates
    (``outputs=``), the sizes computed from shapes (``sizes=``)."""

    def __init__(self, kernel: Any, outputs: Mapping[str, Any], sizes: Mapping[str, Callable[..., int]], vmap_method: str):
        # a Kernel has a signature, a Family its template parameters (as in _torch_op.OpSpec)
        if hasattr(kernel, "signature") and hasattr(kernel, "template_args"):
            params = [(p.name, p.type) for p in kernel.signature.params]
            label, self.family = kernel.label, False
        elif hasattr(kernel, "template_params") and hasattr(kernel, "instantiations"):
            params = list(kernel._decl.params)
            label, self.family = kernel.__qualname__, True
        else:
            raise DeclarationError(f"cf.jax.op(): expects a cuforge Kernel or Family, got {kernel!r}")
        self.label = f"{label} (jax op)"
        if kernel._decl.launch_kind != _kinds.PLAIN:
            raise DeclarationError(f"{self.label}: cooperative and clustered launches cannot be JAX ops yet; launch it directly")
        if self.family and kernel._decl.autotune is not None:
            raise DeclarationError(f"{self.label}: an autotuned family times a GPU per call; index it first "
                                   f"({kernel.__name__}[...]) and make an op of that instantiation")  # fmt: skip
        if vmap_method not in VMAP_METHODS:
            raise DeclarationError(f"{self.label}: vmap_method={vmap_method!r}; use one of {', '.join(map(repr, VMAP_METHODS))}")
        self.kernel, self.vmap_method = kernel, vmap_method
        self.names = [n for n, _ in params]
        self.types = types = dict(params)
        for what, given in (("outputs", outputs), ("sizes", sizes)):
            unknown = [k for k in given if k not in types]
            if unknown:
                raise DeclarationError(f"{self.label}: {what}= names {', '.join(map(repr, unknown))}, which are not "
                                       f"parameters ({', '.join(self.names)})")  # fmt: skip
        for k in sizes:
            if not (isinstance(types[k], DType) and types[k].is_integer):
                raise DeclarationError(f"{self.label}: sizes[{k!r}] must name an integer scalar parameter, not {types[k]!r}")
        self.inputs = [n for n in self.names if n not in outputs and n not in sizes]
        self.out_names = [n for n in self.names if n in outputs]
        for n in self.out_names:
            if not isinstance(types[n], ArrayType) or not types[n].writes:
                raise DeclarationError(f"{self.label}: outputs[{n!r}] must name an Out or Array parameter, not {types[n]!r}")
        self.is_array = [isinstance(types[n], ArrayType) for n in self.inputs]
        # an Array or Out input is written in place: in JAX, a new array returned after the outputs
        self.mutated = [i for i, n in enumerate(self.inputs) if self.is_array[i] and types[n].writes]
        if not self.out_names and not self.mutated:
            raise DeclarationError(f"{self.label}: the kernel writes no array, so a JAX op of it returns nothing; name "
                                   f"its Out array in outputs=")  # fmt: skip
        self.rules = {n: self._rule(n, outputs[n]) for n in self.out_names}
        self.sizes = {k: _named(self.label, f"sizes[{k!r}]", fn, self.inputs + self.out_names) for k, fn in sizes.items()}
        self.out_dtype = {n: self._dtype_rule(n) for n in self.out_names}
        self.results = [*self.out_names, *(self.inputs[i] for i in self.mutated)]
        self._chosen: dict[tuple, Any] = {}

    def batch_names(self, batch: Any) -> frozenset[str]:
        """``batch=``'s array arguments, checked."""
        arrays = [n for i, n in enumerate(self.inputs) if self.is_array[i]]
        if batch is True:
            return frozenset(arrays)
        names = (batch,) if isinstance(batch, str) else tuple(batch)
        bad = [n for n in names if n not in arrays]
        if bad:
            raise DeclarationError(f"{self.label}: batch= names {', '.join(map(repr, bad))}, which are not array arguments "
                                   f"of the op ({', '.join(arrays)})")  # fmt: skip
        return frozenset(names)

    # ------------------------------------------------------------ declaration-time rules

    def _rule(self, name: str, rule: Any) -> tuple[str, Any]:
        """An output's shape rule: ("like", input), ("zeros", input) or ("fn", (fn, names))."""
        if isinstance(rule, str):
            words = rule.split()
            zeros = words[:1] == ["zeros"]
            words = words[1:] if zeros else words
            source = words[1] if len(words) == 2 and words[0] == "like" else None
            if source not in self.inputs or not isinstance(self.types[source], ArrayType):
                raise DeclarationError(
                    f"{self.label}: outputs[{name!r}] = {rule!r}; a shape rule is 'like <array argument>', "
                    f"'zeros like <array argument>' or a function of the arguments returning a shape"
                )
            if self.types[source].optional:
                raise DeclarationError(
                    f"{self.label}: outputs[{name!r}] = {rule!r}, and {source} is Optional: it may be None; take the "
                    f"shape from an array that is always given, or give a function"
                )
            return ("zeros" if zeros else "like", words[1])
        if callable(rule):
            return ("fn", _named(self.label, f"outputs[{name!r}]", rule, self.inputs))
        raise DeclarationError(f"{self.label}: outputs[{name!r}] must be 'like <argument>', 'zeros like <argument>' or a "
                               f"function, got {rule!r}")  # fmt: skip

    def _dtype_rule(self, name: str) -> Any:
        """An output's dtype: a numpy dtype, or the inputs that set a family's T (the first given)."""
        ann = self.types[name]
        if isinstance(ann.dtype, DType):
            return ann.dtype.numpy
        setters = [i for i, n in enumerate(self.inputs) if self.is_array[i] and self.types[n].dtype is ann.dtype]
        if not setters:
            first = f"{ann.dtype.values[0]!r}".replace("cuforge.", "cf.")
            raise DeclarationError(f"{self.label}: no input argument sets {ann.dtype.name}, the dtype of output {name!r} "
                                   f"(outputs are allocated, not read); index the family first: "
                                   f"{self.kernel.__name__}[{first}]")  # fmt: skip
        return setters

    # ------------------------------------------------------------ a call

    def bind(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> list[Any]:
        """A call's inputs in order, by position and by name (Optional arrays left out are None)."""
        names = self.inputs
        if len(args) > len(names):
            raise ArgumentError(f"{self.label}: takes {len(names)} arguments ({', '.join(names)}), got {len(args)} positional")
        bound = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                raise ArgumentError(f"{self.label}: unexpected argument {k!r}; the op's arguments are {', '.join(names)}")
            if k in bound:
                raise ArgumentError(f"{self.label}: argument {k!r} given twice (by position and by name)")
            bound[k] = v
        missing = [n for n in names if n not in bound and not (self.is_array[names.index(n)] and self.types[n].optional)]
        if missing:
            raise ArgumentError(f"{self.label}: missing argument(s) {', '.join(map(repr, missing))}; the op takes "
                                f"({', '.join(names)})")  # fmt: skip
        return [bound.get(n) for n in names]

    def split(self, inputs: list[Any]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """(static values, arrays): the scalars and which Optional arrays are None, hashable, and
        the arrays given, checked, as JAX arrays."""
        statics, arrays = [], []
        first: dict[str, tuple[str, Any]] = {}  # a family's type parameter -> the first array setting it
        for i, (n, v) in enumerate(zip(self.inputs, inputs)):
            if not self.is_array[i]:
                statics.append(self._scalar(n, v))
            elif v is None:
                statics.append(None)
            else:
                arrays.append(self._array(n, v))
                statics.append(_ARRAY)
                t = self.types[n].dtype
                if isinstance(t, TypeParam):
                    seen = first.setdefault(t.name, (n, arrays[-1].dtype))
                    if seen[1] != arrays[-1].dtype:
                        raise ArgumentTypeError(f"{self.label}: arguments '{seen[0]}' ({seen[1]}) and '{n}' "
                                                f"({arrays[-1].dtype}) must share {t.name}; cast one of them")  # fmt: skip
        return tuple(statics), tuple(arrays)

    def join(self, statics: tuple[Any, ...], arrays: tuple[Any, ...]) -> list[Any]:
        it = iter(arrays)
        return [next(it) if s is _ARRAY else s for s in statics]

    def _scalar(self, name: str, value: Any) -> Any:
        if isinstance(value, jax.core.Tracer):
            raise ArgumentTypeError(
                f"{self.label}: argument '{name}' is a {self.types[name].name} scalar, which is part of the compiled "
                f"launch (an FFI attribute), and got a traced value; pass a Python number (mark it static: "
                f"jax.jit(f, static_argnames=...)), or declare it a one-element In array"
            )
        if isinstance(value, (jax.Array, np.ndarray, np.generic)) and np.ndim(value) == 0:
            value = value.item()
        return value

    def _array(self, name: str, value: Any) -> Any:
        ann = self.types[name]
        if not isinstance(value, (jax.Array, jax.core.Tracer)):
            if not hasattr(value, "shape") or not hasattr(value, "dtype"):
                raise ArgumentTypeError(f"{self.label}: argument '{name}' expects {ann!r}, a JAX array, got "
                                        f"{type(value).__name__}")  # fmt: skip
            value = jnp.asarray(value)
        allowed = ann.dtype.values if isinstance(ann.dtype, TypeParam) else (ann.dtype,)
        if np.dtype(value.dtype) not in [d.numpy for d in allowed]:
            want = " or ".join(d.name for d in allowed)
            raise ArgumentTypeError(f"{self.label}: argument '{name}' expects {ann!r} ({want}), got a {value.dtype} array; "
                                    f"cast it with {name}.astype(jnp.{allowed[0].name})")  # fmt: skip
        if ann.ndim is not None and value.ndim != ann.ndim:
            raise ArgumentTypeError(f"{self.label}: argument '{name}' expects {ann!r}, a {ann.ndim}-d array, got shape "
                                    f"{tuple(value.shape)}; reshape it")  # fmt: skip
        return value

    def launch(self, inputs: list[Any]) -> Any:
        """The op on these inputs (traced): its outputs, then its written inputs' new values."""
        outs = {n: self._output(n, inputs) for n in self.out_names}
        by_name = dict(zip(self.inputs, inputs)) | outs
        for k, (fn, at) in self.sizes.items():
            by_name[k] = self._size(k, fn(*[by_name[n] for n in at]))
        fake = tuple(stand_in(tuple(v.shape), v.dtype) if isinstance(self.types[n], ArrayType) and v is not None else v
                     for n, v in ((n, by_name[n]) for n in self.names))  # fmt: skip
        kernel = self._instance(fake)
        checked = abstract_launch(kernel._plan, fake)
        operands = [v for i, v in enumerate(inputs) if self.is_array[i] and v is not None]
        where = {n: k for k, n in enumerate(n for i, n in enumerate(self.inputs) if self.is_array[i] and inputs[i] is not None)}
        results = [jax.ShapeDtypeStruct(o.shape, o.dtype) for o in outs.values()] + [
            jax.ShapeDtypeStruct(inputs[i].shape, inputs[i].dtype) for i in self.mutated if inputs[i] is not None
        ]
        written = [self.inputs[i] for i in self.mutated if inputs[i] is not None]
        result_of = {n: j for j, n in enumerate([*self.out_names, *written])}
        aliases = {where[n]: result_of[n] for n in written}
        for n in self.out_names:
            if self.rules[n][0] == "zeros":  # XLA's buffers are not cleared: a zero operand aliased to the result
                aliases[len(operands)] = result_of[n]
                operands.append(jnp.zeros(outs[n].shape, outs[n].dtype))
        slots = [(p, -1 - result_of[self.names[p]] if self.names[p] in result_of else where[self.names[p]])
                 for p in checked.arrays]  # fmt: skip
        _jax_ffi.shim()  # (built and registered with XLA on the first op traced)
        record = _jax_ffi.LAUNCHES.get(kernel, checked, slots)
        _prepare(record)
        call = jax.ffi.ffi_call(_jax_ffi.TARGET, results, input_output_aliases=aliases or None,
                                vmap_method=self.vmap_method)  # fmt: skip
        out = call(*operands, cuforge_op=np.uint64(record.address), cuforge_token=np.uint64(_jax_ffi.TOKEN))
        return out[0] if len(out) == 1 else tuple(out)

    def _output(self, name: str, inputs: list[Any]) -> Any:
        kind, how = self.rules[name]
        dtype = self.out_dtype[name]
        if not isinstance(dtype, np.dtype):
            given = [inputs[i] for i in dtype if inputs[i] is not None]
            if not given:
                setters = " or ".join(repr(self.inputs[i]) for i in dtype)
                raise ArgumentTypeError(
                    f"{self.label}: output {name!r} takes its dtype from {setters}, which got None; pass an array"
                )
            dtype = given[0].dtype
        if kind == "fn":
            fn, at = how
            shape = fn(*[inputs[self.inputs.index(n)] for n in at])
            shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
            return jax.ShapeDtypeStruct(tuple(self._size(f"outputs[{name!r}]", s) for s in shape), dtype)
        return jax.ShapeDtypeStruct(inputs[self.inputs.index(how)].shape, dtype)

    def _size(self, what: str, value: Any) -> int:
        try:
            return operator.index(value)
        except TypeError:
            raise ArgumentTypeError(
                f"{self.label}: {what} gave {value!r}, not an int; compute it from static shapes (x.shape, x.size), "
                f"which JAX knows when it traces"
            ) from None

    def _instance(self, fake: tuple[Any, ...]) -> Any:
        """The instantiation for these dtypes: asked of the family once per dtypes."""
        if not self.family:
            return self.kernel
        key = tuple(None if v is None else v.dtype if isinstance(v, np.ndarray) else type(v) for v in fake)
        found = self._chosen.get(key)
        if found is None:
            found = self._chosen[key] = self.kernel.select(*fake)
        return found


_ARRAY = object()  # in a call's statics: an array argument's place


def _prepare(record: Any) -> None:
    """Build or load the kernel where the default backend runs it, now, so that cuforge's
    errors are raised when tracing and a GPU's first call (maybe under capture) does no work."""
    default = jax.config.jax_default_device  # type: ignore[attr-defined]  # (jax.default_device(...)): a Device, a platform's name, or None
    backend = getattr(default, "platform", None) or default or jax.default_backend()
    if backend == "cpu":
        record.resolve(_jax_ffi.CPU, 0)
    elif backend in ("gpu", "cuda"):
        for d in jax.local_devices():
            ordinal = getattr(d, "local_hardware_id", None)
            record.resolve(_jax_ffi.CUDA, d.id if ordinal is None else ordinal)


def _named(label: str, what: str, fn: Any, names: list[str]) -> tuple[Callable[..., Any], list[str]]:
    """``fn`` and the call's values its parameters name."""
    if not callable(fn):
        raise DeclarationError(f"{label}: {what} must be a function of the arguments, got {fn!r}")
    wanted = list(inspect.signature(fn).parameters)
    bad = [w for w in wanted if w not in names]
    if bad:
        raise DeclarationError(f"{label}: {what} asks for {', '.join(map(repr, bad))}, which are not arguments of the op")
    return fn, wanted
