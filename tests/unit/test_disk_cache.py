"""The persistent compile cache: keys, damage, failures, concurrency, eviction, warm starts."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cuforge as cf
from cuforge import _config
from cuforge._compile import cache as _cache
from cuforge._compile import disk as _disk
from cuforge._compile import headers as _headers
from cuforge._compile import identity as _identity
from cuforge._version import __version__

BASE = {
    "source": "__global__ void k(float* x) { x[0] = 1; }",
    "name_expression": "k",
    "flags": ("-arch=sm_90", "-std=c++17"),
    "headers": {"a.cuh": "#define A 1"},
    "include_digest": "abc",
    "links": (),
}
TOOLS = {"nvrtc": "wheel:libnvrtc.so.13:1:2", "cuda_headers": "cuda_runtime_api.h:3:4"}


def _base_key(**change) -> str:
    """The cache key of BASE and TOOLS with ``change`` (a name of either)."""
    given = {**BASE, **{k: v for k, v in change.items() if k in BASE}}
    tools = {**TOOLS, **{k: v for k, v in change.items() if k not in BASE}}
    return _identity.cache_key(_identity.compile_inputs(**given), given["flags"], tools)


@pytest.mark.parametrize(
    "change",
    [
        {"source": BASE["source"] + " "},
        {"name_expression": "k2"},
        {"flags": ("-arch=sm_80", "-std=c++17")},
        {"flags": ("-arch=sm_90", "-std=c++17", "-use_fast_math")},
        {"flags": ("-arch=sm_90", "-std=c++17", "-DN=2")},
        {"flags": ("-arch=sm_90", "-std=c++17", "-I/elsewhere")},
        {"headers": {"a.cuh": "#define A 2"}},
        {"headers": {"b.cuh": "#define A 1"}},
        {"include_digest": "abd"},
        {"links": ("a linked module's digest",)},
        {"nvrtc": "wheel:libnvrtc.so.13:1:3"},
        {"cuda_headers": "cuda_runtime_api.h:3:5"},
        {"nvjitlink": "nvjitlink:13.0"},
    ],
    ids=lambda c: next(iter(c)),
)
def test_every_input_changes_the_key(change):
    assert _base_key(**change) != _base_key()


def test_the_schema_and_the_cuforge_version_change_the_key(monkeypatch):
    before = _base_key()
    monkeypatch.setattr(_identity, "__version__", "0.0.0+other")
    assert _base_key() != before
    monkeypatch.undo()
    monkeypatch.setattr(_identity, "KEY_SCHEMA", _identity.KEY_SCHEMA + 1)
    assert _base_key() != before


@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from("aZ09_@%+=:,./- '\"$\\\té\n"), max_size=6), max_size=5))
def test_the_keys_flags_are_joined_as_shlex_joins_them(args):
    """A key's options and defines are shlex.join's text, whether shlex is imported (an
    argument to quote) or not (a warm start's usual flags)."""
    import shlex

    assert _identity.shell_join(args) == shlex.join(args)


def _declare(body: str = "x[0] = 1;", **ns) -> cf.Kernel:
    return cf.kernel(
        type("Cached", (), {"__annotations__": {"x": cf.Out[cf.float32]}, "body": body, "__module__": "cachetest", **ns})
    )


def _key(k: cf.Kernel, arch: str = "sm_90", options: cf.CompileOptions | None = None) -> str:
    opts = options or k.options
    return k._key(cf.options.to_flags(opts, arch, _headers.include_dirs()), opts)


def test_re_rendering_the_same_inputs_gives_the_same_key():
    assert _key(_declare()) == _key(_declare())  # a re-run cell: a new class, the same key
    assert _key(_declare()) != _key(_declare("x[0] = 2;"))
    assert _key(_declare(), "sm_90") != _key(_declare(), "sm_80")
    assert _key(_declare()) != _key(_declare(), options=cf.CompileOptions(ftz=True))


def test_template_header_edits_and_include_dir_edits_change_the_key(tmp_path):
    tdir, idir = tmp_path / "templates", tmp_path / "include"
    tdir.mkdir()
    idir.mkdir()
    (tdir / "helper.cuh").write_text('#include "inner.cuh"\n__device__ float one() { return ONE; }\n')
    (tdir / "inner.cuh").write_text("#define ONE 1.0f\n")
    (idir / "lib.cuh").write_text("#define TWO 2.0f\n")
    opts = cf.CompileOptions(include_dirs=[str(idir)])
    k = _declare(
        "x[0] = one() + TWO;", preamble='#include "helper.cuh"\n#include "lib.cuh"', template_dirs=[str(tdir)], options=opts
    )
    assert set(k._headers()) == {"helper.cuh", "inner.cuh"}
    first = _key(k)
    ck = k.compile(arch="sm_90")
    (tdir / "inner.cuh").write_text("#define ONE 3.0f\n")  # an edit two includes deep
    second = _key(k)
    assert second != first
    (idir / "lib.cuh").write_text("#define TWO 4.0f\n")
    os.utime(idir / "lib.cuh", ns=(1, 1))  # the content decides, not only the mtime
    assert _key(k) not in (first, second)
    assert k.compile(arch="sm_90") is not ck


SPECIAL_FILES = textwrap.dedent(
    """
    import os, sys
    from cuforge._compile.identity import include_dirs_digest
    special, plain = sys.argv[1], sys.argv[2]
    os.mkfifo(os.path.join(special, "a-fifo.h"))      # reading it would wait for a writer
    os.symlink("/dev/zero", os.path.join(special, "b-zero.h"))  # reading it would never end
    print(include_dirs_digest((special,)) == include_dirs_digest((plain,)))
    """
)


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="needs FIFOs and /dev/zero")
def test_include_dirs_hash_regular_files_only(tmp_path):
    special, plain = tmp_path / "special", tmp_path / "plain"
    for d in (special, plain):
        d.mkdir()
        (d / "lib.cuh").write_text("#define TWO 2.0f\n")
        os.utime(d / "lib.cuh", ns=(1, 1))
    run = subprocess.run([sys.executable, "-c", SPECIAL_FILES, str(special), str(plain)], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert run.returncode == 0 and run.stdout.strip() == "True", run.stderr[-2000:]  # the others are left out


def _fresh_process_state():
    """Forget what this process holds, as a new process would."""
    _cache.memory.clear()
    _disk._opened.clear()


DAMAGE = {
    "meta-missing": lambda p: p.unlink(),
    "meta-zero-byte": lambda p: p.write_bytes(b""),
    "meta-truncated": lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
    "meta-bit-flipped": lambda p: p.write_bytes(_flip(p.read_bytes(), 40)),
    "meta-unreadable": lambda p: (p.unlink(), p.mkdir()),
    "code-missing": lambda p: p.unlink(),
    "code-zero-byte": lambda p: p.write_bytes(b""),
    "code-truncated": lambda p: p.write_bytes(p.read_bytes()[:100]),
    "code-bit-flipped": lambda p: p.write_bytes(_flip(p.read_bytes(), 200)),
}


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1 :]


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_entries_are_misses_that_recompile_and_heal(damage):
    _fresh_process_state()
    k = _declare(f"x[0] = {len(damage)};")
    k.compile(arch="sm_90")
    disk = _disk.current()
    key = _key(k)
    name = disk.meta_name(key) if damage.startswith("meta") else disk.code_name(key)
    DAMAGE[damage](disk.path_of(name))
    _fresh_process_state()
    before = cf.cache_stats()
    ck = k.compile(arch="sm_90")
    after = cf.cache_stats()
    assert not ck.from_cache and ck.cubin[:4] == b"\x7fELF"
    assert after.compiles == before.compiles + 1
    assert after.disk_errors == before.disk_errors + (0 if damage == "meta-missing" else 1)
    _fresh_process_state()
    assert k.compile(arch="sm_90").from_cache  # healed: the rewritten entry is read back


def test_foreign_version_entry_is_a_miss():
    _fresh_process_state()
    k = _declare("x[0] = 42;")
    k.compile(arch="sm_90")
    disk = _disk.current()
    name = disk.meta_name(_key(k))
    meta = disk.get_json(name)
    disk.put_json(name, {**meta, "cuforge": "0.0.0"})  # a valid checksum, another version
    _fresh_process_state()
    before = cf.cache_stats()
    assert not k.compile(arch="sm_90").from_cache
    assert cf.cache_stats().disk_errors == before.disk_errors + 1


def test_a_text_record_reads_back_and_a_damaged_one_is_a_counted_miss(cuforge_cache_dir):
    """The CPU backend's records: text after its checksum, read without a parser."""
    disk = _disk.current()
    disk.put_text("t:a", "g++ (Debian 12.2.0-14) 12.2.0\nsecond line \u00e9")
    assert disk.get_text("t:a") == "g++ (Debian 12.2.0-14) 12.2.0\nsecond line \u00e9"
    assert disk.get_text("t:missing") is None
    path = disk.path_of("t:a")
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    before = cf.cache_stats().disk_errors
    assert disk.get_text("t:a") is None
    assert cf.cache_stats().disk_errors == before + 1 and not path.exists()  # counted, and removed


def test_unusable_cache_location_still_returns_the_kernel(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    _disk._warned.clear()
    with _config.scope(cache_dir=str(blocker / "cache")):
        before = cf.cache_stats()
        with pytest.warns(_disk.CacheWriteWarning, match=r"cannot open the compile cache .* once per process"):
            ck = _declare("x[0] = 7;").compile(arch="sm_90")
        assert ck.cubin[:4] == b"\x7fELF"
        assert cf.cache_stats().disk_errors == before.disk_errors + 1


def test_failing_writes_still_return_the_kernel(cuforge_cache_dir):
    disk = _disk.current()
    shutil.rmtree(disk.root / "entries")
    (disk.root / "entries").write_text("the disk is full, say")
    before = cf.cache_stats()
    _disk._warned.clear()
    with pytest.warns(_disk.CacheWriteWarning, match=r"cannot write the compile cache .* once per process"):
        ck = _declare("x[0] = 8;").compile(arch="sm_90")
    assert ck.cubin[:4] == b"\x7fELF" and not ck.from_cache
    assert cf.cache_stats().disk_errors > before.disk_errors


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_directory(cuforge_cache_dir):
    disk = _disk.current()
    os.chmod(disk.root / "entries", 0o500)
    try:
        assert _declare("x[0] = 9;").compile(arch="sm_90").cubin[:4] == b"\x7fELF"
    finally:
        os.chmod(disk.root / "entries", 0o700)


def test_directories_are_private_and_nothing_is_pickled(cuforge_cache_dir):
    _declare("x[0] = 10;").compile(arch="sm_90")
    root = _disk.current().root
    assert root == cuforge_cache_dir / _config.SCHEMA
    for sub in ("", "entries", "tmp", "locks"):
        assert (root / sub).stat().st_mode & 0o777 == 0o700
    for path in (root / "entries").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert data[:4] == b"\x7fELF" or json.loads(data)["checksum"]


def test_cache_off_writes_nothing(tmp_path):
    with _config.scope(cache="0", cache_dir=str(tmp_path / "off")):
        assert not _declare("x[0] = 11;").compile(arch="sm_90").from_cache
    assert not (tmp_path / "off").exists()


def test_set_cache_api(tmp_path):
    saved = dict(_config._overrides)
    try:
        cf.set_cache(enabled=False)
        assert not _config.cache_enabled()
        cf.set_cache(enabled=True, path=tmp_path / "api", max_mb=1)
        assert _config.cache_dir() == tmp_path / "api" / _config.SCHEMA and _config.cache_max_bytes() == 2**20
        with pytest.raises(ValueError, match=r"max_mb expects a positive size"):
            cf.set_cache(max_mb=0)
    finally:
        _config._overrides.clear()
        _config._overrides.update(saved)


def test_eviction_keeps_the_cache_under_its_cap(tmp_path):
    with _config.scope(cache_dir=str(tmp_path / "small"), cache_max_mb=str(24 / 1024)):  # 24 KiB
        kernels = [_declare(f"x[0] = {100 + i};") for i in range(8)]
        for k in kernels:
            k.compile(arch="sm_90")
        disk = _disk.current()
        info = disk.info()
        assert info["bytes"] <= info["max_bytes"] + 8192  # a soft cap: within one entry
        _fresh_process_state()
        assert kernels[-1].compile(arch="sm_90").from_cache  # the newest survived
        _fresh_process_state()
        assert not kernels[0].compile(arch="sm_90").from_cache  # the oldest was evicted


def _run(code: str, env: dict[str, str]) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout


PROGRAM = textwrap.dedent(
    """
    import json, sys, cuforge as cf
    from cuforge._kernel import family  # noqa: F401

    @cf.kernel
    class Shared:
        T = cf.typeparam(cf.float32, cf.float64)
        x: cf.Out[T]
        body = "x[0] = 1;"

    @cf.kernel
    class Own:
        x: cf.Out[cf.int32]
        body = "x[0] = {{ params | length }} + %d;"

    compiled = Shared.precompile(arch="sm_90") + [Own.compile(arch="sm_90")]
    s = cf.cache_stats()
    print(json.dumps({"compiles": s.compiles, "disk_hits": s.disk_hits, "from_cache": [c.from_cache for c in compiled],
                      "names": [c.lowered_name for c in compiled]}))
    """
)


def test_a_fresh_process_after_a_warm_run_makes_no_nvrtc_call(tmp_path):
    env = {**os.environ, "CUFORGE_CACHE_DIR": str(tmp_path)}
    cold = json.loads(_run(PROGRAM % 0, env))
    warm = json.loads(_run(PROGRAM % 0, env))
    assert cold["compiles"] == 2 and cold["from_cache"] == [False, False, False]
    assert warm["compiles"] == 0 and warm["from_cache"] == [True, True, True]
    assert warm["names"] == cold["names"]  # templated kernels: lowered names came from the cache


def test_sixteen_processes_share_one_fresh_cache(tmp_path):
    env = {**os.environ, "CUFORGE_CACHE_DIR": str(tmp_path)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", PROGRAM % (i % 4)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
        )
        for i in range(16)
    ]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    # 5 distinct programs: the shared family (one program) and 4 variants of Own.
    assert sum(r["compiles"] for r in results) == 5
    assert len({tuple(r["names"][:2]) for r in results}) == 1


def test_command_line_info_prune_and_clear(tmp_path):
    env = {**os.environ, "CUFORGE_CACHE_DIR": str(tmp_path)}
    _run(PROGRAM % 0, env)

    def cli(*args: str) -> str:
        return subprocess.run(
            [sys.executable, "-m", "cuforge", "cache", *args], capture_output=True, text=True, env=env, check=True
        ).stdout

    info = cli("info")
    assert f"location: {Path(tmp_path) / _config.SCHEMA}" in info and "entries:  " in info
    entries = int(info.split("entries:")[1].split()[0])
    assert entries >= 5
    pruned = cli("prune", "--max-mb", "0.001")
    assert pruned.startswith("removed ")
    assert "cleared" in cli("clear")
    assert "entries:  0" in cli("info")


def test_version_is_in_the_entries(cuforge_cache_dir):
    _fresh_process_state()
    k = _declare("x[0] = 12;")
    k.compile(arch="sm_90")
    meta = _disk.current().get_json(_disk.current().meta_name(_key(k)))
    assert meta["cuforge"] == __version__ and meta["lowered"] == {"Cached": "_Z6CachedPf"}


def test_every_directory_the_cache_creates_is_owner_only(tmp_path):
    root = tmp_path / "a" / "b" / "c"
    with _config.scope(cache_dir=str(root)):
        _fresh_process_state()
        _declare("x[0] = 77;").compile(arch="sm_90")
        for d in (tmp_path / "a", tmp_path / "a" / "b", root, root / _config.SCHEMA, root / _config.SCHEMA / "entries"):
            assert d.stat().st_mode & 0o777 == 0o700, d
    _fresh_process_state()


def _plant_and_reload(root: Path, spoil) -> tuple[bool, int]:
    """Fill a cache at root, spoil its trust, and compile again in a fresh state: (whether the
    kernel came from that disk, disk errors counted)."""
    with _config.scope(cache_dir=str(root)):
        _fresh_process_state()
        k = _declare("x[0] = 99;")
        k.compile(arch="sm_90")
        spoil(root)
        _fresh_process_state()
        before = cf.cache_stats()
        with pytest.warns(_disk.CacheSecurityWarning, match=r"cuforge: not using the compile cache at .*another user could "
                                                           r"plant code there\. Fix: chmod 700"):  # fmt: skip
            ck = k.compile(arch="sm_90")
        after = cf.cache_stats()
    _fresh_process_state()
    return ck.from_cache, after.disk_errors - before.disk_errors


def test_a_cache_writable_by_others_is_refused_and_nothing_is_loaded(tmp_path):
    from_disk, errors = _plant_and_reload(tmp_path / "c", lambda r: os.chmod(r, 0o777))
    assert not from_disk and errors == 1  # compiled again, in memory only


def test_a_world_writable_cache_dir_gets_nothing_created_in_it(tmp_path):
    """CUFORGE_CACHE_DIR names the folder that holds the schema folder (v2/): refused before it is made in it."""
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    with _config.scope(cache_dir=str(shared)):
        _fresh_process_state()
        with pytest.warns(_disk.CacheSecurityWarning, match="is writable by group or others"):
            assert not _declare("x[0] = 7;").compile(arch="sm_90").from_cache
    _fresh_process_state()
    assert list(shared.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="changing a directory's owner needs root")
def test_a_cache_owned_by_another_user_is_refused_and_nothing_is_loaded(tmp_path):
    from_disk, errors = _plant_and_reload(tmp_path / "c", lambda r: os.chown(r / _config.SCHEMA / "entries", 4242, -1))
    assert not from_disk and errors == 1


@pytest.mark.skipif(os.name != "posix", reason="RLIMIT_FSIZE is POSIX")
def test_a_full_disk_still_returns_kernels_with_one_warning(tmp_path):
    """Writes past a file-size limit fail (EFBIG, SIGXFSZ ignored), as on a full disk."""
    code = textwrap.dedent(f"""
        import resource, signal, sys, warnings
        sys.path.insert(0, {os.getcwd()!r})
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))
        import cuforge as cf
        from tests.kind_kernels import BigShared, GridSum
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            a, b = GridSum.compile("sm_90"), BigShared.compile("sm_90")
        print(a.cubin[:4] == b"\\x7fELF", b.cubin[:4] == b"\\x7fELF", len(caught), cf.cache_stats().disk_errors > 0)
        print(caught[0].message)
    """)
    # (no bytecode written: under the limit Python's own .pyc write is cut short and kept, and the
    # next process to import that module reads "marshal data too short")
    env = dict(os.environ, CUFORGE_CACHE_DIR=str(tmp_path / "cache"), PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    first, message = out.stdout.strip().splitlines()
    assert first == "True True 1 True"  # both kernels, one warning for the process
    assert "cannot write the compile cache" in message and "File too large" in message


def _other_users_folder(path: Path) -> Path:
    os.chown(path.parent, 65534, 65534)
    os.chmod(path.parent, 0o777)
    return path.parent


def _link_to_other_users_folder(path: Path) -> Path:
    theirs = path.parents[3] / "theirs"  # (in the configured folder, beside v2/)
    shutil.copytree(path.parent, theirs)
    os.chown(theirs, 65534, 65534)
    shutil.rmtree(path.parent)
    path.parent.symlink_to(theirs)
    os.lchown(path.parent, 65534, 65534)
    return path.parent


def _other_users_file(path: Path) -> Path:
    os.chown(path, 65534, 65534)
    return path


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="making files another user's needs root")
@pytest.mark.parametrize("which", ["meta", "code"])
@pytest.mark.parametrize("spoil", [_other_users_folder, _link_to_other_users_folder, _other_users_file])
def test_an_entry_another_user_could_have_planted_is_a_miss(tmp_path, which, spoil):
    """Inside a trusted cache, each entry's folder and file are checked too (through handles,
    never through a link): the cubin is compiled again, and nothing is written into a refused
    folder (a refused file in the user's own folder is replaced, by a rename)."""
    with _config.scope(cache_dir=str(tmp_path / "c")):
        _fresh_process_state()
        k = _declare(f"x[0] = {len(which) + 200};")
        k.compile(arch="sm_90")
        disk = _disk.current()
        name = disk.meta_name(_key(k)) if which == "meta" else disk.code_name(_key(k))
        refused = spoil(disk.path_of(name))
        looks = _looks(refused)
        _fresh_process_state()
        before = cf.cache_stats()
        with pytest.warns(_disk.CacheSecurityWarning, match=rf"not using {refused} in the compile cache at .*; another "
                                                            r"user could plant code there\. Fix: remove it"):  # fmt: skip
            ck = k.compile(arch="sm_90")
        assert not ck.from_cache and ck.cubin[:4] == b"\x7fELF"
        assert cf.cache_stats().compiles == before.compiles + 1
        if spoil is _other_users_file:
            assert os.stat(refused).st_uid == os.geteuid()
        else:
            assert _looks(refused) == looks
    _fresh_process_state()


def _looks(path: Path) -> tuple:
    st = os.lstat(path)
    return st.st_uid, st.st_mtime_ns, sorted(os.listdir(path)) if path.is_dir() else path.read_bytes()


def test_cache_stats_keeps_the_named_tuple_api():
    """A hand-written record now (a NamedTuple's generated methods cost every fresh process),
    read as the NamedTuple it was."""
    stats = cf.cache_stats()
    memory_hits, *_, cpu_compiles = stats
    assert (memory_hits, cpu_compiles) == (stats.memory_hits, stats.cpu_compiles)
    assert stats._fields[:2] == ("memory_hits", "disk_hits") and stats._field_defaults["cpu_compiles"] == 0
    assert stats._replace(compiles=7).compiles == 7 and stats._asdict()["disk_hits"] == stats.disk_hits
    assert cf.CacheStats._make(range(10)) == tuple(range(10)) == cf.CacheStats(*range(10))
    assert pickle.loads(pickle.dumps(stats)) == stats
    assert repr(cf.CacheStats(*range(6))).startswith("CacheStats(memory_hits=0, disk_hits=1, compiles=2,")


def test_a_first_launch_looks_for_its_devices_own_arch_in_the_caches_without_compiling():
    """The loader's first look (`Kernel._from_caches`): the kernel for ``sm_90`` from the
    memory or disk cache, else None with nothing compiled; a cached cubin for the device's own
    arch tells its target (this NVRTC compiled for it) without reading NVRTC's archs."""
    from cuforge._compile import targets as _targets

    @cf.kernel
    class NativeFirst:
        x: cf.Array[cf.float32]
        body = "x[threadIdx.x] += 3;"

    before = cf.cache_stats().compiles
    assert NativeFirst._from_caches("sm_90") is None and cf.cache_stats().compiles == before
    compiled = NativeFirst.compile(arch="sm_90")
    assert NativeFirst._from_caches("sm_90") is compiled  # (the memory cache's)
    _fresh_process_state()
    found = NativeFirst._from_caches("sm_90")
    assert found is not None and found.from_cache and found.code == compiled.code
    assert cf.cache_stats().compiles == before + 1
    _targets._targets.pop(87, None)
    _targets.native_target_found(87)
    assert _targets.known_target(87) == "sm_87" and _targets.device_target(87) == "sm_87"
    _targets._targets.pop(87)
