"""JAX operations from cuforge kernels; the public face is ``cuforge.jax``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import jax

from ..errors import DeclarationError
from ._jax_op import _ARRAY, JaxOpSpec

__all__ = ["op"]


def op(kernel: Any, *, outputs: Mapping[str, Any] | None = None, sizes: Mapping[str, Callable[..., int]] | None = None,
       backward: Callable[..., Any] | None = None, setup_context: Callable[..., Any] | None = None,
       vmap_method: str = "sequential", batch: Any = ()) -> Callable[..., Any]:  # fmt: skip
    """``kernel`` (a [`Kernel`][cuforge.Kernel] or a whole [`Family`][cuforge.Family]) as a
    function of JAX arrays, which XLA runs as one FFI call (on the GPU: a launch on XLA's stream;
    on the CPU: cuforge's CPU backend on XLA's buffers).

    Parameters
    ----------
    kernel : Kernel or Family
        A family's instantiation is picked from the arrays' dtypes when the call is traced.
    outputs : dict, optional
        Each ``Out`` (or ``Array``) parameter named here is allocated by XLA and returned (in
        declaration order), given its shape rule: ``"like x"``, ``"zeros like x"`` (filled with
        zeros first: for a kernel that accumulates) or a function of arguments by name returning
        a shape or one size. Its dtype is the annotated one or, for a family's ``Out[T]``, that of
        the first input array that sets ``T``. An ``Array``/``Out`` parameter not named here is
        an input whose written value the op returns, after the outputs.
    sizes : dict, optional
        Integer parameters computed from the arguments' static shapes: ``{"n": lambda x: x.size}``.
    backward, setup_context : callable, optional
        Reverse-mode differentiation (``jax.grad``, ``jax.vjp``), through ``jax.custom_vjp``:
        ``setup_context(inputs, output)`` returns what the backward pass keeps (default:
        ``(inputs, output)``), and ``backward(saved, *cotangents)`` returns one gradient per
        input of the op (None for scalars and inputs it does not differentiate).
    vmap_method : str
        What ``jax.vmap`` does with the op: ``"sequential"`` (the default: one launch per batch
        element, in a loop XLA runs) or ``"sequential_unrolled"`` (the loop unrolled).
    batch : tuple of str, or True
        The array arguments whose leading dimension the kernel's grid covers as more work (a
        layernorm's rows), True for all of them. Where ``jax.vmap`` batches only these, the op
        is traced again on the batched arrays (their ``sizes=`` and ``outputs=`` rules read the
        batched shapes) and one launch does the whole batch; every result must then have the
        batch's leading dimension. Other batchings take ``vmap_method``.

    Returns
    -------
    callable
        ``f(*inputs, **inputs_by_name)``: the op's inputs are the kernel's parameters less those
        named in ``outputs=`` and ``sizes=``; arrays are JAX arrays, scalars Python numbers (static:
        compiled into the call, so a traced value is refused). It returns the output, or a tuple.
    """
    spec = JaxOpSpec(kernel, outputs or {}, sizes or {}, vmap_method)
    if setup_context is not None and backward is None:
        raise DeclarationError(f"{spec.label}: setup_context= was given without backward=; give both, or neither")
    if backward is not None and spec.mutated:
        written = [spec.inputs[i] for i in spec.mutated]
        raise DeclarationError(
            f"{spec.label}: backward= needs a functional op, and this one writes {', '.join(written)}; name "
            f"{'it' if len(written) == 1 else 'them'} in outputs= so that the op allocates and returns "
            f"{'it' if len(written) == 1 else 'them'}"
        )
    if batch:
        body = _batched(spec, spec.batch_names(batch))
    else:
        body = lambda statics, *arrays: spec.launch(spec.join(statics, arrays))  # noqa: E731
    if backward is not None:
        body = _differentiable(spec, body, backward, setup_context)

    @functools.wraps(kernel, assigned=("__name__", "__qualname__", "__doc__"), updated=())
    def call(*args: Any, **kwargs: Any) -> Any:
        statics, arrays = spec.split(spec.bind(args, kwargs))
        return body(statics, *arrays)

    call.spec = spec  # type: ignore[attr-defined]
    return call


def _batched(spec: JaxOpSpec, batch: frozenset[str]) -> Callable[..., Any]:
    """The op whose vmap, where it batches only arguments in ``batch``, traces the op again on
    the batched arrays (one launch for the batch): a ``jax.custom_batching.custom_vmap`` per
    static values. Any other batching takes ``vmap_method``."""

    @functools.cache
    def for_statics(statics: tuple[Any, ...]) -> Any:
        names = [n for n, s in zip(spec.inputs, statics) if s is _ARRAY]

        def plain(*arrays: Any) -> Any:
            return spec.launch(spec.join(statics, arrays))

        f = jax.custom_batching.custom_vmap(plain)

        @f.def_vmap
        def rule(axis_size: int, in_batched: Any, *arrays: Any) -> Any:
            if not {n for n, b in zip(names, in_batched) if b} <= batch:
                out = jax.vmap(plain, in_axes=[0 if b else None for b in in_batched])(*arrays)
            else:
                out = f(*arrays)
                for o, n in zip(out if isinstance(out, tuple) else (out,), spec.results):
                    if not o.shape or o.shape[0] != axis_size:
                        raise DeclarationError(
                            f"{spec.label}: under jax.vmap with batch={sorted(batch)}, result {n!r} has shape {o.shape}, "
                            f"without the batch's leading dimension of {axis_size}; batch= declares a kernel that "
                            f"covers a leading batch dimension in every result"
                        )
            return out, jax.tree_util.tree_map(lambda _: True, out)

        return f

    return lambda statics, *arrays: for_statics(statics)(*arrays)


def _differentiable(spec: JaxOpSpec, body: Callable[..., Any], backward: Callable[..., Any],
                    setup_context: Callable[..., Any] | None) -> Callable[..., Any]:  # fmt: skip
    """``body`` with ``backward`` as its vector-Jacobian product (``jax.custom_vjp``; the static
    values are not differentiated)."""

    def fwd(statics: tuple[Any, ...], *arrays: Any) -> Any:
        out = body(statics, *arrays)
        if setup_context is None:
            return out, (arrays, out)
        return out, setup_context(tuple(spec.join(statics, arrays)), out)

    def bwd(statics: tuple[Any, ...], saved: Any, cotangent: Any) -> tuple[Any, ...]:
        if setup_context is None:
            arrays, out = saved
            saved = (tuple(spec.join(statics, arrays)), out)
        grads = backward(saved, *(cotangent if isinstance(cotangent, tuple) else (cotangent,)))
        grads = tuple(grads) if isinstance(grads, (tuple, list)) else (grads,)
        if len(grads) != len(spec.inputs):
            raise DeclarationError(
                f"{spec.label}: backward= returned {len(grads)} gradient(s); it returns one per input of the op "
                f"({', '.join(spec.inputs)}), None where there is none"
            )
        return tuple(g for g, s in zip(grads, statics) if s is _ARRAY)  # the arrays' (None: a zero gradient)

    core = jax.custom_vjp(body, nondiff_argnums=(0,))
    core.defvjp(fwd, bwd)
    return core
