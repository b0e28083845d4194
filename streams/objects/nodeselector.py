"""One node selector requirement against one node's label value (``v1helper`` / component-helpers'
``nodeaffinity``), shared by NodeAffinity, PodTopologySpread's ``nodeAffinityPolicy: Honor`` and the
descheduler's node fit, which must match nodes alike.

Operators: In, NotIn (an absent label matches), Exists, DoesNotExist, Gt and Lt (the label and the single
value are integers; a label that is not an integer does not match).
"""

from __future__ import annotations

from streams.objects.podinfo import Requirement


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def matches(requirement: Requirement, value: str | None) -> bool:
    """``requirement`` against one node's label value (None: label absent)."""
    op, values = requirement.operator, requirement.values
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and len(values) == 1:
        left, right = _int(value), _int(values[0])
        if left is None or right is None:
            return False
        return left > right if op == "Gt" else left < right
    return False
