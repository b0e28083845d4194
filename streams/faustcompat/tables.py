"""What koordstream's tables need of Faust's that Faust offers no argument for. Checked against
faust-streaming 0.15.3 (``FAUST_VERSION``).

- A table's changelog topic is built (``Collection._new_changelog_topic``) with the table's value
  serializer at construction, and ``app.Table`` takes none: :func:`raw_changelog` switches a table to
  raw bytes and builds its changelog topic again.
- A table write (``table[key] = value``) sends its changelog record at once through Faust's producer
  buffer, one ``FutureMessage`` and one aiokafka ``send`` per record, to the partition of Faust's current
  event. :func:`store_quietly` changes the table's store the same way and returns the changelog record
  instead, serialised as Faust would (the changelog topic's key and value schema: same bytes, so
  compaction and recovery see no difference), for the caller to send with its batch's other records
  (``streams.faustcompat.produce``) to the partition it names. For a memory store (the only one here)
  nothing else of Faust's write path applies: no key TTL (not windowed), no persisted offset.
"""

from __future__ import annotations

from typing import Any


def raw_changelog(table) -> None:
    """Make ``table`` (a Faust table, before the app starts) keep and send its values as raw bytes."""
    table.value_serializer = "raw"
    table.changelog_topic = table._new_changelog_topic()


def store_quietly(table, key: str, value: Any, data: bytes | None = None) -> tuple[bytes, bytes | None]:
    """Set ``key`` to ``value`` in ``table``'s store (None: remove it) without Faust's changelog send; the
    changelog record's (key, value) as bytes, None for a removal's tombstone. ``data``: the value serialised
    already, as the table's serialiser would (the caller's word), sent as it is."""
    topic = table.changelog_topic
    key_bytes, _ = topic.prepare_key(key, table.key_serializer)
    if value is None:
        table.data.pop(key, None)
        return key_bytes, None
    value_bytes = data if data is not None else topic.prepare_value(value, table.value_serializer)[0]
    table.data[key] = value
    return key_bytes, value_bytes
