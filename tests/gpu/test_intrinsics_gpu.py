"""The CPU backend's packed-integer dot products, SIMD video intrinsics, DPX functions, directed
roundings, fp8 conversions and pipeline copies (tests/cpu/test_cpu_semantics.py) against the GPU's
own: the same results, bit for bit."""

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


def test_staged_pipeline_copies_match_the_cpu_backend():
    from ..cpu.test_cpu_semantics import StagedPipeline

    x = np.arange(128, dtype=np.float32)
    on_cpu = np.zeros(64, np.float32)
    StagedPipeline(x, on_cpu, 0, grid=1, device="cpu")
    on_gpu = cf.zeros(64, cf.float32)
    StagedPipeline(cf.to_device(x), on_gpu, 0, grid=1)
    np.testing.assert_array_equal(on_gpu.to_numpy(), on_cpu)


def test_simd_video_intrinsics_match_the_cpu_backend():
    from ..cpu.test_cpu_semantics import SIMD_CALLS, SimdVideo, simd_inputs

    a, b = simd_inputs()
    on_cpu = np.zeros(len(SIMD_CALLS) * 256, np.uint32)
    SimdVideo(a, b, on_cpu, 256, grid=4, block=64, device="cpu")
    on_gpu = cf.zeros(len(SIMD_CALLS) * 256, cf.uint32)
    SimdVideo(cf.to_device(a), cf.to_device(b), on_gpu, 256, grid=4, block=64)
    got = on_gpu.to_numpy().reshape(len(SIMD_CALLS), 256)
    for call, row, want in zip(SIMD_CALLS, got, on_cpu.reshape(len(SIMD_CALLS), 256)):
        np.testing.assert_array_equal(row, want, err_msg=call)


def test_dpx_functions_match_the_cpu_backend():
    from ..cpu.test_cpu_semantics import DPX_CALLS, DPX_WINNERS, Dpx, dpx_inputs

    a, b, c = dpx_inputs()
    rows = len(DPX_CALLS) + 2 * len(DPX_WINNERS)
    on_cpu = np.zeros(rows * 256, np.uint32)
    Dpx(a, b, c, on_cpu, 256, grid=4, block=64, device="cpu")
    on_gpu = cf.zeros(rows * 256, cf.uint32)
    Dpx(cf.to_device(a), cf.to_device(b), cf.to_device(c), on_gpu, 256, grid=4, block=64)
    names = DPX_CALLS + [f"{f} {part}" for f in DPX_WINNERS for part in ("result", "predicates")]
    for name, row, want in zip(names, on_gpu.to_numpy().reshape(rows, 256), on_cpu.reshape(rows, 256)):
        np.testing.assert_array_equal(row, want, err_msg=name)


def test_directed_rounding_intrinsics_match_the_cpu_backend():
    from ..cpu.test_cpu_semantics import DIRECTED, DOUBLE_ROUNDED, FLOAT_ROUNDED, rounding_inputs

    for dtype, calls in ((np.float32, FLOAT_ROUNDED), (np.float64, DOUBLE_ROUNDED)):
        a, b, c = rounding_inputs(dtype)
        on_cpu = np.zeros(len(calls) * len(a), dtype)
        DIRECTED[dtype](a, b, c, on_cpu, len(a), grid=2, block=48, device="cpu")
        on_gpu = cf.zeros(len(calls) * len(a), cf.float32 if dtype == np.float32 else cf.float64)
        DIRECTED[dtype](cf.to_device(a), cf.to_device(b), cf.to_device(c), on_gpu, len(a), grid=2, block=48)
        for call, row, want in zip(calls, on_gpu.to_numpy().reshape(len(calls), -1), on_cpu.reshape(len(calls), -1)):
            np.testing.assert_array_equal(row, want, err_msg=call)
