"""A reader who pastes a page's code blocks (README.md, docs/), in order, into a fresh interpreter gets no
error: each page's first block imports what the page uses.

conftest.py runs the same blocks too, but in a namespace that already holds ``cf`` and ``np``,
so a page that forgot an import passes there. Here each page runs in a ``python`` process of
its own, with nothing imported, on the CPU (``CUFORGE_DEVICE=cpu``) and with an empty cache
directory. What a reader would not paste is left out: blocks marked ``<!-- gpu -->`` (they
need the GPU itself) or ``<!-- illustration: ... -->``, invisible set-up, and ``text`` output.
A page with ``ipython`` cells is a notebook session: its cells and its ``python`` blocks run,
in order, in one IPython shell, as a reader pastes them into a notebook. A doctest block
(``>>>``) runs its statements as an interpreter would, and one whose expected output is an
exception may raise it (conftest.py compares what each one shows).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\w*)[^\n]*\n", re.M)
LEFT_OUT = re.compile(r"<!--\s*(gpu|illustration:[^>]*)\s*-->\s*$")  # as conftest.py reads them

# Runs in the fresh interpreter: the page's blocks from stdin, in one namespace (a new
# ``__main__``, as a pasted session has; an IPython shell's where the page has cells), each
# compiled with its lines numbered as on the page.
RUNNER = r"""
import doctest, json, sys, traceback, types
page = json.load(sys.stdin)
shell = None
if any(block["kind"] == "cell" for block in page["blocks"]):
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
else:
    main = sys.modules["__main__"] = types.ModuleType("__main__")
def run(source, line, mode="exec"):
    if shell is None:
        exec(compile("\n" * (line - 1) + source, page["path"], mode), main.__dict__)
    else:
        shell.run_cell(source).raise_error()
for block in page["blocks"]:
    try:
        if block["kind"] != "doctest":
            run(block["source"], block["line"])
            continue
        for example in doctest.DocTestParser().get_examples(block["source"]):
            try:
                run(example.source, block["line"] + example.lineno, "single")
            except Exception:
                if example.exc_msg is None:  # not the error the page shows
                    raise
    except BaseException:
        print(f"{page['path']}: the block at line {block['line']} failed:", file=sys.stderr)
        traceback.print_exc()
        sys.exit(1)
"""


def _pasted_blocks(text: str) -> list[dict[str, object]]:
    """The blocks a reader pastes: {kind (code, doctest, cell), line (of the first line of code), source}."""
    blocks, opening = [], None
    for m in FENCE.finditer(text):
        if opening is None:
            opening = m
            continue
        language, body = opening.group(1), text[opening.end() : m.start()]
        if language in ("python", "ipython") and not LEFT_OUT.search(text, max(0, opening.start() - 300), opening.start()):
            kind = "cell" if language == "ipython" else "doctest" if body.lstrip().startswith(">>>") else "code"
            blocks.append({"kind": kind, "line": text.count("\n", 0, opening.end()) + 1, "source": body})
        opening = None
    return blocks


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def _cost(page: Path) -> tuple[bool, int]:
    """What makes a page slow to run: importing JAX, then its length."""
    text = page.read_text()
    return "import jax" in text, len(text)


PASTED = sorted((page for page in PAGES if _pasted_blocks(page.read_text())), key=_cost, reverse=True)


def _run_page(page: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CUFORGE_DEVICE="cpu", CUFORGE_CACHE_DIR=str(cache), PYTHONPATH=os.pathsep.join(sys.path))
    request = json.dumps({"path": _name(page), "blocks": _pasted_blocks(page.read_text())})
    return subprocess.run([sys.executable, "-c", RUNNER], input=request, capture_output=True, text=True, env=env,
                          cwd=cache, timeout=600)  # fmt: skip


@pytest.fixture(scope="module")
def pasted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Future[subprocess.CompletedProcess[str]]]]:
    """Every page's run, started on a few workers at once, slowest first: more workers than
    cores, as a run also waits on imports and on the C++ compiler."""
    with ThreadPoolExecutor(max_workers=min(8, max(4, os.cpu_count() or 1))) as pool:
        yield {_name(page): pool.submit(_run_page, page, tmp_path_factory.mktemp(f"paste-{page.stem}")) for page in PASTED}
        pool.shutdown(cancel_futures=True)


@pytest.mark.parametrize("name", sorted(_name(page) for page in PASTED))
def test_a_pages_blocks_run_pasted_into_a_fresh_interpreter(pasted, name):
    done = pasted[name].result()
    if done.returncode != 0:
        pytest.fail(f"{name}, pasted into a fresh interpreter:\n{done.stderr}", pytrace=False)
