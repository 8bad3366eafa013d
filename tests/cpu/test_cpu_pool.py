"""The CPU backend's worker pool: faults in worker threads, launches from several Python
threads at once, fork() and the interpreter's exit."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import cuforge as cf


@cf.kernel
class Fill:
    out: cf.Array[cf.int32]
    bad: cf.int32
    n: cf.int64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = (int)i;
    if (blockIdx.x == (unsigned)bad && threadIdx.x == 0) ((int*)16)[0] = 1;  // a fault in that block
    """


N = 1 << 16  # 256 blocks of 256: spread over the pool's workers


def test_a_fault_in_a_worker_thread_is_named_and_the_pool_goes_on():
    out = np.zeros(N, np.int32)
    with pytest.raises(cf.DeviceFaultError, match=r"Fill faulted on the CPU .*segmentation fault .* in block \(\d+, 0, 0\)"):
        Fill(out, 200, N, device="cpu")
    Fill(out, -1, N, device="cpu")  # the pool, and every worker, still work
    assert np.array_equal(out, np.arange(N, dtype=np.int32))


def test_launches_from_several_python_threads_at_once():
    outs = [np.zeros(N, np.int32) for _ in range(4)]
    errors: list[BaseException] = []

    def work(out: np.ndarray) -> None:
        try:
            for _ in range(20):
                Fill(out, -1, N, device="cpu")
        except BaseException as exc:  # (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(o,)) for o in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    for o in outs:
        assert np.array_equal(o, np.arange(N, dtype=np.int32))


SCRIPT = textwrap.dedent(
    """
    import os, sys, numpy as np, cuforge as cf
    sys.path.insert(0, {here!r})
    from test_cpu_pool import Fill, N
    out = np.zeros(N, np.int32)
    Fill(out, -1, N, device="cpu")            # the pool's workers started
    pid = os.fork()
    if pid == 0:                              # the child makes its own pool
        child = np.zeros(N, np.int32)
        Fill(child, -1, N, device="cpu")
        os._exit(0 if np.array_equal(child, np.arange(N, dtype=np.int32)) else 3)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, status
    out[:] = 0
    Fill(out, -1, N, device="cpu")            # the parent's pool still works
    assert np.array_equal(out, np.arange(N, dtype=np.int32))
    print("ok")                               # then exit with the pool's threads waiting
    """
)


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork()")
def test_the_pool_survives_fork_and_the_interpreter_exit():
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    run = subprocess.run([sys.executable, "-c", SCRIPT.format(here=here)], capture_output=True, text=True, timeout=180)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]


FORK_DURING_COMPILE = textwrap.dedent(
    """
    import os, signal, sys, threading, time, numpy as np, cuforge as cf
    started = sys.argv[1]

    def declare(name, factor):
        return cf.kernel(type(name, (), {{"__annotations__": {{"out": cf.Array[cf.int32], "n": cf.int64}}, "__module__": "forktest",
            "body": "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) out[i] = %d * (int)i;" % factor}}))

    def check(kernel, factor):
        out = np.zeros(1000, np.int32)
        kernel(out, 1000, device="cpu")
        return np.array_equal(out, factor * np.arange(1000, dtype=np.int32))

    assert check(declare("Warm", 1), 1)                # the runtime library built and loaded
    slow = threading.Thread(target=check, args=(declare("SlowOne", 2), 2))
    slow.start()                                       # its compiler waits a few seconds (CXX)
    while not os.path.exists(started):
        time.sleep(0.01)
    pid = os.fork()                                    # while that thread holds the build's locks
    if pid == 0:
        os._exit(0 if check(declare("Fresh", 3), 3) else 3)
    for _ in range({wait} * 100):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.01)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        sys.exit("the child's compile did not finish within {wait} s")
    slow.join()
    assert os.waitstatus_to_exitcode(status) == 0, status
    print("ok")
    """
)


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork()")
def test_a_fork_while_another_thread_compiles_leaves_the_child_able_to_compile(tmp_path):
    import os
    import shlex

    from cuforge._cpu.toolchain import find_compiler

    started = tmp_path / "started"
    wrapper = tmp_path / "slow-cxx"  # a compiler that takes its time over the kernel SlowOne
    compiler = shlex.join(find_compiler().argv)
    wrapper.write_text(f'#!/bin/sh\ncase "$*" in *SlowOne*) touch {started}; sleep 4;; esac\nexec {compiler} "$@"\n')
    wrapper.chmod(0o755)
    env = {**os.environ, "CXX": str(wrapper), "CUFORGE_CACHE_DIR": str(tmp_path / "cache")}
    run = subprocess.run([sys.executable, "-c", FORK_DURING_COMPILE.format(wait=60), str(started)], capture_output=True,
                         text=True, timeout=240, env=env)  # fmt: skip
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]
