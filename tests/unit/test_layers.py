"""The package's layering, read from its imports (module- and function-level, and those made
only for type checking): no module imports one of a higher layer, and no two modules import
each other, directly or round a loop. docs/architecture.md draws the same layers."""

from __future__ import annotations

import ast
import pathlib

SRC = pathlib.Path(__file__).resolve().parents[2] / "src"

# lowest first; a module may import its own layer's modules and those of the layers below
LAYERS = [
    ("foundation", ["cuforge.errors", "cuforge.options", "cuforge._config", "cuforge._version", "cuforge._digest", "cuforge._frozen"]),
    ("declare", ["cuforge._declare"]),
    ("compile", ["cuforge._compile"]),
    ("runtime", ["cuforge._runtime", "cuforge._claunch", "cuforge._cpu"]),
    ("launch", ["cuforge._launch"]),
    ("kernel", ["cuforge._kernel"]),
    ("integrations", ["cuforge.integrations"]),
    ("facade", ["cuforge"]),
]

# The imports that go up on purpose, each with its reason.
UPWARD: dict[tuple[str, str], str] = {
    ("cuforge._kernel.kernel", "cuforge.integrations.torch"): "Kernel.torch_op, public, delegates to cf.torch.custom_op",
    ("cuforge._kernel.family", "cuforge.integrations.torch"): "Family.torch_op, public, delegates to cf.torch.custom_op",
    ("cuforge._kernel.kernel", "cuforge.integrations.jax"): "Kernel.jax_op, public, delegates to cf.jax.op",
    ("cuforge._kernel.family", "cuforge.integrations.jax"): "Family.jax_op, public, delegates to cf.jax.op",
}


def _modules() -> dict[str, pathlib.Path]:
    found = {}
    for path in (SRC / "cuforge").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()
EXTENSION = "cuforge._claunch"  # the C launcher (src/cuforge/_csrc): it imports nothing


def _imports(name: str, path: pathlib.Path) -> set[str]:
    """The cuforge modules ``name`` imports, anywhere in its code."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            known = {*MODULES, EXTENSION}
            subs = [f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in known]
            out.update(subs or ([target] if target in MODULES else []))
            if subs and len(subs) < len(node.names) and target in MODULES:
                out.add(target)  # names of the package itself, beside its submodules
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names if alias.name in {*MODULES, EXTENSION})
    out.discard(name)
    return out


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()} | {EXTENSION: set()}


def layer_of(module: str) -> int:
    best, found = -1, None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), index
    assert found is not None, module
    return found


def test_every_module_has_a_layer():
    assert {layer_of(m) for m in MODULES} >= {0, 1, 2, 3, 4, 5, 6, 7}


def test_no_import_goes_up_a_layer():
    up = sorted(
        f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})"
        for a, targets in GRAPH.items()
        for b in targets
        if layer_of(b) > layer_of(a) and (a, b) not in UPWARD
    )
    assert not up, "imports from a lower layer to a higher one:\n" + "\n".join(up)


def test_each_allowed_upward_import_exists_and_has_a_reason():
    for (a, b), why in UPWARD.items():
        assert b in GRAPH[a] and why, (a, b)


def _cycles() -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle():
    cycles = _cycles()
    assert not cycles, "modules that import each other round a loop:\n" + "\n".join(" <-> ".join(c) for c in cycles)
