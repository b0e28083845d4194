"""Tolerations against taints (``v1helper``, ``corev1.Toleration.ToleratesTaint``)::

    effect set and different           -> no
    key set and different              -> no
    operator Exists                    -> yes
    operator Equal (or empty)          -> values equal
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "value": None, "effect": "NoSchedule"}


def tolerates(toleration: Mapping, taint: Mapping) -> bool:
    effect = toleration.get("effect")
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key")
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def tolerated(taint: Mapping, tolerations: Iterable[Mapping]) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def key_of(tolerations: Iterable[Mapping]) -> tuple:
    """A hashable form of a pod's tolerations, for caching per toleration set."""
    return tuple(tuple(sorted((k, v) for k, v in t.items())) for t in tolerations)
