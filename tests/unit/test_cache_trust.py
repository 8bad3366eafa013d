"""Another local user cannot get code loaded from the disk cache: not through a folder or file
inside it, nor by swapping the cache (or a folder or link on the way to it) while a process
runs. The attacks are real: a library whose constructor leaves a marker file, with a record
naming it (checksums are plain SHA-256: anyone can forge one), planted as uid 65534; the
victim is a fresh process that runs a kernel on the CPU."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import cuforge as cf
from cuforge import _config
from cuforge._compile import disk as _disk
from cuforge._cpu import store as _store

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="planting files as another user (uid 65534) needs root"
)
OTHER = 65534  # nobody

KERNELS = textwrap.dedent(
    """
    import json, os, sys, time
    import numpy as np
    import cuforge as cf

    @cf.kernel
    class Triple:
        x: cf.In[cf.int32]
        y: cf.Out[cf.int32]
        n: cf.int64
        body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] = 3 * x[i];"

    @cf.kernel
    class Square:
        x: cf.In[cf.int32]
        y: cf.Out[cf.int32]
        n: cf.int64
        body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] * x[i];"

    def run(k):
        x = np.arange(1000, dtype=np.int32)
        y = np.zeros_like(x)
        k(x, y, x.size, grid=4, block=256, device="cpu")
        return y.tolist() == ([3 * v for v in range(1000)] if k is Triple else [v * v for v in range(1000)])
    """
)
VICTIM = KERNELS + 'print(json.dumps({"ok": run(Triple) and run(Square)}))\n'
SWAPPED = KERNELS + textwrap.dedent(
    """
    first = run(Triple)  # the cache is opened
    open(sys.argv[1], "w").close()
    deadline = time.monotonic() + 120
    while not os.path.exists(sys.argv[2]) and time.monotonic() < deadline:  # meanwhile, the cache is swapped
        time.sleep(0.01)
    print(json.dumps({"ok": first and run(Square)}))
    """
)


def _run(code: str, cache: Path, *, marker: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh process with the cache at ``cache``; ``marker``: assert first
    that no planted library was loaded."""
    env = {**os.environ, "CUFORGE_CACHE_DIR": str(cache), "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert marker is None or not marker.exists(), f"the planted library was loaded:\n{out.stderr}"
    assert out.returncode == 0, out.stderr
    return out


def _records(cache: Path) -> dict[str, dict]:
    """The CPU objects' records in a cache, by label: their key, object SHA-256 and details."""
    found = {}
    for f in (cache / _config.SCHEMA / "entries").rglob("*"):
        if f.is_file():
            lines = f.read_bytes().split(b"\n", 4)  # the checksum, then the record (store.meta_record)
            if len(lines) == 5 and lines[1].decode(errors="replace") == _store.SCHEMA:
                body = {"key": lines[2].decode(), "so_sha256": lines[3].decode(), **json.loads(lines[4])}
                found[body["label"]] = body
    return found


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _entry(name: str) -> tuple[str, str]:
    h = _sha(name.encode())
    return h[:2], h[2:]


@pytest.fixture(scope="module")
def evil(tmp_path_factory) -> tuple[bytes, Path]:
    """A library whose constructor writes a marker file: (its bytes, the marker's path)."""
    work = tmp_path_factory.mktemp("evil")
    marker = work / "LOADED"
    (work / "evil.c").write_text(f'#include <stdio.h>\n__attribute__((constructor)) static void plant(void) {{ '
                                 f'FILE* f = fopen("{marker}", "w"); if (f) fclose(f); }}\n')  # fmt: skip
    subprocess.run(["gcc", "-shared", "-fPIC", "evil.c", "-o", "evil.so"], cwd=work, check=True)
    return (work / "evil.so").read_bytes(), marker


def _forge(record: dict, evil: bytes, near: str) -> tuple[bytes, str, bytes]:
    """A record naming a copy of ``evil`` whose entry lands in folder ``entries/<near>``:
    (the record's bytes, the object's file name there, the object's bytes). Bytes after
    the ELF image do not stop it loading, so the attacker pads until the name fits."""
    for pad in range(1 << 16):
        data = evil + pad.to_bytes(4, "little")
        sha = _sha(data)
        sub, file = _entry(f"so:{sha}")
        if sub == near:
            details = {k: v for k, v in record.items() if k not in ("key", "so_sha256")}
            return _disk.text_record(_store.meta_record(record["key"], sha, details)), file, data
    raise AssertionError("no padding lands there")


def _write_as_other(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    os.chown(path, OTHER, OTHER)
    os.chmod(path, 0o666)


def _plant(folder: Path, record: dict, evil: bytes) -> None:
    """Another user's forged record of ``record``'s key, and its library, in ``folder`` (the
    record's ``entries/<xx>``, or where a link in its place points)."""
    sub, file = _entry(f"cpu-meta:{record['key']}")
    forged, so_file, so = _forge(record, evil, sub)
    _write_as_other(folder / file, forged)
    _write_as_other(folder / so_file, so)


def _folder_writable_by_other(cache: Path, record: dict, evil: bytes) -> Path:
    folder = cache / _config.SCHEMA / "entries" / _entry(f"cpu-meta:{record['key']}")[0]
    os.chown(folder, OTHER, OTHER)
    os.chmod(folder, 0o777)
    _plant(folder, record, evil)
    return folder


def _link_owned_by_other(cache: Path, record: dict, evil: bytes) -> Path:
    folder = cache / _config.SCHEMA / "entries" / _entry(f"cpu-meta:{record['key']}")[0]
    theirs = cache.parent / "theirs"
    theirs.mkdir()
    os.chown(theirs, OTHER, OTHER)
    os.chmod(theirs, 0o777)
    _plant(theirs, record, evil)
    shutil.rmtree(folder)
    folder.symlink_to(theirs)
    os.lchown(folder, OTHER, OTHER)
    return folder


def _files_owned_by_other(cache: Path, record: dict, evil: bytes) -> Path:
    """(Only root could put them in the user's folder; the files are checked all the same.)"""
    folder = cache / _config.SCHEMA / "entries" / _entry(f"cpu-meta:{record['key']}")[0]
    _plant(folder, record, evil)
    return folder / _entry(f"cpu-meta:{record['key']}")[1]


@pytest.mark.parametrize("plant", [_folder_writable_by_other, _link_owned_by_other, _files_owned_by_other])
def test_an_entry_planted_inside_the_cache_is_not_loaded(tmp_path, evil, plant):
    cache = tmp_path / "cache"
    assert json.loads(_run(VICTIM, cache).stdout)["ok"]
    refused = plant(cache, _records(cache)["Triple"], evil[0])
    out = _run(VICTIM, cache, marker=evil[1])  # a fresh process
    assert json.loads(out.stdout)["ok"]
    assert f"CacheSecurityWarning: cuforge: not using {refused} in the compile cache" in out.stderr
    assert "another user could plant code there. Fix: remove it" in out.stderr


def test_a_cache_swapped_while_a_process_runs_is_not_read(tmp_path, evil):
    """The process holds the folder it opened: the path renamed and another folder put in its
    place (by anyone who can, here root for a team's folder) is not looked at."""
    scratch = tmp_path / "scratch"
    _run(VICTIM, scratch)
    record = _records(scratch)["Square"]  # the key of the next kernel: the same in any cache
    cache = tmp_path / "cache"
    ready, go = tmp_path / "ready", tmp_path / "go"
    env = {**os.environ, "CUFORGE_CACHE_DIR": str(cache), "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", SWAPPED, str(ready), str(go)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ready.exists(), proc.communicate()[1]
        cache.rename(tmp_path / "cache.old")
        folder = cache / _config.SCHEMA / "entries" / _entry(f"cpu-meta:{record['key']}")[0]
        folder.mkdir(parents=True)
        _plant(folder, record, evil[0])
        go.touch()
        out, err = proc.communicate(timeout=240)
    finally:
        proc.kill()
    assert not evil[1].exists(), f"the planted library was loaded:\n{err}"
    assert proc.returncode == 0, err
    assert json.loads(out)["ok"]


def test_a_link_re_pointed_while_a_process_runs_is_not_followed(tmp_path, evil):
    """A link to the user's own cache, re-pointed (as its owner could) at a planted folder."""
    scratch = tmp_path / "scratch"
    _run(VICTIM, scratch)
    record = _records(scratch)["Square"]
    mine, theirs, link = tmp_path / "mine", tmp_path / "theirs", tmp_path / "link"
    mine.mkdir(mode=0o700)
    link.symlink_to(mine)
    folder = theirs / _config.SCHEMA / "entries" / _entry(f"cpu-meta:{record['key']}")[0]
    folder.mkdir(parents=True)
    _plant(folder, record, evil[0])
    ready, go = tmp_path / "ready", tmp_path / "go"
    env = {**os.environ, "CUFORGE_CACHE_DIR": str(link), "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", SWAPPED, str(ready), str(go)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ready.exists(), proc.communicate()[1]
        link.unlink()
        link.symlink_to(theirs)
        go.touch()
        out, err = proc.communicate(timeout=240)
    finally:
        proc.kill()
    assert not evil[1].exists(), f"the planted library was loaded:\n{err}"
    assert proc.returncode == 0, err
    assert json.loads(out)["ok"]


# ---------------------------------------------------------------- the way to the cache, in a fresh process


def _opens(cache: Path) -> bool:
    """Whether a fresh process would use the cache at ``cache``."""
    _disk._opened.clear()
    try:
        with _config.scope(cache_dir=str(cache)):
            return _disk.current() is not None
    finally:
        _disk._opened.clear()


def test_a_cache_under_a_folder_others_can_write_is_refused(tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    os.chmod(team, 0o775)  # a group member could rename the cache and put another in its place
    with pytest.warns(_disk.CacheSecurityWarning, match=r"team, on the way to the cache, is writable by group or others "
                                                        r"\(mode 775\).*Fix: chmod go-w .*team, or set CUFORGE_CACHE_DIR"):  # fmt: skip
        assert not _opens(team / "cache")
    assert list(team.iterdir()) == []  # nothing made there


def test_a_cache_under_a_sticky_folder_is_used(tmp_path):
    """As /tmp: others can add names there, but not rename or remove the user's."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    assert _opens(shared / "cache")
    theirs = shared / "theirs"  # a name another user took first is theirs
    theirs.mkdir()
    os.chown(theirs, OTHER, OTHER)
    with pytest.warns(_disk.CacheSecurityWarning, match=r"theirs is owned by uid 65534, not by this user"):
        assert not _opens(theirs)


def test_a_link_to_the_cache_owned_by_another_user_is_refused(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(mine)
    assert _opens(link)  # the user's own link
    os.lchown(link, OTHER, OTHER)  # its owner could point it elsewhere
    with pytest.warns(_disk.CacheSecurityWarning, match=r"link is a symbolic link owned by uid 65534, who could point it at "
                                                        r"another folder.*Fix: replace the link"):  # fmt: skip
        assert not _opens(link)


def test_a_refused_folder_inside_the_cache_is_a_miss_and_the_kernel_still_works(tmp_path, monkeypatch):
    """In this process: the build is loaded from memory, and nothing is written into the folder."""
    compiler_flags = ("-std=c++17", "-O1", "-fPIC", "-shared")
    source = 'extern "C" int cf_answer() { return 4343; }\n'
    with _config.scope(cache_dir=str(tmp_path / "cache")):
        _disk._opened.clear()
        first = _store.shared_object(source, headers={}, include_dirs=(), flags=compiler_flags, label="Answer")
        folder = _disk.current().path_of(f"so:{first.sha256}").parent
        os.chown(folder, OTHER, OTHER)
        os.chmod(folder, 0o777)
        before = sorted(folder.iterdir())
        _disk._opened.clear()
        monkeypatch.setattr(_store, "_objects", {})  # (a fresh process)
        with pytest.warns(_disk.CacheSecurityWarning, match=rf"not using {folder} in the compile cache"):
            again = _store.shared_object(source, headers={}, include_dirs=(), flags=compiler_flags, label="Answer")
        assert again.library.cf_answer() == 4343 and sorted(folder.iterdir()) == before
        assert cf.cache_stats().disk_errors > 0
    _disk._opened.clear()


def test_clearing_the_cache_removes_refused_folders_and_follows_no_link(tmp_path):
    """The fix the warning names (python -m cuforge cache clear) removes a refused folder, and a
    link in place of one, but nothing where the link points."""
    cache = tmp_path / "cache"
    entries = cache / _config.SCHEMA / "entries"
    with _config.scope(cache_dir=str(cache)):
        _disk._opened.clear()
        disk = _disk.current()
        disk.put_json("a", {"a": 1})
        theirs = tmp_path / "theirs"
        theirs.mkdir()
        (theirs / "kept").write_text("not the cache's")
        (entries / "zz").symlink_to(theirs)
        os.lchown(entries / "zz", OTHER, OTHER)
        (entries / "yy").mkdir(mode=0o777)
        _write_as_other(entries / "yy" / "planted", b"x")
        os.chown(entries / "yy", OTHER, OTHER)
        assert disk.info()["entries"] == 1  # (refused folders are not counted)
        disk.clear()
        assert list(entries.iterdir()) == [] and (theirs / "kept").read_text() == "not the cache's"
        assert disk.get_json("a") is None
    _disk._opened.clear()
