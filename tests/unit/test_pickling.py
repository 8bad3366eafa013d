"""Kernels travel to worker processes: every kind of kernel object pickles (with pickle and
cloudpickle), by reference where its class can be imported and by declaration elsewhere, and
an unpickled kernel in a new process gets the same cache key (a disk hit, no compile). Also:
N cold processes sharing the disk cache compile each kernel once between them."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import cloudpickle
import pytest

import cuforge as cf
from cuforge import _config
from cuforge._compile import cache as _cache

from ..conftest import Saxpy
from .test_family import Axpy

DUMPS = {"pickle": pickle.dumps, "cloudpickle": cloudpickle.dumps}


def _local_kernels():
    @cf.kernel
    class Local:
        """Declared inside a function: not importable, so it pickles by declaration."""

        a: cf.float32
        y: cf.Array[cf.float32]
        n: cf.int64
        block = 128
        grid = "n"
        body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] *= a;"

    @cf.kernel
    class LocalFamily:
        T = cf.typeparam(cf.float32, cf.float64)
        y: cf.Array[T]
        body = "y[threadIdx.x] = T(1);"

    return Local, LocalFamily


def _cell_kernels():
    IPython = pytest.importorskip("IPython")
    shell = IPython.core.interactiveshell.InteractiveShell.instance()
    shell.run_line_magic("load_ext", "cuforge")
    shell.run_cell_magic("cuda", "--arch sm_90 --instantiate 'fill<float>'", (
        "template <typename T> __global__ void fill(T* y, T v) { y[threadIdx.x] = v; }\n"
        'extern "C" __global__ void scale(float* y, float a) { y[threadIdx.x] *= a; }'
    ))  # fmt: skip
    return shell.user_ns["scale"], shell.user_ns["fill"]


def _objects():
    local, local_family = _local_kernels()
    cell, cell_template = _cell_kernels()
    prebuilt = cf.kernel(type("Prebuilt", (), {
        "__annotations__": {"a": cf.float32, "x": cf.In[cf.float32], "y": cf.Array[cf.float32], "n": cf.int64},
        "module": cf.Module(Saxpy.compile("sm_90").code), "name": Saxpy.compile("sm_90").lowered_name,
    }))  # fmt: skip
    return {
        "module-level kernel": Saxpy,
        "family": Axpy,
        "family instantiation": Axpy[cf.float32, 512],
        "local kernel": local,
        "local family": local_family,
        "local family instantiation": local_family[cf.float64],
        "%%cuda kernel": cell,
        "%%cuda template": cell_template,
        "prebuilt kernel": prebuilt,
    }


@pytest.mark.parametrize("how", list(DUMPS))
def test_every_kind_of_kernel_object_round_trips(how):
    for what, obj in _objects().items():
        if how == "pickle" and what == "local family":
            continue  # a family's class namespace holds no function here, but see the cloudpickle run
        back = pickle.loads(DUMPS[how](obj))
        if what in ("module-level kernel", "family", "family instantiation"):
            assert back is obj, what  # by reference
        kernels = list(back.instances.values()) if what == "%%cuda template" else [back]
        originals = list(obj.instances.values()) if what == "%%cuda template" else [obj]
        for k, o in zip(kernels, originals):
            if isinstance(k, cf.Family):
                assert [i.name_expression for i in k.instantiations()] == [i.name_expression for i in o.instantiations()]
                continue
            assert k.signature == o.signature, what
            assert k.lowered_name == o.lowered_name if what == "prebuilt kernel" else k.compile("sm_90").lowered_name == o.compile("sm_90").lowered_name, what
    local = _local_kernels()[0]
    back = pickle.loads(DUMPS[how](local))
    assert back._plan.block == (128, 1, 1) and back._plan.grid.source == 2  # the launch rules travel too


def test_an_unpickled_kernel_hits_the_disk_cache_in_a_new_process(tmp_path):
    """The worker compiles nothing: the declaration gives it the same cache key."""
    with _config.scope(cache_dir=str(tmp_path)):
        _cache.memory.clear()  # compiled by earlier tests: compile again, into this disk cache
        local = _local_kernels()[0]
        expected = local.compile("sm_90").lowered_name
        Axpy[cf.float64, 128].compile("sm_90")
        blob = cloudpickle.dumps([local, Axpy[cf.float64, 128]])
    (tmp_path / "k.pickle").write_bytes(blob)
    code = textwrap.dedent(f"""
        import pickle, sys
        sys.path.insert(0, {os.getcwd()!r})
        import cuforge as cf
        local, axpy = pickle.loads(open({str(tmp_path / "k.pickle")!r}, "rb").read())
        a, b = local.compile("sm_90"), axpy.compile("sm_90")
        print(a.from_cache, b.from_cache, a.lowered_name, cf.cache_stats().compiles)
    """)
    env = dict(os.environ, CUFORGE_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", expected, "0"]


@pytest.mark.parametrize("workers", [8, 16])
def test_cold_workers_compile_each_kernel_once(tmp_path, workers):
    """One compile per node: 8 (#13) or 16 (#14) processes start at once on an empty shared
    disk cache; the per-key lock makes one of them compile each kernel and the others read it,
    with no disk error anywhere."""
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.getcwd()!r})
        import cuforge as cf
        from tests.kind_kernels import BigShared, Bounded, GridSum
        for k in (GridSum, BigShared, Bounded):
            k.compile("sm_90")
        stats = cf.cache_stats()
        print(stats.compiles, stats.disk_errors)
    """)
    env = dict(os.environ, CUFORGE_CACHE_DIR=str(tmp_path / "shared"))
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(workers)]  # fmt: skip
    counts, errors = [], []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        compiles, disk_errors = map(int, out.split())
        counts.append(compiles)
        errors.append(disk_errors)
    assert sum(counts) == 3, counts  # three distinct kernels, compiled once in all
    assert sum(errors) == 0, errors
