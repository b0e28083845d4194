"""Whether an object's record fits the record size limit (``streams.limits``), and what makes it big.

The record is the key, the encoded value and the headers it is sent with, as Kafka counts them. Its
value holds the typed fields and the whole manifest, so a large field counts about twice. A record
over the limit is reported with the document's heaviest field, so the user knows what to shrink.
"""

import json
from typing import Any

from streams import limits
from streams.objects.fields import child, item
from streams.schemas import codec

_HEAVY_SHARE = 0.5
"""``heaviest_field`` descends into a child only while it holds at least this share of its parent."""


def size_problem(schema: str, key: str, record: dict, body: Any, headers: limits.Headers = ()) -> str | None:
    """Why the record of ``body`` is too big to apply, naming its heaviest field; None when it fits."""
    reason = limits.too_big(codec.encode(schema, record), key, headers)
    if reason is None:
        return None
    path, size = heaviest_field(body)
    return f"{path}: {size:,} bytes; {reason}" if path else reason


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


def _json_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
