"""Koordinator's vocabulary (extended resource names, labels, annotations, priority and QoS classes) is written
out only in ``streams/koordinator/``: every other module of ``streams``, ``state`` and ``node_agent`` imports
it. Docstrings may name it; API versions (``slo.koordinator.sh/v1alpha1``) are not vocabulary here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HOME = "streams/koordinator/"
VOCABULARY = re.compile(r"kubernetes\.io/(batch|mid)-(cpu|memory)|koordinator\.sh/(?!v\d)|nvidia\.com/gpu"
                        r"|^(LSE|LSR|LS|BE|SYSTEM|koord-(prod|mid|batch|free)|Guaranteed|Burstable|BestEffort)$")


def _literals(path: Path) -> list[tuple[int, str]]:
    """The string literals of ``path`` that are not docstrings (nor any other bare string statement)."""
    tree = ast.parse(path.read_text(), str(path))
    bare = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in bare]


def test_koordinator_vocabulary_is_written_only_in_its_home():
    found = [f"{path.relative_to(REPO)}:{line}: {value!r}"
             for root in ("streams", "state", "node_agent") for path in sorted((REPO / root).rglob("*.py"))
             if not path.relative_to(REPO).as_posix().startswith(HOME)
             for line, value in _literals(path) if VOCABULARY.search(value)]
    assert found == []


def test_the_check_sees_a_literal_but_not_a_docstring(tmp_path):
    module = tmp_path / "module.py"
    module.write_text('"""Reads kubernetes.io/batch-cpu."""\nNAME = "kubernetes.io/batch-cpu"\nQOS = ("BE", "LSR")\n')
    assert [value for _, value in _literals(module) if VOCABULARY.search(value)] == [
        "kubernetes.io/batch-cpu", "BE", "LSR"]
