"""The one size limit of a record koordstream writes to Kafka, and the check a reader of records calls.

Kafka counts a record as the batch it travels in: the 61-byte batch header, at most 21 bytes of
record framing, then the key, the value and each header with their lengths. ``record_size`` is that
count exactly as aiokafka's producer takes it (``DefaultRecordBatchBuilder.estimate_size_in_bytes``,
an upper bound) before it compares it with ``max_request_size``.

The figures, from the broker inwards:

- Kafka refuses a batch over the topic's ``max.message.bytes``, by default 1,048,588 bytes: 1 MiB
  plus the 12-byte log overhead (offset and length) that the 61-byte batch header already contains.
- ``PRODUCER_MAX_BYTES`` = 1,048,576 (1 MiB) is every producer's ``max_request_size``
  (``streams.kafka.producer``, the Faust app): a record it accepts is a batch within the broker's
  default, and a bigger one raises ``MessageSizeTooLargeError`` at ``send``, before anything is written.
- The router forwards a source record inside an InboxEvent, which is bigger than the source record by
  at most: the 10-byte single-object header, the source topic (249 bytes + 2 of length), partition (5),
  offset and timestamp (10 each), the key again (``KEY_MAX_BYTES`` + 2), the payload's union branch and
  Avro length (1 + 3), the ack flag (1), the writer's null branch (1) and, in the domain router's forward
  of a pod, where its table applied it (1 + 10), i.e. 305 bytes + ``KEY_MAX_BYTES``; plus the forward's
  Kafka key (the source key or a domain name, at most ``KEY_MAX_BYTES``). With ``KEY_MAX_BYTES`` =
  1,024 that is at most 2,353 bytes, which ``ENVELOPE_RESERVE`` = 4,096 covers.
- ``RECORD_MAX_BYTES`` = 1,048,576 - 4,096 = 1,044,480 bytes (1020 KiB) is therefore the limit of a
  record: ``koord apply`` refuses a bigger object, the router dead-letters a bigger source record, and
  a source record within it still fits the producer once forwarded.

``KEY_MAX_BYTES`` bounds keys, which are object names: "<namespace>/<name>" is at most 63 + 1 + 253
= 317 bytes.

State tables (the aggregates' Faust tables) send each entry to their changelog as one record, so an entry
has a budget too, derived from the same producer limit:

- An entry's changelog record is its table key, its value as the table serialises it (compact JSON,
  non-ASCII escaped, or raw bytes) and the record framing. The key is "<core>|<group>/<name>": a core
  (a domain name or a partition, at most ``KEY_MAX_BYTES``), a group of at most 16 bytes and an object
  key (at most ``KEY_MAX_BYTES``), JSON-quoted: at most 2,068 bytes; with the 82 bytes of framing,
  2,150 bytes, which ``ENVELOPE_RESERVE`` covers again. ``STATE_ENTRY_MAX_BYTES`` =
  1,048,576 - 4,096 = ``RECORD_MAX_BYTES`` is therefore the largest serialised value of an entry.
- An entry holding one object keeps, beside the object's stored form, what the core knows of it (a
  pod's seq, node, queue entry, Permit wait, bind annotations and last message; a node's row; a stored
  envelope's source): ``ENTRY_RESERVE`` = 65,536 bytes is left for that, so
  ``STORED_OBJECT_MAX_BYTES`` = 1,044,480 - 65,536 = 978,944 bytes is the budget of an object's stored
  form (``streams.objects.size.state_problem``). The stored form is what decisions read, not the whole
  record (a pod's manifest is reduced to ``streams.objects.podinfo.KEPT_MANIFEST``), but it is JSON: a
  string field's ``"`` and ``\\`` take two bytes, a non-ASCII character six or twelve. A record within
  ``RECORD_MAX_BYTES`` may thus still have a stored form over its budget; ``koord apply``, the router and
  the bridge refuse such an object.
- A journal part (``streams.agents.journal``) holds at most ``streams.agents.journal.PART_BYTES`` =
  262,144 bytes of serialised changes, which its own serialisation at most doubles: far within the budget.
  A change larger than a part is cut into pieces across parts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from aiokafka.record.default_records import DefaultRecordBatchBuilder

PRODUCER_MAX_BYTES = 1_048_576
"""``max_request_size`` of every producer: the largest record (batch included) a send accepts."""

KEY_MAX_BYTES = 1_024
"""The largest key: object names are at most 317 bytes."""

ENVELOPE_RESERVE = 4_096
"""Room the router's InboxEvent needs around a source record (at most 2,353 bytes, see above)."""

RECORD_MAX_BYTES = PRODUCER_MAX_BYTES - ENVELOPE_RESERVE
"""The limit of a record, key, value and headers as Kafka counts them: 1,044,480 bytes."""

STATE_ENTRY_MAX_BYTES = RECORD_MAX_BYTES
"""The largest serialised value of a state-table entry: its changelog record then fits the producer."""

ENTRY_RESERVE = 65_536
"""Room an entry needs beside the stored form of the object it holds (see above)."""

STORED_OBJECT_MAX_BYTES = STATE_ENTRY_MAX_BYTES - ENTRY_RESERVE
"""The budget of an object's stored form in a state table: 978,944 bytes."""

Headers = Mapping[str, bytes | None] | Iterable[tuple[str | bytes, bytes | None]]


def record_size(key: bytes | str | None, value: bytes | None, headers: Headers | None = ()) -> int:
    """Bytes of the one-record batch of (``key``, ``value``, ``headers``), as the producer counts them."""
    items = headers.items() if isinstance(headers, Mapping) else headers or ()
    named = [(name.decode("utf-8", "surrogateescape") if isinstance(name, bytes) else name, data)
             for name, data in items]
    return DefaultRecordBatchBuilder.estimate_size_in_bytes(_bytes(key), value, named)


def too_big(value: bytes | None, key: bytes | str | None = None, headers: Headers | None = ()) -> str | None:
    """Why the record (``value``, ``key``, ``headers``) is over the limit, or None when it fits."""
    key_bytes = _bytes(key)
    if key_bytes is not None and len(key_bytes) > KEY_MAX_BYTES:
        return f"key is {len(key_bytes):,} bytes, over the {KEY_MAX_BYTES:,}-byte limit of a key"
    size = record_size(key_bytes, value, headers)
    if size > RECORD_MAX_BYTES:
        return f"record is {size:,} bytes, over the {RECORD_MAX_BYTES:,}-byte limit of a record"
    return None


def value_max(key_bytes: int = KEY_MAX_BYTES) -> int:
    """The largest value that fits the limit beside a key of ``key_bytes`` bytes and no headers."""
    without_value = record_size(bytes(key_bytes), None) - 1
    return RECORD_MAX_BYTES - without_value - 5


def _bytes(key: bytes | str | None) -> bytes | None:
    return key.encode() if isinstance(key, str) else key
