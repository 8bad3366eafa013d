"""The C launcher and the general path agree on every call: both accept it and would launch
the same packed bytes with the same grid, block, shared memory and stream, or both decline
it, and then the general path raises a CuforgeError. No GPU is needed: both stop before the
first CUDA call."""

from __future__ import annotations

import collections

import pytest
from hypothesis import HealthCheck, given, settings

from .. import launch_inputs as li

claunch = pytest.importorskip("cuforge._claunch", reason="cuforge's C launcher is not built here (no C compiler at install)")

# 2,000 examples with a fixed seed: the same calls in every CI run.
AGREE = settings(max_examples=2000, deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow])  # fmt: skip


def test_c_and_general_path_agree():
    answers: collections.Counter[str] = collections.Counter()

    @AGREE
    @given(li.calls())
    def agree(call):
        fast, general = li.both(*call)
        assert fast == general, f"C: {li.show(fast)}\ngeneral: {li.show(general)}"
        answers["launch" if isinstance(fast, tuple) else str(fast)] += 1

    agree()
    # The comparison means something only if many calls are accepted and many declined.
    assert answers["launch"] >= 400 and answers["declined"] >= 400, answers
