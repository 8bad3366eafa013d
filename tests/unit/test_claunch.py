"""The C launcher's argument handling: everything it refuses, it refuses before calling CUDA."""

from __future__ import annotations

import subprocess
import sys

import pytest

claunch = pytest.importorskip(
    "cuforge._claunch", reason="cuforge's C launcher is not built here (no C compiler at install): launches use ctypes"
)


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((0, (1, 1, 1), (32, 1, 1), 0, 0), TypeError, r"launch\(\) takes 6 arguments \(5 given\)"),
        ((0, [1, 1, 1], (32, 1, 1), 0, 0, 0), TypeError, r"launch: grid must be a tuple of 3 ints"),
        ((0, (1, 1), (32, 1, 1), 0, 0, 0), TypeError, r"launch: grid must be a tuple of 3 ints"),
        ((0, (1, 1, 1), (32, 1.0, 1), 0, 0, 0), TypeError, r"an integer is required"),
        ((0, (1, 1, 1), (32, -1, 1), 0, 0, 0), OverflowError, r"negative value"),
        ((0, (2**32, 1, 1), (32, 1, 1), 0, 0, 0), OverflowError, r"grid\[0\] does not fit an unsigned int"),
        ((0, (1, 1, 1), (32, 1, 1), 2**32, 0, 0), OverflowError, r"shared_mem does not fit an unsigned int"),
        (("f", (1, 1, 1), (32, 1, 1), 0, 0, 0), TypeError, r"an integer is required"),
    ],
)
def test_bad_arguments_raise_before_the_driver(args, error, match):
    with pytest.raises(error, match=match):
        claunch.launch(*args)


def test_without_an_entry_point_it_answers_not_initialized():
    # A fresh process: no device was made current, so no entry point was set.
    code = "import cuforge._claunch as c; print(c.launch(0, (1, 1, 1), (32, 1, 1), 0, 0, 0))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "3"  # CUDA_ERROR_NOT_INITIALIZED
