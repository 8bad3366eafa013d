"""The CPU backend's host compiler and its store of shared objects: finding the compiler,
real builds loaded and called through ctypes, cache hits, damage, trust, and failures."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import cuforge as cf
from cuforge import _config
from cuforge._compile import disk as _disk
from cuforge._cpu import store as _store
from cuforge._cpu import toolchain as _toolchain

ANSWER = 'extern "C" int cf_answer() { return 42; }\n'


@pytest.fixture(autouse=True)
def _fresh_store(monkeypatch):
    """What this process built is forgotten (each test has its own cache directory)."""
    monkeypatch.setattr(_store, "_objects", {})


def _build(source: str = ANSWER, **kw) -> _store.Loaded:
    compiler = _toolchain.find_compiler()
    args = {"headers": {}, "include_dirs": (), "flags": _toolchain.compile_flags(compiler, debug=False), "label": "Answer"}
    return _store.shared_object(source, **{**args, **kw})


def _call(loaded: _store.Loaded, name: str = "cf_answer") -> int:
    return int(getattr(loaded.library, name)())


def _entry(loaded: _store.Loaded) -> Path:
    """The disk-cache file of a built object."""
    return _disk.current().path_of(f"so:{loaded.sha256}")


def _new_process(monkeypatch) -> None:
    """Forget the builds and the opened cache, as a new process would."""
    monkeypatch.setattr(_store, "_objects", {})
    _disk._opened.clear()


# ---------------------------------------------------------------- finding the compiler


def test_cxx_is_split_and_honoured(monkeypatch):
    monkeypatch.setenv("CXX", "env g++")  # a wrapper and its compiler, as "ccache g++" is
    found = _toolchain.find_compiler()
    assert found.argv == (shutil.which("env"), "g++") and found.kind == "gcc"
    assert found.version == subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    monkeypatch.setenv("CXX", shutil.which("g++"))
    assert _toolchain.find_compiler().argv == (shutil.which("g++"),)


def test_without_cxx_the_first_compiler_on_path_is_used(monkeypatch):
    monkeypatch.delenv("CXX", raising=False)
    assert _toolchain.find_compiler().argv == (shutil.which("c++"),)


def test_a_cxx_naming_no_program_says_so(monkeypatch):
    monkeypatch.setenv("CXX", "no-such-c++ -O1")
    with pytest.raises(cf.CompilerNotFoundError, match=r"CXX='no-such-c\+\+ -O1' names 'no-such-c\+\+', which is not an "
                                                        r"executable program on PATH\. Fix: set CXX"):  # fmt: skip
        _toolchain.find_compiler()


def test_a_cxx_with_an_unclosed_quote_says_so(monkeypatch):
    monkeypatch.setenv("CXX", 'g++ "x')
    with pytest.raises(cf.CompilerNotFoundError, match=r"""CXX='g\+\+ "x' cannot be split into a command as a shell would """
                                                        r"\(No closing quotation\)\. Fix: close its quotes"):  # fmt: skip
        _toolchain.find_compiler()


def test_a_cxx_that_fails_its_version_check_says_so(monkeypatch):
    monkeypatch.setenv("CXX", "false")
    with pytest.raises(cf.CompilerNotFoundError, match=r"CXX='false' did not answer --version \(exit status 1"):
        _toolchain.find_compiler()


def test_no_compiler_at_all_names_the_fixes(monkeypatch):
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setenv("PATH", "")
    monkeypatch.setitem(sys.modules, "ziglang", None)  # not importable
    with pytest.raises(cf.CompilerNotFoundError, match=r"needs a C\+\+17 compiler, and none was found: CXX is unset, none "
                                                        r"of c\+\+, g\+\+, clang\+\+ is on PATH.*set CXX.*install g\+\+ or "
                                                        r"clang\+\+, or pip install \"cuforge\[cpu\]\""):  # fmt: skip
        _toolchain.find_compiler()
    assert issubclass(cf.CompilerNotFoundError, RuntimeError) and "CompilerNotFoundError" in cf.errors.__all__


def test_flags():
    gcc = _toolchain.Compiler(("g++",), "gcc", "g++ 12")
    base = ("-std=c++17", "-O3", "-march=native", "-fPIC", "-shared", "-fno-strict-aliasing", "-fno-math-errno", "-pthread")
    probed = (*base, "-fstack-clash-protection")
    assert _toolchain.compile_flags(gcc, debug=False) == (*probed, "-fno-gnu-unique")  # (GCC's alone: see the docstring)
    assert _toolchain.compile_flags(gcc, debug=True) == (*probed, "-fno-gnu-unique", "-g")
    zig = _toolchain.Compiler((sys.executable, "-m", "ziglang", "c++"), "zig", "ziglang 0.13.0: clang version 18")
    assert _toolchain.compile_flags(zig, debug=False) == (*probed, "-fno-sanitize=undefined")
    # the stack probes where the compiler takes them: g++ 8 on, clang 11 on
    for version, kind, probes in [("g++ (Debian 12.2.0-14+deb12u1) 12.2.0", "gcc", True), ("g++ (GCC) 7.3.1 20180303", "gcc", False),
                                  ("Ubuntu clang version 14.0.0-1ubuntu1", "clang", True),
                                  ("clang version 10.0.0-4ubuntu1", "clang", False)]:  # fmt: skip
        flags = _toolchain.compile_flags(_toolchain.Compiler(("c++",), kind, version), debug=False)  # type: ignore[arg-type]
        assert ("-fstack-clash-protection" in flags) is probes, version


@pytest.mark.skipif(importlib.util.find_spec("ziglang") is None, reason='the ziglang wheel is not installed ("cuforge[cpu]")')
def test_the_ziglang_wheel_builds_a_loadable_object(monkeypatch):
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setenv("PATH", "")
    found = _toolchain.find_compiler()
    assert found.kind == "zig" and found.version.startswith("ziglang ")
    assert _call(_build('#include <vector>\nextern "C" int cf_sum() { std::vector<int> v(6, 7); int s = 0; '
                        'for (int x : v) s += x; return s; }'), "cf_sum") == 42  # fmt: skip


# ---------------------------------------------------------------- the store


def test_a_build_is_loaded_and_called_and_built_once(cuforge_cache_dir, monkeypatch):
    source = '#include "answer.h"\nextern "C" int cf_answer() { return CF_ANSWER; }\n'
    before = cf.cache_stats()
    built = _build(source, headers={"answer.h": "#define CF_ANSWER 42\n"})
    assert _entry(built).is_relative_to(cuforge_cache_dir) and _entry(built).is_file() and _call(built) == 42
    assert _build(source, headers={"answer.h": "#define CF_ANSWER 42\n"}) is built  # this process: no compile
    _new_process(monkeypatch)
    assert _build(source, headers={"answer.h": "#define CF_ANSWER 42\n"}).sha256 == built.sha256  # from the disk
    after = cf.cache_stats()
    assert (after.cpu_compiles - before.cpu_compiles, after.disk_hits - before.disk_hits) == (1, 1)
    other = _build(source, headers={"answer.h": "#define CF_ANSWER 43\n"})  # a header's text is in the key
    assert other.sha256 != built.sha256 and _call(other) == 43 and cf.cache_stats().cpu_compiles == after.cpu_compiles + 1


@pytest.mark.parametrize(
    "change",
    [
        {"source": ANSWER + " "},
        {"headers": {"a.h": ""}},
        {"include_dirs": ("/x",)},
        {"flags": ("-O3",)},
        {"key_extra": ("runtime 2",)},
        {"compiler": _toolchain.Compiler(("g++",), "gcc", "g++ 13")},
    ],
    ids=lambda c: next(iter(c)),
)
def test_every_input_changes_the_key(change):
    base = {"source": ANSWER, "headers": {}, "include_dirs": (), "flags": (), "key_extra": (),
            "compiler": _toolchain.Compiler(("g++",), "gcc", "g++ 12")}  # fmt: skip
    assert _store.cache_key(**{**base, **change}) != _store.cache_key(**base)


def test_a_damaged_object_is_rebuilt_not_loaded(cuforge_cache_dir, monkeypatch):
    source = ANSWER.replace("42", "4242")
    entry = _entry(_build(source))
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF
    entry.write_bytes(data)
    _new_process(monkeypatch)
    before = cf.cache_stats()
    rebuilt = _build(source)
    after = cf.cache_stats()
    assert (after.cpu_compiles - before.cpu_compiles, after.disk_errors - before.disk_errors) == (1, 1)
    assert entry.read_bytes() != bytes(data) and _call(rebuilt) == 4242


def test_a_failing_write_still_returns_a_loadable_object(cuforge_cache_dir):
    """Writes go through tmp/: a file there, in place of the folder, makes each one fail."""
    tmp = _disk.current().root / "tmp"
    shutil.rmtree(tmp)
    tmp.write_text("not a folder")
    _disk._warned.clear()
    errors = cf.cache_stats().disk_errors
    with pytest.warns(_disk.CacheWriteWarning, match=r"cannot write the compile cache at .* once per process"):
        built = _build(ANSWER.replace("42", "5"))
    assert cf.cache_stats().disk_errors == errors + 1
    assert not _entry(built).exists() and _call(built) == 5


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="loads from memory files where the system has them")
def test_with_the_disk_cache_off_objects_are_loaded_from_memory(tmp_path, monkeypatch):
    """No file is written that could be swapped before it is loaded: the bytes built are what loads."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with _config.scope(cache="0"):
        before = cf.cache_stats().cpu_compiles
        built = _build(ANSWER.replace("42", "7"))
        assert _build(ANSWER.replace("42", "7")) is built and cf.cache_stats().cpu_compiles == before + 1
    assert _call(built) == 7 and list(tmp_path.iterdir()) == []  # (the compiler's folder is gone too)


def test_an_untrusted_cache_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    with _config.scope(cache_dir=str(shared)):
        _disk._opened.clear()
        with pytest.warns(_disk.CacheSecurityWarning, match="is writable by group or others"):
            built = _build(ANSWER.replace("42", "11"))
    _disk._opened.clear()
    assert list(shared.iterdir()) == [] and _call(built) == 11


def test_a_compile_error_names_the_label_and_shows_the_compiler(monkeypatch):
    monkeypatch.setenv("CXX", "g++")
    bad = 'extern "C" int cf_answer() { return undeclared_value; }\n'
    with pytest.raises(cf.CompileError, match=r"(?s)Saxpy: the host C\+\+ compiler failed to build it for the CPU \(exit "
                                              r"status 1\):\n  \$ g\+\+ -std=c\+\+17 .*-o Saxpy\.so\n.*Saxpy\.cpp:1:.*"
                                              r".undeclared_value. was not declared in this scope") as info:  # fmt: skip
        _build(bad, label="Saxpy")
    assert "undeclared_value" in info.value.log and info.value.source == bad
    many = "".join(f'extern "C" int f{i}() {{ return missing{i}; }}\n' for i in range(60))
    with pytest.raises(cf.CompileError, match=r"more lines \(all of them are on the error's \.log\)") as info:
        _build(many, label="Many")
    assert len(str(info.value).splitlines()) == 2 + _store.LOG_LINES + 1 and "missing59" in info.value.log


def test_a_header_name_leaving_its_folder_is_refused():
    with pytest.raises(cf.CompileError, match=r"Answer: the in-memory header name '\.\./x\.h' leads out of its folder"):
        _build(ANSWER, headers={"../x.h": ""})


PROGRAM = textwrap.dedent(
    """
    import json
    import cuforge as cf
    from cuforge._cpu import store, toolchain
    flags = toolchain.compile_flags(toolchain.find_compiler(), debug=False)
    built = store.shared_object(%r, headers={}, include_dirs=(), flags=flags, label="Shared")
    print(json.dumps({"sha": built.sha256, "compiles": cf.cache_stats().cpu_compiles, "answer": built.library.cf_answer()}))
    """
)


def test_processes_sharing_a_fresh_cache_build_once(tmp_path):
    env = {**os.environ, "CUFORGE_CACHE_DIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    code = PROGRAM % ANSWER.replace("42", "99")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                              text=True) for _ in range(3)]  # fmt: skip
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert sum(r["compiles"] for r in results) == 1
    assert {r["answer"] for r in results} == {99} and len({r["sha"] for r in results}) == 1


@pytest.mark.parametrize("label", ["-o", "--version", "../up", ".", "a b/ü"])
def test_a_label_never_becomes_an_option_or_a_path(label):
    """The label names the build's files: none may start with "-" (the compiler would take it for an
    option) or leave the build's folder."""
    loaded = _build(f"{ANSWER}// {label}\n", label=label)  # (each its own source: a build, not a hit)
    assert _call(loaded) == 42


def test_every_file_of_the_cpu_runtime_ships_in_the_wheel():
    """pyproject's package-data names each file a CPU build reads (a header shim such as
    <cassert> has no extension for a glob to catch)."""
    tomllib = pytest.importorskip("tomllib")  # (Python 3.11+)
    root = Path(__file__).resolve().parents[2]
    globs = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["cuforge"]
    package = root / "src" / "cuforge"
    shipped = {p for g in globs for p in package.glob(g) if p.is_file()}
    cpu = package / "_cpu"
    needed = {cpu / "runtime.cpp", cpu / "runtime.map", cpu / "check.cpp", cpu / "check.map"} | {p for p in (cpu / "include").rglob("*") if p.is_file()}
    assert not needed - shipped, sorted(str(p.relative_to(package)) for p in needed - shipped)
