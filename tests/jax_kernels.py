"""Kernels and their JAX ops that the JAX tests share, on either platform (import it after
``pytest.importorskip("jax")``: making an op imports JAX). A row-per-thread layernorm family
with its backward kernel (which accumulates the weight's gradients into zeroed outputs), and a
kernel that writes one of its inputs."""

from __future__ import annotations

import cuforge as cf
import cuforge.jax as cfj


@cf.kernel
class LayerNorm:
    T = cf.typeparam(cf.float32, cf.float64)
    out: cf.Out[T]
    mean: cf.Out[T]
    rstd: cf.Out[T]
    inp: cf.In[T]
    weight: cf.In[T]
    bias: cf.In[T]
    eps: cf.float32
    N: cf.int64
    C: cf.int64
    block = 64
    grid = lambda N: (N + 63) // 64  # noqa: E731
    body = """
    long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (r >= N) return;
    const T* x = inp + r * C;
    double s = 0, v = 0;
    for (long long c = 0; c < C; c++) s += (double)x[c];
    double m = s / C;
    for (long long c = 0; c < C; c++) { double d = (double)x[c] - m; v += d * d; }
    double rs = 1.0 / sqrt(v / C + (double)eps);
    mean[r] = (T)m;
    rstd[r] = (T)rs;
    for (long long c = 0; c < C; c++) out[r * C + c] = (T)(((double)x[c] - m) * rs * (double)weight[c] + (double)bias[c]);
    """


@cf.kernel
class LayerNormBackward:
    T = cf.typeparam(cf.float32, cf.float64)
    dinp: cf.Out[T]
    dweight: cf.Out[T]
    dbias: cf.Out[T]
    dout: cf.In[T]
    inp: cf.In[T]
    weight: cf.In[T]
    mean: cf.In[T]
    rstd: cf.In[T]
    N: cf.int64
    C: cf.int64
    block = 64
    grid = lambda N: (N + 63) // 64  # noqa: E731
    body = """
    long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (r >= N) return;
    const T* x = inp + r * C;
    const T* g = dout + r * C;
    double m = mean[r], rs = rstd[r], a = 0, b = 0;
    for (long long c = 0; c < C; c++) {
        double xhat = ((double)x[c] - m) * rs, dxhat = (double)g[c] * (double)weight[c];
        a += dxhat; b += dxhat * xhat;
        atomicAdd(&dweight[c], (T)((double)g[c] * xhat));
        atomicAdd(&dbias[c], g[c]);
    }
    a /= C; b /= C;
    for (long long c = 0; c < C; c++) {
        double xhat = ((double)x[c] - m) * rs;
        dinp[r * C + c] = (T)(rs * ((double)g[c] * (double)weight[c] - a - xhat * b));
    }
    """


def rows(inp):
    return inp.size // inp.shape[-1]


layernorm_backward = cfj.op(
    LayerNormBackward,
    outputs={"dinp": "like inp", "dweight": "zeros like weight", "dbias": "zeros like weight"},
    sizes={"N": rows, "C": lambda inp: inp.shape[-1]},
)


def _backward(saved, g_out, g_mean, g_rstd):
    """The gradients of out (mean and rstd are statistics the backward pass reuses, not
    differentiated: their cotangents are left out)."""
    (inp, weight, _, _), (_, mean, rstd) = saved
    dinp, dweight, dbias = layernorm_backward(g_out, inp, weight, mean, rstd)
    return dinp, dweight, dbias, None


layernorm = cfj.op(
    LayerNorm,
    outputs={"out": "like inp", "mean": lambda inp: inp.shape[:-1], "rstd": lambda inp: inp.shape[:-1]},
    sizes={"N": rows, "C": lambda inp: inp.shape[-1]},
    backward=_backward,
    batch=("inp",),  # a batch of inputs is more rows: one launch under jax.vmap
)


@cf.kernel
class Axpy:
    T = cf.typeparam(cf.float32, cf.float64)
    a: T
    x: cf.In[T]
    y: cf.Array[T]
    n: cf.int64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
    """


axpy = cfj.op(Axpy, sizes={"n": lambda x: x.size})  # y is written: the op returns its new value
