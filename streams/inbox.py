"""Reading an inbox, without Faust: records back into the events the pure core reads, and their checks.

The contract between the router and the aggregates, read by the live agents (``streams.agents.inbox``
feeds their consumer's records through it), by the replay and by the CLI alike. An inbox record that
does not decode or check out (it can only come from a bug or a foreign producer) raises
:class:`Rejected`, to be dead-lettered and skipped, and an event the core fails on is dead-lettered too
(:func:`handle_guarded`), so nothing one record holds can stop an aggregate from reading further.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Callable

from streams import kafka, routing, validation
from streams.deadletter import dead_letter_record
from streams.events import MAX_AHEAD_MS, Causation, InboxEvent, too_far_ahead
from streams.handoff import Handoff
from streams.metrics import FUTURE_TIMES, INBOX_SKIPPED
from streams.schemas import codec
from streams.signing import Signer
from streams.topology import Topology

log = logging.getLogger(__name__)


class Rejected(ValueError):
    """An inbox record the aggregate does not apply; the message is the dead letter's reason."""


@dataclasses.dataclass(frozen=True)
class InboxReader:
    """Reads one aggregate's inbox records back into events, checking that each is one the router wrote: signed
    with the deployment's record key (``streams.signing``; without a ``signer``, as a replay of a recording
    from another home reads, unverified), then its source topic, partition and route. A record that fails raises
    :class:`Rejected`. An unverified record is also checked as the router checks a source record
    (``streams.validation``); a verified one is not checked again: the pipeline wrote it, the router after that
    very check, an aggregate as its own output.

    The signature is what makes a forward's claims safe to act on: its source offset moves the aggregate's
    dedupe (the highest source offset seen per source partition, and per writer for an aggregate's own copies,
    ``Causation.seen_key``), so one forged claim below a partition's end would skip every record of it not yet
    forwarded; its domain makes a scheduling domain.

    ``incarnation`` is the inbox topic's incarnation token, carried into every event's causation and so
    into every decision id."""

    inbox_id: str
    topic_ids: dict[str, str]
    """Topic name -> topology id."""
    inbox_partitions: dict[str, int]
    """Inbox topology id -> partition count, as ``routing.routes`` takes it."""
    source_partitions: dict[str, int]
    """Source topic name -> partition count."""
    incarnation: str = ""
    signer: Signer | None = None
    handoff: Handoff | None = None
    """Where the router of this process leaves the records it decoded (``streams.handoff``)."""

    @classmethod
    def of(cls, topology: Topology, inbox_id: str, incarnation: str = "", signer: Signer | None = None,
           handoff: Handoff | None = None) -> "InboxReader":
        return cls(inbox_id, {name: topic_id for topic_id, name in topology.names().items()},
                   {inbox: topology.spec(inbox).partitions for inbox in routing.INBOXES},
                   {topology.name(source): topology.spec(source).partitions for source in routing.KIND_BY_SOURCE},
                   incarnation, signer, handoff)

    def read(self, message, written_ms: int | None = None) -> tuple[str, InboxEvent]:
        """(inbox key, event) of a consumer record of the inbox. ``written_ms``: the record's own Kafka
        timestamp in milliseconds, when its writer sent it (default ``message.timestamp``, as an aiokafka
        ``ConsumerRecord`` has it; Faust's messages carry seconds). The event's time is checked against it
        (``from_the_future``), not against a clock, so a replay of the inbox refuses what the aggregate did."""
        inbox_key, problem = validation.text_key(message.key, "inbox record")
        if problem:
            raise Rejected(problem)
        if self.signer is not None:
            problem = self.signer.problem(self.inbox_id, message.key, message.value, message.headers)
            if problem:
                raise Rejected(problem)
        try:
            name, envelope = codec.decode(message.value)
        except codec.CodecError as error:
            raise Rejected(f"undecodable inbox record: {error}") from None
        if name != "InboxEvent":
            raise Rejected(f"expected an InboxEvent, got a {name}")
        source_topic, partition, offset = envelope["sourceTopic"], envelope["sourcePartition"], envelope["sourceOffset"]
        source_id = self.topic_ids.get(source_topic)
        if source_topic not in self.source_partitions or source_id is None:
            raise Rejected(f"names {source_topic!r}, which is not a source topic of this topology")
        if not 0 <= partition < self.source_partitions[source_topic] or offset < 0:
            raise Rejected(f"names {source_topic}[{partition}]@{offset}, which cannot exist")
        key = envelope["key"]
        if not key:
            raise Rejected("the forwarded record has no key")
        if envelope["payload"] is None:
            kind, record = routing.kind_of_deletion(source_id, key), None
        else:
            kind, record = self._decoded(envelope["payload"])
        found = [] if record is None or self.signer is not None else validation.problems(source_id, key, kind, record)
        found = found or validation.route_problems(self.inbox_id, inbox_key, message.partition, source_id, key, kind,
                                                   record, self.inbox_partitions)
        if found:
            raise Rejected("; ".join(found))
        writer = self._writer(envelope.get("writer"))
        routed_after = envelope.get("routedAfter")
        if routed_after is not None and (self.inbox_id != routing.SCHEDULING_INBOX
                                         or source_id not in routing.DOMAIN_ROUTER_SOURCES):
            raise Rejected(f"says where the domain router applied it, but the domain router does not read "
                           f"{source_topic} itself into {self.inbox_id}")
        cause = Causation(message.topic, message.partition, message.offset, source_topic, partition, offset,
                          self.incarnation, writer, routed_after)
        event = InboxEvent(cause, envelope["timestamp"], key, kind, record, envelope["ack"])
        future = from_the_future(self.inbox_id, event, message.timestamp if written_ms is None else written_ms)
        if future:
            raise Rejected(future)
        return inbox_key, event

    def _decoded(self, payload: bytes) -> tuple[str, dict]:
        """The forwarded record decoded, or as the router of this process decoded it."""
        taken = self.handoff.take(payload) if self.handoff is not None else None
        if taken is not None:
            return taken
        try:
            return codec.decode(payload)
        except codec.CodecError as error:
            raise Rejected(f"undecodable forwarded record: {error}") from None

    def _writer(self, writer: dict | None) -> str:
        """The ``<inbox id>/<partition>`` an aggregate's copy names as its writer ("" for a router's forward),
        refused unless it is an inbox partition of this topology: the writer keys the dedupe
        (``Causation.seen_key``), and the signature says only that the pipeline wrote it."""
        if writer is None:
            return ""
        inbox, partition = writer["inbox"], writer["partition"]
        if inbox not in self.inbox_partitions:
            raise Rejected(f"names the writer {inbox!r}, which is not an inbox of this topology")
        if not 0 <= partition < self.inbox_partitions[inbox]:
            raise Rejected(f"names the writer {inbox}[{partition}], which cannot exist")
        return f"{inbox}/{partition}"


def from_the_future(stage: str, event: InboxEvent, written_ms: int) -> str | None:
    """Why an inbox event whose record was written at ``written_ms`` cannot have been forwarded: its time, or
    a Tick's, lies more than twice ``MAX_AHEAD_MS`` past that (the router clamps to once past its clock and
    writes at its clock; the other once is for the clocks of two hosts). The event time only grows, so one
    such record would expire every TTL and wait at once."""
    latest = written_ms + 2 * MAX_AHEAD_MS
    problem = too_far_ahead("the record's time", event.timestamp_ms, latest)
    if problem is None and event.kind == "Tick" and event.record is not None:
        problem = too_far_ahead("the Tick's timestamp", int(event.record.get("timestamp") or 0), latest)
    if problem is not None:
        FUTURE_TIMES.labels(stage, "refused").inc()
    return problem


async def inbox_incarnation(bootstrap: str, inbox: str) -> str:
    """The incarnation token of the inbox topic ``inbox`` (``streams.broker.incarnation``)."""
    from streams.broker.incarnation import incarnation

    async with kafka.admin_client(bootstrap) as admin:
        return (await incarnation(admin, [inbox])).token([inbox])


def handle_guarded(stage: str, event: InboxEvent, handle: Callable[[InboxEvent], list]) -> list[tuple[str, dict]]:
    """``handle(event)``, or, if the handling code itself fails, the event's dead letter: a bug met by
    one event never loses the rest of its batch nor stops the aggregate. The core may have changed part
    of its state before it failed; the event's source offset is already recorded, so it is not retried."""
    try:
        return handle(event)
    except Exception as error:
        log.exception("%s aggregate failed on %s[%d]@%d (%s %s); dead-lettered", stage, event.causation.inbox_topic,
                      event.causation.inbox_partition, event.causation.inbox_offset, event.kind, event.key)
        cause = event.causation
        return [("DeadLetter", dead_letter_record(
            stage, cause.inbox_topic, cause.inbox_partition, cause.inbox_offset, event.key.encode(), None,
            f"the {stage} aggregate failed on this event: {type(error).__name__}: {error}", event.timestamp_ms))]


class DeliveryOrder:
    """Watches that the consumer hands each inbox partition over in offset order.

    The pure core's decisions are those of the inbox order; replay assumes it. Going back is normal
    (after a seek, records are read again and the core drops them as seen); a jump forward within one
    consumer generation means records were passed over and will be processed late, out of order. That
    happened through a Faust race that ``streams.faustcompat.seek`` closes; this makes any other cause
    visible (log and ``koord_inbox_skipped_total``) instead of silent.

    A ``read_committed`` consumer (exactly-once) never sees the offsets that transaction markers and
    aborted records occupy, so its jumps are normal: with ``contiguous=False`` nothing is counted.
    """

    def __init__(self, stage: str, contiguous: bool = True) -> None:
        self.stage, self.contiguous = stage, contiguous
        self.last: dict[tuple[str, int], tuple[int | None, int]] = {}

    def check(self, message) -> int:
        """Record ``message``'s offset; return how many records were passed over before it."""
        partition = (message.topic, message.partition)
        generation, offset = self.last.get(partition, (None, -1))
        self.last[partition] = (message.generation_id, message.offset)
        if not self.contiguous:
            return 0
        skipped = message.offset - offset - 1 if generation == message.generation_id else 0
        if skipped > 0:
            INBOX_SKIPPED.labels(self.stage).inc(skipped)
            log.warning("%s/%d: the consumer passed over offsets %d..%d; they will be processed out of "
                        "inbox order", message.topic, message.partition, offset + 1, message.offset - 1)
        return max(skipped, 0)
