"""cuforge kernels as JAX operations on XLA's CUDA platform: the FFI handler launches the kernel
on XLA's stream. The CPU tests' checks (jit, vmap, grad with check_grads, a wrong dtype at trace
time) on the GPU; a CUDA graph (XLA's command buffers) replaying the op without calling the
handler; shard_map across two GPUs. Skipped where JAX has no GPU."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cuforge as cf
from cuforge.pytest_plugin import gpu_module

pytestmark = gpu_module()
# XLA takes 75% of the GPU's memory at its first use unless told otherwise: the rest of the
# session (CuPy, PyTorch) and the subprocesses below need theirs
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

from ..jax_kernels import layernorm  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def gpus():
    try:
        return jax.devices("gpu")
    except RuntimeError:
        return []


@pytest.fixture(autouse=True)
def on_gpu_in_x64():
    if not gpus():
        pytest.skip("this JAX has no GPU backend (install jax[cuda12] or jax[cuda13])")
    x64 = jax.enable_x64 if hasattr(jax, "enable_x64") else jax.experimental.enable_x64
    with jax.default_device(gpus()[0]), x64(True):
        yield


def reference(x, w, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    rs = 1 / jnp.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + eps)
    return (x - m) * rs * w + b


def inputs(dtype, shape=(300, 96)):
    k = np.random.default_rng(0)
    return (jnp.asarray(k.standard_normal(shape), dtype), jnp.asarray(1 + 0.1 * k.standard_normal(shape[-1]), dtype),
            jnp.asarray(0.1 * k.standard_normal(shape[-1]), dtype))  # fmt: skip


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_jit_on_the_gpu_matches_jnp(dtype):
    x, w, b = inputs(dtype)
    out = jax.jit(lambda x, w, b: layernorm(x, w, b, 1e-5)[0])(x, w, b)
    assert out.devices() == {gpus()[0]} and out.dtype == dtype
    tol = 1e-5 if dtype == jnp.float32 else 1e-9
    np.testing.assert_allclose(out, reference(x, w, b), rtol=tol, atol=tol)


def test_vmap_and_grad_on_the_gpu():
    x, w, b = inputs(jnp.float64, shape=(4, 50, 32))
    f = jax.jit(jax.vmap(lambda x: layernorm(x, w, b, 1e-5)[0]))
    np.testing.assert_allclose(f(x), reference(x, w, b), rtol=1e-9, atol=1e-12)
    check_grads(lambda x, w, b: layernorm(x, w, b, 1e-5)[0], (x[0, :6, :10], w[:10], b[:10]), order=1, modes=["rev"])
    loss = lambda x, w: (layernorm(x, w, b, 1e-5)[0] ** 2).sum()  # noqa: E731
    want = jax.grad(lambda x, w: (reference(x, w, b) ** 2).sum(), argnums=(0, 1))(x, w)
    for got, ref in zip(jax.jit(jax.grad(loss, argnums=(0, 1)))(x, w), want):
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-10)


def test_a_wrong_dtype_is_cuforges_error_at_trace_time_on_the_gpu():
    x, w, b = inputs(jnp.float32)
    with pytest.raises(cf.ArgumentTypeError, match=r"argument 'inp' expects In\[T\] \(float32 or float64\), got a float16"):
        jax.jit(lambda x: layernorm(x, w, b, 1e-5)).lower(x.astype(jnp.float16))


def test_xla_command_buffers_replay_the_op_without_calling_the_handler():
    """In a process whose XLA captures custom calls in CUDA graphs, 200 calls of a jitted
    function call the handler only while XLA records the graph (its first calls)."""
    code = textwrap.dedent("""
        import sys
        sys.path.insert(0, ROOT)
        import jax, jax.numpy as jnp, numpy as np
        from tests.jax_kernels import layernorm, rows
        from cuforge.integrations import _jax_ffi
        x = jnp.ones((64, 128)); w = jnp.ones(128); b = jnp.zeros(128)
        f = jax.jit(lambda x: layernorm(jnp.tanh(layernorm(x, w, b, 1e-5)[0]) * 2.0, w, b, 1e-5)[0] + 1.0)
        for _ in range(5):
            f(x).block_until_ready()
        before = _jax_ffi.handler_calls()
        for _ in range(200):
            y = f(x)
        y.block_until_ready()
        print(_jax_ffi.handler_calls() - before)
    """).replace("ROOT", repr(ROOT))
    counts = {}
    for name, flags in (("graphs", "--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL --xla_gpu_graph_min_graph_size=1"),
                        ("no graphs", "--xla_gpu_enable_command_buffer=")):  # fmt: skip
        env = {**os.environ, "XLA_FLAGS": flags, "PYTHONPATH": os.pathsep.join([os.path.join(ROOT, "src"), *sys.path]),
               "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        counts[name] = int(out.stdout.split()[-1])
    assert counts["no graphs"] == 400  # two launches per call, each through the handler
    assert counts["graphs"] <= 8, counts  # replayed from the graph: no host work per call


@pytest.fixture
def _context_put_back():
    """XLA leaves device 1's context current on this thread (freeing a shard's buffers does it
    too, after the test's body): put back the one that was, so that the later tests' launches
    go where they did."""
    driver = pytest.importorskip("cuda.bindings.driver")
    context = driver.cuCtxGetCurrent()[1]
    yield
    gc.collect()
    driver.cuCtxSetCurrent(context)


@pytest.mark.usefixtures("_context_put_back")
def test_shard_map_over_two_gpus_runs_each_shard_on_its_device():
    if len(gpus()) < 2:
        pytest.skip(f"needs 2 GPUs visible to JAX, found {len(gpus())}")
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    shard_map = getattr(jax, "shard_map", None)
    if shard_map is None:
        from jax.experimental.shard_map import shard_map
    mesh = Mesh(np.array(gpus()[:2]), ("rows",))
    x, w, b = inputs(jnp.float32, shape=(512, 64))
    f = jax.jit(shard_map(lambda x: layernorm(x, w, b, 1e-5)[0], mesh=mesh, in_specs=PartitionSpec("rows"),
                          out_specs=PartitionSpec("rows")))  # fmt: skip
    xs = jax.device_put(x, NamedSharding(mesh, PartitionSpec("rows")))
    out = f(xs)
    assert {s.device for s in out.addressable_shards} == set(gpus()[:2])
    for s in out.addressable_shards:  # each shard is its device's rows, computed there
        np.testing.assert_allclose(s.data, reference(x, w, b)[s.index], rtol=1e-5, atol=1e-5)
