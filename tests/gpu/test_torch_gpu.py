"""cuforge kernels as PyTorch operators on a real GPU: eager, torch.compile(fullgraph=True),
opcheck, gradcheck, torch.cuda.graph, and the current PyTorch stream."""

from __future__ import annotations

import numpy as np
import pytest

import cuforge as cf
from cuforge.pytest_plugin import gpu_module

from .. import examples

pytestmark = gpu_module()
torch = pytest.importorskip("torch")
from ..torch_kernels import axpy_  # noqa: E402  (registering the op imports torch)

N = 3001


@pytest.fixture(scope="module")
def example():
    return examples.load("torch_ops")


def test_functional_op_matches_eager_torch(example):
    x = torch.randn(64, 33, device="cuda")
    b = torch.randn(33, device="cuda")
    torch.testing.assert_close(example.bias_silu(x, b), torch.nn.functional.silu(x + b))
    assert torch.ops.cuforge_examples.bias_silu.default._schema.returns[0].type.kind() == "TensorType"


def test_mutating_op_writes_its_array_and_returns_nothing():
    x = torch.randn(N, device="cuda", dtype=torch.float64)
    y = torch.ones(N, device="cuda", dtype=torch.float64)
    assert axpy_(2.0, x, y) is None
    torch.testing.assert_close(y, 2.0 * x + 1.0)
    assert "Tensor(a2!) y" in str(torch.ops.cuforge_tests.axpy_.default._schema)


def test_torch_compile_fullgraph_has_no_graph_break(example):
    def f(x, b, y):
        h = example.bias_silu(x * 2.0, b)
        axpy_(0.5, h, y)
        return h.sum(-1) + y.sum(-1)

    x = torch.randn(32, 64, device="cuda")
    b = torch.randn(64, device="cuda")
    eager_y, compiled_y = torch.zeros(32, 64, device="cuda"), torch.zeros(32, 64, device="cuda")
    eager = f(x, b, eager_y)
    explained = torch._dynamo.explain(f)(x, b, torch.zeros(32, 64, device="cuda"))
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    compiled = torch.compile(f, fullgraph=True)(x, b, compiled_y)
    torch.testing.assert_close(compiled, eager)
    torch.testing.assert_close(compiled_y, eager_y)


def test_opcheck_passes(example):
    x = torch.randn(16, 24, device="cuda")
    b = torch.randn(24, device="cuda")
    torch.library.opcheck(example.bias_silu, (x, b))
    torch.library.opcheck(axpy_, (1.5, torch.randn(N, device="cuda"), torch.randn(N, device="cuda")))


def test_gradcheck_float64(example):
    x = torch.randn(6, 10, device="cuda", dtype=torch.float64, requires_grad=True)
    b = torch.randn(10, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(example.bias_silu, (x, b))
    y = example.bias_silu(x, b)
    y.sum().backward()
    ref_x, ref_b = x.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    torch.nn.functional.silu(ref_x + ref_b).sum().backward()
    torch.testing.assert_close(x.grad, ref_x.grad)
    torch.testing.assert_close(b.grad, ref_b.grad)


def test_op_inside_torch_cuda_graph(example):
    x = torch.randn(128, 32, device="cuda")
    b = torch.randn(32, device="cuda")
    example.bias_silu(x, b)  # warm: compiled and loaded before the capture
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        example.bias_silu(x, b)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = example.bias_silu(x, b)
    x.copy_(torch.randn(128, 32, device="cuda"))
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, torch.nn.functional.silu(x + b))


def test_launch_goes_on_the_current_torch_stream():
    x = torch.randn(1 << 20, device="cuda")
    y = torch.zeros(1 << 20, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(20):
            axpy_(1.0, x, y)
        done = torch.cuda.Event()
        done.record(s)
    # Recorded on `s` after the launches: the event waits for them only if they went on `s`.
    done.synchronize()
    torch.testing.assert_close(y, 20.0 * x)


def test_wrong_dtype_is_named_eagerly_and_while_tracing(example):
    x = torch.randn(8, 4, device="cuda", dtype=torch.float16)
    b = torch.randn(4, device="cuda", dtype=torch.float16)
    with pytest.raises(cf.ArgumentTypeError, match=r"argument 'x' .* float32, float64; got an array of float16"):
        example.bias_silu(x, b)
    with pytest.raises(Exception, match=r"argument 'x' expects In\[T\] \(float32 or float64\), got a torch.float16 tensor"):
        torch.compile(lambda x, b: example.bias_silu(x, b), fullgraph=True)(x, b)


@cf.kernel
class LayerNormForward:
    """llm.c's layernorm forward, one thread per row: an Out[T] and two fixed float32 outputs."""

    T = cf.typeparam(cf.float32, cf.float64)
    out: cf.Out[T]
    mean: cf.Out[cf.float32]
    rstd: cf.Out[cf.float32]
    inp: cf.In[T]
    weight: cf.In[T]
    bias: cf.In[T]
    N: cf.int32
    C: cf.int32
    grid = lambda N: (N + 255) // 256  # noqa: E731
    body = """
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= N) return;
    const T* x = inp + (long long)row * C;
    float m = 0.0f;
    for (int i = 0; i < C; i++) m += (float)x[i];
    m /= C;
    float v = 0.0f;
    for (int i = 0; i < C; i++) { float d = (float)x[i] - m; v += d * d; }
    float s = rsqrtf(v / C + 1e-5f);
    for (int i = 0; i < C; i++) out[(long long)row * C + i] = (T)(s * ((float)x[i] - m)) * weight[i] + bias[i];
    mean[row] = m;
    rstd[row] = s;
    """


@cf.kernel
class WeightGrad:
    """layernorm backward's weight and bias gradients: two Out[T] outputs that accumulate with
    atomicAdd, so they must start at zero."""

    T = cf.typeparam(cf.float32, cf.float64)
    dweight: cf.Out[T]
    dbias: cf.Out[T]
    dout: cf.In[T]
    norm: cf.In[T]
    weight: cf.In[T]
    N: cf.int32
    C: cf.int32
    grid = lambda N, C: (N * C + 255) // 256  # noqa: E731
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < (long long)N * C) {
        atomicAdd(&dweight[i % C], dout[i] * norm[i]);
        atomicAdd(&dbias[i % C], dout[i]);
    }
    """


layernorm = LayerNormForward.torch_op(
    "cuforge_tests::layernorm",
    outputs={"out": "like inp", "mean": lambda inp: (inp.shape[0],), "rstd": lambda inp: (inp.shape[0],)},
    sizes={"N": lambda inp: inp.shape[0], "C": lambda inp: inp.shape[1]},
)
weight_grad = WeightGrad.torch_op(
    "cuforge_tests::weight_grad",
    outputs={"dweight": "zeros like weight", "dbias": "zeros like weight"},
    sizes={"N": lambda dout: dout.shape[0], "C": lambda dout: dout.shape[1]},
)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_family_op_with_several_outputs_matches_numpy_eagerly_and_passes_opcheck(dtype):
    g = torch.Generator(device="cuda").manual_seed(0)
    inp = torch.randn(37, 24, device="cuda", dtype=dtype, generator=g)
    weight = torch.randn(24, device="cuda", dtype=dtype, generator=g)
    bias = torch.randn(24, device="cuda", dtype=dtype, generator=g)
    out, mean, rstd = layernorm(inp, weight, bias)
    assert (out.dtype, mean.dtype, rstd.dtype) == (dtype, torch.float32, torch.float32)
    x = inp.cpu().numpy().astype(np.float64)
    m = x.mean(axis=1)
    s = 1.0 / np.sqrt(x.var(axis=1) + 1e-5)
    ref = (x - m[:, None]) * s[:, None] * weight.cpu().numpy() + bias.cpu().numpy()
    np.testing.assert_allclose(mean.cpu().numpy(), m, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rstd.cpu().numpy(), s, rtol=1e-4)
    np.testing.assert_allclose(out.cpu().numpy(), ref, rtol=1e-4, atol=1e-4)
    torch.library.opcheck(layernorm, (inp, weight, bias))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_two_zeroed_outputs_of_one_type_parameter_accumulate_from_zero(dtype):
    # small integers: the sums are exact in any order the atomics take, so opcheck's comparisons hold
    dout = torch.randint(-8, 8, (50, 16), device="cuda").to(dtype)
    norm = torch.randint(-8, 8, (50, 16), device="cuda").to(dtype)
    weight = torch.randn(16, device="cuda", dtype=dtype)
    for _ in range(3):  # the caching allocator hands back blocks that held 7s: empty() would keep them
        garbage = [torch.full((16,), 7.0, device="cuda", dtype=dtype) for _ in range(2)]
        del garbage
        dweight, dbias = weight_grad(dout, norm, weight)
        assert (dweight.dtype, dbias.dtype) == (dtype, dtype)
        np.testing.assert_array_equal(dweight.cpu().numpy(), (dout.cpu().numpy() * norm.cpu().numpy()).sum(0))
        np.testing.assert_array_equal(dbias.cpu().numpy(), dout.cpu().numpy().sum(0))
    torch.library.opcheck(weight_grad, (dout, norm, weight))


@cf.kernel
class ShiftKeep:
    """An Optional input (a bias that may be absent) and an Optional output the op mutates
    (what llm.c keeps for the backward pass only when training)."""

    T = cf.typeparam(cf.float32, cf.float64)
    out: cf.Out[T]
    x: cf.In[T]
    bias: cf.Optional[cf.In[T]]
    kept: cf.Optional[cf.Out[cf.float32]]
    n: cf.int64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = x[i] + (bias ? bias[i] : (T)0);
    if (kept) kept[i] = (float)x[i] * 2.0f;
    """


shift_keep = ShiftKeep.torch_op("cuforge_tests::shift_keep", outputs={"out": "like x"}, sizes={"n": lambda x: x.numel()})


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_optional_tensors_take_none_or_a_tensor_and_match_numpy(dtype):
    assert str(torch.ops.cuforge_tests.shift_keep.default._schema) == (
        "cuforge_tests::shift_keep(Tensor x, Tensor? bias, Tensor(a2!)? kept) -> Tensor"
    )
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(N, device="cuda", dtype=dtype, generator=g)
    bias = torch.randn(N, device="cuda", dtype=dtype, generator=g)
    out = shift_keep(x, None, None)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.cpu().numpy(), x.cpu().numpy())
    kept = torch.zeros(N, device="cuda")
    out = shift_keep(x, bias, kept)
    np.testing.assert_allclose(out.cpu().numpy(), x.cpu().numpy() + bias.cpu().numpy(), rtol=1e-6)
    np.testing.assert_allclose(kept.cpu().numpy(), x.cpu().numpy().astype(np.float32) * 2.0, rtol=1e-6)
    torch.library.opcheck(shift_keep, (x, None, None))
    torch.library.opcheck(shift_keep, (x, bias, torch.zeros(N, device="cuda")))
    compiled = torch.compile(lambda x, b, k: shift_keep(x, b, k) * 2.0, fullgraph=True)
    kept = torch.zeros(N, device="cuda")
    torch.testing.assert_close(compiled(x, bias, kept), 2.0 * (x + bias))
    torch.testing.assert_close(kept, (x * 2.0).float())
    # None for the argument the op mutates traces with no graph break; PyTorch's inductor
    # cannot lower it (docs/guide/torch.md), so this graph runs on aot_eager
    traced = torch.compile(lambda x: shift_keep(x, None, None) * 2.0, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(traced(x), 2.0 * x)


# PyTorch's own (2.11): a function of PyTorch ops alone under mode="reduce-overhead" warns the same
# under warnings-as-errors, from an empty graph cudagraph trees captures before the function's
@pytest.mark.filterwarnings("ignore:The CUDA Graph is empty:UserWarning")
def test_reduce_overhead_replays_the_op_inside_torch_compiles_cuda_graph(example):
    from cuforge._runtime.faults import launch_count  # every launch cuforge makes, counted

    f = torch.compile(lambda x, b: example.bias_silu(x, b) * 2.0, fullgraph=True, mode="reduce-overhead")
    x, b = torch.randn(64, 32, device="cuda"), torch.randn(32, device="cuda")
    for _ in range(3):  # warm-up runs, then the capture
        f(x, b)
    x.copy_(torch.randn(64, 32, device="cuda"))
    before = launch_count()
    out = f(x, b)
    assert launch_count() == before  # replayed: no launch went through cuforge
    torch.testing.assert_close(out, torch.nn.functional.silu(x + b) * 2.0)
