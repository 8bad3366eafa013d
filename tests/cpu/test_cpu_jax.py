"""cuforge kernels as JAX operations on XLA's CPU platform: the FFI handler runs the kernel on
cuforge's CPU backend, on XLA's buffers. Checked against jnp under jit, vmap and grad
(jax.test_util.check_grads through backward=), with cuforge's errors at trace time. Skipped
where JAX is absent."""

from __future__ import annotations

import numpy as np
import pytest

import cuforge as cf

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

import cuforge.jax as cfj  # noqa: E402

from ..jax_kernels import Axpy, LayerNorm, axpy, layernorm  # noqa: E402


@pytest.fixture(autouse=True)
def on_cpu_in_x64():
    """XLA's CPU platform (wherever a GPU is present too) and float64 arrays (off by default)."""
    x64 = jax.enable_x64 if hasattr(jax, "enable_x64") else jax.experimental.enable_x64  # (jax.enable_x64 from JAX 0.7)
    with jax.default_device(jax.devices("cpu")[0]), x64(True):
        yield


def reference(x, w, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    rs = 1 / jnp.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + eps)
    return (x - m) * rs * w + b, m[..., 0], rs[..., 0]


def inputs(dtype, shape=(37, 24), seed=0):
    k = np.random.default_rng(seed)
    x = jnp.asarray(k.standard_normal(shape), dtype)
    w = jnp.asarray(1 + 0.1 * k.standard_normal(shape[-1]), dtype)
    b = jnp.asarray(0.1 * k.standard_normal(shape[-1]), dtype)
    return x, w, b


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_a_family_op_under_jit_matches_jnp_and_follows_the_dtype(dtype):
    x, w, b = inputs(dtype)
    out, mean, rstd = jax.jit(lambda x, w, b: layernorm(x, w, b, 1e-5))(x, w, b)
    assert (out.dtype, out.shape, mean.shape, rstd.shape) == (dtype, x.shape, (37,), (37,))
    tol = 1e-5 if dtype == jnp.float32 else 1e-9
    for got, want in zip((out, mean, rstd), reference(x, w, b)):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert layernorm.spec._chosen  # the instantiation picked per dtypes
    assert {k.template_args["T"].name for k in layernorm.spec._chosen.values()} >= {np.dtype(dtype).name}


def test_the_op_composes_with_jnp_in_one_jitted_function_and_eagerly():
    x, w, b = inputs(jnp.float32)

    @jax.jit
    def f(x, w, b):
        return jnp.tanh(layernorm(x * 2.0, w, b, eps=1e-5)[0]).sum(-1)

    want = jnp.tanh(reference(x * 2.0, w, b)[0]).sum(-1)
    np.testing.assert_allclose(f(x, w, b), want, rtol=1e-5)
    np.testing.assert_allclose(layernorm(x, w, b, 1e-5)[0], reference(x, w, b)[0], rtol=1e-5, atol=1e-6)  # no jit


def test_vmap_over_the_batched_argument_is_one_launch_of_more_rows():
    x, w, b = inputs(jnp.float64, shape=(5, 7, 16))
    f = jax.jit(jax.vmap(lambda x: layernorm(x, w, b, 1e-5)[0]))
    np.testing.assert_allclose(f(x), reference(x, w, b)[0], rtol=1e-9, atol=1e-12)
    text = f.lower(x).as_text()
    assert text.count("cuforge_launch") == 1 and "while" not in text  # traced again on the batch: no loop


def test_vmap_over_an_argument_the_kernel_does_not_batch_is_a_loop():
    x, _, b = inputs(jnp.float64, shape=(7, 16))
    ws = jnp.asarray(np.random.default_rng(1).standard_normal((3, 16)))
    f = jax.jit(jax.vmap(lambda w: layernorm(x, w, b, 1e-5)[0]))
    np.testing.assert_allclose(f(ws), jnp.stack([reference(x, w, b)[0] for w in ws]), rtol=1e-9, atol=1e-12)
    assert "while" in f.lower(ws).as_text()  # vmap_method="sequential": one launch per weight


def test_check_grads_through_the_backward_op():
    x, w, b = inputs(jnp.float64, shape=(6, 10))
    f = lambda x, w, b: layernorm(x, w, b, 1e-5)[0]  # noqa: E731
    check_grads(f, (x, w, b), order=1, modes=["rev"])
    g = jax.jit(jax.grad(lambda x, w, b: (f(x, w, b) ** 2).sum(), argnums=(0, 1, 2)))(x, w, b)
    want = jax.grad(lambda x, w, b: (reference(x, w, b)[0] ** 2).sum(), argnums=(0, 1, 2))(x, w, b)
    for got, ref in zip(g, want):
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)


def test_grad_of_vmap_and_vmap_of_grad():
    x, w, b = inputs(jnp.float64, shape=(4, 3, 8))
    loss = lambda x, w: (layernorm(x, w, b, 1e-5)[0] ** 3).sum()  # noqa: E731
    ref = lambda x, w: (reference(x, w, b)[0] ** 3).sum()  # noqa: E731
    np.testing.assert_allclose(jax.jit(jax.vmap(jax.grad(loss), (0, None)))(x, w), jax.vmap(jax.grad(ref), (0, None))(x, w),
                               rtol=1e-9, atol=1e-12)  # fmt: skip
    batched = lambda x, w: jax.vmap(lambda x: loss(x, w))(x).sum()  # noqa: E731
    np.testing.assert_allclose(jax.grad(batched, argnums=1)(x, w), jax.grad(lambda x, w: ref(x, w), argnums=1)(x, w),
                               rtol=1e-9)  # fmt: skip


def test_a_wrong_dtype_is_cuforges_error_at_trace_time():
    x, w, b = inputs(jnp.float32)
    with pytest.raises(
        cf.ArgumentTypeError,
        match=r"^LayerNorm \(jax op\): argument 'inp' expects In\[T\] \(float32 or "
        r"float64\), got a float16 array; cast it with inp.astype\(jnp.float32\)",
    ):
        jax.jit(lambda x: layernorm(x, w, b, 1e-5)).lower(x.astype(jnp.float16))  # traced, never run
    with pytest.raises(
        cf.ArgumentTypeError,
        match=r"^LayerNorm \(jax op\): arguments 'inp' \(float32\) and 'weight' \(float64\) "
        r"must share T; cast one of them",
    ):
        jax.jit(lambda x: layernorm(x, w.astype(jnp.float64), b, 1e-5)).lower(x)


def test_a_traced_scalar_is_refused_and_a_static_one_is_compiled_in():
    x, w, b = inputs(jnp.float64)
    with pytest.raises(cf.ArgumentTypeError, match=r"argument 'eps' is a float32 scalar, which is part of the compiled launch"):
        jax.jit(lambda x, eps: layernorm(x, w, b, eps))(x, 1e-5)
    f = jax.jit(lambda x, eps: layernorm(x, w, b, eps)[0], static_argnames="eps")
    np.testing.assert_allclose(f(x, eps=0.5), reference(x, w, b, 0.5)[0], rtol=1e-6)


def test_a_written_input_is_returned_and_the_launch_rules_are_checked_when_traced():
    x = jnp.arange(10.0)
    y = jnp.ones(10)
    np.testing.assert_allclose(jax.jit(lambda x, y: axpy(2.0, x, y))(x, y), 2.0 * x + 1.0)
    np.testing.assert_allclose(y, 1.0)  # JAX arrays are values: the op returns a new one

    @cf.kernel
    class TooTall:
        x: cf.In[cf.float64]
        y: cf.Out[cf.float64]
        n: cf.int64
        grid = lambda n: (1, n)  # noqa: E731
        body = "y[0] = x[0];"

    tall = cfj.op(TooTall, outputs={"y": "like x"}, sizes={"n": lambda x: x.size})
    with pytest.raises(
        cf.ArgumentError,
        match=r"^TooTall: grid \(from the class's grid function\)\[1\] expects an int from 1 to 65535, got 70000",
    ):
        jax.jit(tall).lower(jnp.zeros(70000))  # traced, never run


def test_a_jitted_call_is_one_ffi_call_served_by_the_handler():
    from cuforge.integrations import _jax_ffi

    x, w, b = inputs(jnp.float32, shape=(8, 16))
    f = jax.jit(lambda x: layernorm(x, w, b, 1e-5)[0] * 2.0)
    assert f.lower(x).as_text().count("custom_call @cuforge_launch") == 1
    f(x).block_until_ready()
    before = _jax_ffi.handler_calls()
    for _ in range(10):
        y = f(x)
    y.block_until_ready()
    assert _jax_ffi.handler_calls() - before == 10  # the launch record made when traced, replayed by C


def test_an_op_from_another_process_fails_with_a_message_not_a_stale_pointer():
    from cuforge.integrations import _jax_ffi

    x = jnp.arange(4.0)
    jax.jit(lambda x, y: axpy(1.0, x, y))(x, x)  # a record exists, and the handlers are registered
    record = next(iter(_jax_ffi.LAUNCHES._by_address))
    call = jax.ffi.ffi_call(_jax_ffi.TARGET, jax.ShapeDtypeStruct((4,), jnp.float64), vmap_method="sequential")
    with pytest.raises(
        jax.errors.JaxRuntimeError, match=r"holds a cuforge op traced in another process .* trace the function again"
    ):
        call(x, cuforge_op=np.uint64(record), cuforge_token=np.uint64(_jax_ffi.TOKEN ^ 2))  # another process's token


def test_declaration_errors_name_the_fix():
    with pytest.raises(cf.DeclarationError, match=r"outputs= names 'nope', which are not parameters"):
        cfj.op(LayerNorm, outputs={"nope": "like inp"})
    with pytest.raises(cf.DeclarationError, match=r"backward= needs a functional op, and this one writes y"):
        cfj.op(Axpy, sizes={"n": lambda x: x.size}, backward=lambda saved, g: (None, None, None))
    with pytest.raises(cf.DeclarationError, match=r"batch= names 'w', which are not array arguments"):
        cfj.op(LayerNorm, outputs={"out": "like inp", "mean": "like inp", "rstd": "like inp"}, batch=("w",))
    with pytest.raises(cf.DeclarationError, match=r"vmap_method='broadcast_all'; use one of 'sequential', 'sequential_unrolled'"):
        cfj.op(Axpy, vmap_method="broadcast_all")


def test_the_family_facade_and_the_kernel_delegate():
    op = LayerNorm.jax_op(outputs={"out": "like inp", "mean": lambda inp: inp.shape[:-1], "rstd": lambda inp: inp.shape[:-1]},
                          sizes={"N": lambda inp: inp.size // inp.shape[-1], "C": lambda inp: inp.shape[-1]})  # fmt: skip
    x, w, b = inputs(jnp.float32, shape=(3, 5))
    np.testing.assert_allclose(op(x, w, b, 1e-5)[0], reference(x, w, b)[0], rtol=1e-5, atol=1e-6)
    inst = cf.jax.op(LayerNorm[cf.float32], outputs={"out": "like inp", "mean": lambda inp: inp.shape[:-1],
                                                     "rstd": lambda inp: inp.shape[:-1]},
                     sizes={"N": lambda inp: inp.size // inp.shape[-1], "C": lambda inp: inp.shape[-1]})  # fmt: skip
    np.testing.assert_allclose(inst(x, w, b, 1e-5)[0], reference(x, w, b)[0], rtol=1e-5, atol=1e-6)
