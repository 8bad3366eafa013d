"""A fused activation as a PyTorch operator, with its backward kernel, under torch.compile.

    python examples/torch_ops.py

``bias_silu(x, bias) = silu(x + bias)`` runs as one cuforge kernel forward and one backward,
registered as PyTorch operators: ``torch.compile(fullgraph=True)`` traces it with no graph
break, autograd differentiates it (checked by ``gradcheck`` in float64), and
``torch.cuda.graph`` captures it. Needs PyTorch; without an NVIDIA GPU it runs on CPU
tensors, on cuforge's CPU backend (a host C++ compiler builds the kernels).
"""

import torch

import cuforge as cf


@cf.kernel
class BiasSilu:
    """y = silu(x + bias), bias broadcast along the last dimension."""

    T = cf.typeparam(cf.float32, cf.float64)
    x: cf.In[T]
    bias: cf.In[T]
    y: cf.Out[T]
    n: cf.int64
    cols: cf.int64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) {
        T v = x[i] + bias[i % cols];
        y[i] = v / (T(1) + exp(-v));
    }
    """


@cf.kernel
class BiasSiluBackward:
    """dx = dy * silu'(x + bias)"""

    T = cf.typeparam(cf.float32, cf.float64)
    dy: cf.In[T]
    x: cf.In[T]
    bias: cf.In[T]
    dx: cf.Out[T]
    n: cf.int64
    cols: cf.int64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) {
        T v = x[i] + bias[i % cols];
        T s = T(1) / (T(1) + exp(-v));
        dx[i] = dy[i] * s * (T(1) + v * (T(1) - s));
    }
    """


SIZES = {"n": lambda x: x.numel(), "cols": lambda bias: bias.numel()}

bias_silu_backward = BiasSiluBackward.torch_op("cuforge_examples::bias_silu_backward", outputs={"dx": "like x"}, sizes=SIZES)


def setup_context(ctx, inputs, output):
    x, bias = inputs
    ctx.save_for_backward(x, bias)


def backward(ctx, dy):
    x, bias = ctx.saved_tensors
    dx = bias_silu_backward(dy.contiguous(), x, bias)
    return dx, dx.reshape(-1, bias.numel()).sum(0)


bias_silu = BiasSilu.torch_op("cuforge_examples::bias_silu", outputs={"y": "like x"}, sizes=SIZES,
                              backward=backward, setup_context=setup_context)  # fmt: skip


def main() -> None:
    device = "cuda" if torch.cuda.is_available() else "cpu"  # CPU tensors: cuforge's CPU backend
    x = torch.randn(512, 1024, device=device)
    bias = torch.randn(1024, device=device)
    reference = torch.nn.functional.silu(x + bias)
    torch.testing.assert_close(bias_silu(x, bias), reference)

    @torch.compile(fullgraph=True, backend="inductor" if device == "cuda" else "aot_eager")  # a graph break is an error
    def layer(x, bias):
        return bias_silu(x, bias) * 2.0 + 1.0

    torch.testing.assert_close(layer(x, bias), reference * 2.0 + 1.0)

    x64 = torch.randn(8, 16, device=device, dtype=torch.float64, requires_grad=True)
    b64 = torch.randn(16, device=device, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(bias_silu, (x64, b64))
    torch.library.opcheck(bias_silu, (x, bias))
    print(f"bias_silu on {device} tensors: eager, torch.compile(fullgraph=True), gradcheck and opcheck all pass")


if __name__ == "__main__":
    main()
