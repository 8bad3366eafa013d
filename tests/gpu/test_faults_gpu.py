"""A kernel that faults, in a process of its own: the first error names it with its grid and
block, every later call raises DeviceFaultError naming no innocent kernel, and the process
exits cleanly. The same for a device-side assert."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from cuforge.pytest_plugin import gpu_module

pytestmark = gpu_module()

SCRIPT = """
import numpy as np, cuforge as cf

@cf.kernel
class Good:
    y: cf.Array[cf.float32]
    n: cf.int64
    body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] += 1.0f;"

@cf.kernel
class Bad:
    y: cf.Array[cf.float32]
    n: cf.int64
    block = 64
    body = "BAD_LINE"

y = cf.zeros(1000, cf.float32)
Good(y, 1000)
cf.synchronize()
Bad(y, 1000)
errors = []
for call in (cf.synchronize, lambda: Good(y, 1000), lambda: Good(y, n=1000), lambda: y.to_numpy(), lambda: cf.zeros(4, cf.float32), cf.synchronize):
    try:
        call()
        errors.append("no error")
    except cf.CuforgeError as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
for e in errors:
    print(e.replace("\\n", " "))
"""


def _run(bad_line: str) -> list[str]:
    code = textwrap.dedent(SCRIPT).replace("BAD_LINE", bad_line)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr  # the process exits cleanly
    return out.stdout.strip().splitlines()


@pytest.mark.parametrize(
    ("bad_line", "code"),
    [
        ("if (threadIdx.x == 0) y[(1LL << 40) + blockIdx.x] = 1.0f;", "CUDA_ERROR_ILLEGAL_ADDRESS"),
        ("assert(n < 0);", "CUDA_ERROR_ASSERT"),
    ],
    ids=["illegal-address", "device-assert"],
)
def test_a_fault_is_named_and_every_later_call_says_the_context_is_lost(bad_line, code):
    lines = _run(bad_line)
    assert len(lines) == 6, lines
    first = lines[0]
    assert first.startswith(f"DeviceFaultError: a kernel faulted on the GPU: {code}")
    assert "first reported by cuCtxSynchronize" in first
    # Good ran and was synchronised before Bad: only Bad is a suspect
    assert first.endswith("one of which caused it: Bad (grid=(16, 1, 1), block=(64, 1, 1), shared_mem=0). No further GPU "
                          "work can run in this process (a sticky CUDA error cannot be cleared): restart it")
    assert "Good" not in first
    assert "restart it" in first
    for later in lines[1:]:
        assert later == first, later  # the same fault, never blaming the later Good launches


TUNING = """
import numpy as np, cuforge as cf

@cf.kernel
class Wild:
    BLOCK = cf.intparam(128, 256)
    y: cf.Array[cf.float32]
    n: cf.int64
    block = "BLOCK"
    autotune = cf.autotune(BLOCK=[128, 256], key=["n"])
    body = "if (BLOCK == 256) ((float*)0x10)[threadIdx.x] = 1.0f; else if (threadIdx.x < n) y[threadIdx.x] = 1.0f;"

try:
    Wild(cf.zeros(1000, cf.float32), 1000)
    print("no error")
except cf.CuforgeError as exc:
    print(f"{type(exc).__name__}: {exc}".replace("\\n", " "))
"""


def test_a_fault_while_autotuning_names_the_candidate_and_the_tuning():
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(TUNING)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    line = out.stdout.strip().splitlines()[-1]
    assert line.startswith("DeviceFaultError: autotuning Wild: candidate Wild<256> (shared_mem=0) faulted the GPU: "
                           "a kernel faulted on the GPU"), line
    assert "Wild<256> (grid=" in line, line  # and it is among the suspects
