"""cuforge's modules served from one file of their compiled code (cuforge/_bundle.py): written
at a process's exit, served to the next, never where a source changed, the file is not trusted
or the package is another copy, and never written where bytecode is not; a served module is
a source module to the tools that ask (python -m, resources)."""

import os
import shutil
import subprocess
import sys

import pytest

import cuforge

# A fresh process: which of the package's modules came from the bundle, that a traceback from
# one names its source line, and that an edit shows.
PROBE = """
import sys, traceback, cuforge as cf
import cuforge._kernel.autotune  # (not on import cuforge's path: for the descriptor test)
try:
    cf.CompileOptions(std="c++03")
except cf.DeclarationError:
    frame = traceback.extract_tb(sys.exc_info()[2])[-1]
served = sorted(n for n, m in sys.modules.items() if n.startswith("cuforge.")
                and str(getattr(m, "__cached__", "")).endswith(("_bundle.pyc", ".bin")))
print(" ".join(served) or "-")
print(frame.filename == cf.options.__file__, "raise" in frame.line)
print(getattr(cf._declare.rules, "EDITED", 0))
"""


def _run(env: dict[str, str], code: str = PROBE) -> list[str]:
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.split("\n")


@pytest.fixture
def package(tmp_path):
    """A copy of the package (sources that a test may edit), its bytecode under tmp_path."""
    shutil.copytree(os.path.dirname(cuforge.__file__), tmp_path / "pkg" / "cuforge", ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(tmp_path / "pkg"), PYTHONPYCACHEPREFIX=str(tmp_path / "bytecode"))
    return tmp_path / "pkg" / "cuforge", env


def _bundle(tmp_path) -> list:
    return sorted((tmp_path / "bytecode").rglob("_bundle.*.bin"))


def test_where_no_bytecode_prefix_is_set_the_file_is_beside_the_package_and_serves_only_that_copy(package, tmp_path):
    """``_bundle.pyc`` beside ``_bundle.py`` (pip removes ``NAME.pyc`` with each ``NAME.py``),
    and a copy of the package, file included, is served from its own sources."""
    root, env = package
    del env["PYTHONPYCACHEPREFIX"]
    _run(env)
    assert (root / "_bundle.pyc").is_file() and "cuforge.errors" in _run(env)[0].split()
    copy = tmp_path / "copy" / "cuforge"
    shutil.copytree(root, copy)
    with open(copy / "_declare" / "rules.py", "a") as fh:
        fh.write("\nEDITED = 2\n")
    moved = _run({**env, "PYTHONPATH": str(tmp_path / "copy")}, PROBE + "print(cf.errors.__file__)\n")
    assert moved[2] == "2" and moved[3] == str(copy / "errors.py")


def test_a_served_module_is_a_source_module_to_python_m_and_resources(package):
    _, env = package
    code = "import cuforge.__main__, importlib.resources as r; print(r.files('cuforge._cpu').joinpath('runtime.cpp').is_file())"
    assert _run(env, code)[0] == "True"
    again = subprocess.run([sys.executable, "-c", code + "; print(cuforge.__main__.__cached__.endswith('.bin'))"], env=env,
                           capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    assert again == ["True", "True"]
    help_text = subprocess.run([sys.executable, "-m", "cuforge", "--help"], env=env, capture_output=True, text=True, check=True)
    assert "usage" in help_text.stdout.lower()


def test_a_descriptor_that_is_another_file_now_serves_nothing_more(package):
    """A program that closed the file's descriptor, and got the number back for another file,
    has cuforge's later imports made as usual, never from that file."""
    _, env = package
    _run(env)
    code = (
        "import os, sys, cuforge\n"
        "f = [m for m in sys.meta_path if type(m).__name__ == '_BundleFinder'][0]\n"
        "os.dup2(os.open(os.devnull, os.O_RDONLY), f.fd)\n"
        "import cuforge._kernel.autotune as a\n"
        "print(a.__name__, a.__name__ in f.served, 'cuforge.errors' in f.served)\n"
    )
    assert _run(env, code)[0] == "cuforge._kernel.autotune False True"


def test_the_next_process_is_served_from_the_bundle(package, tmp_path):
    _, env = package
    first = _run(env)
    assert first[0] == "-" and first[1] == "True True"  # nothing to serve yet; written at exit
    (bundle,) = _bundle(tmp_path)
    assert bundle.stat().st_mode & 0o022 == 0
    second = _run(env)
    served = second[0].split()
    assert {"cuforge.errors", "cuforge.options", "cuforge._declare.rules", "cuforge._kernel.kernel"} <= set(served)
    assert "cuforge._bundle" not in served  # (it is what serves them)
    assert second[1] == "True True"  # the traceback names the source's file and line


def test_an_edited_module_is_imported_from_its_source_and_bundled_again(package, tmp_path):
    root, env = package
    _run(env)
    with open(root / "_declare" / "rules.py", "a") as fh:
        fh.write("\nEDITED = 1\n")
    edited = _run(env)
    assert "cuforge._declare.rules" not in edited[0].split() and "cuforge.errors" in edited[0].split()
    assert edited[2] == "1"
    again = _run(env)  # (the edited process bundled the module anew at its exit)
    assert "cuforge._declare.rules" in again[0].split() and again[2] == "1"


@pytest.mark.parametrize("spoil", ["writable by others", "garbage", "cut short"])
def test_a_bundle_that_is_not_trusted_or_not_whole_serves_nothing_it_cannot(package, tmp_path, spoil):
    _, env = package
    _run(env)
    (bundle,) = _bundle(tmp_path)
    if spoil == "garbage":
        bundle.write_bytes(b"not marshal data")
    elif spoil == "cut short":
        bundle.write_bytes(bundle.read_bytes()[: bundle.stat().st_size // 2])
    else:
        bundle.chmod(0o666)
    spoiled = _run(env)
    assert spoiled[1] == "True True" and spoiled[2] == "0"  # (imported, and runs, all the same)
    if spoil == "cut short":  # the modules whose code it still holds whole
        assert 0 < len(spoiled[0].split()) < len(_run(env)[0].split())
    else:
        assert spoiled[0] == "-"
        assert _run(env)[0] != "-"  # (rewritten at the spoiled process's exit, as its owner's)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_file_another_user_owns_serves_nothing(package, tmp_path):
    _, env = package
    _run(env)
    (bundle,) = _bundle(tmp_path)
    os.chown(bundle, 4242, -1)  # (another user's, though writable by no one else)
    spoiled = _run({**env, "PYTHONDONTWRITEBYTECODE": "1"})
    assert spoiled[0] == "-" and spoiled[1] == "True True"


def test_no_bundle_where_python_writes_no_bytecode(package, tmp_path):
    _, env = package
    _run({**env, "PYTHONDONTWRITEBYTECODE": "1"})
    assert _bundle(tmp_path) == []
