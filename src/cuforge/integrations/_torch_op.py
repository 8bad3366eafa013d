"""A PyTorch operator's implementation from a cuforge kernel's declaration: the positions of
a call's values, the outputs' allocation, the sizes, the launch (``integrations/torch.py``
registers what this builds)."""

from __future__ import annotations

import functools
import inspect
import operator
import typing
from collections.abc import Callable, Mapping
from typing import Any

import torch

from .._declare.annotations import ArrayType
from .._declare.dtypes import DType
from .._declare.params import TypeParam
from .._runtime import arrays as _arrays
from .._runtime import libcuda as _libcuda
from ..errors import ArgumentTypeError, DeclarationError


def _torch_dtype(dtype: DType, label: str) -> Any:
    found = getattr(torch, dtype.name, None)
    if not isinstance(found, torch.dtype):
        raise DeclarationError(f"{label}: this PyTorch has no dtype for {dtype.name}")
    return found


class OpSpec:
    """What the operator's implementations share, read once from the kernel's declaration when
    the operator is registered. A call's values are positional, in the order the operator's
    schema gives them (its inputs), followed by the outputs it allocates, then the sizes it
    computes: every rule below is a position in that row, found here once."""

    def __init__(self, kernel: Any, name: str, outputs: Mapping[str, Any], sizes: Mapping[str, Callable[..., int]]):
        # told apart by what each has (the core's classes are not imported here: they import this
        # module for their torch_op): a Kernel its signature, a Family its template parameters
        if hasattr(kernel, "signature") and hasattr(kernel, "template_args"):
            params = [(p.name, p.type) for p in kernel.signature.params]
            self.label, self.family = kernel.label, False
        elif hasattr(kernel, "template_params") and hasattr(kernel, "instantiations"):
            params = list(kernel._decl.params)
            self.label, self.family = kernel.__qualname__, True
        else:
            raise DeclarationError(f"cf.torch.custom_op(): expects a cuforge Kernel or Family, got {kernel!r}")
        self.label = f"{self.label} (torch op {name})"
        self.kernel, self.names = kernel, [n for n, _ in params]
        self.types = types = dict(params)
        for what, given in (("outputs", outputs), ("sizes", sizes)):
            unknown = [k for k in given if k not in types]
            if unknown:
                raise DeclarationError(
                    f"{self.label}: {what}= names {', '.join(map(repr, unknown))}, which are not parameters "
                    f"({', '.join(self.names)})"
                )
        for k in sizes:
            if not (isinstance(types[k], DType) and types[k].is_integer):
                raise DeclarationError(f"{self.label}: sizes[{k!r}] must name an integer scalar parameter, not {types[k]!r}")
        self.inputs = [n for n in self.names if n not in outputs and n not in sizes]
        out_names = [n for n in self.names if n in outputs]
        self.row = self.inputs + out_names + [n for n in self.names if n in sizes]  # a call's values, in order
        self.tensors = [i for i, n in enumerate(self.inputs) if isinstance(types[n], ArrayType)]
        self.outputs = [self._output(n, outputs[n], {**outputs, **sizes}) for n in out_names]
        self.sizes = [_picks(self.label, f"sizes[{k!r}]", fn, self.row, sizes) for k, fn in sizes.items()]  # (fn, positions)
        self.mutated = tuple(n for n in self.inputs if isinstance(types[n], ArrayType) and types[n].writes)
        # a family's instantiation: by the dtypes of the inputs that set a type parameter (their
        # positions in the kernel's parameters), unless it is autotuned (then by the call's sizes)
        self.tuned = self.family and kernel._decl.autotune is not None
        self.setters = [self.names.index(n) for n in self.inputs
                        if isinstance(types[n], ArrayType) and isinstance(types[n].dtype, TypeParam)]  # fmt: skip
        self.prototype = self._prototype()

    def _output(self, name: str, rule: Any, computed: Mapping[str, Any]) -> _Output:
        """The output's allocation."""
        types, ann = self.types, self.types[name]
        if not isinstance(ann, ArrayType) or not ann.writes:
            raise DeclarationError(f"{self.label}: outputs[{name!r}] must name an Out or Array parameter, not {ann!r}")
        zeros = False
        if isinstance(rule, str):
            words = rule.split()
            if words[:1] == ["zeros"]:
                zeros, words = True, words[1:]
            if len(words) != 2 or words[0] != "like" or words[1] in computed or not isinstance(types.get(words[1]), ArrayType):
                raise DeclarationError(
                    f"{self.label}: outputs[{name!r}] = {rule!r}; a shape rule is 'like <tensor argument>', "
                    f"'zeros like <tensor argument>' or a function of the arguments returning a shape"
                )
            if types[words[1]].optional:
                raise DeclarationError(
                    f"{self.label}: outputs[{name!r}] = {rule!r}, and {words[1]} is Optional: it may be None; take the "
                    f"shape from a tensor that is always given, or give a function of the arguments"
                )
            source, dtype = self.inputs.index(words[1]), self._dtype(name, ann, words[1])
            return _Output(_like(source, dtype, zeros), source if dtype is None or isinstance(dtype, torch.dtype) else -1,
                           dtype, zeros)  # fmt: skip
        if callable(rule):
            shape = _applied(*_picks(self.label, f"outputs[{name!r}]", rule, self.inputs, computed))
            return _Output(_shaped(shape, self._dtype(name, ann, None), self.tensors), -1, None, False)
        raise DeclarationError(
            f"{self.label}: outputs[{name!r}] must be 'like <argument>', 'zeros like <argument>' or a function, got {rule!r}"
        )

    def _dtype(self, name: str, ann: ArrayType, source: str | None) -> Callable[[tuple], Any] | Any:
        """An output's dtype: a torch dtype, or for a family's Out[T] a function of the call's
        inputs (T's dtype, read off the first input tensor that sets it and is not None;
        outputs are allocated by the operator, so they cannot set it)."""
        if isinstance(ann.dtype, DType):
            return _torch_dtype(ann.dtype, self.label)
        setters = [n for n in self.inputs if isinstance(self.types[n], ArrayType) and self.types[n].dtype is ann.dtype]
        if not setters:
            first = f"{ann.dtype.values[0]!r}".replace("cuforge.", "cf.")
            raise DeclarationError(
                f"{self.label}: no input argument sets {ann.dtype.name}, the dtype of output {name!r} (outputs are "
                f"allocated, not read); index the family first: {self.kernel.__name__}[{first}].torch_op(...)"
            )
        if source in setters:
            return None  # the dtype of the tensor it is shaped like
        where = [self.inputs.index(n) for n in setters]

        def dtype(args: tuple) -> Any:
            for i in where:
                if args[i] is not None:
                    return args[i].dtype
            raise ArgumentTypeError(
                f"{self.label}: output {name!r} takes its dtype from tensor argument "
                f"{' or '.join(map(repr, setters))}, which got None; pass {'it' if len(setters) == 1 else 'one of them'} "
                f"as a tensor, or index the family"
            )

        return dtype

    def _prototype(self) -> Callable[..., Any]:
        """A function with the operator's signature, from which torch.library reads its schema."""

        def annotation(t: Any) -> Any:
            if isinstance(t, ArrayType):
                return typing.Optional[torch.Tensor] if t.optional else torch.Tensor  # noqa: UP045
            values = t.values if isinstance(t, TypeParam) else (t,)
            kinds = {v.kind for v in values}
            if kinds <= {"f"}:
                return float
            if kinds <= {"i", "u"}:
                return int
            if kinds == {"b"}:
                return bool
            raise DeclarationError(
                f"{self.label}: a {t.name} scalar has no PyTorch schema type (float, int or bool); pass it as a "
                f"one-element tensor (an In array) instead"
            )

        def op(*args: Any) -> Any:
            raise NotImplementedError  # read for its signature only

        returns: Any = None
        if len(self.outputs) == 1:
            returns = torch.Tensor
        elif self.outputs:
            returns = tuple[tuple(torch.Tensor for _ in self.outputs)]  # type: ignore[misc]
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        op.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(n, kind, annotation=annotation(self.types[n])) for n in self.inputs], return_annotation=returns
        )
        return op

    def runner(self, on_cpu: bool) -> Callable[..., Any]:
        """The implementation for CUDA tensors (``on_cpu`` False) or CPU tensors (cuforge's CPU
        backend): allocate the outputs, compute the sizes, launch, return the outputs. It runs on
        every call, so it is the C launcher's ``OpRunner``, following positions found here;
        without the C extension (or for an autotuned family, which picks by sizes), Python
        follows the same positions."""
        claunch = _libcuda.claunch
        if claunch is None or self.tuned or any(len(at) > 8 for _, at in self.sizes):
            return self.python_runner(on_cpu)
        _arrays.meet(torch.Tensor)  # the C launcher reads tensors through torch.Tensor's methods
        return claunch.OpRunner(  # type: ignore[no-any-return]
            self.kernel, self.kernel.select if self.family else None, {"device": "cpu"} if on_cpu else None,
            len(self.inputs), [self.row.index(n) for n in self.names], self.setters,
            [(o.source, o.dtype if o.source >= 0 else None, o.zeros, o.alloc) for o in self.outputs],
            torch.device("cpu") if on_cpu else None, [(fn, at) for fn, at in self.sizes],
            [self.inputs.index(n) for n in self.mutated], _increment_version, torch.empty_like, torch.zeros_like,
        )  # fmt: skip

    def python_runner(self, on_cpu: bool) -> Callable[..., Any]:
        """``runner`` in Python."""
        allocate, launch = [o.alloc for o in self.outputs], self._launcher(on_cpu)
        one = [(fn, at[0]) for fn, at in self.sizes if len(at) == 1]
        many = [(fn, operator.itemgetter(*at)) for fn, at in self.sizes if len(at) > 1]
        pick = operator.itemgetter(*[self.row.index(n) for n in self.names])
        single = len(self.names) == 1
        mutated = [self.inputs.index(n) for n in self.mutated]
        default = torch.device("cpu") if on_cpu else None
        first, count = len(self.inputs), len(allocate)

        def run(*args: Any) -> Any:
            row = args + tuple([alloc(args, default) for alloc in allocate]) if allocate else args
            if one or many:
                row += tuple([fn(row[i]) for fn, i in one] + [fn(*at(row)) for fn, at in many])
            launch(*((pick(row),) if single else pick(row)))
            if mutated:  # as PyTorch's in-place ops do, so that autograd sees the writes
                _increment_version([args[i] for i in mutated if args[i] is not None])
            return None if not count else row[first] if count == 1 else row[first:first + count]

        return run

    def _launcher(self, on_cpu: bool) -> Callable[..., None]:
        """The launch of one call's values, in the kernel's parameter order. A family's
        instantiation is looked up by the dtypes of the tensors that set its type parameters;
        the first call with new dtypes asks the family (which names dtypes it cannot take)."""
        kernel = self.kernel
        if not self.family or self.tuned:
            return functools.partial(kernel, device="cpu") if on_cpu else kernel  # type: ignore[no-any-return]
        options = {"device": "cpu"} if on_cpu else {}
        setters = self.setters
        chosen: dict[tuple, Any] = {}

        def launch(*values: Any) -> None:
            key = tuple([None if values[i] is None else values[i].dtype for i in setters])
            found = chosen.get(key)
            if found is None:
                found = chosen[key] = kernel.select(*values)
            found(*values, **options)

        return launch

    def fake(self, *args: Any) -> Any:
        """The fake implementation (``torch.compile``, meta tensors): the dtype checks the launch
        makes, named while tracing, and outputs of the right shape, dtype and device."""
        self._check_dtypes(args)
        outs = tuple([o.alloc(args, None) for o in self.outputs])
        return None if not outs else outs[0] if len(outs) == 1 else outs

    def _check_dtypes(self, args: tuple) -> None:
        for i in self.tensors:
            n, ann = self.inputs[i], self.types[self.inputs[i]]
            allowed = ann.dtype.values if isinstance(ann.dtype, TypeParam) else (ann.dtype,)
            t = args[i]
            if t is None and ann.optional:
                continue
            if not isinstance(t, torch.Tensor) or t.dtype not in [_torch_dtype(d, self.label) for d in allowed]:
                got = f"a {t.dtype} tensor" if isinstance(t, torch.Tensor) else repr(type(t).__name__)
                want = " or ".join(d.name for d in allowed)
                raise ArgumentTypeError(
                    f"{self.label}: argument '{n}' expects {ann!r} ({want}), got {got}; cast it with "
                    f"{n}.to(torch.{allowed[0].name})"
                )


_increment_version = torch.autograd.graph.increment_version


class _Output(typing.NamedTuple):
    """An output the operator allocates: its allocator (a function of the call's inputs and the
    device to use where no tensor gives one), and for the C runner the input it is shaped like
    (-1: the allocator serves), its dtype (a torch dtype, or None for that input's) and fill."""

    alloc: Callable[[tuple, Any], Any]
    source: int
    dtype: Any
    zeros: bool


def _like(source: int, dtype: Any, zeros: bool) -> Callable[[tuple, Any], Any]:
    """An output shaped like input tensor ``source``, on its device, C-contiguous (the launch
    checks ask for that) even where ``source`` is not."""
    fill = torch.zeros_like if zeros else torch.empty_like

    def alloc(args: tuple, default: Any) -> Any:
        like = args[source]
        dt = like.dtype if dtype is None else dtype if isinstance(dtype, torch.dtype) else dtype(args)
        if not like.is_contiguous():
            return fill(like, dtype=dt, memory_format=torch.contiguous_format)
        return fill(like) if like.dtype is dt else fill(like, dtype=dt)  # (each keyword costs PyTorch's parser)

    return alloc


def _shaped(shape: Callable[[tuple], Any], dtype: Any, tensors: list[int]) -> Callable[[tuple, Any], Any]:
    """An output whose shape a function of the arguments gives, on the first tensor argument's
    device (or ``default``; else the current CUDA device)."""

    def alloc(args: tuple, default: Any) -> Any:
        dt = dtype if isinstance(dtype, torch.dtype) else dtype(args)
        size = shape(args)  # a shape, or one size (an int, or a SymInt while tracing)
        dims = tuple(size) if isinstance(size, (tuple, list, torch.Size)) else (size,)
        for i in tensors:
            if args[i] is not None:  # Tensor.new_empty: its device, parsed faster than torch.empty's keywords
                return args[i].new_empty(dims) if args[i].dtype is dt else args[i].new_empty(dims, dtype=dt)
        device = default if default is not None else torch.device("cuda", torch.cuda.current_device())
        return torch.empty(dims, dtype=dt, device=device)

    return alloc


def _picks(label: str, what: str, fn: Any, row: list[str], exclude: Mapping[str, Any]) -> tuple[Callable[..., Any], list[int]]:
    """``fn`` and the positions, in a call's row, of the values its parameters name."""
    if not callable(fn):
        raise DeclarationError(f"{label}: {what} must be a function of the arguments, got {fn!r}")
    wanted = list(inspect.signature(fn).parameters)
    bad = [w for w in wanted if w not in row or w in exclude]
    if bad:
        raise DeclarationError(f"{label}: {what} asks for {', '.join(map(repr, bad))}, which are not arguments of the op")
    return fn, [row.index(w) for w in wanted]


def _applied(fn: Callable[..., Any], at: list[int]) -> Callable[[tuple], Any]:
    """``fn`` of the values at positions ``at`` of a call's row, as one function of the row."""
    pick = operator.itemgetter(*at) if len(at) > 1 else None
    if pick is None:
        (i,) = at
        return lambda values: fn(values[i])
    return lambda values: fn(*pick(values))
