"""Stopping a CPU launch from outside: SIGINT (Ctrl-C) and the time limit, for every way a
launch runs (a plain loop, fibers, the pool's workers, a cooperative launch's threads). Each
test runs a process whose kernels never end, with a timeout, so that the session goes on."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

pytestmark = pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs POSIX signals")

KERNELS = textwrap.dedent(
    """
    import os, signal, sys, threading, time, numpy as np, cuforge as cf

    def declare(name, body, **ns):
        return cf.kernel(type(name, (), {"__annotations__": {"x": cf.Array[cf.int32], "spin": cf.int32},
                                         "body": body, "__module__": "stoptest", **ns}))

    SPIN = "volatile int* f = x; while (f[0] == 0) {}"  # a spin-wait without __nanosleep
    KINDS = {  # name -> (kernel, launch arguments)
        "plain": (declare("Plain", f"if (spin) {{ {SPIN} }}"), dict(grid=1, block=32)),
        "fibers": (declare("Fibers", f"__syncthreads(); if (spin && threadIdx.x == 5) {{ {SPIN} }} __syncthreads();"),
                   dict(grid=1, block=64)),
        "pool": (declare("Pool", "if (spin && blockIdx.x == 0 && threadIdx.x == 0) x[1] += 1;"),
                 dict(grid=(2**31 - 1, 1, 1), block=1024)),  # years of blocks, over the workers
        "cooperative": (declare("Coop", f"if (spin && blockIdx.x == 2) {{ {SPIN} }} cg::this_grid().sync();",
                                cooperative=True, preamble="#include <cooperative_groups.h>\\nnamespace cg = cooperative_groups;"),
                        dict(grid=4, block=32)),  # blocks 0, 1 and 3 wait in grid.sync()
    }

    @cf.kernel
    class Fill:
        out: cf.Array[cf.int32]
        n: cf.int64
        body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) out[i] = (int)i;"

    def fill_works():  # a correct launch over the pool's workers afterwards
        out = np.zeros(1 << 16, np.int32)
        Fill(out, out.size, device="cpu")
        return np.array_equal(out, np.arange(out.size, dtype=np.int32))

    def say(*words):
        print(*words, flush=True)

    x = np.zeros(4, np.int32)
    for kernel, launch in KINDS.values():
        kernel(x, 0, device="cpu", **{**launch, "grid": 1 if launch["grid"] != 4 else 4})  # built before any stop
    """
)

INTERRUPTS = KERNELS + textwrap.dedent(
    """
    for name, (kernel, launch) in KINDS.items():
        if name == "fibers":  # Python's signal.signal() puts its handler in front: cuforge's comes back
            signal.signal(signal.SIGINT, signal.default_int_handler)
        say("ready", name)
        start = time.monotonic()
        try:
            kernel(x, 1, device="cpu", **launch)
            say("not interrupted", name)
        except KeyboardInterrupt:  # (not before the launch: the signal comes a second after "ready")
            say("interrupted", name, time.monotonic() - start > 0.5 and fill_works())

    def in_a_thread(caught, done):
        try:
            KINDS["plain"][0](x, 1, device="cpu", **KINDS["plain"][1])
        except KeyboardInterrupt:
            caught.append(True)
        done.set()

    caught, done = [], threading.Event()
    worker = threading.Thread(target=in_a_thread, args=(caught, done))
    worker.start()
    time.sleep(0.2)
    say("ready", "thread")
    try:
        worker.join()                     # SIGINT: the main thread's KeyboardInterrupt, as ever, and the launch's
    except KeyboardInterrupt:
        # (an Event, not join(): Python 3.11's join() after an interrupted one may return before the thread ends)
        say("interrupted", "thread", done.wait(timeout=30) and caught == [True] and fill_works())

    say("ready", "python")                # outside launches, Python's own handling is unchanged
    try:
        time.sleep(60)
    except KeyboardInterrupt:
        say("interrupted", "python", True)
    """
)


def _lines(process: subprocess.Popen) -> queue.Queue:
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        for line in process.stdout:
            lines.put(line.strip())
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    return lines


def _child(script: str, **env: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "CUFORGE_CPU_THREADS": "4", **env})  # fmt: skip


def _fail(process: subprocess.Popen, why: str) -> None:
    process.kill()
    process.wait(timeout=30)
    pytest.fail(f"{why}; the child's stderr:\n{process.stderr.read()[-3000:]}")


def _expect(process: subprocess.Popen, lines: queue.Queue, wanted: str, timeout: float) -> None:
    try:
        line = lines.get(timeout=timeout)
    except queue.Empty:
        line = None
    if line != wanted:
        _fail(process, f"expected {wanted!r} within {timeout} s, got {line!r}")


def _finish(process: subprocess.Popen, lines: queue.Queue) -> None:
    """The child's exit, 0, and the end of its output read."""
    status = process.wait(timeout=60)
    while lines.get(timeout=30) is not None:
        pass
    assert status == 0, process.stderr.read()[-3000:]


def test_sigint_ends_every_kind_of_launch_with_keyboard_interrupt_and_the_pool_goes_on(cuforge_cache_dir):
    with _child(INTERRUPTS, CUFORGE_CACHE_DIR=str(cuforge_cache_dir)) as process:
        lines = _lines(process)
        for name in ("plain", "fibers", "pool", "cooperative", "thread", "python"):
            _expect(process, lines, f"ready {name}", 240)  # (the first waits for the kernels' builds)
            time.sleep(1)  # the launch under way
            process.send_signal(signal.SIGINT)
            _expect(process, lines, f"interrupted {name} True", 20)
        _finish(process, lines)


TIMEOUTS = KERNELS + textwrap.dedent(
    """
    for name, (kernel, launch) in KINDS.items():
        start = time.monotonic()
        try:
            kernel(x, 1, device="cpu", **launch)
            say("not stopped", name)
        except cf.LaunchTimeoutError as exc:
            say("stopped", name, 1 <= time.monotonic() - start < 20 and fill_works(), exc)
    """
)


def test_a_launch_past_the_time_limit_is_stopped_with_an_error_naming_the_kernel_and_the_limit(cuforge_cache_dir):
    env = {**os.environ, "CUFORGE_CPU_THREADS": "4", "CUFORGE_CPU_TIMEOUT": "1", "CUFORGE_CACHE_DIR": str(cuforge_cache_dir)}
    run = subprocess.run([sys.executable, "-c", TIMEOUTS], capture_output=True, text=True, timeout=400, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    assert [line.split(" ", 3)[:3] for line in lines] == [
        ["stopped", name, "True"] for name in ("plain", "fibers", "pool", "cooperative")
    ]
    assert re.fullmatch(
        r"stopped plain True Plain \(grid=\(1, 1, 1\), block=\(32, 1, 1\)\) on the CPU: the launch ran longer than its time "
        r"limit of 1 s and was stopped: a kernel that never ends .* Raise the limit with CUFORGE_CPU_TIMEOUT=SECONDS "
        r"\(under pytest: --cuforge-cpu-timeout=SECONDS\); 0 turns it off",
        lines[0],
    )


FOLLOWS = KERNELS + textwrap.dedent(
    """
    from cuforge import _config
    with _config.scope(cpu_timeout="0.5"):  # after the backend loaded (with no limit): it follows
        try:
            KINDS["plain"][0](x, 1, device="cpu", **KINDS["plain"][1])
        except cf.LaunchTimeoutError as exc:
            say("stopped", "time limit of 0.5 s" in str(exc) and fill_works())
    """
)


def test_the_time_limit_follows_a_change_of_settings_after_the_backend_loaded(cuforge_cache_dir):
    env = {**os.environ, "CUFORGE_CPU_TIMEOUT": "0", "CUFORGE_CACHE_DIR": str(cuforge_cache_dir)}
    run = subprocess.run([sys.executable, "-c", FOLLOWS], capture_output=True, text=True, timeout=400, env=env)
    assert run.returncode == 0 and run.stdout.strip() == "stopped True", run.stderr[-3000:]


PRINTS = textwrap.dedent(
    """
    import sys, numpy as np, cuforge as cf

    @cf.kernel
    class Chatty:  # in printf nearly all the time: a stop there would leave stdout locked
        x: cf.Array[cf.int32]
        body = 'volatile int* f = x; while (f[0] == 0) printf("%d\\\\n", threadIdx.x);'

    @cf.kernel
    class Hello:  # printf from the pool's workers: other threads than the one stopped
        x: cf.Array[cf.int32]
        body = 'if (threadIdx.x == 0) printf("hello %d %d\\\\n", x[0], blockIdx.x);'

    for i in range(8):
        try:
            Chatty(np.zeros(1, np.int32), grid=1, block=32, device="cpu")
        except cf.LaunchTimeoutError:
            Hello(np.full(1, i, np.int32), grid=64, block=64, device="cpu")
    print("done", file=sys.stderr)
    """
)


def test_a_kernel_stopped_while_it_prints_leaves_printf_working(cuforge_cache_dir):
    env = {
        **os.environ,
        "CUFORGE_CPU_TIMEOUT": "0.2",
        "CUFORGE_CPU_THREADS": "4",
        "PYTHONUNBUFFERED": "1",
        "CUFORGE_CACHE_DIR": str(cuforge_cache_dir),
    }  # fmt: skip  (unbuffered: a write in each printf)
    run = subprocess.run([sys.executable, "-c", PRINTS], capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0 and run.stderr.strip() == "done", run.stderr[-3000:]
    hellos = sorted(line for line in run.stdout.splitlines() if line.startswith("hello"))
    assert hellos == sorted(f"hello {i} {b}" for i in range(8) for b in range(64))
