"""CUDA vectors passed by value (the Mandelbrot kernel's ``const uchar4 colors``, and a
``double4_32a``: 32 bytes aligned to 32, which the CPU's parameter buffer is not), launched on
the GPU where one is usable, else on the CPU backend (the plugin's ``launches`` marker), each
lane checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import cuforge as cf

pytestmark = pytest.mark.launches


@cf.kernel
class Palette:
    out: cf.Out[cf.float64]
    colors: cf.vector(cf.uint8, 4)
    scale: cf.float32
    weights: cf.vector(cf.float64, 4)
    n: cf.int32
    body = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned char c = (i % 4 == 0) ? colors.x : (i % 4 == 1) ? colors.y : (i % 4 == 2) ? colors.z : colors.w;
    double w = (i % 4 == 0) ? weights.x : (i % 4 == 1) ? weights.y : (i % 4 == 2) ? weights.z : weights.w;
    out[i] = scale * c + w;
    """


def test_a_vector_by_value_reaches_every_lane_from_a_tuple_or_a_numpy_array():
    n = 10
    lanes = np.arange(n) % 4
    for colors, weights in [((3, 50, 200, 255), (0.5, -1.25, 1e300, 7.0)),
                            (np.array([9, 8, 7, 6], np.uint8), np.array([1.0, 2.0, 3.0, 4.0]))]:  # fmt: skip
        out = np.zeros(n)
        Palette(out, colors, 2.0, weights, n)
        want = 2.0 * np.asarray(colors, np.float64)[lanes] + np.asarray(weights)[lanes]
        np.testing.assert_array_equal(out, want)
