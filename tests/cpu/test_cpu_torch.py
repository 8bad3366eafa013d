"""cuforge operators on CPU tensors: PyTorch sends them to the operator's CPU implementation,
which runs the kernel on cuforge's CPU backend, checked here against PyTorch's own ops
(eager, autograd, opcheck, torch.compile). Skipped where PyTorch is absent."""

from __future__ import annotations

import pytest

import cuforge as cf

from .. import examples

torch = pytest.importorskip("torch")
from ..torch_kernels import Axpy, axpy_  # noqa: E402  (registering the op imports torch)

example = examples.load("torch_ops")  # bias_silu: a family op with a backward op


@cf.kernel
class RowStats:
    """Two outputs: one shaped like the input, one sized by a function of it."""

    T = cf.typeparam(cf.float32, cf.float64)
    centred: cf.Out[T]
    mean: cf.Out[cf.float32]
    x: cf.In[T, 2]
    rows: cf.int32
    cols: cf.int32
    grid = lambda rows: (rows + 31) // 32  # noqa: E731
    block = 32
    body = """
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    double s = 0;
    for (int c = 0; c < cols; c++) s += (double)x[(long long)r * cols + c];
    mean[r] = (float)(s / cols);
    for (int c = 0; c < cols; c++) centred[(long long)r * cols + c] = x[(long long)r * cols + c] - (T)(s / cols);
    """


row_stats = RowStats.torch_op(
    "cuforge_cpu_tests::row_stats",
    outputs={"centred": "like x", "mean": lambda x: x.shape[0]},
    sizes={"rows": lambda x: x.shape[0], "cols": lambda x: x.shape[1]},
)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_functional_family_op_matches_torch_on_cpu_tensors(dtype):
    x = torch.randn(37, 24, dtype=dtype)
    b = torch.randn(24, dtype=dtype)
    y = example.bias_silu(x, b)
    assert (y.dtype, y.device.type) == (dtype, "cpu")
    torch.testing.assert_close(y, torch.nn.functional.silu(x + b))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_two_outputs_like_an_input_and_sized_by_a_function(dtype):
    x = torch.randn(50, 9, dtype=dtype).t().contiguous().t()  # not C-contiguous: the outputs still are
    centred, mean = row_stats(x.contiguous())
    assert (centred.dtype, mean.dtype, mean.shape) == (dtype, torch.float32, (50,))
    torch.testing.assert_close(mean, x.mean(1).float())
    torch.testing.assert_close(centred, x - x.mean(1, keepdim=True))


def test_a_mutating_op_writes_its_tensor_and_bumps_its_version():
    x = torch.randn(1001, dtype=torch.float64)
    y = torch.ones(1001, dtype=torch.float64)
    before = y._version
    assert axpy_(2.0, x, y) is None
    torch.testing.assert_close(y, 2.0 * x + 1.0)
    assert y._version > before  # autograd sees the write, as it sees PyTorch's in-place ops


def test_a_saved_tensor_written_by_a_mutating_op_is_caught_by_autograd():
    w = torch.randn(8, dtype=torch.float64, requires_grad=True)
    h = w * 1.0
    out = (h * h).sum()  # saves h for the backward pass
    with torch.no_grad():
        axpy_(1.0, torch.ones(8, dtype=torch.float64), h)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation"):
        out.backward()


def test_the_family_instantiation_follows_the_dtypes_call_by_call():
    x32, b32 = torch.randn(4, 6), torch.randn(6)
    x64, b64 = x32.double(), b32.double()
    for x, b in ((x32, b32), (x64, b64), (x32, b32)):
        torch.testing.assert_close(example.bias_silu(x, b), torch.nn.functional.silu(x + b))
    with pytest.raises(cf.ArgumentTypeError, match=r"float32, float64; got an array of float16"):
        example.bias_silu(x32.half(), b32.half())
    with pytest.raises(cf.ArgumentTypeError, match=r"^BiasSilu: arguments 'x' \(float32\) and 'bias' \(float64\) must share T"):
        example.bias_silu(x32, b64)  # named, not launched


def test_gradcheck_float64_through_the_backward_op():
    x = torch.randn(6, 10, dtype=torch.float64, requires_grad=True)
    b = torch.randn(10, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(example.bias_silu, (x, b))
    y = example.bias_silu(x, b)
    y.sum().backward()
    rx, rb = x.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    torch.nn.functional.silu(rx + rb).sum().backward()
    torch.testing.assert_close(x.grad, rx.grad)
    torch.testing.assert_close(b.grad, rb.grad)


def test_no_grad_and_inputs_without_grad_give_outputs_without_grad():
    x = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    b = torch.randn(5, dtype=torch.float64)
    assert example.bias_silu(x, b).requires_grad
    assert not example.bias_silu(x.detach(), b).requires_grad
    with torch.no_grad():
        assert not example.bias_silu(x, b).requires_grad


def test_opcheck_on_cpu_tensors():
    x, b = torch.randn(16, 24), torch.randn(24)
    torch.library.opcheck(example.bias_silu, (x, b))
    torch.library.opcheck(example.bias_silu, (x.double().requires_grad_(), b.double().requires_grad_()))
    torch.library.opcheck(row_stats, (torch.randn(9, 5),))
    torch.library.opcheck(axpy_, (1.5, torch.randn(33), torch.randn(33)))


def test_torch_compile_traces_the_op_with_no_graph_break():
    def f(x, b, y):
        h = example.bias_silu(x * 2.0, b)
        axpy_(0.5, h, y)
        return h.sum(-1) + y.sum(-1)

    x, b = torch.randn(8, 16), torch.randn(16)
    explained = torch._dynamo.explain(f)(x, b, torch.zeros(8, 16))
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    eager_y, compiled_y = torch.zeros(8, 16), torch.zeros(8, 16)
    eager = f(x, b, eager_y)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")(x, b, compiled_y)
    torch.testing.assert_close(compiled, eager)
    torch.testing.assert_close(compiled_y, eager_y)


def test_the_c_runner_and_the_python_runner_give_the_same_answers():
    from cuforge._runtime import libcuda
    from cuforge.integrations._torch_op import OpSpec

    if libcuda.claunch is None:
        pytest.skip("the C extension is not built here")
    sizes = {"n": lambda x: x.numel(), "cols": lambda bias: bias.numel()}
    specs = [
        (OpSpec(example.BiasSilu, "t::a", {"y": "like x"}, sizes), lambda d: (torch.randn(5, 7, dtype=d), torch.randn(7, dtype=d))),
        (OpSpec(RowStats, "t::b", {"centred": "zeros like x", "mean": lambda x: (x.shape[0],)},
                 {"rows": lambda x: x.shape[0], "cols": lambda x: x.shape[1]}), lambda d: (torch.randn(9, 4, dtype=d),)),
        (OpSpec(Axpy, "t::c", {}, {"n": lambda x, y: min(x.numel(), y.numel())}),
         lambda d: (1.5, torch.randn(33, dtype=d), torch.ones(33, dtype=d))),
    ]  # fmt: skip
    for spec, make in specs:
        c_run, py_run = spec.runner(on_cpu=True), spec.python_runner(on_cpu=True)
        assert type(c_run).__name__ == "OpRunner"
        for dtype in (torch.float32, torch.float64, torch.float32):
            args = make(dtype)
            twin = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
            got, want = c_run(*args), py_run(*twin)
            for g, w in zip(*(r if isinstance(r, tuple) else (r,) for r in (got, want))):
                assert (type(g), getattr(g, "dtype", None)) == (type(w), getattr(w, "dtype", None))
                torch.testing.assert_close(g, w)
            for a, t in zip(args, twin):
                if isinstance(a, torch.Tensor):
                    torch.testing.assert_close(a, t)  # the same writes to the arguments
                    assert a._version == t._version
        bad = tuple(a.half() if isinstance(a, torch.Tensor) else a for a in make(torch.float32))
        with pytest.raises(cf.ArgumentTypeError) as c_err:
            c_run(*bad)
        with pytest.raises(cf.ArgumentTypeError) as py_err:
            py_run(*bad)
        assert str(c_err.value) == str(py_err.value)


def test_the_example_runs_on_cpu_tensors(capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # its CPU-tensor branch, wherever this runs
    example.main()
    assert capsys.readouterr().out.strip() == (
        "bias_silu on cpu tensors: eager, torch.compile(fullgraph=True), gradcheck and opcheck all pass"
    )


def test_a_backward_pass_through_an_op_without_backward_is_pytorchs_warning():
    x = torch.randn(4, 3, requires_grad=True)
    centred, _ = row_stats(x)
    with pytest.warns(UserWarning, match=r"cuforge_cpu_tests::row_stats: an autograd kernel was not registered"):
        centred.sum().backward()
    assert x.grad is None  # left out, as the docs say
