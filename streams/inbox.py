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
from typing import Callable, Iterable

from streams import kafka, limits, routing, validation
from streams.deadletter import dead_letter_record
from streams.domains import profile_domains
from streams.events import MAX_AHEAD_MS, Causation, InboxEvent, too_far_ahead
from streams.metrics import FUTURE_TIMES, INBOX_SKIPPED
from streams.schemas import codec
from streams.topology import Topology

log = logging.getLogger(__name__)


class Rejected(ValueError):
    """An inbox record the aggregate does not apply; the message is the dead letter's reason."""


@dataclasses.dataclass(frozen=True)
class InboxReader:
    """Reads one aggregate's inbox records back into events, checking each as the router checks a source
    record (``streams.validation``) and that it is one the router would have written: its source topic,
    partition and route. Nothing read is trusted for who wrote it (anyone with write access to the inbox
    could forge a record); a record that fails raises :class:`Rejected`.

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

    @classmethod
    def of(cls, topology: Topology, inbox_id: str, incarnation: str = "") -> "InboxReader":
        return cls(inbox_id, {name: topic_id for topic_id, name in topology.names().items()},
                   {inbox: topology.spec(inbox).partitions for inbox in routing.INBOXES},
                   {topology.name(source): topology.spec(source).partitions for source in routing.KIND_BY_SOURCE},
                   incarnation)

    def read(self, message, written_ms: int | None = None) -> tuple[str, InboxEvent]:
        """(inbox key, event) of a consumer record of the inbox. ``written_ms``: the record's own Kafka
        timestamp in milliseconds, when its writer sent it (default ``message.timestamp``, as an aiokafka
        ``ConsumerRecord`` has it; Faust's messages carry seconds). The event's time is checked against it
        (``from_the_future``), not against a clock, so a replay of the inbox refuses what the aggregate did."""
        inbox_key, problem = validation.text_key(message.key, "inbox record")
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
            try:
                kind, record = codec.decode(envelope["payload"])
            except codec.CodecError as error:
                raise Rejected(f"undecodable forwarded record: {error}") from None
        found = [] if record is None else validation.problems(source_id, key, kind, record)
        found = found or validation.route_problems(self.inbox_id, inbox_key, message.partition, source_id, key, kind,
                                                   record, self.inbox_partitions)
        if found:
            raise Rejected("; ".join(found))
        cause = Causation(message.topic, message.partition, message.offset, source_topic, partition, offset,
                          self.incarnation)
        event = InboxEvent(cause, envelope["timestamp"], key, kind, record, envelope["ack"])
        future = from_the_future(self.inbox_id, event, message.timestamp if written_ms is None else written_ms)
        if future:
            raise Rejected(future)
        return inbox_key, event


class SourceEnds:
    """The end offset of every source partition, as far as an aggregate knows it: a claimed source offset
    at or past it cannot be real (``validation.beyond_end``), so one forged record cannot move the
    aggregates' dedupe (the highest source offset seen per source partition) past records still to come.

    First from ``local`` (the high watermark this worker's own consumer has for the partition, known when
    its router reads it: it read every record it forwarded, so that bound costs nothing), then from what
    was last asked of the broker, and only for a claim past both from the broker, once per batch."""

    def __init__(self, bootstrap: str, local: Callable[[str, int], int | None] = lambda topic, partition: None) -> None:
        self.bootstrap, self.local = bootstrap, local
        self.ends: dict[tuple[str, int], int] = {}
        self.client = None

    def known(self, topic: str, partition: int) -> int:
        return max(self.ends.get((topic, partition), 0), self.local(topic, partition) or 0)

    async def problems(self, events: list[InboxEvent]) -> list[str | None]:
        claims = [(e.causation.source_topic, e.causation.source_partition, e.causation.source_offset) for e in events]
        stale = sorted({(topic, partition) for topic, partition, offset in claims
                        if offset >= self.known(topic, partition)})
        if stale:
            if self.client is None:
                self.client = kafka.consumer(self.bootstrap, [], None, from_beginning=True)
                await self.client.start()
            self.ends.update(await kafka.end_offsets(self.client, stale))
        return [validation.beyond_end(topic, partition, offset, self.known(topic, partition))
                for topic, partition, offset in claims]

    async def close(self) -> None:
        if self.client is not None:
            await self.client.stop()


class KnownDomains:
    """The scheduling domains a scheduling-inbox record may create: ``default`` and the tree of every
    ElasticQuotaProfile on the quotas topic (``streams.domains.profile_domains``). The domain router names
    only the domains of profiles it has read, after they were written there, so a domain a fresh read of
    the topic does not define cannot be real: one forged record cannot make a SchedulingDomain. The topic
    (compacted, a few records) is read again only when a batch names a domain not known yet."""

    def __init__(self, bootstrap: str, quotas_topic: str) -> None:
        self.bootstrap, self.topic = bootstrap, quotas_topic
        self.domains = {routing.DEFAULT_DOMAIN}

    async def problems(self, domains: Iterable[str]) -> dict[str, str]:
        """The reason each of ``domains`` is not one an ElasticQuotaProfile defines."""
        unknown = set(domains) - self.domains
        if unknown:
            self.domains = profile_domains(await self._profiles())
        return {domain: f"names the scheduling domain {domain!r}, which no ElasticQuotaProfile defines"
                for domain in sorted(unknown - self.domains)}

    async def _profiles(self) -> list[tuple[str, str | None, dict | None]]:
        """(key, kind, record) of every record of the quotas topic the router would forward."""
        found = []
        for message in await _read_topic(self.bootstrap, self.topic):
            key, problem = validation.text_key(message.key)
            if problem or limits.too_big(message.value, message.key, message.headers):
                continue
            if message.value is None:
                found.append((key, None, None))
                continue
            try:
                kind, record = codec.decode(message.value)
            except codec.CodecError:
                continue
            if not validation.problems("quotas", key, kind, record):
                found.append((key, kind, record))
        return found


async def _read_topic(bootstrap: str, topic: str) -> list:
    """Every record of ``topic`` up to its end offsets, in partition then offset order."""
    from aiokafka.structs import TopicPartition

    client = kafka.consumer(bootstrap, [], None, from_beginning=True)
    await client.start()
    try:
        partitions = await kafka.partitions_for(client, topic)
        ends = await kafka.end_offsets(client, [(topic, p) for p in partitions])
        pending = {TopicPartition(topic, p) for p in partitions if ends[(topic, p)] > 0}
        client.assign(sorted(pending))
        if pending:
            await client.seek_to_beginning(*pending)
        records: dict[int, list] = {p: [] for p in partitions}
        while pending:
            for tp, messages in (await client.getmany(*pending, timeout_ms=200)).items():
                records[tp.partition].extend(messages)
            pending = {tp for tp in pending if await client.position(tp) < ends[(topic, tp.partition)]}
        return [record for p in partitions for record in records[p]]
    finally:
        await client.stop()


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
        self.last: dict[int, tuple[int | None, int]] = {}

    def check(self, message) -> int:
        """Record ``message``'s offset; return how many records were passed over before it."""
        generation, offset = self.last.get(message.partition, (None, -1))
        self.last[message.partition] = (message.generation_id, message.offset)
        if not self.contiguous:
            return 0
        skipped = message.offset - offset - 1 if generation == message.generation_id else 0
        if skipped > 0:
            INBOX_SKIPPED.labels(self.stage).inc(skipped)
            log.warning("%s/%d: the consumer passed over offsets %d..%d; they will be processed out of "
                        "inbox order", message.topic, message.partition, offset + 1, message.offset - 1)
        return max(skipped, 0)
