"""The docs keep their promises: every code block of README.md and docs/ runs (conftest.py
collects them; here, that each block is one the rules run), and every public function and
class has a NumPy-style docstring whose examples run."""

from __future__ import annotations

import doctest
import functools
import importlib
import importlib.util
import inspect
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import cuforge as cf

ROOT = Path(__file__).resolve().parents[2]
# ``# doctest: +GPU`` marks a docstring example that needs the GPU itself (device memory,
# streams, graphs): skipped where no GPU is present, run by the gpu-marked test below on a GPU
# machine. ``# doctest: +LAUNCH`` marks one that launches on host arrays: run by the test below
# that asks for ``cuforge_device``, on the GPU or on cuforge's CPU backend.
GPU = doctest.register_optionflag("GPU")
LAUNCH = doctest.register_optionflag("LAUNCH")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\w*)[^\n]*\n", re.M)
ILLUSTRATION = re.compile(r"<!--\s*illustration:[^>]*-->\s*$")
RUN = {"python", "ipython"}  # run by conftest.py's Sybil parsers
OUTPUT = {"text"}  # what the block before printed


def _blocks(text: str) -> list[tuple[str, int]]:
    """(language, offset) of each opening fence."""
    found, inside = [], False
    for m in FENCE.finditer(text):
        if not inside:
            found.append((m.group(1), m.start()))
        inside = not inside
    return found


def test_every_block_is_run_or_marked_as_an_illustration():
    illustrations, unmarked = [], []
    for page in PAGES:
        text = page.read_text()
        for language, at in _blocks(text):
            marked = ILLUSTRATION.search(text, max(0, at - 300), at) is not None
            where = f"{page.relative_to(ROOT)}:{text.count(chr(10), 0, at) + 1}"
            if marked:
                illustrations.append(where)
            elif language not in RUN | OUTPUT:
                unmarked.append(f"{where} ({language or 'no language'})")
    assert not unmarked, f"blocks neither run nor marked <!-- illustration: why -->: {unmarked}"
    assert len(illustrations) <= 6, f"illustrations should stay few: {illustrations}"


def test_no_page_shows_doctest_markup():
    """A doctest's expected output is what the reader sees: it is compared exactly (no
    whitespace normalising), so it never needs ``<BLANKLINE>``, which a page would show."""
    shown = [str(page.relative_to(ROOT)) for page in PAGES if "<BLANKLINE>" in page.read_text()]
    assert not shown, f"pages showing <BLANKLINE>: {shown}; print with end='' or show the output as it is"


def test_the_testing_page_test_module_runs_when_copied(cuforge_cache_dir, tmp_path, monkeypatch):
    """The page's "test module, as a project would write it" imports what it uses."""
    text = (ROOT / "docs" / "guide" / "testing.md").read_text()
    start = text.index("```python\n", text.index("A test module, as a project would write it"))
    (tmp_path / "test_copied.py").write_text(text[start + len("```python\n") : text.index("```", start + 3)])
    monkeypatch.syspath_prepend(tmp_path)
    try:
        importlib.import_module("test_copied").test_wrong_dtype_is_rejected_before_the_gpu()
    finally:
        sys.modules.pop("test_copied", None)


POINTER = re.compile(r"""(README|docs/[\w/.-]+\.md)(?:'s)?[,:]? ["']([^"'\n]+)["']|(docs/[\w/.-]+\.md)""")


def test_pointers_to_the_docs_name_what_exists():
    """A mention of a page (``docs/guide/types.md``), or of a section of it or of the README
    (``docs/guide/types.md, "Without a C compiler"``), in the code, examples or build files
    names a page that exists and a section it has."""
    files = [ROOT / "setup.py", *(ROOT / "src").rglob("*.py"), *(ROOT / "examples").rglob("*.py"),
             *(ROOT / "examples").rglob("*.ipynb"), *(ROOT / "benchmarks").glob("*.py")]  # fmt: skip
    stale = []
    for path in files:
        for m in POINTER.finditer(path.read_text()):
            page = ROOT / (m.group(1) or m.group(3))
            if not page.is_file() or (m.group(2) and m.group(2) not in page.read_text()):
                stale.append(f"{path.relative_to(ROOT)}: {m.group(0)}")
    assert not stale, f"pointers to pages or sections that do not exist: {stale}"


def test_the_readme_is_short():
    assert len((ROOT / "README.md").read_text().splitlines()) < 120


def test_the_four_questions_are_answered_from_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text()
    home = (ROOT / "docs" / "index.md").read_text()
    for question, page, anchor in (
        ("How do I pass a CuPy stream?", "guide/launching.md", "## Streams"),
        ("Why was my kernel recompiled?", "guide/cache.md", "## Why a kernel is compiled again"),
        ("How do I ship kernels without NVRTC?", "guide/prebuilt.md", "## Ahead-of-time builds"),
        ("What happens after an illegal address?", "guide/errors.md", "## A kernel that faults"),
    ):
        assert page in nav and question in home, question
        assert anchor in (ROOT / "docs" / page).read_text(), (page, anchor)


# ------------------------------------------------------------------ docstrings


def _members(cls: type) -> dict[str, object]:
    """The class's own members, then those of its private cuforge bases (mixins such as
    Kernel's, which the reference shows as the class's own; a public base shows its own)."""
    found: dict[str, object] = {}
    for klass in cls.__mro__:
        if klass is cls or klass.__module__.startswith("cuforge._"):
            for attr, value in vars(klass).items():
                found.setdefault(attr, value)
    return found


@functools.cache
def _public() -> dict[str, object]:
    """Every public function, class and method (by dotted name)."""
    found: dict[str, object] = {}
    for name in cf.__all__:
        obj = getattr(cf, name)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            found[name] = obj
        if inspect.isclass(obj) and not issubclass(obj, Exception):
            for attr, value in _members(obj).items():
                if attr.startswith("_") and attr not in ("__call__", "__getitem__"):
                    continue
                fn = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
                if inspect.isfunction(fn):
                    found[f"{name}.{attr}"] = fn
    return found


def _needs(obj: object) -> list[str]:
    """The sections a NumPy-style docstring of ``obj`` must have."""
    if inspect.isclass(obj):
        return [] if issubclass(obj, Exception) else ["Examples"]
    sig = inspect.signature(obj)  # type: ignore[arg-type]
    params = [p for p in sig.parameters if p not in ("self", "cls")]
    sections = ["Parameters"] if params else []
    if sig.return_annotation not in ("None", None, inspect.Signature.empty):
        sections.append("Returns")
    return sections


@pytest.mark.parametrize("name", sorted(_public()))
def test_public_docstrings_are_complete(name):
    obj = _public()[name]
    doc = inspect.getdoc(obj) or ""
    assert doc.strip(), f"{name} has no docstring"
    missing = [s for s in _needs(obj) if not re.search(rf"^{s}\n-+$", doc, re.M)]
    assert not missing, f"{name}'s docstring lacks {missing}"


def _referenced() -> dict[str, object]:
    """What docs/reference.md renders (each ``::: name``), and the public members shown with it."""
    found: dict[str, object] = {}

    def add(name: str, obj: object) -> None:
        found[name] = obj
        if inspect.ismodule(obj):  # a module shows what its __all__ names
            for attr in obj.__all__:
                add(f"{name}.{attr}", getattr(obj, attr))
        elif inspect.isclass(obj):
            for attr, value in _members(obj).items():
                if attr.startswith("_") and attr not in ("__call__", "__getitem__"):
                    continue
                value = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
                if inspect.isfunction(value) or inspect.isclass(value):
                    add(f"{name}.{attr}", value)

    for ident in re.findall(r"^::: ([\w.]+)", (ROOT / "docs" / "reference.md").read_text(), re.M):
        if ident.startswith("cuforge.torch") and importlib.util.find_spec("torch") is None:
            continue  # (the torch extra is not installed: CI; the docs build reads the source)
        if ident.startswith("cuforge.jax") and importlib.util.find_spec("jax") is None:
            continue  # (likewise for the jax extra)
        parts = ident.split(".")
        obj: object = importlib.import_module(parts[0])
        for i, part in enumerate(parts[1:], 2):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ModuleNotFoundError:
                obj = getattr(obj, part)
        add(ident, obj)
    return found


SPHINX_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|attr|data|mod|exc|obj|ref|any):`")


def test_the_api_reference_shows_no_sphinx_roles_nor_internals():
    """The reference renders docstrings as Markdown, where ``:class:`Kernel``` shows as typed:
    a docstring links with ``[`Kernel`][cuforge.Kernel]`` (or plain backticks) instead. What it
    shows is for users: no private module (``_decl``) is named."""
    shown = _referenced()
    assert "cuforge.Kernel.compile" in shown and "cuforge.testing.random_array" in shown
    roles = [name for name, obj in shown.items() if SPHINX_ROLE.search(inspect.getdoc(obj) or "")]
    assert not roles, f"docstrings on the API reference with Sphinx roles: {roles}"
    private = [name for name, obj in shown.items() if re.search(r"`_[a-z]", inspect.getdoc(obj) or "")]
    assert not private, f"docstrings on the API reference naming private modules: {private}"


def test_the_api_reference_shows_every_public_class_and_function():
    """Each class and function ``cuforge.__all__`` names is on the reference page (dtypes and
    the version are values, not shown there)."""
    shown = {id(obj) for obj in _referenced().values()}
    public = {name: getattr(cf, name) for name in cf.__all__}
    missing = [n for n, obj in public.items() if (inspect.isclass(obj) or inspect.isfunction(obj)) and id(obj) not in shown]
    assert not missing, f"public but not on docs/reference.md: {missing}"


def test_the_api_reference_documents_each_object_once():
    """Each object is shown once, under one name."""
    idents = re.findall(r"^::: ([\w.]+)", (ROOT / "docs" / "reference.md").read_text(), re.M)
    shown = _referenced()
    owners = {}
    for name, obj in shown.items():
        if inspect.isclass(obj) or inspect.isfunction(obj):
            owners.setdefault(id(obj), []).append(name)
    twice = [names for names in owners.values() if len(names) > 1]
    assert not twice and len(idents) == len(set(idents)), f"documented more than once: {twice}"


@functools.cache  # parsed once: collection and every test read it
def _examples() -> dict[str, list[doctest.DocTest]]:
    """The docstring examples of each public name: a class's and its methods' share one
    namespace, in order, so that a method's example uses what the class's declared."""
    finder = doctest.DocTestFinder(recurse=False)
    groups: dict[str, list[doctest.DocTest]] = {}
    for name, obj in _public().items():
        for t in finder.find(obj, name):
            if t.examples:
                groups.setdefault(name.split(".")[0], []).append(t)
    return groups


def _run(name: str, device: str | None) -> None:
    """Every example of ``name``: +GPU ones only on the GPU (``device`` "cuda"), +LAUNCH ones
    only on a device (None: neither runs)."""
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    globs = {"cf": cf, "np": np}
    for test in _examples()[name]:
        for example in test.examples:
            if (example.options.get(GPU) and device != "cuda") or (example.options.get(LAUNCH) and device is None):
                example.options[doctest.SKIP] = True
        test.globs = globs
        runner.run(test, clear_globs=False)
    assert runner.failures == 0, f"{name}: {runner.failures} example(s) failed (see the output above)"


def _flagged(flag: int) -> list[str]:
    return sorted(n for n, tests in _examples().items() if any(e.options.get(flag) for t in tests for e in t.examples))


@pytest.mark.parametrize("name", sorted(_examples()))
def test_docstring_examples_run(name, cuforge_cache_dir):
    """Every example but those marked +GPU or +LAUNCH (run by the tests below)."""
    _run(name, None)


@pytest.mark.parametrize("name", _flagged(LAUNCH))
def test_docstring_launch_examples_run(name, cuforge_cache_dir, cuforge_device):
    """The docstrings with +LAUNCH examples, all their examples, on the chosen device (the
    +GPU ones too on the GPU)."""
    _run(name, cuforge_device)


@pytest.mark.gpu
def test_docstring_gpu_examples_run(cuforge_cache_dir):
    """The docstrings with +GPU examples (and no +LAUNCH ones, run above), all their examples,
    on the GPU machine (-m gpu): one check, naming each docstring whose examples failed."""
    failed = []
    for name in sorted(set(_flagged(GPU)) - set(_flagged(LAUNCH))):
        try:
            _run(name, "cuda")
        except AssertionError as exc:
            failed.append(str(exc))
    assert not failed, failed
