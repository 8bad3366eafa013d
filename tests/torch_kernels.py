"""A kernel and its PyTorch op that the PyTorch tests share, on either device (import it after
``pytest.importorskip("torch")``: registering the op imports PyTorch)."""

from __future__ import annotations

import cuforge as cf


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


axpy_ = Axpy.torch_op("cuforge_tests::axpy_", sizes={"n": lambda x: x.numel()})  # writes y, returns nothing
