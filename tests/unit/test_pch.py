"""CCCL's headers (CUB, Thrust, libcu++, cooperative groups) compile out of the box, and NVRTC's
precompiled headers serve a process's later compiles with the same includes: real NVRTC, no GPU."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import cuforge as cf
from cuforge import _config
from cuforge._compile import pch as _pch

INCLUDES = """#include <cub/block/block_reduce.cuh>
#include <thrust/functional.h>
#include <cuda/std/complex>
#include <cuda/atomic>
#include <cooperative_groups.h>
"""


def reduction(tag: int) -> cf.Kernel:
    """A distinct kernel (by ``tag``) with the same includes as every other."""
    source = INCLUDES + f"""
extern "C" __global__ void block_sum_{tag}(const float* x, float* out) {{
    using BlockReduce = cub::BlockReduce<float, 256>;
    __shared__ typename BlockReduce::TempStorage tmp;
    cuda::std::complex<float> z(x[threadIdx.x], {tag}.0f);
    float s = BlockReduce(tmp).Reduce(thrust::plus<float>()(z.real(), z.imag()), cuda::std::plus<float>());
    if (cooperative_groups::this_thread_block().thread_rank() == 0) {{
        cuda::atomic_ref<float, cuda::thread_scope_device>(out[0]).fetch_add(s);
    }}
}}
"""
    cls = type(f"BlockSum{tag}", (), {"__annotations__": {"x": cf.In[cf.float32], "out": cf.Array[cf.float32]},
                                      "source": source, "name": f"block_sum_{tag}", "grid": 1, "block": 256})  # fmt: skip
    return cf.kernel(cls)


def test_cccl_headers_compile_and_a_pch_serves_the_next_kernel():
    before = cf.cache_stats()
    first = reduction(1).compile("sm_90")
    second = reduction(2).compile("sm_90")
    after = cf.cache_stats()
    assert first.lowered_name == "block_sum_1" and second.lowered_name == "block_sum_2"
    assert after.compiles - before.compiles == 2
    assert (after.pch_creations - before.pch_creations, after.pch_hits - before.pch_hits) == (1, 1)
    assert "precompiled header" not in second.log  # NVRTC's verbose lines are not the user's log
    assert "--pch" not in " ".join(second.flags)  # nor in the flags, nor so in the cache key


def preamble_reduction(tag: int) -> cf.Kernel:
    """A body-declared kernel whose preamble includes CUB, as docs/guide/compile-speed.md writes one."""
    cls = type(f"PreambleSum{tag}", (), {
        "__annotations__": {"x": cf.In[cf.float32], "out": cf.Out[cf.float32], "n": cf.int64},
        "block": 256, "preamble": "#include <cub/block/block_reduce.cuh>\n__device__ float sq(float v) { return v * v; }",
        "body": f"using R = cub::BlockReduce<float, 256>; __shared__ typename R::TempStorage t;\n"
                f"long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
                f"float v = R(t).Sum(i < n ? sq(x[i]) + {tag}.0f : 0.0f); if (threadIdx.x == 0) out[blockIdx.x] = v;",
    })  # fmt: skip
    return cf.kernel(cls)


def test_a_preambles_includes_get_a_pch_and_a_clean_log():
    """The preamble's #include lines go before cuforge's #line directives, which would stop
    NVRTC from making a PCH (warning 20283): it was never made for body-declared kernels."""
    first = preamble_reduction(1)
    assert first.source.index("#include <cub/block/block_reduce.cuh>") < first.source.index("#line")
    assert '#line 2 "PreambleSum1.preamble"\n__device__ float sq' in first.source  # the user's line numbers stay
    before = cf.cache_stats()
    logs = [first.compile("sm_90").log, preamble_reduction(2).compile("sm_90").log]
    after = cf.cache_stats()
    assert (after.pch_creations - before.pch_creations, after.pch_hits - before.pch_hits) == (1, 1)
    assert logs == ["", ""]


def test_a_damaged_pch_is_made_again_not_used():
    reduction(3).compile("sm_90")
    pch = [e.path for e in os.scandir(_pch._dir)]
    assert pch, "NVRTC made no precompiled header"
    for path in pch:  # a truncated PCH, mapped by NVRTC, would kill the process
        with open(path, "r+b") as fh:
            fh.truncate(1 << 20)
    before = cf.cache_stats()
    assert reduction(4).compile("sm_90").lowered_name == "block_sum_4"
    after = cf.cache_stats()
    assert after.pch_creations - before.pch_creations == 1
    assert reduction(5).compile("sm_90").lowered_name == "block_sum_5"
    assert cf.cache_stats().pch_hits - after.pch_hits == 1


def test_pch_setting():
    source = "#include <cub/block/block_reduce.cuh>\n"
    with _config.scope(pch="0"), _pch.session(source) as flags:
        assert flags == ()
    with _config.scope(pch="auto"), _pch.session("#include <cuda_fp16.h>\n") as flags:
        assert flags == ()  # a light include: a PCH would not pay for itself
    with _config.scope(pch="1"), _pch.session("#include <cuda_fp16.h>\n") as flags:
        assert flags[0] == "--pch" and flags[1] == f"--pch-dir={_pch._dir}"
    with _config.scope(pch="sometimes"), pytest.raises(cf.ConfigError, match=r"CUFORGE_PCH expects auto, 1 or 0, got 'sometimes'"):
        _pch.session(source).__enter__()


def test_the_pch_directory_is_private_and_gone_when_the_process_ends(tmp_path):
    code = (
        "import os, stat, cuforge as cf\n"
        "from cuforge._compile import pch as _pch\n"
        "@cf.kernel\n"
        "class Half:\n"
        "    x: cf.Array[cf.float16]\n"
        "    body = 'x[threadIdx.x] = __float2half(1.0f);'\n"
        "    grid = 1\n"
        "Half.compile('sm_90')\n"
        "print(_pch._dir, oct(stat.S_IMODE(os.stat(_pch._dir).st_mode)), cf.cache_stats().pch_creations)\n"
    )
    env = {**os.environ, "CUFORGE_PCH": "1", "CUFORGE_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    directory, mode, made = out.split()
    assert (mode, made) == ("0o700", "1")
    assert not os.path.exists(directory)


def test_a_dead_process_pch_directory_is_removed_by_the_next(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    orphan = tmp_path / f"cuforge-pch-{dead.stdout.strip()}-abc123"
    live = tmp_path / f"cuforge-pch-{os.getpid()}-def456"
    for d in (orphan, live):
        d.mkdir()
        (d / "x_0.pch").write_bytes(b"pch")
    _pch._remove_orphans()
    assert not orphan.exists() and live.exists()
