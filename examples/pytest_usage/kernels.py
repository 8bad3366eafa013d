"""Kernels of a small project, tested by test_kernels.py beside this file."""

import cuforge as cf


@cf.kernel
class Axpy:
    """y <- a*x + y, for three dtypes and two block sizes."""

    T = cf.typeparam(cf.float32, cf.float64, cf.float16)
    BLOCK = cf.intparam(256, 128)
    a: T
    x: cf.In[T]
    y: cf.Array[T]
    n: cf.int64
    block = "BLOCK"
    body = """
    long long i = blockIdx.x * (long long)BLOCK + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
    """


@cf.kernel
class Clamp:
    """out = min(max(x, lo), hi)"""

    x: cf.In[cf.int32]
    out: cf.Out[cf.int32]
    lo: cf.int32
    hi: cf.int32
    n: cf.int64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = min(max(x[i], lo), hi);
    """
