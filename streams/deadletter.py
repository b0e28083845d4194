"""Dead letters: a bad record is recorded with its coordinates and reason, never lost."""

from __future__ import annotations

from prometheus_client import Counter

DEAD_LETTERS = Counter("koord_dead_letters", "Records sent to the dead-letter topic", ["stage", "topic"])


def dead_letter(stage: str, topic: str, partition: int, offset: int, key: bytes | None,
                payload: bytes | None, reason: str, timestamp_ms: int) -> dict:
    """The DeadLetter record for one bad input; counts it."""
    DEAD_LETTERS.labels(stage=stage, topic=topic).inc()
    return {
        "sourceTopic": topic, "sourcePartition": partition, "sourceOffset": offset,
        "key": key, "payload": payload, "reason": reason, "stage": stage, "timestamp": timestamp_ms,
    }
