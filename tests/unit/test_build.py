"""Ahead-of-time builds on the CPU: a build entry serves only the exact inputs it was made
from, kernels of one source= text stay one image, a failed family instantiation is named
while the others still build, and the command line's wording. NVRTC and nvFatbin really run."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import types

import pytest

import cuforge as cf
from cuforge._compile import build as _build
from cuforge.integrations import cli

LINKED = """
import cuforge as cf

@cf.kernel
class Scaled:
    y: cf.Array[cf.float32]
    options = cf.CompileOptions(lto=True, defines={"OFFSET": "1.0f"})
    link = ['extern "C" __device__ float scale(float x) { return 2.0f * x; }']
    preamble = 'extern "C" __device__ float scale(float);'
    body = "y[threadIdx.x] = scale(y[threadIdx.x]) + OFFSET;"
"""


def run_cli(root, *args):
    """python -m cuforge ARGS with ``root`` importable, as a user runs it (stderr a pipe)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), *sys.path]), CUFORGE_CACHE_DIR=str(root / "cache"))
    return subprocess.run([sys.executable, "-m", "cuforge", *args], capture_output=True, text=True, env=env)


def build(root, name, text, *archs):
    """Write module ``name`` under ``root`` and build it into root/build."""
    (root / f"{name}.py").write_text(text)
    out = run_cli(root, "build", name, *[f"--arch={a}" for a in archs], "-o", str(root / "build"))
    assert out.returncode == 0, out.stderr
    return root / "build"


def declare(text, module):
    """The kernels of ``text`` declared as module ``module`` declares them (another edit of it)."""
    mod = sys.modules[module] = types.ModuleType(module)
    exec(compile(text, f"{module}.py", "exec"), mod.__dict__)
    return mod.__dict__


@pytest.fixture(scope="module")
def linked_build(tmp_path_factory):
    return build(tmp_path_factory.mktemp("linked"), "linked_kernels", LINKED, "sm_80", "sm_90")


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (("2.0f * x", "3.0f * x"), r"other link= inputs"),
        (('"OFFSET": "1.0f"', '"OFFSET": "2.0f"'), r"other defines= \(was -DOFFSET=1.0f; now -DOFFSET=2.0f\)"),
        (("lto=True,", "lto=True, fast_math=True,"), r"other options \(was -std=c\+\+17 -rdc=true -dlto; now .*-use_fast_math"),
        (("+ OFFSET", "- OFFSET"), r"other source"),
    ],
)
def test_a_build_entry_is_stale_when_any_compile_input_changed(linked_build, edit, named):
    build = _build.Build(str(linked_build))
    same = declare(LINKED, "linked_kernels")["Scaled"]
    assert build.image_for(same) is not None  # the inputs it was built from: served
    edited = declare(LINKED.replace(*edit), "linked_kernels")["Scaled"]
    # NVRTC is present: the stale entry is not served, with a warning naming what changed
    with pytest.warns(cf.StaleBuildWarning, match=rf"the build's entry for Scaled was made with {named}"):
        assert build.image_for(edited) is None
    # where NVRTC is absent, the error says the same
    with pytest.raises(cf.CompileError, match=rf"Scaled: NVRTC is not available .*made with {named}"):
        raise _build.missing(edited, build)
    declare(LINKED, "linked_kernels")  # the registry's entry as the module declares it


def test_the_manifest_records_each_input_per_entry_and_the_toolchain_once(linked_build):
    manifest = json.loads((linked_build / "manifest.json").read_text())
    assert manifest["schema"] == _build.SCHEMA == 2
    (entry,) = manifest["kernels"]
    assert entry["archs"] == ["sm_80", "sm_90"]
    assert sorted(entry["inputs"]) == ["cuforge", "defines", "headers", "include_dirs", "link", "name_expression",
                                       "options", "source"]  # fmt: skip
    assert entry["inputs"]["defines"] == "-DOFFSET=1.0f" and entry["inputs"]["options"] == "-std=c++17 -rdc=true -dlto"
    assert set(manifest["toolchain"]) == {"nvrtc", "cuda_headers", "nvjitlink"}  # recorded, not checked


def test_an_old_schema_manifest_is_refused_with_the_fix(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"schema": 1, "archs": ["sm_90"], "kernels": []}))
    with pytest.raises(cf.ConfigError, match=r"manifest.json: schema 1, expected 2; rebuild it"):
        cf.use_build(tmp_path)


SHARED = '''
import cuforge as cf

SOURCE = """
__constant__ float factor;
extern "C" __global__ void write_factor(float* y) { y[threadIdx.x] = factor; }
extern "C" __global__ void twice_factor(float* y) { y[threadIdx.x] = 2.0f * factor; }
"""

@cf.kernel
class WriteFactor:
    y: cf.Array[cf.float32]
    name = "write_factor"
    source = SOURCE

@cf.kernel
class TwiceFactor:
    y: cf.Array[cf.float32]
    name = "twice_factor"
    source = SOURCE
'''


def shared_build(root):
    """A build of SHARED: two classes over one source= text with a __constant__."""
    return build(root, "shared_kernels", SHARED, "sm_80", "sm_90")


def test_kernels_of_one_source_text_are_one_image_in_the_build(tmp_path):
    out = shared_build(tmp_path)
    manifest = json.loads((out / "manifest.json").read_text())
    fatbins = {e["name_expression"]: e["fatbin"] for e in manifest["kernels"]}
    assert fatbins == {"write_factor": "shared_kernels.WriteFactor.fatbin", "twice_factor": "shared_kernels.WriteFactor.fatbin"}
    assert sorted(os.listdir(out)) == ["manifest.json", "shared_kernels.WriteFactor.fatbin"]
    data = (out / "shared_kernels.WriteFactor.fatbin").read_bytes()
    assert data.count(b"write_factor") >= 2 and data.count(b"twice_factor") >= 2  # both symbols, in each arch's image


BLOCKSORT = '''
import cuforge as cf

@cf.kernel
class BlockSort:
    T = cf.typeparam(cf.uint32)
    THREADS = cf.intparam(128, 1024)
    ITEMS = cf.intparam(4, 16)
    keys: cf.Array[T]
    block = "THREADS"
    body = """
    __shared__ T tile[THREADS * ITEMS];   // 1024 x 16 x 4 bytes: more static shared memory than a block may have
    for (int i = 0; i < ITEMS; ++i) tile[threadIdx.x * ITEMS + i] = keys[threadIdx.x * ITEMS + i];
    __syncthreads();
    for (int i = 0; i < ITEMS; ++i) keys[threadIdx.x * ITEMS + i] = tile[(THREADS - 1 - threadIdx.x) * ITEMS + i];
    """
'''


def test_a_failed_instantiation_is_named_and_the_others_compile(monkeypatch):
    family = declare(BLOCKSORT, "blocksort_kernels")["BlockSort"]
    with pytest.raises(
        cf.CompileError,
        match=r"BlockSort.precompile\(\): 1 of 4 instantiations failed to compile: "
        r"BlockSort\[uint32, 1024, 16\] \(the other 3 compiled\); leave those combinations out",
    ) as info:
        family.precompile("sm_90")
    assert "\n\nBlockSort[uint32, 1024, 16]: " in str(info.value) and "shared" in info.value.log
    before = cf.cache_stats().compiles
    assert len(family.precompile("sm_90", instances=[family[cf.uint32, 1024, 4], family[cf.uint32, 128, 16]])) == 2
    assert cf.cache_stats().compiles == before  # compiled already, while the failure was found


def test_the_build_leaves_a_failed_instantiation_out_lists_it_and_exits_1(tmp_path):
    (tmp_path / "blocksort_kernels.py").write_text(BLOCKSORT)
    out = run_cli(tmp_path, "build", "blocksort_kernels", "--arch", "sm_90", "-o", str(tmp_path / "build"))
    assert out.returncode == 1 and out.stdout.strip() == f"built 3 kernels for sm_90 into {tmp_path / 'build'}"
    assert ("cuforge build: left out of the build, as they failed to compile (the other 3 kernels are in it):\n"
            "  BlockSort[uint32, 1024, 16] (blocksort_kernels.BlockSort, for sm_90): ") in out.stderr  # fmt: skip
    assert "NVRTC failed to compile for sm_90: ptxas error   : Entry function" in out.stderr  # and the first message
    manifest = json.loads((tmp_path / "build" / "manifest.json").read_text())
    assert [e["name_expression"] for e in manifest["kernels"]] == [
        "BlockSort<unsigned int, 128, 4>", "BlockSort<unsigned int, 128, 16>", "BlockSort<unsigned int, 1024, 4>"]  # fmt: skip
    assert [f["kernel"] for f in manifest["failed"]] == ["BlockSort[uint32, 1024, 16]"]


# ---------------------------------------------------------------- the command line's wording


def test_an_import_error_is_prefixed_once(tmp_path, capsys):
    for command in (["build", "no_such_module", "--arch", "sm_90", "-o", str(tmp_path)], ["precompile", "no_such_module"]):
        assert cli.main(command) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"cuforge {command[0]}: cannot import 'no_such_module': No module named"), err


def test_precompile_without_a_gpu_or_arch_names_the_flag(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("CUFORGE_ARCH", raising=False)
    (tmp_path / "aot_one.py").write_text(LINKED)
    monkeypatch.syspath_prepend(str(tmp_path))
    if not isinstance(_device_error(), cf.NoDeviceError):
        pytest.skip("a GPU is present: precompile targets it")
    assert cli.main(["precompile", "aot_one"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("cuforge precompile: no CUDA device is available (") and "arch=" not in err
    assert err.rstrip().endswith(
        "; pass --device cpu to build the kernels for cuforge's CPU backend, or --arch sm_90 (or set CUFORGE_ARCH=sm_90) to "
        "compile them for a GPU this machine does not have"
    )


def _device_error():
    from cuforge._runtime import cuda as _cuda

    try:
        _cuda.current_device()
    except cf.NoDeviceError as exc:
        return exc
    return None


def test_progress_off_a_terminal_is_plain_lines(tmp_path):
    (tmp_path / "aot_two.py").write_text(SHARED + LINKED.replace("import cuforge as cf", ""))
    out = run_cli(tmp_path, "build", "aot_two", "--arch", "sm_80", "--arch", "sm_90", "-o", str(tmp_path / "build"))
    assert out.returncode == 0, out.stderr
    assert "\r" not in out.stderr
    assert out.stderr.splitlines() == [
        "cuforge build: 1/4 WriteFactor + TwiceFactor for sm_80",
        "cuforge build: 2/4 WriteFactor + TwiceFactor for sm_90",
        "cuforge build: 3/4 Scaled for sm_80",
        "cuforge build: 4/4 Scaled for sm_90",
    ]
    out = run_cli(tmp_path, "precompile", "aot_two", "--arch", "sm_90")
    assert out.returncode == 0 and "\r" not in out.stderr, out.stderr
    assert out.stderr.splitlines() == ["cuforge: compiled 1/3 kernels", "cuforge: compiled 2/3 kernels",
                                       "cuforge: compiled 3/3 kernels"]  # fmt: skip


def test_progress_on_a_terminal_is_one_line_rewritten_in_place(monkeypatch):
    from cuforge._compile.parallel import progress_line

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stderr", Terminal())
    for done in (1, 2):
        progress_line(f"cuforge: compiled {done}/2 kernels", done, 2)
    assert sys.stderr.getvalue() == "\rcuforge: compiled 1/2 kernels\rcuforge: compiled 2/2 kernels\n"


MIXED = '''
import cuforge as cf

SOURCE = """
extern "C" __global__ void zero(float* y) { y[threadIdx.x] = 0.0f; }
template <typename T> __global__ void square(T* x) { x[threadIdx.x] = x[threadIdx.x] * x[threadIdx.x]; }
"""

@cf.kernel
class Zero:
    y: cf.Array[cf.float32]
    name = "zero"
    source = SOURCE

@cf.kernel
class Square:
    T = cf.typeparam(cf.float32, cf.complex64)
    x: cf.Array[T]
    name = "square"
    source = SOURCE
'''


def test_a_source_family_with_headers_and_a_plain_kernel_of_its_text_are_grouped_as_in_process(tmp_path):
    from cuforge._kernel import aot as _aot

    ns = declare(MIXED, "mixed_kernels")
    ns["Zero"].compile("sm_90")  # in-process: the family's prelude (cuforge's complex header) is not Zero's
    assert all(not k._compiled for k in ns["Square"].instantiations())
    manifest = _aot.build(["mixed_kernels"], ["sm_90"], str(tmp_path))
    fatbins = {e["name_expression"]: e["fatbin"] for e in manifest["kernels"]}
    assert manifest["failed"] == [] and fatbins == {
        "zero": "mixed_kernels.Zero.fatbin",
        "square<float>": "mixed_kernels.Square.fatbin",
        "square<cuforge::complex<float>>": "mixed_kernels.Square.fatbin",
    }
