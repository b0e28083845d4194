"""Whether an object fits the record size limit and the state budget (``streams.limits``), and what makes it big.

The record is the key, the encoded value and the headers it is sent with, as Kafka counts them. Its
value holds the typed fields and the whole manifest, so a large field counts about twice. A record
over the limit is reported with the document's heaviest field, so the user knows what to shrink.

The stored form is what a state table keeps of the object (``stored_form``: a Pod's record reduced by
``podinfo.stored_record``, a Node's without its manifest, any other kind's record whole), as the table
serialises it: compact JSON with non-ASCII escaped, so a ``"`` in a string takes two bytes and the
manifest, a JSON string, is escaped again. ``state_problem`` is the one check of it that ``koord apply``,
the router and the bridge make: an object whose stored form is over ``STORED_OBJECT_MAX_BYTES`` is
refused where it enters, so no table entry or changelog record is ever over its budget.
"""

import json
from collections.abc import Mapping
from typing import Any

from streams import limits
from streams.objects import podinfo
from streams.objects.fields import child, item
from streams.schemas import codec

UNSTORED_KINDS = ("NodeMetric", "NodeResource", "ConfigMap", "Tick")
"""Kinds no table keeps as a JSON record: of a NodeMetric the state keeps usage figures, of a NodeResource its
allocatable, a ConfigMap as its Avro record (within the record limit), a Tick not at all."""

_HEAVY_SHARE = 0.5
"""``heaviest_field`` descends into a child only while it holds at least this share of its parent."""


def size_problem(schema: str, key: str, record: dict, body: Any, headers: limits.Headers = ()) -> str | None:
    """Why the record of ``body`` is too big to apply, naming its heaviest field; None when it fits."""
    reason = limits.too_big(codec.encode(schema, record), key, headers)
    if reason is None:
        return None
    path, size = heaviest_field(body)
    return f"{path}: {size:,} bytes; {reason}" if path else reason


def state_problem(kind: str | None, record: Mapping | None, manifest: Any = None) -> str | None:
    """Why the stored form of ``record`` (an object of ``kind``) is over the state budget, naming its heaviest
    field; None when it fits, when there is no record (a deletion) or when no table keeps the record.
    ``manifest`` is the record's parsed, when the caller has it (a Pod's is reduced, not parsed again)."""
    if record is None or kind in UNSTORED_KINDS:
        return None
    stored = stored_form(kind, record, manifest)
    size = len(json.dumps(stored, separators=(",", ":")))
    if size <= limits.STORED_OBJECT_MAX_BYTES:
        return None
    path, heaviest = heaviest_field({**stored, "manifest": _parsed(stored.get("manifest"))})
    where = f"{path}: {heaviest:,} bytes; " if path else ""
    return (f"{where}stored in the state it is {size:,} bytes of JSON, over the "
            f"{limits.STORED_OBJECT_MAX_BYTES:,}-byte budget of a stored object")


def stored_form(kind: str | None, record: Mapping, manifest: Any = None) -> dict:
    """What a state table keeps of ``record``: a Pod's reduced record (``podinfo.stored_record``), a Node's
    record without its manifest (the scheduler reads a node's typed fields only), any other kind's record."""
    if kind == "Pod":
        return podinfo.stored_record(record, manifest if isinstance(manifest, dict) else None)
    if kind == "Node":
        return {**record, "manifest": "{}"}
    return dict(record)


def heaviest_field(body: Any) -> tuple[str, int]:
    """Where the bulk of ``body`` is: from the top, the path into the heaviest child for as long as it
    holds at least half of its parent's JSON bytes, and its JSON bytes ("" and the whole's bytes when
    no field dominates)."""
    path, node, size = "", body, _json_size(body)
    while isinstance(node, (dict, list)) and node:
        children = node.items() if isinstance(node, dict) else enumerate(node)
        sizes = [(_json_size(value), name, value) for name, value in children]
        top, name, value = max(sizes, key=lambda entry: entry[0])
        if top < size * _HEAVY_SHARE:
            break
        path = child(path, name) if isinstance(node, dict) else item(path, name)
        node, size = value, top
    return path, size


def _parsed(manifest: Any) -> Any:
    """The manifest as a document, so the heaviest field is found inside it."""
    try:
        return json.loads(manifest) if isinstance(manifest, str) else manifest
    except ValueError:
        return manifest


def _json_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
