"""Checked launches on the CPU backend against the fourth corpus (check_probe4_correct.py,
check_probe4_buggy.py): each correct kernel not flagged and computing what it computes unchecked
and what NumPy computes; each buggy kernel reported with one of its kinds (and its line, where
the case names one: "Label.body, line N: " for a body, "label.cu, line N" for a ``source=``
kernel, whose text the report does not quote). What the checker gets wrong today (MISSED,
FLAGGED) are strict xfails saying why."""

from __future__ import annotations

import re

import numpy as np
import pytest

import cuforge as cf

from .check_corpus_more import _rand as R
from .check_probe4_buggy import BUGGY
from .check_probe4_correct import CORRECT
from .test_cpu_check import check_correct

MISSED: dict[str, str] = {}
FLAGGED: dict[str, str] = {}
# the correct kernels whose threads wait on a flag that other threads set (timing-dependent)
HANDOFFS = ("AtomicRefFlagHandoff", "AtomicRefBlockScopeWarps")


def _cases(cases, wrong):
    assert set(wrong) <= set(cases)
    return [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=wrong[name])) if name in wrong else name
            for name in cases]  # fmt: skip


@pytest.mark.parametrize("name", _cases(BUGGY, MISSED))
def test_buggy_kernel_is_reported(name):
    case = BUGGY[name]
    args, launch = case.args()
    with pytest.raises(case.errors) as info:
        case.kernel(*args, device="cpu", check=True, **launch)
    message = str(info.value)
    label = case.kernel.label
    assert message.startswith(label), message
    if case.line:
        assert re.search(rf"{re.escape(label)}\.(body, line {case.line}: |cu, line {case.line}\b)", message), message


@pytest.mark.parametrize("name", _cases(CORRECT, FLAGGED))
def test_correct_kernel_is_not_flagged_and_matches_unchecked(name):
    check_correct(CORRECT[name])


@pytest.mark.parametrize("name", HANDOFFS)
def test_flag_handoff_is_never_flagged_whatever_the_timing(name):
    # (a past bug flagged these at random, as the waiting threads happened to be scheduled)
    case = CORRECT[name]
    for _ in range(6):
        args, launch = case.args()
        case.kernel(*args, device="cpu", check=True, **launch)
        for got, want in case.expected(args):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_a_warp_spinning_on_a_volatile_flag_sees_the_other_warp_set_it():
    """Checked: the spin is seen (the volatile loads are the checker's), the producer warp runs,
    and the handoff is not flagged. (Unchecked, a volatile spin on a thread of the same block
    never ends: the CPU guide says so, and __nanosleep() in the loop is the fix.)"""
    from .check_probe4_correct import WarpHandoffVolatileSpin, _handoff

    args, launch = _handoff()
    WarpHandoffVolatileSpin(*args, device="cpu", check=True, **launch)
    np.testing.assert_allclose(args[3], 2 * R(64) + 1, rtol=1e-6)


# Two kernels of one module sharing a __device__ buffer between launches (ggml/llama.cpp globals,
# CUDA samples): the second reads what the first wrote. (The mixed test has a module of its own, whose
# unchecked library no other test has loaded: a checked launch's variables reach an unchecked
# library that was loaded before it.)
STASH = r"""
__device__ float g_stash[64];
extern "C" __global__ void put_dev(const float* x) { g_stash[threadIdx.x] = 2.f * x[threadIdx.x]; }
extern "C" __global__ void take_dev(float* y) { y[threadIdx.x] = g_stash[63 - threadIdx.x]; }
"""


def _stash(text: str) -> tuple[cf.Kernel, cf.Kernel]:
    @cf.kernel
    class StashPut:
        x: cf.In[cf.float32]
        name = "put_dev"
        block = 64
        source = text

    @cf.kernel
    class StashTake:
        y: cf.Out[cf.float32]
        name = "take_dev"
        block = 64
        source = text

    return StashPut, StashTake


SAME, MIXED = _stash(STASH), _stash(STASH.replace("g_stash", "g_stash_mixed"))


def _put_then_take(kernels: tuple[cf.Kernel, cf.Kernel], put_checked: bool, take_checked: bool, seed: int) -> bool:
    # (each test its own values: what an earlier test left in the variable is not the answer)
    x, y = R(64, seed=seed), np.zeros(64, np.float32)
    kernels[0](x, grid=1, device="cpu", check=put_checked)
    kernels[1](y, grid=1, device="cpu", check=take_checked)
    return bool(np.allclose(y, 2 * x[::-1]))


@pytest.mark.parametrize("checked", [False, True])
def test_a_device_variable_written_by_one_launch_is_read_by_the_next(checked):
    assert _put_then_take(SAME, checked, checked, seed=1 + checked)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="a checked and an unchecked launch keep separate module variables")
def test_a_device_variable_written_by_a_checked_launch_is_read_by_an_unchecked_one():
    assert _put_then_take(MIXED, True, False, seed=3)
