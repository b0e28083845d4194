"""Checks a decoded source record must pass before it enters an inbox.

The CLI validates manifests before producing, but anyone may produce to the
source topics (node agents, other tools). A record that decodes yet is not a
valid object (wrong kind for the topic, negative quantity, no name, key that
does not name it) is sent to the dead-letter topic instead.
"""

from __future__ import annotations

from streams.routing import KIND_BY_SOURCE

QUANTITY_FIELDS = ("capacity", "allocatable", "requests", "limits", "min", "max", "nodeUsage")


def problems(source_id: str, key: str | None, kind: str, record: dict) -> list[str]:
    allowed = KIND_BY_SOURCE.get(source_id, ())
    if kind not in allowed:
        return [f"a {kind} record does not belong on the {source_id} topic (expected {', '.join(allowed)})"]
    if "metadata" not in record:
        return []
    found = []
    meta = record["metadata"]
    name = meta.get("name")
    if not name:
        found.append("metadata.name is empty")
    elif key is not None:
        expected = f"{meta['namespace']}/{name}" if meta.get("namespace") else name
        if key != expected:
            found.append(f"key {key!r} does not name the object (expected {expected!r})")
    for field in QUANTITY_FIELDS:
        for resource, value in sorted((record.get(field) or {}).items()):
            if value < 0:
                found.append(f"{field}.{resource}: quantity must not be negative: {value}")
    return found
