"""Real NVRTC compiles (no GPU needed): binaries, lowered names, errors, the memory cache."""

from __future__ import annotations

import threading

import pytest

import cuforge as cf
from cuforge._compile import headers as _headers
from cuforge._compile import targets as _targets
from cuforge._compile import toolchain as _toolchain

from ..conftest import gpu_missing_reason


def test_saxpy_compiles_to_an_elf_cubin_with_nvrtcs_lowered_name(saxpy, saxpy_sm90):
    ck = saxpy_sm90
    assert ck.cubin[:4] == b"\x7fELF" and ck.code_type == "cubin" and ck.arch == "sm_90"
    # Itanium mangling of Saxpy(float, const float*, float*, long long), as NVRTC reported it.
    assert ck.lowered_name == "_Z5SaxpyfPKfPfx"
    assert ck.source == saxpy.render()
    assert isinstance(ck.log, str)
    assert ck.flags[:2] == ("-arch=sm_90", "-std=c++17")
    assert ck.resources()["registers"] > 0 and ck.registers == ck.resources()["registers"]
    assert "sm_90" in repr(ck) and "_Z5SaxpyfPKfPfx" in repr(ck)


def test_second_compile_is_a_memory_hit(saxpy, saxpy_sm90):
    before = cf.cache_stats().compiles
    assert saxpy.compile(arch="sm_90") is saxpy_sm90
    assert cf.cache_stats().compiles == before


def test_ptx_target(saxpy):
    ck = saxpy.compile(arch="compute_90")
    assert ck.code_type == "ptx" and ".entry _Z5SaxpyfPKfPfx" in ck.ptx
    assert ck.resources() == {} and ck.registers is None
    with pytest.raises(cf.CuforgeError, match=r"Saxpy was compiled to PTX for compute_90; use .ptx"):
        _ = ck.cubin


def test_an_arch_nvrtc_does_not_know_is_named_with_those_it_does(saxpy):
    with pytest.raises(cf.CompileError, match=r"Saxpy: NVRTC \d+\.\d+ does not compile for sm_7; it knows sm_75, .*sm_90"):
        saxpy.compile(arch="sm_7")
    with pytest.raises(cf.CompileError, match=r"does not compile for compute_999"):
        saxpy.compile(arch="compute_999")


def test_options_change_the_binary(saxpy, saxpy_sm90):
    ck = saxpy.compile(arch="sm_90", options=cf.CompileOptions(lineinfo=True))
    assert ck is not saxpy_sm90 and "-lineinfo" in ck.flags


@cf.kernel
class AllTypes:
    h: cf.float16
    b: cf.bfloat16
    c: cf.complex64
    z: cf.complex128
    xh: cf.Array[cf.float16]
    xb: cf.Array[cf.bfloat16]
    xc: cf.Array[cf.complex64]
    xz: cf.Array[cf.complex128]
    flag: cf.bool_
    u: cf.uint64
    body = """
    if (flag && threadIdx.x == 0) {
        xh[0] = __hadd(xh[0], h);
        xb[0] = __hadd(xb[0], b);
        xc[0] = cuCaddf(xc[0], c);
        xz[0] = cuCadd(xz[0], z);
        xz[1].x = (double)u;
    }
    """


def test_half_bfloat16_and_complex_headers_are_found_without_a_toolkit():
    assert _headers.cuda_include_dir() is not None
    ck = AllTypes.compile(arch="sm_90")
    assert ck.lowered_name.startswith("_Z8AllTypes6__half13__nv_bfloat16")


def test_the_header_directories_found_without_pathfinder_are_pathfinders():
    """The warm path finds the wheels' headers with a few stats instead of importing
    cuda.pathfinder (20-70 ms): the same directories, or a cache key would change."""
    from cuda.pathfinder import find_nvidia_header_directory

    assert _headers._headers("cudart", "cu13/include", "cuda_runtime_api.h") == find_nvidia_header_directory("cudart")
    assert _headers._headers("cccl", "cu13/include/cccl", "cuda/version") == find_nvidia_header_directory("cccl")
    assert _headers.include_dirs() == (find_nvidia_header_directory("cudart"), find_nvidia_header_directory("cccl"))


def test_extern_c_and_templated_source_kernels():
    @cf.kernel
    class Plain:
        n: cf.int32
        x: cf.Out[cf.float32]
        name = "fill"
        source = 'extern "C" __global__ void fill(int n, float* x) { if (threadIdx.x < n) x[threadIdx.x] = 1.f; }'

    assert Plain.compile(arch="sm_90").lowered_name == "fill"

    @cf.kernel
    class Templ:
        x: cf.Out[cf.float64]
        name = "put<double, 3>"
        source = "template <typename T, int V> __global__ void put(T* x) { x[0] = V; }"

    assert Templ.compile(arch="sm_90").lowered_name == "_Z3putIdLi3EEvPT_"


@cf.kernel
class Broken:
    x: cf.Out[cf.float32]
    n: cf.int64
    body = """
    long long i = threadIdx.x;
    if (i < n) x[i] = undefined_thing * 2.0f;
    """


def test_compile_error_shows_nvrtc_messages_at_the_users_body_line():
    with pytest.raises(cf.CompileError) as info:
        Broken.compile(arch="sm_90")
    err = info.value
    msg = str(err)
    assert msg.startswith("Broken: NVRTC failed to compile for sm_90:")
    assert 'Broken.body(2): error: identifier "undefined_thing" is undefined' in msg
    assert "    > " + "   2 | if (i < n) x[i] = undefined_thing * 2.0f;" in msg
    assert "      " + "   1 | long long i = threadIdx.x;" in msg
    assert "undefined_thing" in err.log and err.source == Broken.render()
    assert "-arch=sm_90" in err.options


def test_concurrent_compiles_of_one_kernel_compile_once():
    @cf.kernel
    class Racy:
        x: cf.Out[cf.int32]
        body = "x[threadIdx.x] = 7;"

    before = cf.cache_stats().compiles
    results: list[cf.CompiledKernel] = []
    barrier = threading.Barrier(6)

    def work() -> None:
        barrier.wait()
        results.append(Racy.compile(arch="sm_90"))

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 6 and all(r is results[0] for r in results)
    assert cf.cache_stats().compiles == before + 1


@pytest.mark.skipif(gpu_missing_reason() is None, reason="a GPU is present: compile() picks its arch")
def test_compile_without_arch_and_without_gpu_says_how(saxpy):
    with pytest.raises(cf.NoDeviceError, match=(
        r"^Saxpy.compile\(\): no CUDA device is available \([^;]*\), so there is no GPU to compile for; pass "
        r"arch='sm_90' \(or set CUFORGE_ARCH=sm_90\) to compile without one$"
    )):  # fmt: skip
        saxpy.compile()


def test_target_for_prefers_cubin_and_falls_back_to_ptx():
    archs = _toolchain.supported_archs()
    assert _targets.target_for(90) == "sm_90"
    assert _targets.target_for(max(archs) + 1) == f"compute_{max(archs)}"
    with pytest.raises(cf.NoDeviceError, match=r"none of which runs on a compute capability 1.0 device"):
        _targets.target_for(10)


def test_nvrtc_outputs_never_write_into_shared_bytes_objects():
    """NVRTC fills output buffers in place; an empty log is 1 byte, and `b" " * 1` is the
    interpreter's shared b" " object. Writing into it once corrupted every later traceback."""

    @cf.kernel
    class Quiet:
        x: cf.Out[cf.int32]
        body = "x[0] = 0;"

    ck = Quiet.compile(arch="sm_90")
    assert ck.log == ""
    assert b" " * 1 == bytes([32]) and b" "[0] == 32


SIBLINGS = """
extern "C" __global__ void sib_fill(float* x, int n) { if (threadIdx.x < n) x[threadIdx.x] = 1.0f; }
extern "C" __global__ void sib_twice(float* x, int n) { if (threadIdx.x < n) x[threadIdx.x] *= 2.0f; }
template <typename T> __global__ void sib_put(T* x) { x[0] = T(3); }
"""


def _over(source: str, name: str, family: bool = False) -> cf.Kernel | cf.Family:
    ns = {"__annotations__": {"x": cf.Array[cf.float32], "n": cf.int32}, "name": name, "source": source, "grid": 1}
    if family:
        ns = {"T": cf.typeparam(cf.float32, cf.float64), "name": name, "source": source, "grid": 1}
        ns["__annotations__"] = {"x": cf.Array[ns["T"]]}
    return cf.kernel(type(f"Sib_{name}", (), ns))


def test_kernels_declared_over_one_source_compile_in_one_program():
    fill, twice, put = _over(SIBLINGS, "sib_fill"), _over(SIBLINGS, "sib_twice"), _over(SIBLINGS, "sib_put", family=True)
    put[cf.float64]  # an instantiation that exists is a sibling too
    before = cf.cache_stats().compiles
    assert fill.compile("sm_90").lowered_name == "sib_fill"
    assert twice.compile("sm_90").lowered_name == "sib_twice"
    assert put[cf.float64].compile("sm_90").lowered_name == "_Z7sib_putIdEvPT_"
    assert cf.cache_stats().compiles - before == 1


def test_a_siblings_mistake_does_not_fail_a_good_kernel():
    source = SIBLINGS.replace("T(3)", "T(5)")
    good, typo = _over(source, "sib_fill"), _over(source, "sib_fil")
    assert good.compile("sm_90").lowered_name == "sib_fill"
    with pytest.raises(cf.CompileError, match=r"sib_fil: NVRTC failed to compile"):
        typo.compile("sm_90")


def _shared(body):
    return cf.kernel(type("Shared", (), {"__annotations__": {"x": cf.Array[cf.float32]}, "body": body}))


STATIC = "__shared__ float s[256]; s[threadIdx.x] = x[threadIdx.x]; __syncthreads(); x[threadIdx.x] = s[255 - threadIdx.x];"
EXTERN = "extern __shared__ float d[]; d[threadIdx.x] = x[threadIdx.x]; __syncthreads(); x[threadIdx.x] = d[0];"


def test_resources_count_static_shared_memory_as_the_driver_does():
    """An sm_90 cubin counts the 1 KiB the system reserves per block in every kernel's shared
    section; the driver's static size (Kernel.attributes) leaves it out, and so does resources()."""
    assert _shared(STATIC).compile("sm_90").resources()["shared_bytes"] == 1024
    assert _shared(EXTERN).compile("sm_90").resources()["shared_bytes"] == 0
    assert _shared("x[0] = 1;").compile("sm_90").resources()["shared_bytes"] == 0
    assert _shared(STATIC).compile("sm_90").resources()["reserved_shared_bytes"] == 1024
    sm80 = _shared(STATIC).compile("sm_80").resources()  # the driver adds the reserved part at launch
    assert sm80["shared_bytes"] == 1024 and "reserved_shared_bytes" not in sm80
