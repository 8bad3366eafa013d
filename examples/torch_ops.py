"""A fused activation as a PyTorch operator, with its backward kernel, under torch.compile.

    python examples/torch_ops.py

``bias_silu(x, bias) = silu(x + bias)`` runs as one cuforge kernel forward and one backward,
registered through ``torch.library.custom_op``: ``torch.compile(fullgraph=True)`` traces
it with no graph break, autograd differentiates it (checked by ``gradcheck`` in float64),
and ``torch.cuda.graph`` captures it. Needs PyTorch and an NVIDIA GPU.
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
    if not torch.cuda.is_available():
        print("bias_silu is registered as", torch.ops.cuforge_examples.bias_silu.default._schema)
        print("running it needs an NVIDIA GPU")
        return
    x = torch.randn(512, 1024, device="cuda")
    bias = torch.randn(1024, device="cuda")
    reference = torch.nn.functional.silu(x + bias)
    torch.testing.assert_close(bias_silu(x, bias), reference)

    @torch.compile(fullgraph=True)  # fullgraph: a graph break would be an error
    def layer(x, bias):
        return bias_silu(x, bias) * 2.0 + 1.0

    torch.testing.assert_close(layer(x, bias), reference * 2.0 + 1.0)

    x64 = torch.randn(8, 16, device="cuda", dtype=torch.float64, requires_grad=True)
    b64 = torch.randn(16, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(bias_silu, (x64, b64))
    torch.library.opcheck(bias_silu, (x, bias))
    print("bias_silu: eager, torch.compile(fullgraph=True), gradcheck and opcheck all pass")


if __name__ == "__main__":
    main()
