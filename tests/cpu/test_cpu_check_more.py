"""Checked launches on the CPU backend against the corpus of tests/cpu/check_corpus_more.py: each
buggy kernel reported with the right kind and line, each correct one not flagged and computing what
it computes unchecked (and what NumPy computes). The cases the checker gets wrong today
(MISSED, FLAGGED) are strict xfails saying why."""

from __future__ import annotations

import pytest

from .check_corpus_more import BUGGY_MORE, CORRECT_MORE, FLAGGED, MISSED
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
