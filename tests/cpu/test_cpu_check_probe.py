"""Checked launches on the CPU backend against the third corpus (check_probe_correct.py,
check_probe_buggy.py): each correct kernel not flagged and computing what it computes unchecked
and what NumPy computes; each buggy kernel reported with one of its kinds (and its line, where
the case names one). What the checker gets wrong today (MISSED, FLAGGED) are strict xfails
saying why."""

from __future__ import annotations

import pytest

from .check_probe_buggy import BUGGY
from .check_probe_correct import CORRECT
from .test_cpu_check import check_correct

MISSED: dict[str, str] = {}  # (none today)
FLAGGED: dict[str, str] = {}


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
    assert message.startswith(case.kernel.label), message
    if case.line:
        assert f"{case.kernel.label}.body, line {case.line}: " in message, message


@pytest.mark.parametrize("name", _cases(CORRECT, FLAGGED))
def test_correct_kernel_is_not_flagged_and_matches_unchecked(name):
    check_correct(CORRECT[name])
