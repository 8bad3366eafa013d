"""The tour notebook, executed by nbclient in compile-only mode (as CI runs it)."""

from __future__ import annotations

import os

import pytest

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")

TOUR = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "notebooks", "cuforge_tour.ipynb")


def test_tour_runs_compile_only(monkeypatch, cuforge_cache_dir):
    monkeypatch.setenv("CUFORGE_TOUR_COMPILE_ONLY", "1")
    monkeypatch.setenv("CUFORGE_CACHE_DIR", str(cuforge_cache_dir))
    nb = nbformat.read(TOUR, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3").execute()
    text = "\n".join(
        out.get("text", "") or "".join(out.get("data", {}).get("text/plain", ""))
        for cell in nb.cells
        for out in cell.get("outputs", [])
    )
    assert "launching: False" in text
    assert "bound: saxpy_c(a: float32, x: In[float32], y: Array[float32], n: int64)" in text
    assert "saxpy_c: argument 'x' expects In[float32], got a float64 array" in text
    assert "4 instantiations" in text
    assert "cf.graph() needs a GPU and CuPy here" in text
    errors = [out for cell in nb.cells for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert len(errors) == 1 and errors[0]["ename"] == "CellCompileError"
    assert any("html" in str(out.get("data", {}).keys()) for cell in nb.cells for out in cell.get("outputs", []))
