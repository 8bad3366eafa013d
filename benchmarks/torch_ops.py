"""PyTorch: the host cost of a cuforge call on tensors and of a cuforge operator, beside
PyTorch's own ops, a do-nothing custom_op, a Library.impl op and a Triton launch.

    python benchmarks/torch_ops.py [OUT.json]

Every row runs the same 4,096-element ``y = a * x`` (float32) on the same tensors, except the
reference rows that only allocate. Each figure is the median over 7 timed loops of 3,000
calls (queued, then synchronised), after a warm-up, in microseconds per call; the contenders
take turns, loop by loop. Then llm.c's layernorm forward (B*T = 8,192 rows of C = 768) as a
cuforge family operator against ``F.layer_norm``, and the operator inside ``torch.compile``
(default and ``mode="reduce-overhead"``) against a Triton kernel in the same compiled
function. Peers that are not installed are reported as missing.
"""

import os
import sys
from collections.abc import Callable
from typing import Any

import cuforge as cf
from cuforge._runtime.faults import launch_count  # every launch cuforge makes, counted

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import loop_timer, report, take_turns  # noqa: E402

N, CALLS, ROUNDS = 4096, 3000, 7
ROWS, COLS = 8 * 1024, 768


@cf.kernel
class Scale:
    a: cf.float32
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int64
    body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i];"


@cf.kernel
class LayerNorm:
    """llm.c's layernorm_forward_kernel3 (dev/cuda/layernorm_forward.cu): a warp per row."""

    T = cf.typeparam(cf.float32, cf.bfloat16)
    out: cf.Out[T]
    mean: cf.Out[cf.float32]
    rstd: cf.Out[cf.float32]
    inp: cf.In[T, 2]
    weight: cf.In[T]
    bias: cf.In[T]
    N: cf.int32
    C: cf.int32
    block = 256
    grid = lambda N: (N * 32 + 255) // 256  # noqa: E731
    preamble = "#include <cooperative_groups.h>\n#include <cooperative_groups/reduce.h>\nnamespace cg = cooperative_groups;"
    body = """
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
    int idx = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
    if (idx >= N) return;
    const T* x = inp + (long long)idx * C;
    float sum = 0.0f;
    for (int i = warp.thread_rank(); i < C; i += warp.size()) sum += (float)x[i];
    sum = cg::reduce(warp, sum, cg::plus<float>{});
    float m = sum / C;
    if (warp.thread_rank() == 0) mean[idx] = m;
    sum = 0.0f;
    for (int i = warp.thread_rank(); i < C; i += warp.size()) { float d = (float)x[i] - m; sum += d * d; }
    sum = cg::reduce(warp, sum, cg::plus<float>{});
    float s = rsqrtf(sum / C + 1e-5f);
    if (warp.thread_rank() == 0) rstd[idx] = s;
    T* o = out + (long long)idx * C;
    for (int c = warp.thread_rank(); c < C; c += warp.size())
        o[c] = (T)(s * ((float)__ldcs(x + c) - m) * (float)weight[c] + (float)bias[c]);
    """


def ops(torch: Any) -> dict[str, Any]:
    """The operators: cuforge's (without and with autograd) and the two do-nothing peers."""
    scale = Scale.torch_op("cuforge_bench::scale", outputs={"y": "like x"}, sizes={"n": lambda x: x.numel()})

    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        ctx.a = inputs[0]

    def backward(ctx: Any, dy: Any) -> tuple:
        return None, scale(ctx.a, dy)

    scale_grad = Scale.torch_op("cuforge_bench::scale_grad", outputs={"y": "like x"}, sizes={"n": lambda x: x.numel()},
                                backward=backward, setup_context=setup_context)  # fmt: skip
    lib = torch.library.Library("cuforge_bench", "FRAGMENT")
    lib.define("alloc(Tensor x) -> Tensor")
    lib.impl("alloc", lambda x: torch.empty_like(x), "CUDA")

    @torch.library.custom_op("cuforge_bench::noop", mutates_args=())
    def noop(x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)

    layernorm = LayerNorm.torch_op(
        "cuforge_bench::layernorm",
        outputs={"out": "like inp", "mean": lambda inp: inp.shape[0], "rstd": lambda inp: inp.shape[0]},
        sizes={"N": lambda inp: inp.shape[0], "C": lambda inp: inp.shape[1]},
    )
    return {"scale": scale, "scale_grad": scale_grad, "alloc": torch.ops.cuforge_bench.alloc.default, "noop": noop,
            "layernorm": layernorm, "lib": lib}  # fmt: skip


def triton_scale() -> Any:
    import triton
    import triton.language as tl

    @triton.jit
    def scale_kernel(x, y, a, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y + i, a * tl.load(x + i, mask=i < n), mask=i < n)

    return scale_kernel


def eager(torch: Any, op: dict[str, Any], missing: dict[str, str]) -> dict[str, float]:
    import cupy as cp

    x = torch.randn(N, device="cuda")
    y = torch.empty_like(x)
    xg = x.clone().requires_grad_(True)
    xc, yc = cp.asarray(x), cp.empty(N, dtype=cp.float32)
    sync = torch.cuda.synchronize
    stream = torch.cuda.current_stream().cuda_stream
    grid, block = ((N + 255) // 256,), (256,)
    cases = {
        "torch.mul(x, 2.0)": lambda: torch.mul(x, 2.0),
        "torch.empty_like(x) (reference)": lambda: torch.empty_like(x),
        "Library.impl op, allocates only": lambda: op["alloc"](x),
        "custom_op, allocates only": lambda: op["noop"](x),
        "cuforge call (cupy arrays)": lambda: Scale(2.0, xc, yc, N),
        "cuforge call (torch tensors)": lambda: Scale(2.0, x, y, N),
        "cuforge call (torch tensors, grid, block, stream given)":
            lambda: Scale(2.0, x, y, N, grid=grid, block=block, stream=stream),
        "cuforge op": lambda: op["scale"](2.0, x),
        "torch.mul(x, 2.0), x requires grad": lambda: torch.mul(xg, 2.0),
        "cuforge op, x requires grad": lambda: op["scale_grad"](2.0, xg),
    }  # fmt: skip
    try:
        kernel = triton_scale()
        cases["triton @jit launch (torch tensors)"] = lambda: kernel[grid](x, y, 2.0, N, BLOCK=256)
    except Exception as exc:  # not installed, or cannot run here
        missing["triton @jit launch (torch tensors)"] = f"missing: {type(exc).__name__}: {exc}"[:120]
    for call in cases.values():
        call()
    torch.testing.assert_close(op["scale"](2.0, x), 2.0 * x)
    torch.testing.assert_close(op["scale_grad"](2.0, xg), 2.0 * x, check_dtype=True)
    return take_turns({name: loop_timer(call, sync, CALLS, 200) for name, call in cases.items()}, ROUNDS)


def layernorm(torch: Any, op: dict[str, Any]) -> dict[str, float]:
    """llm.c-sized layernorm per eager call (the GPU's time included: the calls queue)."""
    g = torch.Generator(device="cuda").manual_seed(0)
    inp = torch.randn(ROWS, COLS, device="cuda", generator=g)
    weight, bias = torch.randn(COLS, device="cuda", generator=g), torch.randn(COLS, device="cuda", generator=g)
    out, _, _ = op["layernorm"](inp, weight, bias)
    torch.testing.assert_close(out, torch.nn.functional.layer_norm(inp, (COLS,), weight, bias), rtol=1e-4, atol=1e-4)
    sync = torch.cuda.synchronize
    cases = {
        "layernorm 8192x768: cuforge op": lambda: op["layernorm"](inp, weight, bias),
        "layernorm 8192x768: F.layer_norm": lambda: torch.nn.functional.layer_norm(inp, (COLS,), weight, bias),
    }
    timed = take_turns({name: loop_timer(call, sync, 500, 200) for name, call in cases.items()}, ROUNDS)
    mean, rstd = torch.empty(ROWS, device="cuda"), torch.empty(ROWS, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(200):
        LayerNorm(out, mean, rstd, inp, weight, bias, ROWS, COLS)
    end.record()
    sync()
    timed["layernorm 8192x768: the cuforge kernel alone (GPU time)"] = start.elapsed_time(end) / 200 * 1e3
    return timed


def compiled(torch: Any, op: dict[str, Any], missing: dict[str, str]) -> dict[str, Any]:
    """The op and a Triton kernel, each in a compiled function (default and reduce-overhead):
    graph breaks, whether the op's launches replay inside the CUDA graph, and the time per call."""
    import torch._dynamo

    x = torch.randn(N, device="cuda")
    scale = op["scale"]
    kernel = triton_scale()

    def with_cuforge(x: Any) -> Any:
        return scale(2.0, x) + 1.0

    def with_triton(x: Any) -> Any:
        y = torch.empty_like(x)
        kernel[((x.numel() + 255) // 256,)](x, y, 2.0, x.numel(), BLOCK=256)
        return y + 1.0

    out: dict[str, Any] = {}
    for name, fn in (("cuforge op", with_cuforge), ("triton kernel", with_triton)):
        torch._dynamo.reset()
        out[f"torch.compile, {name}: graph breaks"] = torch._dynamo.explain(fn)(x).graph_break_count
    cases: dict[str, Callable[[], object]] = {}
    for mode in ("default", "reduce-overhead"):
        for name, fn in (("cuforge op", with_cuforge), ("triton kernel", with_triton)):
            f = torch.compile(fn, fullgraph=True, mode=None if mode == "default" else mode)
            for _ in range(3):
                torch.testing.assert_close(f(x), 2.0 * x + 1.0)
            cases[f"torch.compile ({mode}), {name} (us per call)"] = (lambda f=f: f(x))
    # Inside the CUDA graph: replays launch nothing through cuforge, and still compute.
    graphed = torch.compile(with_cuforge, fullgraph=True, mode="reduce-overhead")
    for _ in range(3):
        graphed(x)
    before = launch_count()
    x.copy_(torch.randn(N, device="cuda"))
    result = graphed(x)
    torch.testing.assert_close(result, 2.0 * x + 1.0)
    out["reduce-overhead: cuforge launches in a replay"] = launch_count() - before
    out.update(take_turns({name: loop_timer(call, torch.cuda.synchronize, CALLS, 200) for name, call in cases.items()}, ROUNDS))
    return out


def main() -> dict[str, Any]:
    missing: dict[str, str] = {}
    try:
        import torch
    except ImportError:
        return {"torch": "missing: torch not installed"}
    op = ops(torch)
    results: dict[str, Any] = dict(eager(torch, op, missing))
    results.update(layernorm(torch, op))
    try:
        results.update(compiled(torch, op, missing))
    except Exception as exc:
        missing["torch.compile"] = f"failed: {type(exc).__name__}: {exc}"[:200]
    return {**results, **missing}


if __name__ == "__main__":
    report(main(), 64, " us")
