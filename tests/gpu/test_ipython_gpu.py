"""%%cuda kernels launched on CuPy arrays and CUDA tensors, and the tour notebook executed
with its launches (a CUDA graph among them). %%cuda on host arrays: tests/device."""

from __future__ import annotations

import json
import os

import pytest

from cuforge.pytest_plugin import gpu_module

IPython = pytest.importorskip("IPython")
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

pytestmark = gpu_module()
TOUR = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "notebooks", "cuforge_tour.ipynb")
CELL = """
extern "C" __global__ void scale_add(double a, const double* __restrict__ x, double* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
"""


@pytest.fixture(scope="module")
def shell():
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "cuforge")
    sh.run_cell_magic("cuda", "", CELL)
    return sh


def test_on_cupy(shell):
    cp = pytest.importorskip("cupy")
    k = shell.user_ns["scale_add"]
    x, y = cp.arange(1000, dtype=cp.float64), cp.zeros(1000, dtype=cp.float64)
    k(3.0, x, y, 1000)
    cp.testing.assert_array_equal(y, 3 * x)


def test_on_torch(shell):
    torch = pytest.importorskip("torch")
    k = shell.user_ns["scale_add"]
    x = torch.arange(1000, dtype=torch.float64, device="cuda")
    y = torch.zeros(1000, dtype=torch.float64, device="cuda")
    k(0.5, x, y, 1000)
    torch.cuda.synchronize()
    assert torch.equal(y, 0.5 * x)


def test_tour_notebook_end_to_end_with_launches():
    with open(TOUR, encoding="utf-8") as fh:
        nb = json.load(fh)
    sh = InteractiveShell.instance()
    ran = 0
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        result = sh.run_cell("".join(cell["source"]))
        expect_error = "raises-exception" in cell.get("metadata", {}).get("tags", [])
        assert result.success != expect_error, f"cell {cell['id']} {'passed' if result.success else 'failed'}"
        ran += 1
    assert ran == 8 and sh.user_ns["GPU"] is True
    assert sh.user_ns["g"].launches == ("Saxpy",) * 10  # the CUDA graph cell ran its launches
