"""Prebuilt code on a real GPU: an ahead-of-time build launched with NVRTC unavailable, a
template specialisation bound through the manifest, module variables shared through a build,
a stale build entry compiled instead, the LTO example, and unloading."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cuforge as cf
from cuforge._runtime import cuda as _cuda
from cuforge.pytest_plugin import gpu_module

from ..conftest import Saxpy
from ..unit.test_build import LINKED, build, shared_build
from ..unit.test_prebuilt import _example_lto, build_aot

pytestmark = gpu_module()


@pytest.fixture(scope="module")
def aot(tmp_path_factory):
    return build_aot(tmp_path_factory.mktemp("aot-gpu"), "sm_80", "sm_90")


def test_a_build_launches_with_nvrtc_unavailable(aot, tmp_path):
    code = textwrap.dedent("""
        import numpy as np, cuforge as cf, aot_kernels
        import cuda.core  # imports the NVRTC bindings (the library itself loads on a first call)
        from cuda.bindings import nvrtc
        from cuforge._compile import build as _build

        def unavailable(*args):
            raise RuntimeError("NVRTC is not available in this process")

        for name in dir(nvrtc):  # NVRTC unavailable: every call fails
            if name.startswith("nvrtc"):
                setattr(nvrtc, name, unavailable)

        assert not _build.nvrtc_available()
        x, y = cf.to_device(np.arange(1000, dtype=np.float32)), cf.zeros(1000, cf.float32)
        aot_kernels.AotSaxpy(2.0, x, y, 1000)
        aot_kernels.AotSaxpy(2.0, x, y, 1000)
        np.testing.assert_array_equal(y.to_numpy(), 4 * np.arange(1000, dtype=np.float32))
        out = cf.empty(777, cf.float64)
        aot_kernels.AotFill(out, 1.5, 777)  # the family picks AotFill<double> from the array
        np.testing.assert_array_equal(out.to_numpy(), np.full(777, 1.5))

        @cf.kernel
        class NotBuilt:
            y: cf.Array[cf.float32]
            body = "y[threadIdx.x] = 0.0f;"

        try:
            NotBuilt(y)
        except cf.CompileError as exc:
            print("missing:", exc)
        print("compiles:", cf.cache_stats().compiles)
        print("libnvrtc mapped:", "libnvrtc" in open("/proc/self/maps").read())
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(aot), *sys.path]), CUFORGE_BUILD_DIR=str(aot / "build"),
               CUFORGE_CACHE_DIR=str(tmp_path / "empty-cache"))  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0].startswith("missing: NotBuilt: NVRTC is not available to compile NotBuilt, and the build at ")
    assert "add its module to python -m cuforge build" in lines[0]
    assert lines[-2:] == ["compiles: 0", "libnvrtc mapped: False"]


def test_a_template_specialisation_binds_through_the_manifest(aot):
    manifest = json.loads((aot / "build" / "manifest.json").read_text())
    symbols = {e["name_expression"]: e["lowered_name"] for e in manifest["kernels"]}
    fatbin = cf.Module(aot / "build" / "aot_kernels.AotFill.fatbin", symbols=symbols)
    assert sorted(fatbin.functions()) == sorted(symbols[e] for e in ("AotFill<float>", "AotFill<double>"))

    @cf.kernel
    class Fill32:
        module = fatbin
        name = "AotFill<float>"
        y: cf.Out[cf.float32]
        v: cf.float32
        n: cf.int64

    y = cf.zeros(300, cf.float32)
    Fill32(y, 2.5, 300)
    Fill32(y, 3.5, 200)
    np.testing.assert_array_equal(y.to_numpy(), [3.5] * 200 + [2.5] * 100)


def test_a_wrong_signature_is_refused_on_load(aot):
    @cf.kernel
    class Wrong:
        module = aot / "build" / "aot_kernels.AotSaxpy.fatbin"
        name = "_Z8AotSaxpyfPKfPfx"
        a: cf.float32
        x: cf.In[cf.float32]
        y: cf.Array[cf.float32]

    with pytest.raises(cf.SignatureMismatchError, match=r"Wrong: the compiled kernel has 4 parameters but 3 are annotated"):
        Wrong(1.0, cf.zeros(4, cf.float32), cf.zeros(4, cf.float32))


def _run(root, code, build_dir=None):
    """``code`` in a fresh process with ``root`` importable, an empty cache and, if given, the build."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), *sys.path]), CUFORGE_CACHE_DIR=str(root / "empty-cache"))
    env.pop("CUFORGE_BUILD_DIR", None)
    if build_dir is not None:
        env["CUFORGE_BUILD_DIR"] = str(build_dir)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


SHARES = """
    import numpy as np, cuforge as cf, shared_kernels
    y = cf.zeros(32, cf.float32)
    shared_kernels.WriteFactor.set_global("factor", np.array([3.0], np.float32))
    shared_kernels.TwiceFactor(y, grid=1, block=32)   # reads the __constant__ the other class wrote
    print(y.to_numpy()[0], cf.cache_stats().compiles)
"""


def test_kernels_of_one_source_share_module_variables_when_served_from_a_build(tmp_path):
    out = shared_build(tmp_path)
    assert _run(tmp_path, SHARES) == "6.0 1"  # compiled in-process: one program
    assert _run(tmp_path, SHARES, out) == "6.0 0"  # served from the build: one image, the same sharing


def test_a_stale_linked_input_compiles_rather_than_serving_the_build(tmp_path):
    out = build(tmp_path, "linked_kernels", LINKED, "sm_90")
    (tmp_path / "linked_kernels.py").write_text(LINKED.replace("2.0f * x", "3.0f * x"))  # the device library changed
    shutil.rmtree(tmp_path / "__pycache__", ignore_errors=True)  # (same size, maybe the same second: no stale .pyc)
    code = """
        import warnings, numpy as np, cuforge as cf, linked_kernels
        y = cf.to_device(np.ones(32, np.float32))
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            linked_kernels.Scaled(y, grid=1, block=32)
        print(y.to_numpy()[0], cf.cache_stats().compiles > 0)
        print(*[str(w.message) for w in seen])
    """
    result, warned = _run(tmp_path, code, out).splitlines()
    assert result == "4.0 True"  # 3 * 1 + OFFSET: the new library, compiled
    assert warned.startswith("the build's entry for Scaled was made with other link= inputs; compiling it instead")


def test_the_lto_example_matches_numpy():
    _example_lto().check()


def test_launching_after_unload_is_a_clear_error_and_the_context_lives_on():
    ck = Saxpy.compile(f"sm_{_cuda.current_device().cc}")
    module = cf.Module(ck.code)
    annotations = {"a": cf.float32, "x": cf.In[cf.float32], "y": cf.Array[cf.float32], "n": cf.int64}
    Pre = cf.kernel(type("Pre", (), {"__annotations__": annotations, "module": module, "name": ck.lowered_name}))
    x, y = cf.to_device(np.ones(256, np.float32)), cf.zeros(256, cf.float32)
    Pre(1.0, x, y, 256)
    Pre(1.0, x, y, 256)  # the C launcher, with the function it remembers
    prepared = Pre.prepare(1.0, x, y, 256)
    prepared()
    module.unload()
    assert not module.loaded
    for call in (lambda: Pre(1.0, x, y, 256), prepared, lambda: Pre(1.0, x, y, n=256)):
        with pytest.raises(cf.LaunchError, match=r"Pre: module <bytes> was unloaded \(Module.unload\(\)\); load it again"):
            call()
    np.testing.assert_array_equal(y.to_numpy(), np.full(256, 3.0, np.float32))
    Saxpy(1.0, x, y, 256)  # the context is fine
    np.testing.assert_array_equal(y.to_numpy(), np.full(256, 4.0, np.float32))
