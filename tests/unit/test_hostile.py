"""The hostile launch corpus on the CPU: the general path refuses every call with the named
message, and the C launcher declines every one (so it never launches it)."""

from __future__ import annotations

import numpy as np
import pytest

import cuforge as cf
from cuforge._launch import general as _launch

from ..conftest import Saxpy
from ..hostile_launches import corpus
from ..launch_inputs import FakeCAI

OPTIONS = ("grid", "block", "shared_mem", "stream")


def _arrays():
    def cai(typestr="<f4", shape=(64,), strides=None, readonly=False):
        return FakeCAI(typestr, shape, strides, readonly, 0x7F0000001000)

    return cai(), cai(), cai("<f8"), cai(shape=(64,), strides=(8,)), cai(readonly=True)


CASES = corpus(*_arrays())


@pytest.mark.parametrize(("what", "args", "kwargs", "match"), CASES, ids=[c[0] for c in CASES])
def test_every_hostile_call_is_refused_before_any_cuda_call(what, args, kwargs, match):
    options = {k: kwargs[k] for k in OPTIONS if k in kwargs}
    named = {k: v for k, v in kwargs.items() if k not in OPTIONS}
    call = (options.get("grid"), options.get("block"), options.get("shared_mem", 0), options.get("stream"))
    with pytest.raises(cf.CuforgeError, match=match):
        _launch.check_and_pack(Saxpy._plan, args, named, *call)
    if Saxpy._fast is not None:  # the C launcher never accepts it
        try:
            verdict = Saxpy._fast.check_and_pack(args, named, *call)
        except Exception as exc:  # it may also raise, never launch
            verdict = exc
        assert verdict is False or isinstance(verdict, Exception), (what, verdict)


def test_the_corpus_is_the_issues_32_plus_its_new_kinds():
    assert len(CASES) >= 34 and len({c[0] for c in CASES}) == len(CASES)
    assert np.float32  # the corpus uses NumPy scalars
