"""PyTorch operators from cuforge kernels; the public face is ``cuforge.torch``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from ..errors import DeclarationError

if not hasattr(torch.library, "register_fake"):
    raise ImportError(f"cuforge.torch needs PyTorch 2.4 or later (torch.library.register_fake); this is {torch.__version__}")
from ._torch_op import OpSpec

# torch.library.infer_schema is public from PyTorch 2.5
_infer_schema = getattr(torch.library, "infer_schema", None) or torch._library.infer_schema.infer_schema

__all__ = ["custom_op"]


def custom_op(kernel: Any, name: str, *, outputs: Mapping[str, Any] | None = None,
              sizes: Mapping[str, Callable[..., int]] | None = None, backward: Callable[..., Any] | None = None,
              setup_context: Callable[..., Any] | None = None) -> Any:  # fmt: skip
    """Register ``kernel`` (a [`Kernel`][cuforge.Kernel] or a whole [`Family`][cuforge.Family])
    as the PyTorch operator ``name`` (``"mylib::saxpy"``) and return it.

    The operator is defined with ``torch.library``: its schema from the kernel's annotations,
    an implementation for CUDA tensors (the kernel's launch) and one for CPU tensors (the same
    kernel on cuforge's CPU backend), a fake implementation for ``torch.compile``, and an
    autograd kernel for ``backward``.

    Parameters
    ----------
    kernel : Kernel or Family
        A family's instantiation is picked per call from the tensors' dtypes, as calling the
        family does.
    name : str
        ``"namespace::op"``, as ``torch.library`` takes it.
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
        Autograd support, as ``torch.library.register_autograd`` takes them. Without them the
        operator is not differentiable (PyTorch warns if a backward pass reaches it).

    Returns
    -------
    torch._ops.OpOverload
        The operator, ``torch.ops.namespace.op.default``: call it, or pass it to
        ``torch.library`` functions (``opcheck``, ``register_vmap``, ...).
    """
    op = OpSpec(kernel, name, outputs or {}, sizes or {})
    if setup_context is not None and backward is None:
        raise DeclarationError(f"{op.label}: setup_context= was given without backward=; give both, or neither")
    if backward is not None and op.mutated:
        raise DeclarationError(
            f"{op.label}: backward= needs a functional operator, and this one writes {', '.join(op.mutated)}; name "
            f"{'it' if len(op.mutated) == 1 else 'them'} in outputs= so that the operator allocates and returns "
            f"{'it' if len(op.mutated) == 1 else 'them'}"
        )
    namespace, _, opname = name.partition("::")
    try:
        schema = _infer_schema(op.prototype, mutates_args=op.mutated)
        lib = torch.library.Library(namespace, "FRAGMENT")
        lib.define(opname + schema, tags=(torch.Tag.pt2_compliant_tag,))
    except Exception as exc:  # a bad name, a name taken (a re-run notebook cell)
        raise DeclarationError(f"{op.label}: torch.library refused to define {name!r}: {exc}") from None
    overload = getattr(getattr(torch.ops, namespace), opname).default
    # CUDA tensors, and a call with no tensor (every Optional one None), which PyTorch sends to
    # this key; CPU tensors have their own
    runners = {torch._C.DispatchKey.CUDA: op.runner(on_cpu=False), torch._C.DispatchKey.CPU: op.runner(on_cpu=True)}
    lib.impl(opname, runners[torch._C.DispatchKey.CUDA], "CompositeExplicitAutograd")
    lib.impl(opname, runners[torch._C.DispatchKey.CPU], "CPU")
    torch.library.register_fake(name, op.fake, lib=lib)
    if backward is not None:
        lib.impl(opname, _autograd(overload, runners, backward, setup_context), "Autograd", with_keyset=True)
    _LIBRARIES.append(lib)  # a Library's registrations last as long as it does
    return overload


_LIBRARIES: list[Any] = []
_BELOW_AUTOGRAD = torch._C._after_autograd_keyset
_IN_PLACE_OR_VIEW = torch._C.DispatchKey.ADInplaceOrView


def _autograd(overload: Any, runners: dict[Any, Callable[..., Any]], backward: Callable[..., Any],
              setup_context: Callable[..., Any] | None) -> Callable[..., Any]:  # fmt: skip
    """The operator's autograd kernel: ``torch.library.register_autograd``'s contract (``backward``
    and ``setup_context`` see the operator's inputs alone), with its per-call work cut to what
    this operator needs (no keyword-only arguments, no defaults to fill in, no tensor lists).
    Where the only key left below autograd is the tensors' backend (no mode, no tensor subclass,
    no functionalization), the backend's implementation is called as the redispatch would call it,
    without the dispatcher's round trip."""
    name = f"CuforgeBackwardFor_{overload._namespace}_{overload._opname}"

    def function(forward_of: Callable[..., Any], backward_of: Callable[..., Any], keyset: bool) -> Any:
        """A torch.autograd.Function computing ``forward_of(*args)`` (the inputs, then the keyset
        where ``keyset``), and the C base of its apply (``Function.apply``'s Python layer binds
        default arguments, which this operator has none of, and unwraps functorch's tensors,
        which only matters under a transform)."""

        def forward(ctx: Any, *args: Any) -> Any:
            out = forward_of(*args)
            if setup_context is not None:
                setup_context(ctx, args[:-1] if keyset else args, out)
            return out

        made = type(name, (torch.autograd.Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward_of)})
        return made, super(torch.autograd.Function, made).apply  # type: ignore[misc]

    def redispatched(*args: Any) -> Any:  # the inputs, then the keyset
        with torch._C._AutoDispatchBelowAutograd():
            return overload.redispatch(args[-1] & _BELOW_AUTOGRAD, *args[:-1])

    def backward_with_keyset(ctx: Any, *grads: Any) -> Any:
        needs = ctx.needs_input_grad
        ctx.needs_input_grad = needs[:-1]  # the inputs' alone, as backward expects them
        try:
            result = backward(ctx, *grads)
        finally:
            ctx.needs_input_grad = needs
        return (*result, None) if isinstance(result, tuple) else (result, None)

    general, general_apply = function(redispatched, backward_with_keyset, True)
    # the keys left below autograd for plain tensors of each backend, by their bits (pybind's
    # objects are slow to hash): the backend's, with or without ADInplaceOrView (every tensor's,
    # where the dispatcher has not dropped it: this operator registers nothing there)
    direct: dict[int, tuple[Callable[..., Any], Callable[..., Any]]] = {}
    for key, run in runners.items():
        backend = torch._C.DispatchKeySet(key)
        found = (run, function(run, backward, False)[1])
        direct[backend.raw_repr()] = direct[(backend | torch._C.DispatchKeySet(_IN_PLACE_OR_VIEW)).raw_repr()] = found
    functorch_active, any_requires_grad, grad_enabled = (
        torch._C._are_functorch_transforms_active, torch._C._any_requires_grad, torch.is_grad_enabled
    )

    seen: dict[int, Any] = {}  # a call's keyset's bits -> its entry in direct, or None

    def kernel(keyset: Any, *args: Any) -> Any:
        bits = keyset.raw_repr()
        found = seen.get(bits, seen)
        if found is seen:
            found = seen[bits] = direct.get((keyset & _BELOW_AUTOGRAD).raw_repr())
        if not (grad_enabled() and any_requires_grad(*args)):
            return found[0](*args) if found is not None else redispatched(*args, keyset)
        if functorch_active():
            return general.apply(*args, keyset)
        return found[1](*args) if found is not None else general_apply(*args, keyset)

    return kernel
