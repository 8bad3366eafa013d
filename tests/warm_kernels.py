"""The kernels whose warm starts tests run in fresh processes: a plain body, and the README's
family whose body substitutes ``{{ BLOCK }}``."""

import cuforge as cf


@cf.kernel
class Saxpy:
    a: cf.float32
    x: cf.In[cf.float32]
    y: cf.Array[cf.float32]
    n: cf.int64
    body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i];"


@cf.kernel
class Axpy:
    T = cf.typeparam(cf.float32, cf.float64)
    BLOCK = cf.intparam(256, 128)
    a: T
    x: cf.In[T]
    y: cf.Array[T]
    n: cf.int64
    block = "BLOCK"
    body = "long long i = blockIdx.x * (long long){{ BLOCK }} + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i];"
