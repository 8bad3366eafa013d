"""Compiles split across worker processes for heavy families, one program for small ones, and
compiles in the background (real NVRTC, no GPU)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import pytest

import cuforge as cf
from cuforge import _config
from cuforge._compile import parallel as _parallel


def heavy_family(tag: str) -> cf.Family:
    """A family whose source is past _parallel.LARGE: a candidate for worker processes."""
    filler = "\n".join(f"// {tag} line {i}: padding that makes the source large, as real kernels are" for i in range(30))
    cls = type(f"Unrolled_{tag}", (), {
        "__annotations__": {"x": cf.Array[cf.float32], "n": cf.int32},
        "K": cf.intparam(1, 2, 3, 4, 5),
        "body": filler + """
    float acc = 0.0f;
    #pragma unroll
    for (int j = 0; j < 8 * K; ++j) acc += x[(threadIdx.x + j) % n];
    x[threadIdx.x] = acc;
    """,
    })  # fmt: skip
    return cf.kernel(cls)


def test_a_heavy_family_is_split_across_worker_processes():
    fam = heavy_family("split")
    before = cf.cache_stats().compiles
    with _config.scope(compile_workers="2", compile_split_s="0"):
        compiled = fam.precompile("sm_90")
    assert [c.name_expression for c in compiled] == [f"Unrolled_split<{k}>" for k in range(1, 6)]
    assert all(c.cubin[:4] == b"\x7fELF" for c in compiled)
    # the first one timed here, then the other four dealt to two worker processes
    assert cf.cache_stats().compiles - before == 3
    assert id(fam._decl) in _parallel._pace


def test_a_small_family_stays_one_program():
    @cf.kernel
    class Small:
        T = cf.typeparam(cf.float32, cf.float64, cf.int32)
        B = cf.intparam(64, 128, 256, 512)
        x: cf.Array[T]
        body = "x[threadIdx.x] = T(B);"
        grid = 1

    before = cf.cache_stats().compiles
    with _config.scope(compile_workers="8", compile_split_s="0"):
        assert len(Small.precompile("sm_90")) == 12
    assert cf.cache_stats().compiles - before == 1


def test_a_compile_error_in_a_worker_is_raised_here():
    fam = heavy_family("broken")
    broken = type(fam._decl.cls.__name__, (), dict(fam._decl.cls.__dict__))
    broken.body = broken.body.replace("x[threadIdx.x] = acc;", "static_assert(K != 4, \"K=4 refused\"); x[threadIdx.x] = acc;")
    fam = cf.kernel(broken)
    with _config.scope(compile_workers="2", compile_split_s="0"), pytest.raises(cf.CompileError, match="K=4 refused"):
        fam.precompile("sm_90")


def test_compile_async_and_a_launch_path_compile_share_one_nvrtc_call():
    fam = heavy_family("async")
    k = fam[3]
    before = cf.cache_stats().compiles
    with _config.scope(compile_workers="1"):
        future = k.compile_async("sm_90")
        same = k.compile("sm_90")  # what a launch does meanwhile: it waits for the compile in flight
        assert future.result(timeout=120) is same
    assert cf.cache_stats().compiles - before == 1
    assert [c.name_expression for c in fam.precompile_async("sm_90", instances=[fam[1]]).result(timeout=120)] == [
        "Unrolled_async<1>"
    ]
    assert threading.current_thread() is threading.main_thread()


def test_worker_setting_is_checked():
    with _config.scope(compile_workers="0"), pytest.raises(cf.ConfigError, match=r"CUFORGE_COMPILE_WORKERS expects"):
        _config.compile_workers()
    with _config.scope(compile_workers="3"):
        assert _config.compile_workers() == 3


def test_extern_shared_arrays_of_several_types_compile_one_by_one_and_say_so():
    @cf.kernel
    class Reverse:
        T = cf.typeparam(cf.float32, cf.float64)
        BLOCK = cf.intparam(128, 256)
        x: cf.Array[T]
        n: cf.int32
        block = "BLOCK"
        grid = 1
        body = """
        extern __shared__ T temp[];
        temp[threadIdx.x] = threadIdx.x < n ? x[threadIdx.x] : T(0);
        __syncthreads();
        if (threadIdx.x < n) x[threadIdx.x] = temp[BLOCK - 1 - threadIdx.x];
        """

    before = cf.cache_stats()
    compiled = Reverse.precompile("sm_90")  # one program would fail: "declaration is incompatible"
    after = cf.cache_stats()
    assert [c.name_expression for c in compiled] == ["Reverse<float, 128>", "Reverse<float, 256>", "Reverse<double, 128>",
                                                     "Reverse<double, 256>"]  # fmt: skip
    assert (after.compiles - before.compiles, after.batch_fallbacks - before.batch_fallbacks) == (4, 1)
    assert compiled[0].log.startswith("cuforge: these 4 instantiations could not share one NVRTC program")


def test_a_family_with_module_variables_gives_each_instantiation_its_own_module():
    @cf.kernel
    class Scaled:
        T = cf.typeparam(cf.float32, cf.float64)
        x: cf.Array[T]
        grid = 1
        preamble = "__constant__ double factor;"
        body = "x[threadIdx.x] *= T(factor);"

    before = cf.cache_stats().compiles
    compiled = Scaled.precompile("sm_90")
    assert cf.cache_stats().compiles - before == 2  # one program each: each has its own `factor`
    assert compiled[0]._result is not compiled[1]._result


COMPILE_ASYNC_AFTER_FORK = textwrap.dedent(
    """
    import os, cuforge as cf

    def declare(value):
        return cf.kernel(type("Forked", (), {"__annotations__": {"x": cf.Out[cf.float32]}, "body": f"x[0] = {value};",
                                             "__module__": "forktest"}))

    declare(1).compile_async("sm_90").result(timeout=120)  # the compile thread started
    pid = os.fork()
    if pid == 0:  # the child's compile thread is its own: the parent's did not survive the fork
        ok = False
        try:
            ok = declare(2).compile_async("sm_90").result(timeout=60).cubin[:4] == b"\\x7fELF"
        finally:
            os._exit(0 if ok else 3)
    _, status = os.waitpid(pid, 0)
    print(os.waitstatus_to_exitcode(status))
    """
)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_compile_async_works_in_a_forked_child(tmp_path):
    env = {**os.environ, "CUFORGE_CACHE_DIR": str(tmp_path)}
    run = subprocess.run([sys.executable, "-c", COMPILE_ASYNC_AFTER_FORK], capture_output=True, text=True, timeout=240, env=env)
    assert run.returncode == 0 and run.stdout.strip() == "0", run.stderr[-2000:]
