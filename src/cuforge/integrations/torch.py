"""PyTorch operators from cuforge kernels; the public face is ``cuforge.torch``."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any

import torch

from ..errors import ArgumentTypeError, DeclarationError

if not hasattr(torch.library, "custom_op"):
    raise ImportError(f"cuforge.torch needs PyTorch 2.4 or later (torch.library.custom_op); this is {torch.__version__}")
from .._declare.annotations import ArrayType
from .._declare.dtypes import DType
from .._declare.params import TypeParam

__all__ = ["custom_op"]


def custom_op(kernel: Any, name: str, *, outputs: Mapping[str, Any] | None = None,
              sizes: Mapping[str, Callable[..., int]] | None = None, backward: Callable[..., Any] | None = None,
              setup_context: Callable[..., Any] | None = None) -> Any:  # fmt: skip
    """Register ``kernel`` (a [`Kernel`][cuforge.Kernel] or a whole [`Family`][cuforge.Family])
    as the PyTorch operator ``name`` (``"mylib::saxpy"``) and return it.

    Parameters
    ----------
    kernel : Kernel or Family
        A family's instantiation is picked per call from the tensors' dtypes, as calling the
        family does.
    name : str
        ``"namespace::op"``, as ``torch.library.custom_op`` takes it.
    outputs : dict, optional
        The functional form: each ``Out`` (or ``Array``) parameter named here is allocated by
        the operator and returned (in declaration order), given its shape rule: ``"like x"``
        (the shape of tensor argument ``x``), ``"zeros like x"`` (the same, filled with zeros),
        or a function of arguments by name returning a shape
        (``lambda x, w: (x.shape[0], w.shape[1])``) or one size (``lambda x: x.shape[0]``).
        Outputs are allocated with ``torch.empty`` (their contents undefined until the kernel
        writes them) except ``"zeros like x"`` ones, which ``torch.zeros`` allocates: use it for
        a kernel that accumulates into its output (``atomicAdd``). Its dtype is the annotated
        one, or for a family's ``Out[T]`` the dtype of the first input tensor that sets ``T``
        and is not None. An ``Optional`` output named here is always allocated; ``x`` in
        ``"like x"`` cannot be ``Optional`` (it may be None).
    sizes : dict, optional
        Integer parameters computed from the arguments rather than passed:
        ``{"n": lambda x: x.numel()}`` (the function's parameter names pick the arguments).
    backward, setup_context : callable, optional
        Autograd support, as ``torch.library.register_autograd`` takes them.

    Returns
    -------
    torch.library.CustomOpDef
        Callable like the operator; also reachable as ``torch.ops.namespace.op``.
    """
    op = _OpSpec(kernel, name, outputs or {}, sizes or {})
    try:
        defined = torch.library.custom_op(name, op.impl, mutates_args=op.mutated)
    except Exception as exc:  # a bad name, a name taken (a re-run notebook cell)
        raise DeclarationError(f"{op.label}: torch.library.custom_op({name!r}) refused it: {exc}") from None
    defined.register_fake(op.fake)
    if backward is not None or setup_context is not None:
        if backward is None:
            raise DeclarationError(f"{op.label}: setup_context= was given without backward=; give both, or neither")
        defined.register_autograd(backward, setup_context=setup_context)
    return defined


def _torch_dtype(dtype: DType, label: str) -> Any:
    found = getattr(torch, dtype.name, None)
    if not isinstance(found, torch.dtype):
        raise DeclarationError(f"{label}: this PyTorch has no dtype for {dtype.name}")
    return found


class _OpSpec:
    """What the operator's implementation and fake implementation share, read once from the
    kernel's declaration when the operator is registered."""

    def __init__(self, kernel: Any, name: str, outputs: Mapping[str, Any], sizes: Mapping[str, Callable[..., int]]):
        # told apart by what each has (the core's classes are not imported here: they import this
        # module for their torch_op): a Kernel its signature, a Family its template parameters
        if hasattr(kernel, "signature") and hasattr(kernel, "template_args"):
            params = [(p.name, p.type) for p in kernel.signature.params]
            self.label = kernel.label
        elif hasattr(kernel, "template_params") and hasattr(kernel, "instantiations"):
            params = list(kernel._decl.params)
            self.label = kernel.__qualname__
        else:
            raise DeclarationError(f"cf.torch.custom_op(): expects a cuforge Kernel or Family, got {kernel!r}")
        self.label = f"{self.label} (torch op {name})"
        self.kernel, self.names = kernel, [n for n, _ in params]
        types = dict(params)
        for what, given in (("outputs", outputs), ("sizes", sizes)):
            unknown = [k for k in given if k not in types]
            if unknown:
                raise DeclarationError(
                    f"{self.label}: {what}= names {', '.join(map(repr, unknown))}, which are not parameters "
                    f"({', '.join(self.names)})"
                )
        self.sizes = {k: _picks(self.label, f"sizes[{k!r}]", fn, types, sizes) for k, fn in sizes.items()}
        for k in sizes:
            if not (isinstance(types[k], DType) and types[k].is_integer):
                raise DeclarationError(f"{self.label}: sizes[{k!r}] must name an integer scalar parameter, not {types[k]!r}")
        self.inputs = [n for n in self.names if n not in outputs and n not in sizes]
        self.outputs = [(n, self._shape_rule(n, outputs[n], types, {**outputs, **sizes})) for n in self.names if n in outputs]
        self.types = types
        self.mutated = tuple(n for n in self.inputs if isinstance(types[n], ArrayType) and types[n].writes)
        self.impl = self._function(self._run)
        self.fake = self._function(self._fake)

    def _shape_rule(self, name: str, rule: Any, types: dict[str, Any],
                    computed: Mapping[str, Any]) -> tuple[Callable[[dict[str, Any]], Any], Any, Any]:  # fmt: skip
        """(shape of the output from the bound arguments, its dtype: a torch dtype, or the
        names of the tensor arguments whose dtype it takes (the first not None), the
        allocator: torch.empty or torch.zeros)."""
        ann = types[name]
        if not isinstance(ann, ArrayType) or not ann.writes:
            raise DeclarationError(f"{self.label}: outputs[{name!r}] must name an Out or Array parameter, not {ann!r}")
        source = None
        fill: Any = torch.empty
        if isinstance(rule, str):
            words = rule.split()
            if words[:1] == ["zeros"]:
                fill, words = torch.zeros, words[1:]
            if len(words) != 2 or words[0] != "like" or words[1] in computed or not isinstance(types.get(words[1]), ArrayType):
                raise DeclarationError(
                    f"{self.label}: outputs[{name!r}] = {rule!r}; a shape rule is 'like <tensor argument>', "
                    f"'zeros like <tensor argument>' or a function of the arguments returning a shape"
                )
            source = words[1]
            if types[source].optional:
                raise DeclarationError(
                    f"{self.label}: outputs[{name!r}] = {rule!r}, and {source} is Optional: it may be None; take the "
                    f"shape from a tensor that is always given, or give a function of the arguments"
                )
            shape: Callable[[dict[str, Any]], Any] = lambda bound: bound[source].shape  # noqa: E731
        elif callable(rule):
            shape = _picks(self.label, f"outputs[{name!r}]", rule, types, computed)
        else:
            raise DeclarationError(
                f"{self.label}: outputs[{name!r}] must be 'like <argument>', 'zeros like <argument>' or a function, got {rule!r}"
            )
        if isinstance(ann.dtype, DType):
            return shape, _torch_dtype(ann.dtype, self.label), fill
        # a family's Out[T]: T's dtype, read off an input tensor that sets it (outputs are
        # allocated by the operator, so they cannot set it)
        setters = [n for n in self.inputs if isinstance(types[n], ArrayType) and types[n].dtype is ann.dtype]
        if source is not None and source in setters:
            return shape, (source,), fill
        if not setters:
            first = f"{ann.dtype.values[0]!r}".replace("cuforge.", "cf.")
            raise DeclarationError(
                f"{self.label}: no input argument sets {ann.dtype.name}, the dtype of output {name!r} (outputs are "
                f"allocated, not read); index the family first: {self.kernel.__name__}[{first}].torch_op(...)"
            )
        return shape, tuple(setters), fill  # the first that is not None, per call

    def _function(self, body: Callable[[dict[str, Any]], Any]) -> Callable[..., Any]:
        """A function of the operator's arguments, with the signature custom_op reads the
        schema from."""
        def op(*args: Any) -> Any:
            return body(dict(zip(self.inputs, args)))

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

        returns: Any = None
        if len(self.outputs) == 1:
            returns = torch.Tensor
        elif self.outputs:
            returns = tuple[tuple(torch.Tensor for _ in self.outputs)]  # type: ignore[misc]
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        op.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(n, kind, annotation=annotation(self.types[n])) for n in self.inputs], return_annotation=returns
        )
        op.__name__ = op.__qualname__ = self.label.split(" ")[0]
        return op

    def _allocate(self, bound: dict[str, Any]) -> list[Any]:
        outs = []
        dtypes = [dtype if isinstance(dtype, torch.dtype) else self._dtype_of(name, dtype, bound)
                  for name, (_, dtype, _) in self.outputs]  # fmt: skip
        tensors = [bound[n] for n in self.inputs if isinstance(self.types[n], ArrayType) and bound[n] is not None]
        device = tensors[0].device if tensors else torch.device("cuda", torch.cuda.current_device())
        for (_, (shape, _, fill)), dt in zip(self.outputs, dtypes):
            size = shape(bound)  # a shape, or one size (an int, or a SymInt while tracing)
            dims = tuple(size) if isinstance(size, (tuple, list, torch.Size)) else (size,)
            outs.append(fill(dims, dtype=dt, device=device))
        return outs

    def _dtype_of(self, name: str, setters: tuple[str, ...], bound: dict[str, Any]) -> Any:
        """The dtype of a family's output: that of the first tensor setting its type parameter."""
        for n in setters:
            if bound[n] is not None:
                return bound[n].dtype
        raise ArgumentTypeError(
            f"{self.label}: output {name!r} takes its dtype from tensor argument {' or '.join(map(repr, setters))}, "
            f"which got None; pass {'it' if len(setters) == 1 else 'one of them'} as a tensor, or index the family"
        )

    def _run(self, bound: dict[str, Any]) -> Any:
        outs = self._allocate(bound)
        for (name, _), t in zip(self.outputs, outs):
            bound[name] = t
        for name, fn in self.sizes.items():
            bound[name] = int(fn(bound))
        self.kernel(*[bound[n] for n in self.names])
        return self._result(outs)

    def _fake(self, bound: dict[str, Any]) -> Any:
        self._check_dtypes(bound)
        return self._result(self._allocate(bound))

    def _result(self, outs: list[Any]) -> Any:
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _check_dtypes(self, bound: dict[str, Any]) -> None:
        """What the launch checks of dtypes, checked while tracing (torch.compile), where no
        kernel runs: a wrong dtype is named at trace time."""
        for n in self.inputs:
            ann = self.types[n]
            if not isinstance(ann, ArrayType):
                continue
            allowed = ann.dtype.values if isinstance(ann.dtype, TypeParam) else (ann.dtype,)
            t = bound[n]
            if t is None and ann.optional:
                continue
            if not isinstance(t, torch.Tensor) or t.dtype not in [_torch_dtype(d, self.label) for d in allowed]:
                got = f"a {t.dtype} tensor" if isinstance(t, torch.Tensor) else repr(type(t).__name__)
                want = " or ".join(d.name for d in allowed)
                raise ArgumentTypeError(
                    f"{self.label}: argument '{n}' expects {ann!r} ({want}), got {got}; cast it with "
                    f"{n}.to(torch.{allowed[0].name})"
                )


def _picks(label: str, what: str, fn: Any, types: dict[str, Any], exclude: Mapping[str, Any]) -> Callable[[dict[str, Any]], Any]:
    """``fn`` called with the arguments its parameters name."""
    if not callable(fn):
        raise DeclarationError(f"{label}: {what} must be a function of the arguments, got {fn!r}")
    wanted = list(inspect.signature(fn).parameters)
    bad = [w for w in wanted if w not in types or w in exclude]
    if bad:
        raise DeclarationError(f"{label}: {what} asks for {', '.join(map(repr, bad))}, which are not arguments of the op")
    return lambda bound: fn(**{w: bound[w] for w in wanted})
