"""No import cycle between the subpackages of ``streams``, ``state`` and ``node_agent`` (``streams.agents``,
``streams.kafka``, ``state.queries``, ...) nor between any two of their modules.

Imports are read from the source with ``ast``, imports inside functions included (a lazy import hides a
cycle from the interpreter, not from the reader). A package importing its own submodules is not a cycle.
The three top-level packages are not compared with each other: ``state`` and ``node_agent`` build on
``streams``, and ``streams``' projection, bridge and benchmarks use them in turn.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ROOTS = ("streams", "node_agent", "state")


def _modules() -> dict[str, Path]:
    found = {}
    for root in ROOTS:
        for path in (REPO / root).rglob("*.py"):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules ``name`` imports: each imported name resolved to the longest known module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in names:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                targets.add(target)
    return targets


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _graph(level: int | None) -> dict[str, set[str]]:
    """Module -> imported modules, each cut to its first ``level`` name parts (None: whole names)."""
    modules = _modules()

    def cut(name: str) -> str:
        return name if level is None else ".".join(name.split(".")[:level])

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        for target in _imports(name, path, set(modules)):
            if level is None and target.startswith(name + "."):
                continue
            if cut(name) != cut(target):
                graph.setdefault(cut(name), set()).add(cut(target))
    return graph


@pytest.mark.parametrize("level", [pytest.param(2, id="subpackages"), pytest.param(None, id="modules")])
def test_no_import_cycle(level):
    assert _cycles(_graph(level)) == []


def test_the_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
