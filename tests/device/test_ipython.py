"""%%cuda kernels launched on host arrays, on either device."""

from __future__ import annotations

import numpy as np
import pytest

IPython = pytest.importorskip("IPython")
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

pytestmark = pytest.mark.launches
CELL = """
extern "C" __global__ void scale_add(double a, const double* __restrict__ x, double* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
"""


@pytest.fixture
def shell():
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "cuforge")
    sh.run_cell_magic("cuda", "", CELL)
    yield sh
    InteractiveShell.clear_instance()


def test_on_numpy(shell):
    k = shell.user_ns["scale_add"]
    x, y = np.arange(1000.0), np.ones(1000)
    k(2.0, x, y, 1000)
    np.testing.assert_array_equal(y, 2 * np.arange(1000.0) + 1)


def test_templated_cell(shell):
    shell.run_cell_magic(
        "cuda",
        "--instantiate 'fill<float, 7>'",
        "template <typename T, int V> __global__ void fill(T* x, int n) { int i = threadIdx.x; if (i < n) x[i] = V; }",
    )
    x = np.zeros(32, np.float32)
    shell.user_ns["fill"](x, 32, grid=1, block=32)
    assert (x == 7).all()
