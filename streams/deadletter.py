"""Dead letters: a bad record is recorded with its coordinates and reason, never lost.

A DeadLetter stays within the record size limit (``streams.limits``) whatever it reports, so sending it
never fails for size. When carrying the bad record's payload would make it too big, it carries the
payload's size and SHA-256 instead; its reference (source topic, partition, offset) still finds the
record while the topic retains it, and the digest tells whether a copy found elsewhere is the same
bytes. A key is left out the same way (the larger of the two goes first), and a reason that alone is
too big is cut.
"""

from __future__ import annotations

import hashlib

from prometheus_client import Counter

from streams import limits

DEAD_LETTERS = Counter("koord_dead_letters", "Records sent to the dead-letter topic", ["stage", "topic"])

VALUE_MAX_BYTES = limits.value_max()
"""The largest DeadLetter value: it fits the limit beside any key (the shells key a DeadLetter by its
source record's key or by its reference, both at most ``limits.KEY_MAX_BYTES``)."""

_FRAMING_BYTES = 128
"""Upper bound of a DeadLetter's encoded bytes besides the contents of its strings and bytes: the 10-byte
single-object header, five numbers (at most 10 bytes each), six union branches (1 each) and seven
length prefixes (at most 5 each) come to 101."""


def dead_letter_record(stage: str, topic: str, partition: int, offset: int, key: bytes | None,
                       payload: bytes | None, reason: str, timestamp_ms: int) -> dict:
    """The DeadLetter record for one bad input, within the size limit. Pure: a core returns it among
    its outputs and the shell that sends it counts it (``count``)."""
    record = {
        "sourceTopic": topic, "sourcePartition": partition, "sourceOffset": offset,
        "key": key, "payload": payload, "reason": reason, "stage": stage, "timestamp": timestamp_ms,
        "keySize": None, "keySha256": None, "payloadSize": None, "payloadSha256": None,
    }
    for field in sorted(("payload", "key"), key=lambda name: -len(record[name] or b"")):
        if _bound(record) > VALUE_MAX_BYTES and record[field] is not None:
            record = _left_out(record, field)
    excess = _bound(record) - VALUE_MAX_BYTES
    if excess > 0:
        record["reason"] = _cut(reason, excess)
    return record


def reference_key(record: dict) -> str:
    """The key a DeadLetter is sent under: its source record's reference ("topic/partition/offset"),
    since the record's own key may be what is wrong with it."""
    return f"{record['sourceTopic']}/{record['sourcePartition']}/{record['sourceOffset']}"


def count(record: dict) -> None:
    """Count one DeadLetter record sent (``koord_dead_letters_total``, by stage and source topic)."""
    DEAD_LETTERS.labels(stage=record["stage"], topic=record["sourceTopic"]).inc()


def dead_letter(stage: str, topic: str, partition: int, offset: int, key: bytes | None,
                payload: bytes | None, reason: str, timestamp_ms: int) -> dict:
    """The DeadLetter record for one bad input, counted: for a shell that makes and sends it at once."""
    record = dead_letter_record(stage, topic, partition, offset, key, payload, reason, timestamp_ms)
    count(record)
    return record


def _bound(record: dict) -> int:
    """An upper bound of the record's encoded size (``_FRAMING_BYTES`` plus its strings and bytes)."""
    return _FRAMING_BYTES + sum(len(value.encode()) if isinstance(value, str) else len(value)
                                for value in record.values() if isinstance(value, (str, bytes, bytearray)))


def _left_out(record: dict, field: str) -> dict:
    data = record[field]
    return {**record, field: None, f"{field}Size": len(data), f"{field}Sha256": hashlib.sha256(data).hexdigest()}


def _cut(reason: str, excess: int) -> str:
    """``reason`` shortened by at least ``excess`` bytes of UTF-8, saying how long it was."""
    raw = reason.encode()
    suffix = f" ... [cut from {len(raw):,} bytes]"
    keep = max(0, len(raw) - excess - len(suffix.encode()))
    return raw[:keep].decode("utf-8", "ignore") + suffix
