"""``pytest --cuforge-sanitize``: the usage error where compute-sanitizer is missing, and the
reading of its reports (samples in the formats NVIDIA's Compute Sanitizer guide documents, old
and new spellings of a device location; the GPU side is tests/gpu/test_sanitize_gpu.py)."""

from __future__ import annotations

import os
import shutil

import pytest

from cuforge.integrations._sanitizer_report import describe, findings

from .test_pytest_plugin import run

# compute-sanitizer 2023.x and later: "at Kernel(...)+0xOFF in file:line", a device backtrace.
MEMCHECK = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at Saxpy(float, const float *, float *, long long)+0x1d0 in /tmp/cuforge/Saxpy.cu:7
=========     by thread (40,0,0) in block (3,0,0)
=========     Address 0x7f3c5a000f00 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f3c5a000000 of size 3840 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2dbe2f] in libcuda.so.1
=========         Host Frame: _PyEval_EvalFrameDefault [0x1a8d6d] in python3.11
=========
========= Invalid __global__ write of size 4 bytes
=========     at Saxpy(float, const float *, float *, long long)+0x1d0 in /tmp/cuforge/Saxpy.cu:7
=========     by thread (41,0,0) in block (3,0,0)
=========     Address 0x7f3c5a000f04 is out of bounds
=========     and is 5 bytes after the nearest allocation at 0x7f3c5a000000 of size 3840 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2dbe2f] in libcuda.so.1
=========
========= Invalid __shared__ read of size 4 bytes
=========     at load(const float *, int)+0x50 in /tmp/cuforge/Tile.cu:3
=========     by thread (63,0,0) in block (0,0,0)
=========     Address 0x100 is out of bounds
=========     Device Frame: Tile<float, 64>(const float *, float *)+0x90 in /tmp/cuforge/Tile.cu:9
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2dbe2f] in libcuda.so.1
=========
========= ERROR SUMMARY: 3 errors
"""

# CUDA-MEMCHECK and early compute-sanitizer: "at 0xPC in file:line:[return type ]Kernel(...)".
MEMCHECK_OLD = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 8 bytes
=========     at 0x000000c8 in /home/me/src/project.cuh:75:void vector_projection<double>(double*, int)
=========     by thread (9,0,0) in block (0,0,0)
=========     Address 0x7f00000370e8 is out of bounds
=========
========= ERROR SUMMARY: 1 error
"""

# --racecheck-report all: each hazard, then the race it adds up to.
RACECHECK = """\
========= COMPUTE-SANITIZER
========= Error: Potential RAW hazard detected at __shared__ 0x0 in block (0,0,0) :
=========     Write Thread (0,0,0) at NeighbourNoBarrier(const float *, float *)+0x120 in /tmp/cuforge/NeighbourNoBarrier.cu:6
=========     Read Thread (1,0,0) at NeighbourNoBarrier(const float *, float *)+0x180 in /tmp/cuforge/NeighbourNoBarrier.cu:7
=========     Current Value : 0, Incoming Value : 1056964608
=========
========= Error: Race reported between Write access at NeighbourNoBarrier(const float *, float *)+0x120 in /tmp/cuforge/NeighbourNoBarrier.cu:6
=========     and Read access at NeighbourNoBarrier(const float *, float *)+0x180 in /tmp/cuforge/NeighbourNoBarrier.cu:7 [126 hazards]
=========
========= Warning: Race reported between Read access at 0xf10 in /src/reduce.cuh:1571:Impl::Reduce<Sum,void,bool=0>::warp_reduce(Sum const &,double*,bool,int)
=========     and Write access at 0x8a0 in /src/reduce.cuh:557:Impl::Reduce<Sum,void,bool=0>::block_reduce(Sum const &,double,bool,double*,int) [3968 hazards]
=========
========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)
"""

INITCHECK = """\
========= COMPUTE-SANITIZER
========= Uninitialized __global__ memory read of size 4 bytes
=========     at AccumulateIntoOut(const float *, float *, int)+0x90 in /tmp/cuforge/AccumulateIntoOut.cu:3
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7f1e86000000
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2dbe2f] in libcuda.so.1
=========
========= ERROR SUMMARY: 1 error
"""

SYNCCHECK = """\
========= COMPUTE-SANITIZER
========= Barrier error detected. Divergent thread(s) in block
=========     at DivergentBarrier(const float *, float *)+0xd0 in /tmp/cuforge/DivergentBarrier.cu:6
=========     by thread (1,0,0) in block (0,0,0)
=========
========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on CUDA API call to cuStreamSynchronize.
=========     Saved host backtrace up to driver entry point at error
=========         Host Frame: [0x2dbe2f] in libcuda.so.1
=========
========= ERROR SUMMARY: 2 errors
"""


def test_memcheck_findings_name_the_kernel_the_thread_and_the_address():
    found = findings(MEMCHECK)
    assert [(f.what, f.kernel) for f in found] == [
        ("Invalid __global__ write of size 4 bytes", "Saxpy"),
        ("Invalid __global__ write of size 4 bytes", "Saxpy"),
        ("Invalid __shared__ read of size 4 bytes", "Tile<float, 64>"),  # the kernel, not the function it calls
    ]
    assert found[0].details[:2] == ("at Saxpy(float, const float *, float *, long long)+0x1d0 in /tmp/cuforge/Saxpy.cu:7",
                                    "by thread (40,0,0) in block (3,0,0)")  # fmt: skip
    assert not any("Host Frame" in d for f in found for d in f.details)
    text = describe("memcheck", found)
    assert text.splitlines()[0] == "memcheck: in kernel Saxpy: Invalid __global__ write of size 4 bytes (and 1 more like it)"
    assert "    by thread (40,0,0) in block (3,0,0)" in text and "memcheck: in kernel Tile<float, 64>: Invalid __shared__" in text


def test_the_older_spelling_of_a_location_names_the_kernel_without_its_return_type():
    assert [(f.what, f.kernel) for f in findings(MEMCHECK_OLD)] == [
        ("Invalid __global__ read of size 8 bytes", "vector_projection<double>")
    ]


def test_racecheck_reports_hazards_and_races_naming_both_accesses():
    found = findings(RACECHECK)
    assert [f.kernel for f in found] == ["NeighbourNoBarrier", "NeighbourNoBarrier", "Impl::Reduce<Sum,void,bool=0>::warp_reduce"]
    assert found[1].what.startswith("Error: Race reported between Write access at NeighbourNoBarrier(")
    assert found[1].what.endswith("and Read access at NeighbourNoBarrier(const float *, float *)+0x180 in "
                                  "/tmp/cuforge/NeighbourNoBarrier.cu:7 [126 hazards]")  # fmt: skip
    assert found[0].details[0].startswith("Write Thread (0,0,0) at NeighbourNoBarrier(")
    assert "racecheck: in kernel NeighbourNoBarrier: Error: Potential RAW hazard detected at __shared__ 0x0" in describe(
        "racecheck", found
    )


def test_initcheck_and_synccheck_findings_and_a_host_side_error_without_a_kernel():
    assert [(f.what, f.kernel) for f in findings(INITCHECK)] == [
        ("Uninitialized __global__ memory read of size 4 bytes", "AccumulateIntoOut")
    ]
    found = findings(SYNCCHECK)
    assert [f.kernel for f in found] == ["DivergentBarrier", ""]
    assert found[1].what.startswith("Program hit cudaErrorLaunchFailure (error 719)")
    assert describe("synccheck", found).splitlines()[-1].startswith("synccheck: Program hit cudaErrorLaunchFailure")


def test_a_clean_report_has_no_findings():
    assert findings("========= COMPUTE-SANITIZER\n1 passed in 3.2s\n========= ERROR SUMMARY: 0 errors\n") == []


@pytest.mark.skipif(os.path.exists("/usr/local/cuda/bin/compute-sanitizer"), reason="compute-sanitizer is installed")
def test_without_compute_sanitizer_the_option_is_a_usage_error_naming_where_it_looked(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", os.path.dirname(shutil.which("python") or "/usr/bin/python"))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    pytester.makepyfile("def test_a():\n    pass\n")
    result = run(pytester, "--cuforge-sanitize")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --cuforge-sanitize runs GPU tests under NVIDIA's compute-sanitizer, which was not "
                                 f"found: looked on PATH and in {tmp_path}/cuda/bin, /usr/local/cuda/bin. It ships with the "
                                 f"CUDA toolkit*"])  # fmt: skip
    result = run(pytester, "--cuforge-sanitize", "test_usage_error_naming_where_it_looked.py")
    result.stderr.fnmatch_lines(["*argument --cuforge-sanitize: expects compute-sanitizer tools separated by commas, from "
                                 "memcheck, racecheck, initcheck, synccheck; got 'test_*.py' (to give test paths after it*"])  # fmt: skip
    result = run(pytester, "--cuforge-sanitize=memcheck,racecheck", "--cuforge-sanitize-inner")
    result.assert_outcomes(passed=1)  # (the test's own subprocess looks for no sanitizer)
