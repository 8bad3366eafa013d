"""The C launcher and the general path agree on every call: both accept it and would launch
the same packed bytes with the same grid, block, shared memory and stream, or both decline
it, and then the general path raises a CuforgeError. No GPU is needed: both stop before the
first CUDA call."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from .. import launch_inputs as li

claunch = pytest.importorskip("cuforge._claunch", reason="cuforge's C launcher is not built here (no C compiler at install)")

# 2,000 examples with a fixed seed: the same calls in every CI run.
AGREE = settings(max_examples=2000, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@AGREE
@given(li.calls())
def test_c_and_general_path_agree(call):
    fast, general = li.both(*call)
    assert fast == general, f"C: {li.show(fast)}\ngeneral: {li.show(general)}"


def test_the_strategies_reach_both_answers():
    # The comparison means something only if calls are often accepted and often declined.
    from hypothesis import find

    accepted = find(li.calls(), lambda c: isinstance(li.both(*c)[0], tuple), settings=settings(database=None))
    declined = find(li.calls(), lambda c: li.both(*c)[0] == "declined", settings=settings(database=None))
    assert isinstance(li.both(*accepted)[1], tuple) and li.both(*declined)[1] == "declined"
