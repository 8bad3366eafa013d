"""Runs the code blocks of README.md and docs/ as tests (Sybil), and loads cuforge's pytest
plugin where cuforge is not installed (the GPU machine runs the tests from the source tree).

How a block is marked in the Markdown, with HTML comments that no page shows:

- a ``python`` block runs on every machine, CI's included, which has no GPU: it compiles,
  renders, checks arguments or shows an error. Blocks with ``>>>`` are doctests, their
  output compared exactly, whitespace included, as the page shows it (``...`` matches
  anything);
- an ``ipython`` block is a notebook cell (``%%cuda``, ``%load_ext``), run by a real IPython
  shell; from a page's first cell on, ``cf`` and ``np`` are what its cells import, as in a
  reader's session;
- ``<!-- launches -->`` just before a block: it launches kernels on host (NumPy) arrays, so
  its test carries the ``launches`` marker: it runs on the GPU where one is usable, else on
  cuforge's CPU backend (the plugin's ``--cuforge-device``);
- ``<!-- gpu -->`` just before a block: it needs the GPU itself (device memory, CuPy,
  streams, graphs, a fault), so its test carries the ``gpu`` marker and skips with the reason
  where no GPU is present. ``-m gpu`` (or ``-m launches``) also selects the other blocks of a
  page that has one, since its launching blocks build on the names they define;
- ``<!-- illustration: why -->`` just before a block: shown, never run (a shell command that
  installs, a user's own fatbin). tests/unit/test_docs.py holds every other block to the
  rules above and keeps such blocks few;
- ``<!-- invisible-code-block: python ... -->``: set-up or checks a reader need not see
  (``<!-- gpu -->`` or ``<!-- launches -->`` may stand before one too);
- a ``text`` block is what the block before it printed.

The blocks of one page share a namespace (``cf`` and ``np`` are in it), and run in order.
Each gets an empty cuforge cache directory (the plugin's ``cuforge_cache_dir`` fixture), as
every test does.
"""

from __future__ import annotations

import doctest
import importlib.metadata
import re
import sys
from collections.abc import Iterable
from typing import Any

import pytest
from sybil import Document, Example, Region, Sybil
from sybil.parsers.markdown import CodeBlockParser, PythonCodeBlockParser

if not any(ep.value == "cuforge.pytest_plugin" for ep in importlib.metadata.entry_points(group="pytest11")):
    pytest_plugins = ["cuforge.pytest_plugin"]

GPU_MARK = re.compile(r"<!--\s*gpu\s*-->\s*$")
LAUNCH_MARK = re.compile(r"<!--\s*launches\s*-->\s*$")
ILLUSTRATION_MARK = re.compile(r"<!--\s*illustration:[^>]*-->\s*$")


def _marked(mark: re.Pattern[str], document: Document, start: int) -> bool:
    """Whether the comment ``mark`` stands just before the block holding ``start``: a fenced
    block (a doctest block is one example per ``>>>`` statement) or an invisible one."""
    text = document.text
    fence = start if text.startswith("<!--", start) else text.rfind("```", 0, start + 3)
    return fence >= 0 and mark.search(document.text, max(0, fence - 300), fence) is not None


class _Runnable:
    """Drops the blocks marked as illustrations from a parser's regions."""

    def __init__(self, parser: Any):
        self.parser = parser

    def __call__(self, document: Document) -> Iterable[Region]:
        return (r for r in self.parser(document) if not _marked(ILLUSTRATION_MARK, document, r.start))


def _run_cell(example: Example) -> None:
    """An ``ipython`` block: one cell of a real IPython shell, with cuforge's extension loaded."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = example.namespace.get("_shell")
    if shell is None:
        shell = example.namespace["_shell"] = InteractiveShell.instance()
        # A page with cells is a notebook: its names are those its cells import, not the ``cf``
        # and ``np`` every page is given, so that the page shows the imports a session needs.
        for name in _GIVEN:
            example.namespace.pop(name, None)
        shell.user_ns.update({k: v for k, v in example.namespace.items() if not k.startswith("_")})
        example.namespace["_ns"] = shell.user_ns
    result = shell.run_cell(example.parsed)
    example.namespace.update({k: v for k, v in shell.user_ns.items() if not k.startswith("_")})
    if not result.success:
        raise AssertionError(f"the cell failed: {result.error_before_exec or result.error_in_exec!r}")


_GIVEN = ("cf", "np")  # what _setup puts in every page's namespace
_MAIN = sys.modules["__main__"]  # the session's own, before any IPython shell


def _setup(namespace: dict[str, Any]) -> None:
    import numpy as np

    import cuforge as cf

    namespace.update(cf=cf, np=np, __name__="__main__")  # a page's blocks run as a script's do


def _teardown(namespace: dict[str, Any]) -> None:
    shell = namespace.get("_shell")
    if shell is not None:  # the next page's cells start from an empty shell
        from IPython.core.interactiveshell import InteractiveShell

        shell.user_ns.clear()
        InteractiveShell.clear_instance()
        sys.modules["__main__"] = _MAIN  # the session's (the shell put its own there): spawn reads its __spec__


pytest_collect_file = Sybil(
    parsers=[
        _Runnable(PythonCodeBlockParser(doctest_optionflags=doctest.ELLIPSIS)),
        _Runnable(CodeBlockParser("ipython", _run_cell)),
    ],
    patterns=["README.md", "docs/*.md", "docs/**/*.md"],
    setup=_setup,
    teardown=_teardown,
    fixtures=["cuforge_cache_dir", "cuforge_compile_counter"],
).pytest()


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    blocks = [item for item in items if getattr(item, "example", None) is not None]
    marks = {"gpu": GPU_MARK, "launches": LAUNCH_MARK}
    chosen: dict[pytest.Item, str] = {}
    for item in blocks:
        example = item.example  # type: ignore[attr-defined]
        for name, mark in marks.items():
            if _marked(mark, example.document, example.region.start):
                chosen[item] = name
    selecting = config.getoption("markexpr", "") or ""
    for name in marks:
        pages = {item.example.document.path for item, n in chosen.items() if n == name}  # type: ignore[attr-defined]
        if name in selecting:  # the page's other blocks define the names its marked ones use
            for item in blocks:
                if item not in chosen and item.example.document.path in pages:  # type: ignore[attr-defined]
                    chosen[item] = name
    for item, name in chosen.items():
        item.add_marker(getattr(pytest.mark, name))
