"""Checked launches on the CPU backend against the corpus of tests/cpu/check_corpus_more.py: each
buggy kernel reported with the right kind and line, each correct one not flagged and computing what
it computes unchecked (and what NumPy computes). The cases the checker gets wrong today
(MISSED, FLAGGED) are strict xfails saying why."""

from __future__ import annotations

import numpy as np
import pytest

import cuforge as cf

from .check_corpus_more import BUGGY_MORE, CORRECT_MORE, FLAGGED, MISSED, IntShuffleInsideMask, IntShuffleOutsideMask
from .test_cpu_check import check_buggy, check_correct


def _cases(cases, wrong):
    assert set(wrong) <= set(cases)
    return [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=wrong[name])) if name in wrong else name
            for name in cases]  # fmt: skip


@pytest.mark.parametrize("name", _cases(BUGGY_MORE, MISSED))
def test_buggy_kernel_is_reported_with_its_kind_and_line(name):
    check_buggy(BUGGY_MORE[name])


@pytest.mark.parametrize("name", _cases(CORRECT_MORE, FLAGGED))
def test_correct_kernel_is_not_flagged_and_matches_unchecked(name):
    check_correct(CORRECT_MORE[name])


def test_a_launch_rerun_for_its_undefined_lanes_prints_once_and_returns_its_first_run_s_results(capfd):
    x = np.arange(40, dtype=np.int32) % 7 + 1
    y = np.zeros(2, np.int32)
    IntShuffleInsideMask(x, y, 40, np.zeros(1, np.int32), grid=2, device="cpu", check=True)
    assert sorted(capfd.readouterr().out.splitlines()) == [f"block 0: {x[:32].sum()}", f"block 1: {x[32:].sum()}"]
    assert list(y) == [x[:32].sum(), x[32:].sum()]
    y = np.full(2, -1, np.int32)
    with pytest.raises(cf.WarpMisuseError, match=r"two more runs of the launch"):
        IntShuffleOutsideMask(x, y, 40, np.zeros(1, np.int32), grid=2, device="cpu", check=True)
    unchecked = np.full(2, -1, np.int32)
    IntShuffleOutsideMask(x, unchecked, 40, np.zeros(1, np.int32), grid=2, device="cpu", check=False)
    assert list(y) == list(unchecked)  # (the first run's: undefined lanes read as an unchecked launch reads them)


@cf.kernel
class CountedLaunches:
    """A correct partial-warp sum (lanes outside the mask read and discarded) whose thread 0 also counts
    the launches in a __device__ variable, not atomically: a rerun must start from the count the
    first run started from, and the caller gets the first run's."""

    x: cf.In[cf.int32]
    y: cf.Out[cf.int32]
    seen: cf.Out[cf.int32]
    n: cf.int32
    block = 32
    preamble = "__device__ int launches;"
    body = """
    int i = threadIdx.x;
    unsigned m = __ballot_sync(0xffffffff, i < n);
    if (i < n) {
        int v = x[i];
        for (int o = 16; o > 0; o >>= 1) { int other = __shfl_down_sync(m, v, o); if (i + o < n) v += other; }
        if (i == 0) { y[0] = v; seen[0] = ++launches; }
    }
    """


def test_a_rerun_starts_from_the_module_variables_the_first_run_started_from():
    x = np.arange(20, dtype=np.int32)
    for want in (1, 2):
        y, seen = np.zeros(1, np.int32), np.zeros(1, np.int32)
        CountedLaunches(x, y, seen, 20, grid=1, device="cpu", check=True)
        assert (y[0], seen[0]) == (x.sum(), want)  # (the second launch starts from the first's count: 1, not 3)
