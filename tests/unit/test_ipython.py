"""The %%cuda magic in a real IPython shell (compile-only: these run without a GPU)."""

from __future__ import annotations

import re
import threading
from html.parser import HTMLParser

import numpy as np
import pytest

IPython = pytest.importorskip("IPython")
from IPython.core.error import UsageError  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

import cuforge as cf  # noqa: E402
from cuforge._compile import toolchain as _toolchain  # noqa: E402
from cuforge._cpu.toolchain import find_compiler  # noqa: E402

SAXPY = """
extern "C" __global__ void saxpy(float a, const float* __restrict__ x, float* y, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


@pytest.fixture(scope="module")
def shell():
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "cuforge")
    return sh


def cuda(shell, line: str, cell: str):
    return shell.run_cell_magic("cuda", line, cell)


def test_extern_c_saxpy_is_bound_and_checked(shell, capsys):
    cuda(shell, "--arch sm_90", SAXPY)
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1] == "bound: saxpy(a: float32, x: In[float32], y: Array[float32], n: int64)"
    saxpy = shell.user_ns["saxpy"]
    assert isinstance(saxpy, cf.Kernel) and saxpy.compile("sm_90").lowered_name == "saxpy"
    with pytest.raises(cf.ArgumentTypeError, match=r"^saxpy: argument 'x' expects In\[float32\], got a float64 array"):
        saxpy(2.0, np.ones(4), np.ones(4, np.float32), 4)
    assert 'extern "C" __global__ void saxpy' in saxpy.source and saxpy.lowered_name == "saxpy"


def test_rerunning_an_unchanged_cell_hits_the_cache_and_an_edit_recompiles(shell, capsys):
    cuda(shell, "--arch sm_90", SAXPY)
    before = cf.cache_stats().compiles
    cuda(shell, "--arch sm_90", SAXPY)
    assert cf.cache_stats().compiles == before
    cuda(shell, "--arch sm_90", SAXPY.replace("a * x[i]", "a * x[i] * 2.0f"))
    assert cf.cache_stats().compiles == before + 1


FIVE = "\n".join(
    f'extern "C" __global__ void k{i}(float* y, int n) {{ int j = threadIdx.x; if (j < n) y[j] += {i}.0f; }}' for i in range(5)
) + "\ntemplate <typename T> __global__ void t(T* y) { y[threadIdx.x] = T(1); }"


def test_a_cell_is_one_nvrtc_program_however_many_kernels(shell, capsys):
    before = cf.cache_stats().compiles
    cuda(shell, "--arch sm_90 --instantiate 't<float>' --instantiate 't<double>'", FIVE)
    assert cf.cache_stats().compiles == before + 1  # five kernels and two instantiations: one compile
    names = {shell.user_ns[f"k{i}"].lowered_name for i in range(5)}
    assert names == {f"k{i}" for i in range(5)}
    assert shell.user_ns["t"][cf.float64].compile("sm_90").lowered_name == "_Z1tIdEvPT_"
    assert cf.cache_stats().compiles == before + 1


def test_jinja_sees_notebook_variables(shell, capsys):
    shell.user_ns["TILE"] = 64
    cuda(shell, "--arch sm_90 --name tiled", "__global__ void k(float* x) { x[threadIdx.x] = {{ TILE }}; }")
    assert "x[threadIdx.x] = 64;" in shell.user_ns["tiled"].render()
    assert capsys.readouterr().out.strip().endswith("bound: tiled(x: Array[float32])")


def test_templates_are_bound_with_indexing(shell, capsys):
    cell = "template <typename T, int B> __global__ void axpy(T a, const T* x, T* y, int n) { }"
    cuda(shell, "--arch sm_90 --instantiate 'axpy<float, 256>' --instantiate 'axpy<double, 128>'", cell)
    axpy = shell.user_ns["axpy"]
    k = axpy[cf.float32, 256]
    assert k is axpy["float", 256] and k.name_expression == "axpy<float, 256>"
    assert axpy[cf.float64, 128].compile("sm_90").lowered_name == "_Z4axpyIdLi128EEvT_PKS0_PS0_i"
    with pytest.raises(
        cf.DeclarationError, match=r"axpy<int, 1> was not instantiated; the cell made axpy<float, 256>, axpy<double, 128>"
    ):
        axpy["int", 1]
    with pytest.raises(cf.DeclarationError, match=r"axpy has 2 instantiations; index it"):
        axpy(1.0)


def test_several_kernels_and_options(shell, capsys):
    cell = "#ifndef SCALE\n#error no SCALE\n#endif\n__global__ void one(int* x) { x[0] = SCALE; }\n__global__ void two(const double* y, double* z) { z[0] = y[0]; }\n"
    cuda(shell, "--arch sm_90 -D SCALE=3 -D UNUSED --std c++20 --options '-lineinfo'", cell)
    out = capsys.readouterr().out.strip().splitlines()[-1]
    assert out == "bound: one(x: Array[int32]); two(y: In[float64], z: Array[float64])"
    ck = shell.user_ns["one"].compile("sm_90")
    assert "-DSCALE=3" in ck.flags and "-DUNUSED" in ck.flags and "-std=c++20" in ck.flags and "-lineinfo" in ck.flags


def test_signature_option_states_an_unmappable_signature(shell, capsys):
    cell = "struct P { float v; };\n__global__ void k(P* p, int n) { }"
    with pytest.raises(UsageError, match=r"k: parameter 'p' has type 'P\*', which cuforge cannot map"):
        cuda(shell, "--arch sm_90", cell)
    cuda(shell, "--arch sm_90 --signature 'k(p: Array[float32], n: int32)'", cell)
    assert capsys.readouterr().out.strip().endswith("bound: k(p: Array[float32], n: int32)")


def test_show_source_ptx_and_sass_summary(shell, capsys):
    cuda(shell, "--arch sm_90 --show source --show ptx --show sass-summary", SAXPY)
    out = capsys.readouterr().out
    assert "// ---- saxpy: source" in out and ".entry saxpy" in out
    assert "saxpy: cubin for sm_90" in out and "registers " in out


def test_compile_error_shows_cell_lines_without_a_traceback(shell, capsys):
    result = shell.run_cell("%%cuda --arch sm_90\n__global__ void bad(float* x) {\n    x[0] = nope;\n}")
    out = capsys.readouterr().out
    assert not result.success and "Traceback" not in out
    assert 'bad.cu(2): error: identifier "nope" is undefined' in out
    assert ">    2 |     x[0] = nope;" in out


@pytest.mark.parametrize(
    "line, cell, match",
    [
        ("--arch sm_90 --bogus", SAXPY, r"unrecognized arguments: --bogus"),
        ("--arch 90", SAXPY, r"arch expects a string like 'sm_90'"),
        ("--arch sm_90 --std c++98", SAXPY, r"std expects one of"),
        ("--arch sm_90", "int x;", r"the cell declares no __global__ kernel"),
        (
            "--arch sm_90",
            "__global__ void k(float* x) { x[0] = {{ NOT_DEFINED }}; }",
            r"the cell uses \{\{ NOT_DEFINED \}\}, but 'NOT_DEFINED' is not defined",
        ),
        (
            "--arch sm_90",
            "template <typename T> __global__ void t(T* x) {}",
            r"kernel 't' is a template; add --instantiate 't<...>'",
        ),
        (
            "--arch sm_90 --instantiate 'u<float>'",
            "template <typename T> __global__ void t(T* x) {}",
            r"--instantiate names 'u', but the cell's kernels are t",
        ),
        (
            "--arch sm_90 --instantiate 't<float, 1>'",
            "template <typename T> __global__ void t(T* x) {}",
            r"gives 2 template arguments; t takes 1",
        ),
        (
            "--arch sm_90 --name one",
            "__global__ void a(int* x) {}\n__global__ void b(int* x) {}",
            r"--name binds one kernel, but the cell has 2",
        ),
        ("--arch sm_90 --signature 'k(a float32)'", SAXPY, r"cannot read 'a float32'"),
    ],
)
def test_usage_errors(shell, line, cell, match):
    with pytest.raises(UsageError, match=match):
        cuda(shell, line, cell)


def test_magic_help_is_generated(shell):
    doc = type(shell.magics_manager.registry["CudaMagics"]).cuda.__doc__
    assert "--instantiate EXPR" in doc and "--no-cache" in doc and "--show" in doc


def test_no_cache_writes_nothing_to_disk(shell, capsys, cuforge_cache_dir):
    cuda(shell, "--arch sm_90 --no-cache", "__global__ void nocache(int* x) { x[0] = 12345; }")
    assert not any(p.is_file() for p in cuforge_cache_dir.rglob("*"))


def test_cuda_info(shell, capsys):
    shell.run_line_magic("cuda_info", "")
    out = capsys.readouterr().out
    assert "device:" in out and "NVRTC:" in out and "cache:" in out and "counters:" in out
    nvrtc = next(line for line in out.splitlines() if line.startswith("NVRTC:"))
    version = ".".join(map(str, _toolchain.nvrtc_version()))
    assert re.fullmatch(rf"NVRTC:   {re.escape(version)} \((wheel: /\S+libnvrtc\S*|the system's CUDA toolkit)\)", nvrtc), nvrtc
    cpu = next(line for line in out.splitlines() if line.startswith("CPU:"))
    compiler = find_compiler()
    assert cpu == f"CPU:     {compiler.version} ({' '.join(compiler.argv)}); launches go there with device='cpu'", cpu
    assert re.search(r"^counters: .* cpu_compiles=\d+$", out, re.M), out
    chooses = threading.Thread(target=lambda: (cf.set_device("cpu"), shell.run_line_magic("cuda_info", "")))
    chooses.start()  # (a thread of its own: its choice of the CPU ends with it)
    chooses.join(timeout=60)
    assert "; chosen for launches that name no device" in capsys.readouterr().out


class _Balanced(HTMLParser):
    VOID = {"br", "hr", "img", "meta", "input", "link"}

    def __init__(self):
        super().__init__()
        self.stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack.pop() == tag, f"unbalanced </{tag}>"


def _valid_html(html: str) -> None:
    parser = _Balanced()
    parser.feed(html)
    parser.close()
    assert parser.stack == []


def test_html_reprs_are_valid_html(shell, saxpy, saxpy_sm90):
    @cf.kernel
    class Fam:
        """A family <with> & markup in its doc."""

        T = cf.typeparam(cf.float32, cf.float64)
        x: cf.Out[T]
        body = "x[0] = 1;"

    Fam.precompile(arch="sm_90")
    for html in (saxpy._repr_html_(), saxpy_sm90._repr_html_(), Fam._repr_html_(), Fam[cf.float64]._repr_html_()):
        _valid_html(html)
    fam = Fam._repr_html_()
    assert "float32, float64" in fam and "Fam&lt;double&gt;" in fam and "sm_90" in fam
    assert "registers" in saxpy._repr_html_() and "NVRTC" in saxpy._repr_html_()
    assert "&lt;with&gt; &amp; markup" in Fam[cf.float32]._repr_html_()


@pytest.mark.skipif(cf.gpu_available(), reason="a GPU is present: its arch is the default")
def test_without_a_gpu_the_arch_comes_from_cuforge_arch_or_a_clear_error(shell, capsys):
    from cuforge import _config

    with _config.scope(arch=""):
        with pytest.raises(UsageError, match=r"%%cuda: no GPU to compile for; pass --device cpu to compile the cell for the "
                                             r"CPU and run its kernels there \(or choose the CPU first: cf.set_device\('cpu'\), or "
                                             r"CUFORGE_DEVICE=cpu\), or --arch sm_90 \(CUFORGE_ARCH=sm_90\) to compile it for a "
                                             r"GPU without launching"):  # fmt: skip
            cuda(shell, "", SAXPY)
        with pytest.raises(UsageError, match=r"%%cuda: no GPU to compile for; pass --device cpu"):
            cuda(shell, "--device cuda:1", SAXPY)
        with pytest.raises(UsageError, match=r"%%cuda: --device expects cpu, cuda or cuda:N, got 'gpu'"):
            cuda(shell, "--device gpu", SAXPY)
    with _config.scope(arch="sm_90"):
        cuda(shell, "", SAXPY)
    assert "bound: saxpy(a: float32" in capsys.readouterr().out


def test_a_parameter_named_as_a_python_keyword_binds_with_an_underscore(shell, capsys):
    cuda(shell, "--arch sm_90", 'extern "C" __global__ void copy_in(const float* in, float* out, int n) '
                                "{ if (threadIdx.x < n) out[threadIdx.x] = in[threadIdx.x]; }")  # fmt: skip
    out = capsys.readouterr().out
    assert "bound: copy_in(in_: In[float32], out: Array[float32], n: int32)" in out
    assert "note: C++ parameter 'in' is a Python keyword: pass it as in_=...\n" in out
    k = shell.user_ns["copy_in"]
    assert [p.name for p in k.signature.params] == ["in_", "out", "n"]
    assert k.compile("sm_90").lowered_name == "copy_in"


def test_two_python_keywords_are_named_in_one_note(shell, capsys):
    cuda(shell, "--arch sm_90", "__global__ void kw2(const float* in, float* lambda) { lambda[0] = in[0]; }")
    out = capsys.readouterr().out
    assert "note: C++ parameters 'in', 'lambda' are Python keywords: pass them as in_=..., lambda_=...\n" in out


SHARED_TEMPLATE = """
__device__ unsigned int calls;
template <typename T>
__global__ void block_sum(const T* x, T* out, int n) {
    extern __shared__ T s[];
    int i = threadIdx.x;
    s[i] = i < n ? x[i] : T(0);
    __syncthreads();
    if (i == 0) { T acc = 0; for (int j = 0; j < blockDim.x; ++j) acc += s[j]; out[0] = acc; atomicAdd(&calls, 1u); }
}
"""


def test_a_template_with_extern_shared_of_its_type_stays_one_program(shell, capsys):
    before = cf.cache_stats()
    cuda(shell, "--arch sm_90 --no-cache --instantiate 'block_sum<float>' --instantiate 'block_sum<double>'",
         SHARED_TEMPLATE)  # fmt: skip
    after = cf.cache_stats()
    assert (after.compiles - before.compiles, after.batch_fallbacks - before.batch_fallbacks) == (1, 0)
    k = shell.user_ns["block_sum"][cf.float64]
    assert ("extern __shared__ __align__(16) unsigned char cuforge_dynamic_smem_[]; "
            "T* const s = (T*)cuforge_dynamic_smem_;") in k.source  # fmt: skip
    assert k.source.count("\n") == SHARED_TEMPLATE.count("\n")  # on its line: NVRTC's line numbers hold
    assert "note:" not in capsys.readouterr().out


def test_a_cell_split_into_programs_says_so(shell, capsys):
    cell = "template <typename T> __global__ void fill(T* out) { extern __shared__ T __align__(16) s[]; out[0] = s[0]; }"
    before = cf.cache_stats().batch_fallbacks
    cuda(shell, "--arch sm_90 --no-cache --instantiate 'fill<float>' --instantiate 'fill<double>'", cell)
    assert cf.cache_stats().batch_fallbacks == before + 1
    assert ("note: the cell's kernels (fill<float>, fill<double>) could not share one NVRTC program, so each was "
            "compiled alone: their declarations clash") in capsys.readouterr().out  # fmt: skip


def test_another_threads_fallback_during_a_cells_compile_gives_it_no_note(shell, capsys, monkeypatch):
    from cuforge._compile import cache as _cache
    from cuforge._compile.stats import counters

    compile_together = _cache.compile_together

    def with_a_fallback_elsewhere(*args, **kwargs):  # what a compile_async's clash, meanwhile, counts
        counters.add(batch_fallbacks=1)
        return compile_together(*args, **kwargs)

    monkeypatch.setattr(_cache, "compile_together", with_a_fallback_elsewhere)
    cuda(shell, "--arch sm_90 --no-cache", "__global__ void one(float* out) { out[0] = 1.0f; }")
    out = capsys.readouterr().out
    assert out.startswith("bound: one(out: Array[float32])") and "note:" not in out


def test_a_pointer_defaulting_to_null_is_optional_and_may_be_left_out(shell, capsys):
    cuda(shell, "--arch sm_90", "__global__ void moments(const float* x, float* mean = nullptr, float* rstd = NULL, "
                                "int n = 0) { if (mean) mean[0] = x[0]; if (rstd) rstd[0] = x[0]; }")  # fmt: skip
    assert ("bound: moments(x: In[float32], mean: Optional[Array[float32]], rstd: Optional[Array[float32]], n: int32)"
            in capsys.readouterr().out)  # fmt: skip
    from cuforge._launch import general as _launch

    k, x = shell.user_ns["moments"], np.ones(4, np.float32)
    c = _launch.check_and_pack(k._plan, (x,), {"n": 4}, None, None, 0, None)
    assert c.values[1:3] == [0, 0]
    assert k.compile("sm_90").lowered_name == "_Z7momentsPKfPfS1_i"


def test_vector_pointers_and_signatures_name_cuda_vector_types(shell, capsys):
    cuda(shell, "--arch sm_90", "#include <cuforge_vector.cuh>\n__global__ void copy4(const uint4* x, uint4* y, const __half2* h, "
                                "cuforge::float16x8* h8) { y[0] = x[0]; }")  # fmt: skip
    out = capsys.readouterr().out
    assert ("bound: copy4(x: In[uint32x4], y: Array[uint32x4], h: In[float16x2], h8: Array[float16x8])") in out
    lowered = shell.user_ns["copy4"].compile("sm_90").lowered_name
    assert lowered == "_Z5copy4PK5uint4PS_PK7__half2PN7cuforge10vec8_16bitI6__halfS3_EE"
    cuda(shell, "--arch sm_90 --signature 'copy2(x: In[float2], y: Array[float32x2])'",
         "#define V float2\n__global__ void copy2(const V* x, V* y) { y[0] = x[0]; }")  # fmt: skip
    assert "bound: copy2(x: In[float32x2], y: Array[float32x2])" in capsys.readouterr().out


NEIGHBOUR = """
__global__ void neighbour(const float* x, float* y) {
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = x[t];
    float left = t > 0 ? s[t - 1] : 0.f;  // no __syncthreads: thread t-1 may not have stored it yet
    y[t] = s[t] + left;
}
"""


def test_check_makes_the_cells_kernels_launch_checked_on_the_cpu(shell, capsys):
    """``%%cuda --device cpu --check``: the cell's kernels run checked where checking is
    otherwise off (a call's check=False still says otherwise); without --check they run
    unchecked; on the GPU, --check is a usage error pointing at compute-sanitizer."""
    from cuforge import _config

    x = np.arange(64, dtype=np.float32)
    with _config.scope(check="0"):  # the user's default (the plugin turns checks on for this session)
        cuda(shell, "--device cpu --check", NEIGHBOUR)
        k = shell.user_ns["neighbour"]
        with pytest.raises(cf.RaceError, match=r"^neighbour.*__shared__ variable 's', index 0 \(extent 64\): thread \(1, 0, 0\)"):
            k(x, np.zeros(64, np.float32), grid=1, block=64)
        y = np.zeros(64, np.float32)
        k(x, y, grid=1, block=64, check=False)  # the CPU's schedule runs thread t-1 first: the result is right
        np.testing.assert_array_equal(y, x + np.concatenate([[0], x[:-1]]))
        cuda(shell, "--device cpu", NEIGHBOUR)
        y = np.zeros(64, np.float32)
        shell.user_ns["neighbour"](x, y, grid=1, block=64)
        np.testing.assert_array_equal(y, x + np.concatenate([[0], x[:-1]]))
    with pytest.raises(UsageError, match=r"^%%cuda: --check runs the cell's kernels checked on cuforge's CPU backend; add "
                       r"--device cpu \(on the GPU, run the kernels under NVIDIA's compute-sanitizer"):  # fmt: skip
        cuda(shell, "--arch sm_90 --check", NEIGHBOUR)
