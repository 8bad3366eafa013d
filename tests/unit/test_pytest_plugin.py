"""cuforge's pytest plugin, exercised with pytester."""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import textwrap

import pytest

from ..conftest import gpu_missing_reason

INSTALLED = any(ep.value == "cuforge.pytest_plugin" for ep in importlib.metadata.entry_points(group="pytest11"))
PLUGIN = [] if INSTALLED else ["-p", "cuforge.pytest_plugin"]
NO_GPU = pytest.mark.skipif(gpu_missing_reason() is None, reason="a GPU is present: gpu tests would run")
ROOT = os.path.join(os.path.dirname(__file__), "..", "..")

KERNELS = """
import cuforge as cf

@cf.kernel
class Axpy:
    T = cf.typeparam(cf.float32, cf.float64)
    BLOCK = cf.intparam(256, 128)
    a: T
    x: cf.In[T]
    y: cf.Array[T]
    n: cf.int64
    body = "long long i = blockIdx.x * (long long)BLOCK + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i];"

@cf.kernel
class Plain:
    x: cf.Out[cf.int32]
    body = "x[0] = 1;"
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*PLUGIN, "-p", "no:cacheprovider", *args)


@NO_GPU
def test_gpu_tests_skip_with_the_reason(pytester):
    pytester.makepyfile("import pytest\n@pytest.mark.gpu\ndef test_a():\n    pass\ndef test_b():\n    pass\n")
    result = run(pytester, "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*needs a CUDA GPU (none found: *)"])


@NO_GPU
def test_a_gpu_skip_names_the_test_not_the_plugin(pytester):
    """``-rs`` shows where a skip came from: the test's file, as for pytest's own skip marks,
    for a gpu-marked test (and its line) and for one that asks for a GPU fixture (pytest folds
    a skip mark on an undecorated test to its file)."""
    pytester.makepyfile(
        test_where="import pytest\n\n@pytest.mark.gpu\ndef test_a():\n    pass\n\ndef test_b(cuda_stream):\n    pass\n"
    )
    result = run(pytester, "-rs")
    result.assert_outcomes(skipped=2)
    skips = [line for line in result.stdout.lines if line.startswith("SKIPPED")]
    assert [line.split(": ")[0] for line in skips] == ["SKIPPED [1] test_where.py:3", "SKIPPED [1] test_where.py"], skips
    assert all("needs a CUDA GPU (none found: " in line for line in skips), skips


@NO_GPU
def test_require_gpu_turns_skips_into_failures(pytester):
    pytester.makepyfile("import pytest\n@pytest.mark.gpu\ndef test_a():\n    pass\n\ndef test_device(cuda_device):\n    pass\n")
    result = run(pytester, "--cuforge-require-gpu")
    result.assert_outcomes(errors=2)  # failed in setup, before the test body: reported as errors
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*--cuforge-require-gpu: no usable CUDA device*"])


def test_options_and_marker_are_registered(pytester):
    result = run(pytester, "--help")
    expected = ["*cuforge CUDA kernels:*", "*--cuforge-require-gpu*", "*--cuforge-device=*", "*--cuforge-cpu-timeout=SECONDS*",
                "*--cuforge-compile-all*"]  # fmt: skip
    result.stdout.fnmatch_lines([*expected, "*--cuforge-modules=MODULE*"])
    result.stdout.fnmatch_lines(["*--cuforge-check={on,off}*"])
    run(pytester, "--markers").stdout.fnmatch_lines(
        ["@pytest.mark.gpu: the test needs a CUDA GPU*", "@pytest.mark.launches: the test launches kernels on the chosen device*"]
    )


@pytest.mark.parametrize("how", ["-p", "conftest"])
def test_naming_the_plugin_module_works_whether_or_not_cuforge_is_installed(pytester, how):
    """``-p cuforge.pytest_plugin`` (the docs' advice for the source tree) or a conftest's
    ``pytest_plugins`` on an installed cuforge (whose entry point registers the same module as
    ``cuforge``) loads the plugin once, rather than pytest refusing the second registration."""
    pytester.makepyfile("def test_a(cuforge_device):\n    pass\n")
    if how == "conftest":
        pytester.makeconftest('pytest_plugins = ["cuforge.pytest_plugin"]\n')
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--cuforge-device=cpu")
    else:
        result = pytester.runpytest_subprocess("-p", "cuforge.pytest_plugin", "-p", "no:cacheprovider", "--cuforge-device=cpu")
    result.assert_outcomes(passed=1)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:cuforge", "-p", "cuforge.pytest_plugin", "--help")
    result.stdout.fnmatch_lines(["*--cuforge-device=*"])


LAUNCHING = KERNELS + """
import os
import numpy as np
import pytest
from cuforge import _config
from cuforge._runtime import cuda as _cuda

@pytest.mark.launches
def test_on_the_cpu():
    assert (_config.device(), os.environ.get("CUFORGE_DEVICE"), _cuda.on_cpu(), _config.arch()) == ("cpu", "cpu", True, "sm_90")
    y = np.ones(1000, np.float32)
    Axpy(2.0, np.arange(1000, dtype=np.float32), y, 1000)  # no device named: the CPU
    assert (y == 2 * np.arange(1000) + 1).all()

def test_device_fixture(cuforge_device):
    assert cuforge_device == "cpu" and _cuda.on_cpu()

def test_after():
    assert (_config.device(), os.environ.get("CUFORGE_DEVICE"), _cuda.on_cpu(), _config.arch()) == ("cuda", None, False, "")
    assert "device" not in _config._overrides and "arch" not in _config._overrides
"""


@NO_GPU
def test_launches_tests_run_on_the_cpu_without_a_gpu_and_everything_is_restored_after(pytester, monkeypatch):
    monkeypatch.delenv("CUFORGE_DEVICE", raising=False)
    monkeypatch.delenv("CUFORGE_ARCH", raising=False)
    pytester.makepyfile(test_launching=LAUNCHING)
    run(pytester, "-p", "no:randomly").assert_outcomes(passed=3)
    run(pytester, "--cuforge-device=cpu").assert_outcomes(passed=3)


CHECKING = """
import numpy as np
import pytest
import cuforge as cf

@cf.kernel
class AddInto:
    y: cf.Out[cf.float32]
    body = "y[threadIdx.x] += 1.f;"

def test_a_read_before_the_kernel_wrote_its_out_argument():
    with pytest.raises(cf.UninitializedReadError, match="parameter 'y' .*AddInto.body, line 1"):
        AddInto(np.zeros(32, np.float32), grid=1, block=32, device="cpu")
"""


def test_launches_on_the_cpu_are_checked_unless_the_option_turns_checks_off(pytester):
    pytester.makepyfile(test_checking=CHECKING)
    run(pytester).assert_outcomes(passed=1)
    run(pytester, "--cuforge-check=off").stdout.fnmatch_lines(["*DID NOT RAISE*UninitializedReadError*", "*1 failed*"])


SUBPROCESS_CHECKING = """
import os
import subprocess
import sys

import pytest

CHILD = '''
import numpy as np, cuforge as cf
@cf.kernel
class AddInto:
    y: cf.Out[cf.float32]
    body = "y[threadIdx.x] += 1.f;"
try:
    AddInto(np.zeros(32, np.float32), grid=1, block=32)  # no device named: CUFORGE_DEVICE's
    print("unchecked")
except cf.UninitializedReadError:
    print("checked")
'''

@pytest.mark.launches
def test_a_subprocess_launches_as_the_session_does():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True).stdout
    assert out.strip() == os.environ["EXPECTED"], out
"""


@NO_GPU
def test_a_launches_tests_subprocesses_get_the_sessions_check_choice(pytester, monkeypatch):
    """A ``launches`` test on the CPU hands the session's ``--cuforge-check`` to the
    subprocesses it starts (CUFORGE_CHECK), as it hands them the CPU (CUFORGE_DEVICE)."""
    monkeypatch.delenv("CUFORGE_CHECK", raising=False)
    monkeypatch.delenv("CUFORGE_DEVICE", raising=False)
    pytester.makepyfile(test_sub=SUBPROCESS_CHECKING)
    monkeypatch.setenv("EXPECTED", "checked")
    run(pytester).assert_outcomes(passed=1)
    monkeypatch.setenv("CUFORGE_CHECK", "1")  # the option wins over the environment, as in this process
    monkeypatch.setenv("EXPECTED", "unchecked")
    run(pytester, "--cuforge-check=off").assert_outcomes(passed=1)


@NO_GPU
def test_launches_tests_skip_with_the_reasons_where_neither_device_can_run_them(pytester, monkeypatch):
    pytester.makepyfile(test_launching=LAUNCHING)
    result = run(pytester, "-rs", "--cuforge-device=cuda")
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(["*SKIPPED*needs a CUDA GPU (--cuforge-device=cuda; none found: *)"])
    monkeypatch.setenv("CXX", "/nonexistent/c++")  # no compiler either
    result = run(pytester, "-rs")
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(
        ["tests skipped for no C++ compiler: *CXX='/nonexistent/c++'*",  # the whole, once; then each skip in short
         "*SKIPPED*needs a CUDA GPU (*) or a C++ compiler for cuforge's CPU backend (running kernels on the CPU needs*...)"]
    )
    result = run(pytester, "-rs", "--cuforge-device=cpu")
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(["*SKIPPED*needs a C++ compiler for cuforge's CPU backend (--cuforge-device=cpu)*"])


NEVER_ENDS = """
import numpy as np
import pytest
import cuforge as cf
from cuforge import _config

@cf.kernel
class Spins:
    x: cf.Array[cf.int32]
    body = "volatile int* f = x; while (f[0] == 0) {}"

def test_the_limit(request):
    given = request.config.getoption("cuforge_cpu_timeout")
    assert _config.cpu_timeout() == (EXPECTED if given is None else given)

def test_never_ends():
    Spins(np.zeros(1, np.int32), grid=1, block=32, device="cpu")

def test_after():
    Spins(np.ones(1, np.int32), grid=1, block=32, device="cpu")  # the pool goes on
"""


def test_a_cpu_launch_past_the_time_limit_fails_its_test_and_the_session_goes_on(pytester, monkeypatch):
    monkeypatch.delenv("CUFORGE_CPU_TIMEOUT", raising=False)
    pytester.makepyfile(test_spins=NEVER_ENDS.replace("EXPECTED", "0"))
    result = pytester.runpytest_subprocess(*PLUGIN, "-p", "no:cacheprovider", "--cuforge-cpu-timeout=1", timeout=300)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*LaunchTimeoutError: Spins (grid=(1, 1, 1), block=(32, 1, 1)) on the CPU: the launch ran "
                                 "longer than its time limit of 1 s and was stopped*--cuforge-cpu-timeout=SECONDS*"])  # fmt: skip


def test_the_cpu_time_limit_is_60_s_under_the_plugin_unless_set(pytester, monkeypatch):
    monkeypatch.delenv("CUFORGE_CPU_TIMEOUT", raising=False)
    pytester.makepyfile(test_spins=NEVER_ENDS.replace("EXPECTED", "60"))
    run(pytester, "-k", "the_limit").assert_outcomes(passed=1, deselected=2)
    run(pytester, "-k", "the_limit", "--cuforge-cpu-timeout=0").assert_outcomes(passed=1, deselected=2)
    monkeypatch.setenv("CUFORGE_CPU_TIMEOUT", "7.5")
    pytester.makepyfile(test_spins=NEVER_ENDS.replace("EXPECTED", "7.5"))
    run(pytester, "-k", "the_limit").assert_outcomes(passed=1, deselected=2)
    result = run(pytester, "--cuforge-cpu-timeout=-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--cuforge-cpu-timeout expects seconds >= 0 (0: no limit), got -1*"])


@NO_GPU
def test_cuforge_device_takes_cuda_n_as_pytorch_spells_a_gpu(pytester):
    pytester.makepyfile(
        "import pytest\nfrom cuforge import _config\nfrom cuforge._runtime import cuda as _cuda\n\n"
        "@pytest.mark.launches\ndef test_a():\n    pass\n\n"
        "def test_gpu_1_is_the_default():\n    assert (_config.device(), _cuda.state.default_gpu) == ('cuda:1', 1)\n"
    )
    result = run(pytester, "-rs", "--cuforge-device=cuda:1")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*needs a CUDA GPU (--cuforge-device=cuda; none found: *)"])
    result = run(pytester, "--cuforge-device=gpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--cuforge-device: expects auto, cuda, cuda:N or cpu, got 'gpu'*"])


@NO_GPU
def test_require_gpu_makes_launches_tests_need_the_gpu(pytester):
    pytester.makepyfile("import pytest\n@pytest.mark.launches\ndef test_a():\n    pass\n")
    result = run(pytester, "--cuforge-require-gpu")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*--cuforge-require-gpu: no usable CUDA device*"])


@NO_GPU
def test_a_gpu_module_is_skipped_once_with_the_reason(pytester):
    pytester.makepyfile(
        test_gpu_only="from cuforge.pytest_plugin import gpu_module\npytestmark = gpu_module()\n"
        "def test_a():\n    pass\ndef test_b():\n    pass\n",
        test_other="def test_c():\n    pass\n",
    )
    result = run(pytester, "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED [[]1] test_gpu_only.py:2: needs a CUDA GPU (none found: *)"])
    result = run(pytester, "--cuforge-require-gpu")
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error
    result.stdout.fnmatch_lines(["*--cuforge-require-gpu: no usable CUDA device*"])


def test_bad_arch_is_a_usage_error(pytester):
    pytester.makepyfile("def test_a():\n    pass\n")
    result = run(pytester, "--cuforge-arch", "90")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--cuforge-arch: arch expects a string like 'sm_90'*"])


def test_compile_all_lists_one_item_per_instantiation(pytester):
    pytester.makepyfile(kernels=KERNELS)
    pytester.makepyfile(test_use="import kernels\n\ndef test_nothing():\n    pass\n")
    listed = run(pytester, "--cuforge-compile-all", "--cuforge-arch", "sm_90", "--collect-only", "-q")
    listed.stdout.fnmatch_lines(
        [
            "test_use.py::test_nothing",
            "cuforge::compile[[]Axpy[[]float32-256]]",
            "cuforge::compile[[]Axpy[[]float32-128]]",
            "cuforge::compile[[]Axpy[[]float64-256]]",
            "cuforge::compile[[]Axpy[[]float64-128]]",
            "cuforge::compile[[]Plain]",
        ]
    )
    run(pytester, "--cuforge-compile-all", "--cuforge-arch", "sm_90").assert_outcomes(passed=6)


def test_compile_all_on_the_cpu_builds_the_cpu_libraries_and_without_a_gpu_names_the_fixes(pytester):
    pytester.makepyfile(kernels=KERNELS)
    pytester.makepyfile(test_use="import kernels\n\ndef test_nothing():\n    pass\n")
    pytester.makeconftest(
        "import cuforge\n"
        "def pytest_sessionfinish(session):\n"
        "    print('cpu_compiles', cuforge.cache_stats().cpu_compiles)\n"
    )
    result = run(pytester, "--cuforge-compile-all", "--cuforge-device=cpu", "-s")
    result.assert_outcomes(passed=6)
    compiles = int(re.search(r"cpu_compiles (\d+)", result.stdout.str()).group(1))
    assert compiles >= 2  # (a family's instantiations share one library; the runtime's is one more on a new cache)
    if gpu_missing_reason() is None:
        return
    result = run(pytester, "--cuforge-compile-all", "--cuforge-device=auto")
    result.assert_outcomes(passed=1, failed=5)
    result.stdout.fnmatch_lines(["*pass --cuforge-arch=sm_90 to compile for a GPU without one, or --cuforge-device=cpu*"])


def test_compile_all_fails_with_the_nvrtc_message(pytester):
    pytester.makepyfile(
        test_broken="""
        import cuforge as cf

        @cf.kernel
        class Broken:
            T = cf.typeparam(cf.float32, cf.int32)
            x: cf.Out[T]
            body = "x[0] = sqrtf(x[0]) + undefined_name;"

        def test_x():
            pass
        """
    )
    result = run(pytester, "--cuforge-compile-all", "--cuforge-arch", "sm_90")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        ["*Broken<float>: NVRTC failed to compile for sm_90:*", '*identifier "undefined_name" is undefined*']
    )


def test_compile_all_with_named_modules(pytester):
    pkg = pytester.mkpydir("mypkg")
    (pkg / "kernels.py").write_text(textwrap.dedent(KERNELS))
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = run(pytester, "--cuforge-compile-all", "--cuforge-arch", "sm_90", "--cuforge-modules", "mypkg.kernels")
    result.assert_outcomes(passed=6)
    bad = run(pytester, "--cuforge-compile-all", "--cuforge-modules", "no_such_module")
    bad.stderr.fnmatch_lines(["*--cuforge-modules no_such_module: cannot import it*"])


def test_counter_and_cache_fixtures(pytester):
    pytester.makepyfile(
        """
        import cuforge as cf
        from cuforge import _config

        def make(v):
            return cf.kernel(type("K", (), {"__annotations__": {"x": cf.Out[cf.int32]}, "body": f"x[0] = {v};"}))

        def test_counter(cuforge_cache_dir, cuforge_compile_counter):
            k = make(1)
            k.compile(arch="sm_90")
            k.compile(arch="sm_90")
            assert cuforge_compile_counter.count == 1 and cuforge_compile_counter.memory_hits >= 1
            assert "1 compiles" in repr(cuforge_compile_counter)

        def test_cache_dir_is_isolated_and_restored(cuforge_cache_dir):
            assert str(_config.cache_dir()).startswith(str(cuforge_cache_dir))
            make(2).compile(arch="sm_90")
            assert any(p.is_file() for p in cuforge_cache_dir.rglob("*"))

        def test_after():
            assert _config._overrides.get("cache_dir") in (None, "")
        """
    )
    run(pytester).assert_outcomes(passed=3)


def test_startup_and_collection_do_not_touch_cuda(pytester):
    pytester.makeconftest(
        """
        import sys
        def pytest_collection_finish(session):
            from cuforge._runtime import cuda as _cuda
            print("CUDA-STATE", "cuda.core" in sys.modules, bool(_cuda.state.devices))
        """
    )
    pytester.makepyfile(
        KERNELS + "\nimport pytest\n@pytest.mark.gpu\ndef test_g():\n    pass\n@pytest.mark.launches\ndef test_l():\n    pass\n"
    )
    result = run(pytester, "--collect-only", "-s")
    result.stdout.fnmatch_lines(["*CUDA-STATE False False*"])


def test_the_pytest_usage_example_runs(pytester):
    """examples/pytest_usage: its launches tests run on the CPU here and on the GPU there, its
    GPU test skips with the reason here and passes on a GPU; its kernels compile one item per
    instantiation with --cuforge-compile-all."""
    example = os.path.abspath(os.path.join(ROOT, "examples", "pytest_usage"))
    cmd = [sys.executable, "-m", "pytest", *PLUGIN, "-p", "no:cacheprovider", "-q", "--rootdir", example, example]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=example)
    assert out.returncode == 0, out.stdout + out.stderr
    expected = "10 passed" if gpu_missing_reason() is None else "9 passed, 1 skipped"
    assert expected in out.stdout, out.stdout
    out = subprocess.run([*cmd, "--cuforge-compile-all", "--cuforge-arch", "sm_90"], capture_output=True, text=True, cwd=example)
    assert out.returncode == 0 and ("17 passed" if gpu_missing_reason() is None else "16 passed, 1 skipped") in out.stdout, (
        out.stdout
    )


@NO_GPU
def test_a_skip_reason_is_one_short_line_and_the_whole_reason_is_in_the_summary_once(pytester):
    pytester.makepyfile("import pytest\n" + "".join(f"@pytest.mark.gpu\ndef test_{i}():\n    pass\n" for i in range(5)))
    result = run(pytester, "-ra")
    result.assert_outcomes(skipped=5)
    skips = [line for line in result.stdout.lines if line.startswith("SKIPPED")]
    reason = skips[0].split(": ", 1)[1]
    assert len(reason) <= 120 and reason.startswith("needs a CUDA GPU (none found: "), reason
    whole = [line for line in result.stdout.lines if line.startswith("tests skipped for no usable CUDA GPU: ")]
    assert len(whole) == 1 and "no CUDA device is available (" in whole[0], result.stdout.lines


def test_a_failed_comparison_shows_the_tests_line_and_the_message_not_cuforges_code(pytester):
    pytester.makepyfile(
        test_matches=KERNELS
        + """
import numpy as np
from cuforge.testing import assert_kernel_matches

def wrong(a, x, y, n):
    y += a * x  # the kernel does this, but not:
    y += 1

def test_wrong_reference():
    assert_kernel_matches(Axpy, wrong, np.float32(2), np.ones(64, np.float32), np.ones(64, np.float32), 64, device="cpu")

def test_wrong_dtype():
    assert_kernel_matches(Axpy[cf.float32, 256], wrong, 2.0, np.ones(64), np.ones(64), 64, device="cpu")
"""
    )
    result = run(pytester, "-p", "no:randomly")
    result.assert_outcomes(failed=2)
    text = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*assert_kernel_matches(Axpy, wrong, *",
        "E *AssertionError: Axpy<float, 256>: argument 'y' differs from the reference at index (0,): got *",
        "*assert_kernel_matches(Axpy[[]cf.float32, 256[]], wrong, *",
        "E *cuforge.ArgumentTypeError: Axpy<float, 256>: argument 'x' expects In[[]float32[]], got a float64 array*",
    ])  # fmt: skip
    for cuforge_code in ("def assert_kernel_matches", "raise AssertionError(", "k(*device, **launch)", "raise fail(",
                         "cuforge/_launch", "cuforge/_kernel"):  # fmt: skip
        assert cuforge_code not in text, text
