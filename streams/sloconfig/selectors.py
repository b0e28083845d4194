"""Kubernetes label selectors as the slo-controller-config's ``nodeConfigs`` use them.

``metav1.LabelSelectorAsSelector`` semantics: ``matchLabels`` are equality
requirements, ``matchExpressions`` use ``In`` / ``NotIn`` / ``Exists`` /
``DoesNotExist``; all requirements must hold. An empty selector (``{}``)
matches every node, a missing one (``None``) matches none. A selector that
does not parse (unknown operator, ``In`` without values, ``Exists`` with
values) is kept but matches nothing, which is what Koordinator's controller
does when it skips such a node config; ``parse_slo_config`` rejects it first,
as Koordinator's ConfigMap webhook does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclasses.dataclass(frozen=True)
class LabelSelector:
    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    error: str | None = None
    """Why the selector does not parse; None when it is valid."""

    @property
    def empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.error is not None:
            return False
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for key, operator, values in self.match_expressions:
            present = key in labels
            if operator == "In" and not (present and labels[key] in values):
                return False
            if operator == "NotIn" and present and labels[key] in values:
                return False
            if operator == "Exists" and not present:
                return False
            if operator == "DoesNotExist" and present:
                return False
        return True

    def virtual_nodes(self) -> list[dict[str, str]]:
        """Koordinator's webhook ``generateNodesByNodeSelector``: label sets that match, to detect overlaps."""
        count = 1
        for _, _, values in self.match_expressions:
            if values:
                count *= len(values)
        nodes: list[dict[str, str]] = [{} for _ in range(count)]
        for key, value in self.match_labels:
            for node in nodes:
                node[key] = value
        for key, _, values in self.match_expressions:
            if values:
                for index, node in enumerate(nodes):
                    node[key] = values[index % len(values)]
        return nodes


def parse_selector(raw: object, where: str) -> LabelSelector:
    """A ``metav1.LabelSelector`` from decoded JSON; raises ValueError for a wrong shape."""
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: a label selector must be an object")
    labels = raw.get("matchLabels") or {}
    expressions = raw.get("matchExpressions") or []
    if not isinstance(labels, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        raise ValueError(f"{where}.matchLabels: must map label keys to string values")
    if not isinstance(expressions, list):
        raise ValueError(f"{where}.matchExpressions: must be a list")
    parsed, error = [], None
    for index, expression in enumerate(expressions):
        if not isinstance(expression, dict):
            raise ValueError(f"{where}.matchExpressions[{index}]: must be an object")
        key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        if not isinstance(key, str) or not isinstance(operator, str) or not isinstance(values, list) \
                or not all(isinstance(v, str) for v in values):
            raise ValueError(f"{where}.matchExpressions[{index}]: needs a string key, operator and string values")
        if operator not in OPERATORS:
            error = error or f"{where}.matchExpressions[{index}]: {operator!r} is not a valid label selector operator"
        elif operator in ("In", "NotIn") and not values:
            error = error or f"{where}.matchExpressions[{index}]: values must be non-empty for operator {operator}"
        elif operator in ("Exists", "DoesNotExist") and values:
            error = error or f"{where}.matchExpressions[{index}]: values must be empty for operator {operator}"
        parsed.append((key, operator, tuple(values)))
    return LabelSelector(tuple(sorted(labels.items())), tuple(parsed), error)
