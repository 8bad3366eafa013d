"""Prebuilt modules, LTO links and ahead-of-time builds on the CPU: NVRTC and nvJitLink
really compile and link, nvFatbin really packs, and the command line really runs."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

import cuforge as cf
from cuforge._compile import build as _build
from cuforge._compile import elf as _elf
from cuforge._compile.stats import counters
from cuforge._runtime import module as _prebuilt

from ..conftest import Saxpy

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


@pytest.fixture(scope="module")
def saxpy_cubin():
    return Saxpy.compile("sm_90")


def test_modules_from_bytes_and_paths_list_their_kernels(saxpy_cubin, tmp_path):
    m = cf.Module(saxpy_cubin.code)
    assert m.code_type == "cubin" and m.functions() == [saxpy_cubin.lowered_name] and m.loaded
    ptx = Saxpy.compile("compute_90").code
    assert cf.Module(ptx).code_type == "ptx" and cf.Module(ptx).functions() == [saxpy_cubin.lowered_name]
    path = tmp_path / "saxpy.cubin"
    path.write_bytes(saxpy_cubin.code)
    m = cf.Module(path)
    assert m.code_type == "cubin" and m.name == "saxpy.cubin" and m.functions() == [saxpy_cubin.lowered_name]
    assert repr(m) == "<cuforge.Module saxpy.cubin (cubin)>"


def test_module_errors_name_the_fix(tmp_path):
    with pytest.raises(cf.DeclarationError, match=r"cuforge.Module: no file at .*nothing.cubin; give the path"):
        cf.Module(tmp_path / "nothing.cubin")
    with pytest.raises(cf.DeclarationError, match=r"cannot tell the code type of the bytes .*pass code_type='cubin'"):
        cf.Module(b"not a binary")
    with pytest.raises(cf.DeclarationError, match=r"code expects a path or bytes, got int"):
        cf.Module(42)


def test_a_class_binds_a_signature_to_a_prebuilt_entry_point(saxpy_cubin):
    @cf.kernel
    class Prebuilt:
        module = cf.Module(saxpy_cubin.code)
        name = saxpy_cubin.lowered_name
        a: cf.float32
        x: cf.In[cf.float32]
        y: cf.Array[cf.float32]
        n: cf.int64

    assert Prebuilt.lowered_name == saxpy_cubin.lowered_name
    assert repr(Prebuilt) == "<cuforge.Kernel Prebuilt(a: float32, x: In[float32], y: Array[float32], n: int64)>"
    with pytest.raises(cf.CuforgeError, match=r"Prebuilt.compile\(\): the kernel is prebuilt .* no source"):
        Prebuilt.compile("sm_90")
    with pytest.raises(cf.CuforgeError, match=r"Prebuilt.render\(\): the kernel is prebuilt"):
        Prebuilt.render()


@pytest.mark.parametrize(
    ("ns", "match"),
    [
        ({"module": b"\x7fELF"}, r"K: a module= kernel needs name = "),
        ({"module": 3, "name": "k"}, r"K: module expects a cuforge.Module or a path, got int"),
        ({"module": "missing.fatbin", "name": "k"}, r"K: module='missing.fatbin': cuforge.Module: no file at"),
        ({"body": "", "module": "x.cubin", "name": "k"}, r"exactly one of body .* found \['body', 'module'\]"),
        ({"body": "", "link": [3]}, r"K: link expects a list of cuforge.Module objects .* and CUDA C\+\+ source strings"),
    ],
)
def test_prebuilt_and_link_declaration_errors(ns, match, saxpy_cubin):
    if ns.get("module") == b"\x7fELF":
        ns["module"] = cf.Module(saxpy_cubin.code)
    with pytest.raises(cf.DeclarationError, match=match):
        cf.kernel(type("K", (), {"__annotations__": {"y": cf.Array[cf.float32]}, **ns}))


def test_the_lto_example_compiles_and_links():
    ck = _example_lto().ApplyPoly.compile("sm_90")
    assert ck.code_type == "cubin" and _elf.cubin_entries(ck.code) == [ck.lowered_name]
    assert "-dlto" in ck.flags and "-rdc=true" in ck.flags


def _example_lto():
    import importlib.util

    spec = importlib.util.spec_from_file_location("example_lto_link", os.path.join(EXAMPLES, "lto_link.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _linked(link, lto=True):
    return cf.kernel(type("Linked", (), {
        "__annotations__": {"y": cf.Array[cf.float32]},
        "options": cf.CompileOptions(lto=lto),
        "link": link,
        "preamble": 'extern "C" __device__ float twice(float);',
        "body": "y[threadIdx.x] = twice(y[threadIdx.x]);",
    }))  # fmt: skip


TWICE = 'extern "C" __device__ float twice(float x) { return 2.0f * x; }'


def test_the_cache_key_covers_every_linked_input():
    before = counters.compiles
    a = _linked([TWICE]).compile("sm_90")
    b = _linked([TWICE.replace("2.0f", "3.0f")]).compile("sm_90")
    assert counters.compiles == before + 4  # two kernels, each with its linked unit
    assert a.code != b.code
    again = _linked([TWICE]).compile("sm_90")  # the same inputs: the memory cache
    assert again is a and counters.compiles == before + 4


def test_modules_of_lto_ir_and_relocatable_code_are_linked():
    from cuforge._compile import headers as _headers
    from cuforge._compile import nvrtc as _compile

    flags = cf.options.to_flags(cf.CompileOptions(lto=True), "sm_90", _headers.include_dirs())
    ir = _compile.compile_program(TWICE, program_name="twice.cu", name_expressions=(), flags=flags, kernel="twice")
    assert ir.code_type == "ltoir" and _prebuilt.sniff(ir.code) == "ltoir"
    ck = _linked([cf.Module(ir.code)]).compile("sm_90")
    assert ck.code_type == "cubin" and len(_elf.cubin_entries(ck.code)) == 1
    ptx = _linked([cf.Module(ir.code)]).compile("compute_90")  # nvJitLink emits PTX from LTO-IR
    assert ptx.code_type == "ptx" and ".entry" in ptx.ptx
    flags = cf.options.to_flags(cf.CompileOptions(relocatable=True), "sm_90", _headers.include_dirs())
    reloc = _compile.compile_program(TWICE, program_name="twice.cu", name_expressions=(), flags=flags, kernel="twice")
    assert _linked([cf.Module(reloc.code)], lto=False).compile("sm_90").code_type == "cubin"


def test_an_unresolved_extern_is_a_link_error_naming_the_kernel():
    with pytest.raises(cf.CompileError, match=r"Linked: nvJitLink failed to link for sm_90"):
        _linked([]).compile("sm_90")


AOT = '''
import cuforge as cf

@cf.kernel
class AotSaxpy:
    a: cf.float32
    x: cf.In[cf.float32]
    y: cf.Array[cf.float32]
    n: cf.int64
    body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i];"

@cf.kernel
class AotFill:
    T = cf.typeparam(cf.float32, cf.float64)
    y: cf.Out[T]
    v: T
    n: cf.int64
    body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] = v;"
'''


def build_aot(root, *archs):
    """python -m cuforge build of AOT's module into root/build, run as a user runs it."""
    (root / "aot_kernels.py").write_text(AOT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), *sys.path]), CUFORGE_CACHE_DIR=str(root / "cache"))
    command = [sys.executable, "-m", "cuforge", "build", "aot_kernels", *[f"--arch={a}" for a in archs], "-o", str(root / "build")]
    out = subprocess.run(command, capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"built 3 kernels for {', '.join(archs)} into {root / 'build'}"
    return root


@pytest.fixture(scope="module")
def aot(tmp_path_factory):
    """A build for two archs and PTX."""
    return build_aot(tmp_path_factory.mktemp("aot"), "sm_80", "sm_90", "compute_90")


def test_the_build_writes_a_fatbin_per_declaration_and_a_manifest(aot):
    manifest = json.loads((aot / "build" / "manifest.json").read_text())
    assert manifest["schema"] == _build.SCHEMA and manifest["archs"] == ["sm_80", "sm_90", "compute_90"]
    by_expr = {e["name_expression"]: e for e in manifest["kernels"]}
    assert sorted(by_expr) == ["AotFill<double>", "AotFill<float>", "AotSaxpy"]
    fill = by_expr["AotFill<float>"]
    assert fill["qualname"] == "aot_kernels.AotFill" and fill["template_args"] == {"T": "float"}
    assert fill["lowered_name"] == "_Z7AotFillIfEvPT_S0_x" and fill["signature"] == "AotFill<float>(y: Out[float32], v: float32, n: int64)"
    assert len(fill["inputs"]["source"]) == 64 and fill["archs"] == ["sm_80", "sm_90", "compute_90"]
    for e in manifest["kernels"]:
        data = (aot / "build" / e["fatbin"]).read_bytes()
        assert _prebuilt.sniff(data) == "fatbin" and cf.Module(aot / "build" / e["fatbin"]).code_type == "fatbin"
    # both declarations' fatbins hold a cubin per arch and the PTX
    assert sorted(os.listdir(aot / "build")) == ["aot_kernels.AotFill.fatbin", "aot_kernels.AotSaxpy.fatbin", "manifest.json"]


def test_a_build_serves_only_the_source_it_was_built_from(aot, monkeypatch):
    monkeypatch.syspath_prepend(str(aot))
    import aot_kernels

    build = _build.Build(str(aot / "build"))
    assert build.serves(90) and build.serves(89) and build.serves(100) and not build.serves(75)
    module, symbol = build.image_for(aot_kernels.AotFill[cf.float64])
    assert symbol == "_Z7AotFillIdEvPT_S0_x" and module.code_type == "fatbin"
    assert build.image_for(aot_kernels.AotSaxpy) is not None
    edited = cf.kernel(type("AotSaxpy", (), {
        "__module__": "aot_kernels",
        "__annotations__": {"y": cf.Array[cf.float32]},
        "body": "y[0] = 1.0f;",
    }))  # fmt: skip
    with pytest.warns(cf.StaleBuildWarning, match=r"the build's entry for AotSaxpy was made with other source"):
        assert build.image_for(edited) is None  # the same name, other source: compiled, never the stale binary
    cf.kernel(type("AotSaxpy", (), dict(vars(aot_kernels.AotSaxpy.__wrapped__))))  # restore the registry's entry


def test_the_stale_build_warning_points_at_the_users_call_not_into_cuforge(aot, monkeypatch):
    from cuforge._runtime import cuda as _cuda

    monkeypatch.syspath_prepend(str(aot))
    import aot_kernels  # the build's module, whose AotSaxpy is redeclared below

    edited = cf.kernel(type("AotSaxpy", (), {
        "__module__": "aot_kernels",
        "__annotations__": {"y": cf.Array[cf.float32]},
        "body": "y[0] = 2.0f;",
    }))  # fmt: skip
    cf.use_build(aot / "build")
    try:  # what a launch on an sm_90 device does first: load the kernel (with no driver, the load stops after)
        with pytest.warns(cf.StaleBuildWarning, match=r"AotSaxpy was made with other source") as caught:
            with contextlib.suppress(OSError):
                edited._loader.load(_cuda.DeviceInfo(id=0, cc=90, name="sm_90 device"))
    finally:
        cf.use_build(None)
        cf.kernel(type("AotSaxpy", (), dict(vars(aot_kernels.AotSaxpy.__wrapped__))))  # restore the registry's entry
    assert [w.filename for w in caught] == [__file__]


def test_use_build_checks_the_directory(tmp_path):
    with pytest.raises(cf.ConfigError, match=r"cuforge build directory .*: cannot read manifest.json .* python -m cuforge build"):
        cf.use_build(tmp_path)
    cf.use_build(None)


def test_build_and_precompile_errors_and_precompile_warms_the_cache(aot, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(aot), *sys.path]), CUFORGE_CACHE_DIR=str(tmp_path / "cache"))
    run = lambda *a: subprocess.run([sys.executable, "-m", "cuforge", *a], capture_output=True, text=True, env=env)  # noqa: E731
    out = run("build", "no_such_module", "--arch", "sm_90", "-o", str(tmp_path / "b"))
    assert out.returncode == 1 and "cuforge build: cannot import 'no_such_module'" in out.stderr
    out = run("precompile", "aot_kernels", "--arch", "sm_90")
    assert out.returncode == 0 and out.stdout.strip() == "precompiled 3 kernels into the cache", out.stderr
    assert "compiled 3/3 kernels" in out.stderr  # the progress line
    check = textwrap.dedent("""
        import aot_kernels, cuforge as cf
        assert aot_kernels.AotSaxpy.compile("sm_90").from_cache and aot_kernels.AotFill[cf.float64].compile("sm_90").from_cache
        print(cf.cache_stats().compiles)
    """)
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and out.stdout.strip() == "0", out.stderr


@pytest.mark.skipif(cf.gpu_available(), reason="a GPU is present: precompile compiles for it")
def test_precompile_warms_the_cpu_builds_and_without_a_gpu_names_the_flags(aot, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(aot), *sys.path]), CUFORGE_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("CUFORGE_ARCH", None)
    env.pop("CUFORGE_DEVICE", None)
    run = lambda *a, **e: subprocess.run([sys.executable, "-m", "cuforge", *a], capture_output=True, text=True,  # noqa: E731
                                         env={**env, **e})  # fmt: skip
    out = run("precompile", "aot_kernels")
    assert out.returncode == 1, out.stderr
    assert re.fullmatch(r"cuforge precompile: no CUDA device is available \(.*\); pass --device cpu to build the kernels for "
                        r"cuforge's CPU backend, or --arch sm_90 \(or set CUFORGE_ARCH=sm_90\) to compile them for a GPU "
                        r"this machine does not have\n", out.stderr), out.stderr  # fmt: skip
    out = run("precompile", "aot_kernels", "--device", "cpu", "--arch", "sm_90")
    assert out.returncode == 1 and "--device cpu builds for the CPU, --arch for a GPU: pass one of them" in out.stderr
    out = run("precompile", "aot_kernels", "--device", "cpu")
    assert out.returncode == 0 and out.stdout.strip() == "built 3 kernels for the CPU into the cache", out.stderr
    assert "built 3/3 kernels for the CPU" in out.stderr  # the progress line
    out = run("precompile", "aot_kernels", CUFORGE_DEVICE="cpu")  # the process's choice, as for a launch
    assert out.returncode == 0 and out.stdout.strip() == "built 3 kernels for the CPU into the cache", out.stderr
    check = textwrap.dedent("""
        import numpy as np, aot_kernels, cuforge as cf
        x, y = np.arange(100, dtype=np.float32), np.ones(100, np.float32)
        aot_kernels.AotSaxpy(2.0, x, y, 100, device="cpu")
        z = np.zeros(10)
        aot_kernels.AotFill(z, 3.5, 10, device="cpu")
        assert np.array_equal(y, 2 * x + 1) and (z == 3.5).all()
        print(cf.cache_stats().cpu_compiles)
    """)
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and out.stdout.strip() == "0", out.stderr  # every build came from the cache


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed: the example goes on to run")
def test_the_dask_example_says_what_it_needs_rather_than_fail_on_an_import():
    out = subprocess.run([sys.executable, os.path.join(EXAMPLES, "dask_saxpy.py")], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)), timeout=120)  # fmt: skip
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert re.fullmatch(r"examples/dask_saxpy.py: this example needs cupy-cuda12x(, .*)?: pip install cupy-cuda12x.*\n", out.stderr)
