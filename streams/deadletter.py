"""Dead letters: a bad record is recorded with its coordinates and reason, never lost."""

from __future__ import annotations

from prometheus_client import Counter

DEAD_LETTERS = Counter("koord_dead_letters", "Records sent to the dead-letter topic", ["stage", "topic"])


def dead_letter_record(stage: str, topic: str, partition: int, offset: int, key: bytes | None,
                       payload: bytes | None, reason: str, timestamp_ms: int) -> dict:
    """The DeadLetter record for one bad input. Pure: a core returns it among its outputs and the shell
    that sends it counts it (``count``)."""
    return {
        "sourceTopic": topic, "sourcePartition": partition, "sourceOffset": offset,
        "key": key, "payload": payload, "reason": reason, "stage": stage, "timestamp": timestamp_ms,
    }


def count(record: dict) -> None:
    """Count one DeadLetter record sent (``koord_dead_letters_total``, by stage and source topic)."""
    DEAD_LETTERS.labels(stage=record["stage"], topic=record["sourceTopic"]).inc()


def dead_letter(stage: str, topic: str, partition: int, offset: int, key: bytes | None,
                payload: bytes | None, reason: str, timestamp_ms: int) -> dict:
    """The DeadLetter record for one bad input, counted: for a shell that makes and sends it at once."""
    record = dead_letter_record(stage, topic, partition, offset, key, payload, reason, timestamp_ms)
    count(record)
    return record
