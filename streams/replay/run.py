"""Re-running an aggregate's inbox through its pure core, from the first record.

The functions here take inbox records already read from the broker and
return what the core emits for each, so they run without Kafka. They drive
the core exactly as the live agents do:

- records are read with the agents' own ``InboxReader`` and checks (``streams.inbox``); one the
  agent dead-letters is reported and skipped, and an event the core fails on
  gives the same dead letter (``handle_guarded``);
- scheduling: one fresh ``SchedulingDomain`` per inbox key (the domain),
  events in inbox order;
- node: one ``NodePartition`` per inbox partition over an in-memory dict
  of its entries, events in inbox order, each event's changes written to
  the dict as the agent writes them to its table; configured by the
  ``NodeAggregateSettings`` the caller gives (the worker's signing key, to
  reproduce signed actuations).

The core always starts from an empty state at the first inbox record, so a
window (``Window``) only chooses which outputs are compared, never which
events are applied.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable, Iterable, Sequence

from streams.events import InboxEvent
from streams.inbox import InboxReader, Rejected, handle_guarded
from streams.nodeaggregate.partition import NodePartition
from streams.nodeaggregate.settings import DEFAULT_SETTINGS, NodeAggregateSettings
from streams.records import decoded
from streams.scheduler.domain import SchedulingDomain
from streams.schemas import codec

SCHEDULING, NODE = "scheduling", "node"
INBOX_IDS = {SCHEDULING: "inbox-scheduling", NODE: "inbox-node"}
SCHEDULING_ONLY = ("SchedulingDecision", "ElasticQuotaStatus")
SCHEDULING_OUTPUTS = SCHEDULING_ONLY + ("Eviction",)
"""The scheduler's compared outputs: decisions, quota statuses and the evictions of preemption and descheduling
(recorded Evictions are told apart from the node aggregate's by their causation's inbox)."""
NOT_COMPARED = ("DeadLetter", "Ack")
"""Outputs without a decision id: dead letters are counted, not matched; the core emits no Acks."""
OFFSET_LIMIT = 10**11
"""A bare integer bound below this is an inbox offset, at or above it epoch milliseconds (year 1973 on)."""


@dataclasses.dataclass(frozen=True)
class Caused:
    """One inbox event, the inbox key it was read under, and the (schema, record) outputs it caused."""

    key: str
    event: InboxEvent
    outputs: tuple[tuple[str, dict], ...]

    @property
    def position(self) -> tuple[int, int]:
        return self.event.causation.inbox_partition, self.event.causation.inbox_offset


@dataclasses.dataclass(frozen=True)
class Undecodable:
    partition: int
    offset: int
    reason: str


@dataclasses.dataclass(frozen=True)
class Bound:
    """One end of a window: an event time (epoch ms) or an inbox offset (in each partition)."""

    kind: str
    value: int

    @classmethod
    def parse(cls, text: str) -> "Bound":
        """An ISO timestamp, epoch milliseconds, or an inbox offset (a bare integer below ``OFFSET_LIMIT``)."""
        text = text.strip()
        if text.lstrip("-").isdigit():
            value = int(text)
            return cls("time", value) if value >= OFFSET_LIMIT else cls("offset", value)
        try:
            moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{text!r} is neither an ISO timestamp, epoch milliseconds nor an inbox offset") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=datetime.timezone.utc)
        return cls("time", int(moment.timestamp() * 1000))

    def of(self, event: InboxEvent) -> int:
        return event.timestamp_ms if self.kind == "time" else event.causation.inbox_offset

    def describe(self) -> str:
        if self.kind == "offset":
            return f"inbox offset {self.value}"
        moment = datetime.datetime.fromtimestamp(self.value / 1000, datetime.timezone.utc)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclasses.dataclass(frozen=True)
class Window:
    """Which inbox events' outputs are compared: both ends inclusive, either open."""

    start: Bound | None = None
    end: Bound | None = None

    def selects(self, event: InboxEvent) -> bool:
        if self.start is not None and self.start.of(event) < self.start.value:
            return False
        return self.end is None or self.end.of(event) <= self.end.value

    def describe(self) -> str:
        if self.start is None and self.end is None:
            return "everything"
        start = self.start.describe() if self.start else "the beginning"
        end = self.end.describe() if self.end else "the end"
        return f"from {start} to {end}"


def decode(records: Iterable, reader: InboxReader) -> tuple[list[tuple[str, InboxEvent]], list[Undecodable]]:
    """(inbox key, event) of every record the agent would apply, in the given order, and the ones it
    dead-letters: read and checked by the agents' own ``InboxReader``. ``records`` are Kafka consumer records."""
    events, bad = [], []
    for record in records:
        try:
            events.append(reader.read(record))
        except Rejected as error:
            bad.append(Undecodable(record.partition, record.offset, str(error)))
    return events, bad


def in_inbox_order(events: Iterable[tuple[str, InboxEvent]]) -> list[tuple[str, InboxEvent]]:
    return sorted(events, key=lambda item: (item[1].causation.inbox_partition, item[1].causation.inbox_offset))


def replay_scheduling(events: Iterable[tuple[str, InboxEvent]], domains: Sequence[str] | None = None) -> list[Caused]:
    """Each event through a fresh ``SchedulingDomain`` per domain (the inbox key), in inbox order;
    ``domains`` limits the run to those domains."""
    states: dict[str, SchedulingDomain] = {}
    caused = []
    for key, event in in_inbox_order(events):
        if domains is not None and key not in domains:
            continue
        if key not in states:
            states[key] = SchedulingDomain(key)
        caused.append(Caused(key, event, tuple(handle_guarded(SCHEDULING, event, states[key].handle))))
    return caused


def replay_node(events: Iterable[tuple[str, InboxEvent]], partitions: Sequence[int] | None = None,
                settings: NodeAggregateSettings = DEFAULT_SETTINGS) -> list[Caused]:
    """Each event through one ``NodePartition`` (entries in a dict) per inbox partition, in inbox order;
    ``partitions`` limits the run to those partitions."""
    drivers: dict[int, tuple[NodePartition, dict]] = {}
    caused = []
    for key, event in in_inbox_order(events):
        partition = event.causation.inbox_partition
        if partitions is not None and partition not in partitions:
            continue
        if partition not in drivers:
            entries: dict[str, bytes] = {}
            drivers[partition] = NodePartition(settings, entries), entries
        core, entries = drivers[partition]
        caused.append(Caused(key, event, tuple(handle_guarded(NODE, event, core.apply))))
        for entry, value in core.take_changes().items():
            if value is None:
                entries.pop(entry, None)
            else:
                entries[entry] = value
    return caused


def partitions_of(events: Iterable[tuple[str, InboxEvent]], key: str) -> list[int]:
    """The inbox partitions holding records keyed ``key`` (a node's partition)."""
    return sorted({event.causation.inbox_partition for k, event in events if k == key})


def replay(aggregate: str, events: list[tuple[str, InboxEvent]], domain: str | None = None,
           node: str | None = None, node_settings: NodeAggregateSettings = DEFAULT_SETTINGS) -> list[Caused]:
    """Run ``aggregate`` (``scheduling`` or ``node``, the latter with ``node_settings``) over ``events``,
    limited to one domain or to the partition of one node when asked."""
    if aggregate == SCHEDULING:
        return replay_scheduling(events, None if domain is None else [domain])
    return replay_node(events, None if node is None else partitions_of(events, node), node_settings)


def subject_filter(node: str | None) -> Callable[[str, dict], bool]:
    """Which outputs concern the asked node (every output when none is asked)."""
    if node is None:
        return lambda schema, record: True
    return lambda schema, record: record.get("nodeName") == node


def replayed_outputs(caused: Iterable[Caused], window: Window = Window(),
                     concerns: Callable[[str, dict], bool] = subject_filter(None)) -> dict[str, list[dict]]:
    """Outputs with a decision id, by schema, of the events inside ``window`` that ``concerns`` keeps."""
    out: dict[str, list[dict]] = {}
    for item in caused:
        if not window.selects(item.event):
            continue
        for schema, record in item.outputs:
            if schema not in NOT_COMPARED and "decisionId" in record and concerns(schema, record):
                out.setdefault(schema, []).append(record)
    return out


def as_recorded(replayed: dict[str, list[dict]], recorded: Iterable) -> dict[str, list[dict]]:
    """``replayed`` as the writer schema of the recorded record with the same decision id holds it
    (``codec.as_written``): a field an output gained since the recording was made is compared at the default
    the recording reads, not reported as a divergence."""
    written = {(item.schema, item.value.get("decisionId")): item.message.value for item in decoded(recorded)
               if isinstance(item.value, dict)}
    return {schema: [codec.as_written(raw, record) if (raw := written.get((schema, record["decisionId"])))
                     else record for record in records]
            for schema, records in replayed.items()}


def recorded_outputs(records: Iterable[tuple[str, dict]], inbox: str, caused: Iterable[Caused],
                     window: Window = Window(),
                     concerns: Callable[[str, dict], bool] = subject_filter(None)) -> dict[str, list[dict]]:
    """Recorded (schema, record) outputs, by schema, caused by a replayed inbox event inside ``window``.

    Outputs caused by inbox records the replay did not read (written after it read the inbox, or of
    another domain or partition) are left out, so they are neither missing nor extra."""
    inside = {item.position for item in caused if window.selects(item.event)}
    out: dict[str, list[dict]] = {}
    for schema, record in records:
        cause = record.get("causation") if isinstance(record, dict) else None
        if not cause or cause.get("inboxTopic") != inbox:
            continue
        if (cause["inboxPartition"], cause["inboxOffset"]) in inside and concerns(schema, record):
            out.setdefault(schema, []).append(record)
    return out


def dead_letters(caused: Iterable[Caused]) -> int:
    return sum(1 for item in caused for schema, _ in item.outputs if schema == "DeadLetter")


def compared_schemas(aggregate: str, output_topics: dict[str, str]) -> dict[str, str]:
    """Schema -> topology id of the recorded outputs ``aggregate`` is checked against: the scheduler's
    decisions and quota statuses, or every other output with a decision id (node resources, and
    whatever the node aggregate's schemas add, such as actuations)."""
    if aggregate == SCHEDULING:
        return {schema: output_topics[schema] for schema in SCHEDULING_OUTPUTS}
    return {schema: topic for schema, topic in output_topics.items()
            if schema not in SCHEDULING_ONLY and schema not in NOT_COMPARED}


def decode_outputs(recorded: Iterable, schemas: Iterable[str]) -> list[tuple[str, dict]]:
    """(schema, record) of the recorded records of the given schemas; anything else is skipped."""
    wanted = set(schemas)
    return [(item.schema, item.value) for item in decoded(recorded) if item.schema in wanted]
