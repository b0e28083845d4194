"""What a decision-maker reads and what every output carries back.

An :class:`InboxEvent` is one record of an aggregate's inbox, decoded: the
source object (or its deletion) plus where it came from. :class:`Causation`
ties each output to the inbox record that produced it, and
:func:`decision_id` names an output stably, so replaying the same inbox gives
the same ids.
"""

from __future__ import annotations

import dataclasses
import hashlib


@dataclasses.dataclass(frozen=True)
class Causation:
    inbox_topic: str
    inbox_partition: int
    inbox_offset: int
    source_topic: str
    source_partition: int
    source_offset: int
    incarnation: str = ""
    """The inbox topic's incarnation token (``streams.broker.incarnation``): offsets restart at 0 on a
    topic created anew, so ids derived from them must also name which topic they count in."""
    writer: str = ""
    """The aggregate inbox partition that wrote the inbox record (``<inbox id>/<partition>``) when an aggregate
    copied its own output there (``streams.outputs.WRITTEN_TO_INBOXES``); empty for the router's forwards."""
    routed_after: int | None = None
    """For the domain router's forward of a source record it read itself (a pod,
    ``routing.DOMAIN_ROUTER_SOURCES``): the offset of the last routing-inbox record its table had applied
    before it (-1: none), where ``streams.replay.routes`` applies it again. None for any other record."""

    @property
    def direct(self) -> bool:
        """Whether the event was read from its source topic itself, not from an inbox (the domain router's pods)."""
        return self.inbox_topic == self.source_topic

    @property
    def seen_key(self) -> str:
        """What the inbox readers' dedupe counts source offsets under: the source partition, and its writer when
        an aggregate wrote the copy.

        The dedupe keeps the highest source offset seen per key and drops what is not above it, so the records
        under one key must arrive in source-offset order. The router's forwards do: one consumer reads a source
        partition in order and writes its forwards in that order. The aggregates' copies do not across writers:
        two scheduling domains (two ``inbox-scheduling`` partitions, maybe two workers) write decisions to one
        ``decisions`` partition (it is keyed by pod) and copy them to one ``inbox-node`` partition from
        independent producers, so the copy of a later offset can arrive first. Per writer the order holds: one
        writer is one inbox partition, read by one consumer at a time, which delivers each batch's outputs and
        then their copies before it reads on, so a writer's copies reach an inbox partition in its outputs'
        offset order. A new owner of the partition starts after its owner's last delivered batch. Under
        exactly-once a zombie of the previous owner is fenced (its transaction aborts, its copies are never read
        committed). At-least-once, what the new owner processes again it emits again as new records (higher
        offsets, the same decision ids, which the node aggregate's decided marks recognise, as it did the
        router's forwards of them); a late copy of the old owner that arrives behind them is dropped, and is
        one of those re-emitted; a copy delivered twice is the same source offset under the same key, dropped
        as seen."""
        source = f"{self.source_topic}/{self.source_partition}"
        return f"{source}@{self.writer}" if self.writer else source

    def to_record(self) -> dict:
        return {
            "inboxTopic": self.inbox_topic, "inboxPartition": self.inbox_partition,
            "inboxOffset": self.inbox_offset, "sourceTopic": self.source_topic,
            "sourcePartition": self.source_partition, "sourceOffset": self.source_offset,
        }


@dataclasses.dataclass(frozen=True)
class InboxEvent:
    """A source event as the aggregate sees it.

    ``kind`` is the Avro record name of ``record`` (``Pod``, ``Node``, ...),
    or the kind implied by the source topic when the object was deleted
    (``record`` is then None). ``timestamp_ms`` is the only clock decisions use.
    """

    causation: Causation
    timestamp_ms: int
    key: str
    kind: str
    record: dict | None
    ack: bool = False
    """The source record asked for an Ack (``koord apply`` does); decisions never depend on it."""

    @property
    def deleted(self) -> bool:
        return self.record is None


def decision_id(causation: Causation, index: int, subject: str = "") -> str:
    """Stable id of the ``index``-th output about ``subject`` produced by one inbox record.

    ``subject`` matters where one inbox record fans out to many subjects (a
    tick or a config change recalculates every node of a partition). The inbox's incarnation is part
    of the id, so a new broker (offsets from 0 again) never reuses the ids of an old one."""
    prefix = f"{causation.incarnation}|" if causation.incarnation else ""
    text = f"{prefix}{causation.inbox_topic}|{causation.inbox_partition}|{causation.inbox_offset}|{index}|{subject}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


MAX_AHEAD_MS = 60_000
"""How far past the router's clock a source record's time may lie: a producer whose clock runs ahead (a node
with a bad clock) gets its records' times clamped to it, so one record cannot move the aggregates' event time,
and with it every Reservation TTL, gang wait and expiry, into the future. A minute is far more than clock skew
under NTP and far less than the shortest wait a user sets (a gang's default wait is 600 s)."""


def bounded_time(timestamp_ms: int, now_ms: int) -> int:
    """A source record's time as the router forwards it: at most ``MAX_AHEAD_MS`` past its clock ``now_ms``."""
    return min(timestamp_ms, now_ms + MAX_AHEAD_MS)


def too_far_ahead(what: str, timestamp_ms: int, latest_ms: int) -> str | None:
    """Why a time is refused: past ``latest_ms``, the latest one the reader allows. None when it is not."""
    if timestamp_ms > latest_ms:
        return f"{what} {timestamp_ms} lies {timestamp_ms - latest_ms} ms past the latest allowed ({latest_ms})"
    return None


DELETES = "deletes"
"""The one field of an output record that deletes an object: ``{DELETES: key}`` goes to the schema's topic
as a tombstone (no value) under ``key``, as a controller deletes the objects it owns."""


def deletion(key: str) -> dict:
    return {DELETES: key}
