"""The scheduler's boundaries: it reads no node-QoS module (a decision's labels and annotations come from
``streams.decisions``), the node agent reads no scheduler module (pods through ``streams.objects.podinfo``), the
domain router reads no scheduler plugin (quotas through ``streams.quotas``), and the scheduling domain names no
plugin's module (it reaches plugins through the framework's protocols)."""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports (imports inside functions included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


@pytest.mark.parametrize("files, forbidden", [
    pytest.param("streams/scheduler/**/*.py", "streams.nodeqos", id="scheduler-not-nodeqos"),
    pytest.param("node_agent/**/*.py", "streams.scheduler", id="node-agent-not-scheduler"),
    pytest.param("streams/domains.py", "streams.scheduler", id="router-not-scheduler"),
    pytest.param("streams/scheduler/domain.py", "streams.scheduler.plugins", id="domain-not-plugins"),
    pytest.param("streams/scheduler/domain.py", "streams.descheduler", id="domain-not-descheduler"),
])
def test_no_module_crosses_the_boundary(files, forbidden):
    crossing = sorted(f"{path.relative_to(REPO)}: {name}" for path in REPO.glob(files)
                      for name in imported(path) if name == forbidden or name.startswith(forbidden + "."))
    assert crossing == []
