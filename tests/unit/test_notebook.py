"""The tour notebook, executed by nbclient where no GPU is usable (as CI runs it): it compiles
for the GPU with NVRTC and runs its launches on the CPU backend."""

from __future__ import annotations

import os

import numpy as np
import pytest

import cuforge as cf

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")

TOUR = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "notebooks", "cuforge_tour.ipynb")


def test_tour_runs_its_kernels_on_the_cpu_without_a_gpu(monkeypatch, cuforge_cache_dir):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPU for the notebook's kernel, even on a machine with one
    monkeypatch.delenv("CUFORGE_DEVICE", raising=False)  # the notebook chooses the CPU itself
    monkeypatch.delenv("CUFORGE_ARCH", raising=False)
    monkeypatch.setenv("CUFORGE_CACHE_DIR", str(cuforge_cache_dir))
    nb = nbformat.read(TOUR, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3").execute()
    text = "\n".join(
        out.get("text", "") or "".join(out.get("data", {}).get("text/plain", ""))
        for cell in nb.cells
        for out in cell.get("outputs", [])
    )
    assert "launches run on the CPU | CuPy: False" in text
    # Saxpy(2.0, x, y, n) ran on the CPU on the notebook's arrays: its first values, as NumPy computes them
    x = np.random.default_rng(0).random(1 << 20, dtype=np.float32)
    assert f"Saxpy on the CPU matches NumPy: y[:3] = {(2 * x + 1)[:3]}" in text
    assert "bound: saxpy_c(a: float32, x: In[float32], y: Array[float32], n: int64)" in text
    assert "saxpy_c: argument 'x' expects In[float32], got a float64 array" in text
    assert "saxpy_c on the CPU matches NumPy: y[:3] = [" in text
    assert "4 instantiations" in text and "Axpy on the CPU matches NumPy for float32 and float64" in text
    assert "cf.graph() needs a GPU and CuPy here" in text
    errors = [out for cell in nb.cells for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert len(errors) == 1 and errors[0]["ename"] == "CellCompileError"
    assert "the host C++ compiler failed to build it for the CPU" in errors[0]["evalue"]
    # %cuda_info: built for the CPU were the backend's runtime, Saxpy, saxpy_c, Axpy for float32 and float64 (not the broken cell)
    assert "cpu_compiles=5" in text
    assert any("html" in str(out.get("data", {}).keys()) for cell in nb.cells for out in cell.get("outputs", []))


SAXPY_CELL = """%%cuda
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}"""
CALL_CELL = """import numpy as np
x, y = np.arange(1000, dtype=np.float32), np.ones(1000, np.float32)
saxpy(2.0, x, y, 1000)
assert np.array_equal(y, 2 * np.arange(1000, dtype=np.float32) + 1), y
print("saxpy ran:", y[:3])"""


@pytest.mark.parametrize("choice", ["set_device", "CUFORGE_DEVICE"])
def test_a_plain_cuda_cell_runs_on_the_cpu_where_it_is_chosen(monkeypatch, cuforge_cache_dir, choice):
    """A laptop's first notebook: no GPU, no --arch, no --device; the CPU chosen by the
    thread (cf.set_device) or the process (CUFORGE_DEVICE) is where the cell compiles and runs."""
    if cf.gpu_available():
        pytest.skip("a GPU is present: a plain %%cuda cell compiles for it")
    monkeypatch.setenv("CUFORGE_CACHE_DIR", str(cuforge_cache_dir))
    monkeypatch.delenv("CUFORGE_ARCH", raising=False)
    first = "%load_ext cuforge"
    if choice == "set_device":
        monkeypatch.delenv("CUFORGE_DEVICE", raising=False)
        first += '\nimport cuforge as cf\ncf.set_device("cpu")'
    else:
        monkeypatch.setenv("CUFORGE_DEVICE", "cpu")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in (first, SAXPY_CELL, CALL_CELL)])
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3").execute()
    outputs = [out.get("text", "") for out in nb.cells[2].get("outputs", [])]
    assert outputs == ["saxpy ran: [1. 3. 5.]\n"]
