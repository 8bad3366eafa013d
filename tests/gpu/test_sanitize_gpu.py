"""``pytest --cuforge-sanitize`` on a GPU: each buggy test fails with compute-sanitizer's
findings naming its kernel (kernels of tests/cpu/check_corpus.py, which the CPU checker
catches too), and a correct one passes."""

from __future__ import annotations

import os

import pytest

from cuforge.integrations._pytest_sanitize import find_sanitizer
from cuforge.pytest_plugin import gpu_module

pytestmark = [gpu_module(), pytest.mark.skipif(find_sanitizer()[0] is None, reason="compute-sanitizer not found")]
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

TESTS = f"""
import sys
sys.path.insert(0, {ROOT!r})
import numpy as np
import pytest
import cuforge as cf
from tests.cpu.check_corpus import NeighbourNoBarrier, Saxpy, TileCopyEdge


@pytest.mark.gpu
def test_tile_edge():
    w, h = 40, 24  # h is no multiple of 16: the guard's y <= h reads and writes one row past the arrays
    src = cf.to_device(np.random.default_rng(0).random(w * h, dtype=np.float32))
    dst = cf.zeros(w * h, cf.float32)
    TileCopyEdge(src, dst, w, h, grid=(3, 2))
    cf.synchronize()


@pytest.mark.gpu
def test_neighbour():
    x = cf.to_device(np.arange(128, dtype=np.float32))
    y = cf.zeros(128, cf.float32)
    NeighbourNoBarrier(x, y)
    cf.synchronize()


@pytest.mark.gpu
def test_saxpy():
    x = cf.to_device(np.arange(1000, dtype=np.float32))
    y = cf.to_device(np.ones(1000, np.float32))
    Saxpy(2.0, x, y, 1000)
    np.testing.assert_array_equal(y.to_numpy(), 2 * np.arange(1000) + 1)
"""


def test_each_buggy_test_fails_naming_its_kernel_and_the_correct_one_passes(pytester):
    pytester.makepyfile(test_buggy=TESTS)
    result = pytester.runpytest_subprocess("-p", "cuforge.pytest_plugin", "-p", "no:cacheprovider", "--cuforge-sanitize",
                                           "-rf", "--tb=short")  # fmt: skip
    out = result.stdout.str()
    result.assert_outcomes(failed=2, passed=1)
    result.stdout.fnmatch_lines(["*compute-sanitizer found errors:*"])
    tile = out[out.index("test_tile_edge") :]
    assert "memcheck: in kernel TileCopyEdge" in tile and "Invalid __global__" in tile, out
    assert "racecheck: in kernel NeighbourNoBarrier" in out, out
    assert "in kernel Saxpy" not in out, out
