"""Launch kinds on the CPU: declarations, call keywords, the device-free checks of a
cooperative or clustered launch (refused before any CUDA call), and their compiles."""

from __future__ import annotations

import numpy as np
import pytest

import cuforge as cf
from cuforge._declare import kinds as _kinds
from cuforge._launch import general as _launch
from cuforge._runtime import cuda as _cuda
from cuforge._runtime import limits as _limits

from .. import kind_kernels as kk


def declare(**ns):
    ns.setdefault("__annotations__", {"y": cf.Array[cf.float32]})
    ns.setdefault("body", "y[threadIdx.x] = 1.0f;")
    return cf.kernel(type("K", (), ns))


def test_class_keys_make_the_kind_and_its_launch_attributes():
    assert kk.GridSum._plan.kind == _kinds.LaunchKind(cooperative=True)
    assert kk.ClusterSwap._plan.kind.cluster == (2, 1, 1)
    assert kk.BigShared._plan.kind is _kinds.PLAIN and _cuda.LaunchConfig.of((1, 1, 1), (1, 1, 1), 0, _kinds.PLAIN).attributes() is None
    # CUlaunchAttribute records: id 2 (cooperative) with value 1; id 4 (cluster) with its dims
    assert _cuda.LaunchConfig.of((1, 1, 1), (1, 1, 1), 0, kk.GridSum._plan.kind).attributes() == (2).to_bytes(4, "little") + bytes(4) + (1).to_bytes(4, "little") + bytes(60)
    assert _cuda.LaunchConfig.of((1, 1, 1), (1, 1, 1), 0, kk.ClusterSwap._plan.kind).attributes()[:20] == b"\x04\0\0\0" + bytes(4) + b"\x02\0\0\0\x01\0\0\0\x01\0\0\0"
    # cooperative and clustered kernels get no C launcher: their checks need the device on every call
    assert kk.GridSum._fast is None and kk.ClusterSwap._fast is None


@pytest.mark.parametrize(
    ("ns", "match"),
    [
        ({"cooperative": 1}, r"K: cooperative expects True or False, got 1"),
        ({"cluster": (2, 0)}, r"K: cluster expects an int or a tuple of 1 to 3 positive ints \(blocks\), got \(2, 0\)"),
        ({"cluster": "2"}, r"cluster expects an int or a tuple"),
        ({"cluster": (4, 4)}, r"K: cluster=\(4, 4, 1\) has 16 blocks; clusters larger than 8 blocks are not portable: "
                              r"pass non_portable_cluster=True"),
        ({"non_portable_cluster": "yes"}, r"non_portable_cluster expects True or False"),
    ],
)
def test_bad_kind_declarations_fail_at_definition(ns, match):
    with pytest.raises(cf.DeclarationError, match=match):
        declare(**ns)


def test_non_portable_clusters_are_declared_explicitly():
    k = declare(cluster=(4, 4), non_portable_cluster=True)
    assert k._plan.kind.cluster == (4, 4, 1) and k._plan.kind.non_portable_cluster


@pytest.mark.parametrize("name", ["grid", "stream", "cooperative", "cluster"])
def test_parameters_cannot_take_launch_option_names(name):
    with pytest.raises(cf.DeclarationError, match=rf"parameter name '{name}' is a launch option"):
        declare(__annotations__={name: cf.int32, "y": cf.Array[cf.float32]})


def test_a_fixed_grid_on_the_class():
    assert kk.BigShared._plan.grid.function((), (256, 1, 1)) == (4, 1, 1)
    assert declare(grid=(240,))._plan.grid.function((), (256, 1, 1)) == (240, 1, 1)  # as the samples write it
    assert declare(grid=240)._plan.grid.function((), (256, 1, 1)) == (240, 1, 1)
    with pytest.raises(cf.DeclarationError, match=r"K: grid\[0\] expects an int from 1 to 2147483647, got 0"):
        declare(grid=0)


def cai(n, typestr="<f4"):
    class A:
        __cuda_array_interface__ = {"shape": (n,), "typestr": typestr, "data": (0x7F0000000000, False), "strides": None, "version": 3}

    return A()


def test_a_clustered_default_grid_is_rounded_up_to_whole_clusters():
    k = declare(cluster=4, block=32)
    c = _launch.check_and_pack(k._plan, (cai(32 * 5),), {}, None, None, 0, None)
    assert c.grid == (8, 1, 1) and c.kind.cluster == (4, 1, 1)


def test_an_explicit_grid_must_be_divisible_by_the_cluster():
    k = declare(cluster=(2, 1, 1))
    with pytest.raises(cf.ArgumentError, match=r"K: grid=\(3, 1, 1\) is not divisible by cluster=\(2, 1, 1\); grid counts "
                                               r"blocks.*\(for example grid=\(4, 1, 1\)\)"):  # fmt: skip
        _launch.check_and_pack(k._plan, (cai(64),), {}, 3, None, 0, None)


def test_the_call_can_ask_for_a_kind():
    k = declare()
    c = _launch.check_and_pack(k._plan, (cai(64),), {"cooperative": True}, 2, None, 0, None)
    assert c.kind.cooperative and _cuda.LaunchConfig.of((1, 1, 1), (1, 1, 1), 0, c.kind).attributes() is not None and c.grid == (2, 1, 1)
    c = _launch.check_and_pack(k._plan, (), {"y": cai(64), "cluster": 2}, 4, 32, 0, None)
    assert c.kind.cluster == (2, 1, 1)
    with pytest.raises(cf.ArgumentError, match=r"K: cluster=\(3, 3, 1\) has 9 blocks"):
        _launch.check_and_pack(k._plan, (cai(64),), {"cluster": (3, 3)}, None, None, 0, None)
    # the class's kind is the default a call can turn off
    c = _launch.check_and_pack(kk.GridSum._plan, (cai(8), cai(8, "<f8"), cai(1, "<f8"), 8), {"cooperative": False}, 1, None, 0, None)
    assert c.kind is _kinds.PLAIN


def test_grid_sync_is_found_in_the_source():
    assert _kinds.uses_grid_sync(kk.GridSum.render()) and _kinds.uses_grid_sync(kk.GridSyncNoFlag.render())
    assert not _kinds.uses_grid_sync(kk.ClusterSwap.render()) and not _kinds.uses_grid_sync(kk.BigShared.render())


@pytest.mark.parametrize(
    "body",
    [
        "cg::grid_group grid = cg::this_grid(); grid.sync();",
        "cg::this_grid().sync();",
        "cooperative_groups::this_grid() . sync();",
        "auto g = cg::this_grid(); cg::sync(g);",
        "cg::sync(cg::this_grid());",
        "auto &g = cg::this_grid(); g.sync();",
        "auto g(cg::this_grid()); g.sync();",
        "auto g{cg::this_grid()}; g.sync();",
        "auto g { cooperative_groups::this_grid() }; cg::sync(g);",
        "cooperative_groups::grid_group g = cooperative_groups::this_grid(); g.sync();",
        "cg::grid_group g(cg::this_grid()); g.sync();",
        "const auto& g = cg::this_grid(); g.sync();",
        "auto const &g{cg::this_grid()}; g.sync();",
        "auto&& g = cg::this_grid(); g.sync();",
    ],
)
def test_each_spelling_of_a_grid_sync_is_found(body):
    assert _kinds.uses_grid_sync(f"{kk.CG}\n__global__ void k(cg::grid_group other) {{ {body} }}")


def test_a_grid_group_passed_to_a_function_and_synced_is_found():
    for param in ("const cg::grid_group &grid", "cg::grid_group const& grid", "cg::grid_group grid"):
        assert _kinds.uses_grid_sync(f"__device__ void phase({param}) {{ grid.sync(); }}")


@pytest.mark.parametrize(
    "body",
    [
        "y[cg::this_grid().thread_rank()] = 1;",  # the Programming Guide's cluster histogram ranks threads so
        "auto g = cg::this_grid(); y[g.thread_rank()] = g.size();",
        "cg::grid_group g = cg::this_grid(); cg::this_cluster().sync(); __syncthreads(); y[g.block_rank()] = 0;",
        "// cg::this_grid().sync(); was tried here\n/* grid.sync(); */ y[0] = 1;",
        "auto block = cg::this_thread_block(); block.sync(); cg::sync(block);",
    ],
)
def test_a_grid_group_used_without_a_sync_needs_no_cooperative_launch(body):
    assert not _kinds.uses_grid_sync(f"{kk.CG}\n__global__ void k(float* y) {{ {body} }}")


def test_the_cluster_histogram_is_not_taken_for_a_grid_sync():
    assert not _kinds.uses_grid_sync(kk.ClusterHistogram.render())
    assert kk.ClusterHistogram.compile("sm_90").code_type == "cubin"


def test_cooperative_groups_compile_out_of_the_box():
    """cooperative_groups.h needs CCCL's <nv/target>: cuforge passes the CCCL wheel's headers."""
    for k in (kk.GridSum, kk.ClusterSwap):
        ck = k.compile("sm_90")
        assert ck.code_type == "cubin" and ck.lowered_name.startswith("_Z")
    assert kk.Bounded.compile("sm_90").lowered_name == "bounded"


def test_cell_magic_takes_cooperative_and_cluster():
    IPython = pytest.importorskip("IPython")
    from IPython.core.error import UsageError

    shell = IPython.core.interactiveshell.InteractiveShell.instance()
    shell.run_line_magic("load_ext", "cuforge")
    cell = 'extern "C" __global__ void fill(float* y) { y[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f; }'
    shell.run_cell_magic("cuda", "--arch sm_90 --cluster 2,1", cell)
    assert shell.user_ns["fill"]._plan.kind.cluster == (2, 1, 1)
    shell.run_cell_magic("cuda", "--arch sm_90 --cooperative", cell)
    assert shell.user_ns["fill"]._plan.kind.cooperative
    with pytest.raises(UsageError, match=r"--cluster expects X\[,Y\[,Z\]\] positive ints"):
        shell.run_cell_magic("cuda", "--arch sm_90 --cluster two", cell)
    with pytest.raises(UsageError, match=r"cluster=\(16, 1, 1\) has 16 blocks"):
        shell.run_cell_magic("cuda", "--arch sm_90 --cluster 16", cell)
    np.testing.assert_equal(shell.user_ns["fill"]._plan.kind.cluster, None)  # the failed cell bound nothing


def _loaded(cc=90):
    """A kernel as loaded on a 4-SM device, which runs 2 of its 32-thread blocks per SM: what
    the driver's occupancy answers is seeded, for the message checks below (the GPU tests run
    the same checks against the real driver)."""
    from cuforge._runtime import cuda as _cuda

    handle = 0x1000 + cc
    _limits._occupancy[(handle, 32, 0)] = 2
    return _limits.Loaded(handle, None, 256, 100_000, 1024, _cuda.DeviceInfo(0, cc, "GPU", 4, 101_024))


def test_the_device_checks_name_their_limits():
    loaded = _loaded()
    with pytest.raises(cf.ArgumentError, match=r"K: block=\(512, 1, 1\) has 512 threads, but the compiled kernel allows at "
                                               r"most 256 per block on device 0"):  # fmt: skip
        _limits.check_on_device("K", loaded, _kinds.PLAIN, (1, 1, 1), (512, 1, 1), 0)
    with pytest.raises(cf.ArgumentError, match=r"K: shared_mem=100001 bytes is more than the 100000 bytes .* \(GPU: 101024 "
                                               r"per block, less 1024 of static shared memory\)"):  # fmt: skip
        _limits.check_on_device("K", loaded, _kinds.PLAIN, (1, 1, 1), (32, 1, 1), 100_001)
    coop = _kinds.LaunchKind(cooperative=True)
    _limits.check_on_device("K", loaded, coop, (8, 1, 1), (32, 1, 1), 0)  # 2 per SM x 4 SMs
    with pytest.raises(cf.ArgumentError, match=r"at most 8 blocks \(2 per SM x 4 SMs\) for block=\(32, 1, 1\) and "
                                               r"shared_mem=0, got grid=\(9, 1, 1\) \(9 blocks\)"):  # fmt: skip
        _limits.check_on_device("K", loaded, coop, (9, 1, 1), (32, 1, 1), 0)


def test_a_cooperative_launch_without_a_grid_gets_as_many_blocks_as_fit():
    loaded = _loaded()  # 2 blocks of 32 threads per SM, 4 SMs
    for k, call in ((declare(cooperative=True, block=32), {}), (declare(block=32), {"cooperative": True})):
        c = _launch.check_and_pack(k._plan, (cai(1 << 20),), call, None, None, 0, None)
        assert c.grid is _kinds.FITS  # not the 32,768 blocks that cover the array
        assert _launch.check_loaded(k._plan, loaded, c).grid == (8, 1, 1)
        assert _launch.check_and_pack(k._plan, (cai(1 << 20),), call, 3, None, 0, None).grid == (3, 1, 1)  # the call's own
    clustered = declare(cooperative=True, cluster=3, block=32)
    c = _launch.check_and_pack(clustered._plan, (cai(1 << 20),), {}, None, None, 0, None)
    assert _launch.check_loaded(clustered._plan, loaded, c).grid == (6, 1, 1)  # whole clusters
    assert _launch.check_and_pack(clustered._plan, (cai(0),), {}, None, None, 0, None) is None  # nothing to do


def test_a_cooperative_kernels_stated_grid_rule_stays():
    fixed = declare(cooperative=True, block=32, grid=4)
    assert _launch.check_and_pack(fixed._plan, (cai(1 << 20),), {}, None, None, 0, None).grid == (4, 1, 1)
    by_size = declare(cooperative=True, block=32, grid="n", __annotations__={"y": cf.Array[cf.float32], "n": cf.int32})
    assert _launch.check_and_pack(by_size._plan, (cai(64), 320), {}, None, None, 0, None).grid == (10, 1, 1)


def test_clusters_on_a_gpu_before_sm_90_are_refused():
    with pytest.raises(cf.ArgumentError, match=r"K: thread-block clusters need compute capability 9.0 or newer; device 0 "
                                               r"\(GPU\) is 8.0; launch without cluster="):  # fmt: skip
        _limits.check_on_device("K", _loaded(cc=80), _kinds.LaunchKind(cluster=(2, 1, 1)), (2, 1, 1), (32, 1, 1), 0)


def test_a_class_shared_mem_rule_fills_calls_that_pass_none():
    fixed = declare(shared_mem=1024)
    c = _launch.check_and_pack(fixed._plan, (cai(64),), {}, 1, 64, 0, None)
    assert c.shared_mem == 1024
    assert _launch.check_and_pack(fixed._plan, (cai(64),), {}, 1, 64, 512, None).shared_mem == 512  # the call's own
    if fixed._fast is not None:  # the C launcher takes a fixed rule itself
        assert fixed._fast.check_and_pack((cai(64),), {}, 1, 64, 0, None)[3] == 1024

    @cf.kernel
    class PerBlock:
        BLOCK = cf.intparam(128, 256)
        y: cf.Array[cf.float32]
        block = "BLOCK"
        shared_mem = staticmethod(lambda BLOCK: BLOCK * 4)  # an extern __shared__ float per thread
        body = "extern __shared__ float s[]; s[threadIdx.x] = 1.0f; y[threadIdx.x] = s[threadIdx.x];"

    assert _launch.check_and_pack(PerBlock[256]._plan, (cai(256),), {}, 1, None, 0, None).shared_mem == 1024
    assert PerBlock[256]._fast is None  # computed from the arguments: the general path

    by_param = declare(__annotations__={"y": cf.Array[cf.float32], "smem": cf.int32}, shared_mem="smem")
    assert _launch.check_and_pack(by_param._plan, (cai(64), 2048), {}, 1, 64, 0, None).shared_mem == 2048
    with pytest.raises(cf.ArgumentError, match=r"the class's shared_mem rule gave -4; it must give an int from 0"):
        _launch.check_and_pack(by_param._plan, (cai(64), -4), {}, 1, 64, 0, None)
    with pytest.raises(cf.DeclarationError, match=r"shared_mem = 'y' must name an integer parameter"):
        declare(shared_mem="y")
    with pytest.raises(cf.DeclarationError, match=r"the shared_mem function asks for TILE, which are not parameters"):
        declare(shared_mem=staticmethod(lambda TILE: TILE))
