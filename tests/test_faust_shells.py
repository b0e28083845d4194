"""Faust stays in its shells: no module outside them imports ``faust`` or ``mode``, and the node agent, the
read model, the replay and the bridge do not reach Faust through the project's own modules either.

The shells are the agents (``streams.agents``), the app that assembles them (``streams.app``) and the
patches to Faust (``streams.faustcompat``). Everything else (the contracts the agents and the replay share,
the pure cores, the node agent that runs on every node) runs without Faust. Imports are read with ``ast``,
imports inside functions included, as in ``tests/test_import_cycles.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_import_cycles import _imports, _modules

SHELLS = ("streams.agents", "streams.app", "streams.faustcompat")
FAUST = ("faust", "mode")
FAUST_FREE = ("node_agent", "state", "streams.replay", "streams.bridge", "streams.inbox", "streams.outputs",
              "streams.partitioning", "streams.domainrouter", "streams.kafka", "streams.roles")
"""Packages and modules that must not reach a Faust shell through any import chain."""


def _within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == package or name.startswith(package + ".") for package in packages)


def _external(path: Path) -> set[str]:
    """The top-level names of every absolute import in ``path``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_only_the_shells_import_faust():
    importing = sorted(name for name, path in _modules().items()
                       if not _within(name, SHELLS) and _external(path) & set(FAUST))
    assert importing == []


def test_the_faust_free_modules_reach_no_shell():
    modules = _modules()
    graph = {name: _imports(name, path, set(modules)) for name, path in modules.items()}
    reached = {}
    for start in (name for name in modules if _within(name, FAUST_FREE)):
        stack, seen = [start], {start}
        while stack:
            for target in graph[stack.pop()]:
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        shells = sorted(name for name in seen if _within(name, SHELLS) and _external(modules[name]) & set(FAUST))
        if shells:
            reached[start] = shells
    assert reached == {}


def test_the_check_sees_the_shells_imports():
    modules = _modules()
    assert {"faust"} <= _external(modules["streams.app"]) and "mode" in _external(modules["streams.agents.supervisor"])
