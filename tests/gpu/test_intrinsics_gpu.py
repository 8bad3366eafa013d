"""The CPU backend's packed-integer dot products and fp8 conversions (tests/cpu/test_cpu_semantics.py)
against the GPU's own __dp4a, __dp2a and cvt instructions: the same results, bit for bit."""

from __future__ import annotations

import numpy as np

import cuforge as cf
from cuforge.pytest_plugin import gpu_module

from ..cpu.test_cpu_semantics import PackedDots, packed_dots_inputs

pytestmark = gpu_module()


def test_dp4a_and_dp2a_match_the_cpu_backend():
    a, b = packed_dots_inputs()
    on_cpu = np.zeros(64 * 6, np.int32)
    PackedDots(a, b, on_cpu, grid=1, block=64, device="cpu")
    on_gpu = cf.zeros(64 * 6, cf.int32)
    PackedDots(cf.to_device(a), cf.to_device(b), on_gpu, grid=1, block=64)
    np.testing.assert_array_equal(on_gpu.to_numpy(), on_cpu)


def test_fp8_conversions_match_the_cpu_backend():
    from ..cpu.test_cpu_semantics import FP8_INPUTS, Fp8RoundTrip

    on_cpu = (np.zeros(12, np.float32), np.zeros(12, np.float32))
    Fp8RoundTrip(FP8_INPUTS, *on_cpu, grid=1, block=12, device="cpu")
    on_gpu = (cf.zeros(12, cf.float32), cf.zeros(12, cf.float32))
    Fp8RoundTrip(cf.to_device(FP8_INPUTS), *on_gpu, grid=1, block=12)
    for got, want in zip(on_gpu, on_cpu):
        np.testing.assert_array_equal(got.to_numpy(), want)


def test_pipeline_copies_and_address_predicates_match_the_cpu_backend():
    from ..cpu.test_cpu_semantics import PipelineCopy

    x = np.arange(32, dtype=np.float32)
    on_cpu = np.zeros(32, np.float32)
    PipelineCopy(x, on_cpu, grid=1, device="cpu")
    on_gpu = cf.zeros(32, cf.float32)
    PipelineCopy(cf.to_device(x), on_gpu, grid=1)
    np.testing.assert_array_equal(on_gpu.to_numpy(), on_cpu)
