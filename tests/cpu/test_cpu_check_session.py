"""A new user's three kernel bugs under the pytest plugin's default checked CPU launches: each
fails its test on every shape, naming the kernel, the kind of bug and the body's line, and the
session goes on to the tests after them (which pass)."""

from __future__ import annotations

import os
import re

import pytest

# A thread reads its neighbours' tile entries before they are written: the first report is that
# read, before the race it is part of
KIND_OF_MISSING_BARRIER = "UninitializedReadError"

USER_TESTS = '''
import numpy as np
import pytest

import cuforge as cf
from cuforge.testing import assert_kernel_matches

T = 16


@cf.kernel
class MatMulNoGuard:
    """C = A @ B in 16x16 shared tiles, without the edge guard on the tiles' loads and the store."""
    a: cf.In[cf.float32]
    b: cf.In[cf.float32]
    c: cf.Out[cf.float32]
    m: cf.int32
    n: cf.int32
    k: cf.int32
    block = (16, 16)
    body = """
    __shared__ float ta[16][16], tb[16][16];
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < (k + 15) / 16; ++t) {
        ta[threadIdx.y][threadIdx.x] = a[row * k + t * 16 + threadIdx.x];
        tb[threadIdx.y][threadIdx.x] = b[(t * 16 + threadIdx.y) * n + col];
        __syncthreads();
        for (int i = 0; i < 16; ++i) acc += ta[threadIdx.y][i] * tb[i][threadIdx.x];
        __syncthreads();
    }
    c[row * n + col] = acc;
    """


@cf.kernel
class MatMulNoSync:
    """The same tiles, guarded, but without the barrier after the loads."""
    a: cf.In[cf.float32]
    b: cf.In[cf.float32]
    c: cf.Out[cf.float32]
    m: cf.int32
    n: cf.int32
    k: cf.int32
    block = (16, 16)
    body = """
    __shared__ float ta[16][16], tb[16][16];
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < (k + 15) / 16; ++t) {
        int ak = t * 16 + threadIdx.x, bk = t * 16 + threadIdx.y;
        ta[threadIdx.y][threadIdx.x] = row < m && ak < k ? a[row * k + ak] : 0.0f;
        tb[threadIdx.y][threadIdx.x] = bk < k && col < n ? b[bk * n + col] : 0.0f;
        for (int i = 0; i < 16; ++i) acc += ta[threadIdx.y][i] * tb[i][threadIdx.x];
        __syncthreads();
    }
    if (row < m && col < n) c[row * n + col] = acc;
    """


@cf.kernel
class StencilNoHalo:
    """y[i] = x[i-1] + x[i] + x[i+1] with no check at the edges."""
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i - 1] + x[i] + x[i + 1];
    """


def matmul_ref(a, b, c, m, n, k):
    c[:] = (a.reshape(m, k) @ b.reshape(k, n)).ravel()


def stencil_ref(x, y, n):
    y[:] = np.convolve(x, np.ones(3, np.float32), "same")


SHAPES = [(1, 1, 100), (70, 33, 45), (17, 40, 20)]  # (none a multiple of the tile: the guard's absence shows)


@cf.kernel
class Copy:
    x: cf.In[cf.float32]
    y: cf.Out[cf.float32]
    n: cf.int64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
    """


@pytest.mark.launches
@pytest.mark.parametrize("m, n, k", SHAPES)
@pytest.mark.parametrize("kernel", [MatMulNoGuard, MatMulNoSync], ids=lambda k: k.__name__)
def test_matmul(kernel, m, n, k):
    rng = np.random.default_rng(0)
    a, b = rng.random(m * k, dtype=np.float32), rng.random(k * n, dtype=np.float32)
    assert_kernel_matches(kernel, matmul_ref, a, b, np.zeros(m * n, np.float32), m, n, k,
                          grid=(-(-n // T), -(-m // T)), rtol=1e-4, atol=1e-4)


@pytest.mark.launches
@pytest.mark.parametrize("n", [1, 300, 4096])
def test_stencil(n):
    x = np.random.default_rng(1).random(n, dtype=np.float32)
    assert_kernel_matches(StencilNoHalo, stencil_ref, x, np.zeros(n, np.float32), n)


@pytest.mark.launches
def test_after_them():
    def copy_ref(x, y, n):
        y[:] = x

    assert_kernel_matches(Copy, copy_ref, np.arange(1000, dtype=np.float32), np.zeros(1000, np.float32), 1000)
'''


def test_each_bug_fails_its_test_on_every_shape_naming_kernel_kind_and_line(pytester):
    pytester.makepyfile(test_user=USER_TESTS)
    env = {"CUFORGE_DEVICE": "cpu", "CUFORGE_CACHE_DIR": os.environ.get("CUFORGE_CACHE_DIR", "")}
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            if value:
                mp.setenv(name, value)
        result = pytester.runpytest_subprocess("-p", "cuforge.pytest_plugin", "-q", "-rf", "--cuforge-device=cpu")
    out = result.stdout.str()
    result.assert_outcomes(failed=9, passed=1)  # the session went on to the last test
    for shape in ("1-1-100", "70-33-45", "17-40-20"):
        assert f"FAILED test_user.py::test_matmul[MatMulNoGuard-{shape}]" in out
        assert f"FAILED test_user.py::test_matmul[MatMulNoSync-{shape}]" in out
    for n in (1, 300, 4096):
        assert f"FAILED test_user.py::test_stencil[{n}]" in out
    reports = re.findall(r"^E +cuforge\.(\w+): (\w+) \(grid=.*, checked: .* at (\w+)\.body, line (\d+): ", out, re.M)
    kinds = {(kernel, kind) for kind, kernel, _, _ in reports}
    assert kinds == {("MatMulNoGuard", "OutOfBoundsError"), ("MatMulNoSync", KIND_OF_MISSING_BARRIER),
                     ("StencilNoHalo", "OutOfBoundsError")}, reports  # fmt: skip
    assert len(reports) == 9 and all(kernel == where for _, kernel, where, _ in reports), reports
    assert "Fatal Python error" not in out and "Aborted" not in out
