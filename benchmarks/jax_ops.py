"""cuforge kernels as JAX operations (cf.jax.op) on the GPU, against jnp in the same place.

    python benchmarks/jax_ops.py [OUT.json]

- Per call: a jitted function calling the cuforge op (``y = a * x``, 4,096 float32) against the
  same jitted function with ``x * 2.0`` in its place, each call dispatched from Python and the
  last one waited for; the median over 7 timed loops of 2,000 calls, in microseconds per call,
  the contenders taking turns.
- XLA's command buffers: in a process with ``--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL``
  (and a minimum graph size of 1), the handler's calls per 1,000 calls of a jitted function
  holding the op (0 once the CUDA graph is recorded: no host work per call), and the time per
  call there and in a process without command buffers.
- llm.c's layernorm forward (B*T = 8,192 rows of C = 768, float32) as a JAX op against a jnp
  layernorm, each alone in a jitted function (JAX has no fused layer norm of its own;
  flax.linen.LayerNorm is this jnp expression).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import loop_timer, report, take_turns  # noqa: E402

N, CALLS, ROUNDS = 4096, 2000, 7
ROWS, COLS = 8 * 1024, 768
GRAPHS = "--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL --xla_gpu_graph_min_graph_size=1"


def ops() -> dict[str, Any]:
    from torch_ops import LayerNorm, Scale  # the kernels the PyTorch benchmark times (importing torch_ops imports no torch)

    import cuforge.jax as cfj

    scale = cfj.op(Scale, outputs={"y": "like x"}, sizes={"n": lambda x: x.size})
    layernorm = cfj.op(LayerNorm, outputs={"out": "like inp", "mean": lambda inp: inp.shape[0], "rstd": lambda inp: inp.shape[0]},
                       sizes={"N": lambda inp: inp.shape[0], "C": lambda inp: inp.shape[1]})  # fmt: skip
    return {"scale": scale, "layernorm": layernorm}


def per_call(op: dict[str, Any]) -> dict[str, float]:
    import jax
    import jax.numpy as jnp

    x = jnp.ones(N, jnp.float32)
    cuforge = jax.jit(lambda x: op["scale"](2.0, x))
    plain = jax.jit(lambda x: x * 2.0)
    sync = lambda: jax.block_until_ready(last)  # noqa: E731
    last: Any = None

    def call(f: Any) -> Any:
        def once() -> None:
            nonlocal last
            last = f(x)

        return once

    timers = {name: loop_timer(call(f), sync, CALLS, 200) for name, f in
              (("jit: cuforge op", cuforge), ("jit: x * 2.0 (jnp)", plain))}  # fmt: skip
    return take_turns(timers, ROUNDS)


def layernorm(op: dict[str, Any]) -> dict[str, float]:
    import jax
    import jax.numpy as jnp
    import numpy as np

    k = np.random.default_rng(0)
    x = jnp.asarray(k.standard_normal((ROWS, COLS)), jnp.float32)
    w, b = jnp.ones(COLS, jnp.float32), jnp.zeros(COLS, jnp.float32)

    def ref(x: Any) -> Any:
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) * jax.lax.rsqrt(v + 1e-5) * w + b

    cuforge = jax.jit(lambda x: op["layernorm"](x, w, b)[0])
    plain = jax.jit(ref)
    np.testing.assert_allclose(np.asarray(cuforge(x)), np.asarray(plain(x)), rtol=2e-4, atol=2e-4)
    last: Any = None

    def call(f: Any) -> Any:
        def once() -> None:
            nonlocal last
            last = f(x)

        return once

    sync = lambda: jax.block_until_ready(last)  # noqa: E731
    timers = {f"layernorm {ROWS}x{COLS}: {name}": loop_timer(call(f), sync, 300, 30) for name, f in
              (("cuforge op in jit", cuforge), ("jnp in jit", plain))}  # fmt: skip
    return take_turns(timers, ROUNDS)


def command_buffers() -> dict[str, Any]:
    """This script's ``--graphs`` part, in a process with and one without command buffers."""
    out: dict[str, Any] = {}
    for name, flags in (("command buffers", GRAPHS), ("no command buffers", "--xla_gpu_enable_command_buffer=")):
        env = {**os.environ, "XLA_FLAGS": flags}
        run = subprocess.run([sys.executable, os.path.abspath(__file__), "--graphs"], env=env, capture_output=True, text=True)
        if run.returncode:
            out[name] = f"failed: {run.stderr.strip()[-300:]}"
            continue
        found = json.loads(run.stdout.strip().splitlines()[-1])
        out[f"{name}: handler calls per 1000 calls"] = found["handler calls"]
        out[f"{name}: us per call"] = found["us"]
    return out


def _graphs_part() -> None:
    import time

    import jax
    import jax.numpy as jnp

    from cuforge.integrations import _jax_ffi

    op = ops()
    x = jnp.ones(N, jnp.float32)
    f = jax.jit(lambda x: jnp.tanh(op["scale"](2.0, jnp.sin(x))) + 1.0)
    for _ in range(20):
        f(x).block_until_ready()
    before, t = _jax_ffi.handler_calls(), time.perf_counter()
    for _ in range(1000):
        y = f(x)
    y.block_until_ready()
    us = (time.perf_counter() - t) / 1000 * 1e6
    print(json.dumps({"handler calls": _jax_ffi.handler_calls() - before, "us": us}))


def main() -> dict[str, Any]:
    # JAX would take 75% of the GPU's memory at start, beside what PyTorch's allocator holds (run_all.py)
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        import jax
    except ImportError:
        return {"jax": "missing: jax not installed"}
    if jax.default_backend() != "gpu":
        return {"jax": f"missing: JAX's default backend is {jax.default_backend()!r}, not a GPU (install jax[cuda13])"}
    op = ops()
    results: dict[str, Any] = {"jax": jax.__version__}
    results.update(per_call(op))
    results.update(layernorm(op))
    results.update(command_buffers())
    return results


if __name__ == "__main__":
    if sys.argv[1:] == ["--graphs"]:
        _graphs_part()
    else:
        report(main(), 64, " us")
