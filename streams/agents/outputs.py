"""Sending an aggregate's outputs: each record to its topic, keyed, delivered, measured.

The aggregates call :func:`send_outputs` once per batch with the (schema,
record) pairs the pure core returned for each event, counted as they are
sent (``koord_outputs_total``; dead letters in ``koord_dead_letters_total``
too, by stage and source topic); topics, keys and Acks are the contract's
(``streams.outputs``). Sends are awaited until
delivered before the caller writes its table, so a crash in between re-emits
the same records (same ids) rather than losing them. Under exactly-once each
event's outputs join the transaction of the inbox partition it was read from
(``streams.agents.transactions``).

An output the pipeline reads again (``streams.outputs.WRITTEN_TO_INBOXES``: decisions, node resources and
usages) is also copied to the inboxes the router's rules name for it, in the same batch: the outputs are
delivered first, since the copy's envelope names the output's offset, then the copies, signed for their
inbox as the router signs its forwards, under the output's own time (the router's copy took the output
record's timestamp too). Each copy names its writer, the inbox partition of the event that made it: copies
of one output partition by two writers may reach an inbox out of offset order, so the inboxes' dedupe
counts source offsets per writer (``streams.events.Causation.seen_key``).
"""

from __future__ import annotations

import dataclasses
import time

from streams import deadletter, routing
from streams.events import DELETES, InboxEvent
from streams.metrics import DECISION_LATENCY, NODE_ALLOCATABLE, OUTPUTS, PER_NODE_ENABLED, QUOTA
from streams.outputs import FORWARDED, OUTPUT_TOPICS, WRITTEN_TO_INBOXES, ack, inbox_routes, output_key
from streams.schemas import codec
from streams.signing import SIGNED_OUTPUTS, Signer


@dataclasses.dataclass(frozen=True)
class Inboxes:
    """The inboxes an aggregate copies its outputs to: Faust topic and partition count per inbox id."""

    topics: dict
    partitions: dict[str, int]


@dataclasses.dataclass(frozen=True)
class _Copy:
    """An output to copy once delivered: its place in the delivery, where from, and to which inboxes."""

    place: int
    topic: str
    source: tuple[str, int]
    writer: tuple[str, int]
    key: bytes
    value: bytes | None
    ack: bool
    routes: list[routing.Route]


async def send_outputs(batches, topics: dict, aggregate: str, inbox: str,
                       caused: list[tuple[InboxEvent, list[tuple[str, dict]]]], signer: Signer | None = None,
                       inboxes: Inboxes | None = None) -> None:
    """Send every event's outputs (schema, record) to ``topics`` (schema -> Faust topic) through
    ``batches`` (a ``streams.agents.transactions.Batches``), each followed by the Ack of ``inbox``'s
    aggregate when the event asked for one, and wait until all are delivered, with what ``batches`` had
    queued before (the domain router's forwards). With a ``signer``, an output
    to a topic whose records the pipeline signs (``streams.signing.SIGNED_OUTPUTS``) carries its signature;
    with ``inboxes`` too, an output the pipeline reads again is then copied to its inboxes."""
    now = time.time()
    now_ms = int(now * 1000)
    copies: list[_Copy] = []
    for event, outputs in caused:
        if event.ack:
            outputs = [*outputs, ack(inbox, event, outputs)]
        source = (event.causation.inbox_topic, event.causation.inbox_partition)
        for schema, record in outputs:
            key = output_key(schema, record).encode()
            value = None if DELETES in record else codec.encode_own(schema, record)
            asks_ack = event.ack and schema in FORWARDED
            headers = list(routing.ACK_HEADERS) if asks_ack else []
            if signer is not None and OUTPUT_TOPICS[schema] in SIGNED_OUTPUTS:
                headers.append(signer.header(OUTPUT_TOPICS[schema], key, value))
            copied = inboxes is not None and signer is not None and schema in WRITTEN_TO_INBOXES
            place = batches.add(topics[schema], key, value, source, headers=headers or None, timestamp_ms=now_ms)
            if copied:
                copies.append(_Copy(place, topics[schema].get_topic_name(), source,
                                    (inbox, event.causation.inbox_partition), key, value, asks_ack,
                                    inbox_routes(schema, record, inboxes.partitions)))
            _observe(aggregate, schema, record)
        if outputs:
            DECISION_LATENCY.labels(aggregate).observe(max(0.0, now - event.timestamp_ms / 1000))
    positions = await batches.deliver()
    if not any(copy.routes for copy in copies):
        return
    for copy in copies:
        partition, offset = positions[copy.place]
        envelope = routing.envelope(copy.topic, partition, offset, now_ms, copy.key.decode(), copy.value, copy.ack,
                                   copy.writer)
        for route in copy.routes:
            route_key = route.key.encode()
            batches.add(inboxes.topics[route.inbox], route_key, envelope, copy.source, partition=route.partition,
                        headers=[signer.header(route.inbox, route_key, envelope)])
    await batches.deliver()


def _observe(aggregate: str, schema: str, record: dict) -> None:
    OUTPUTS.labels(aggregate, schema).inc()
    if schema == "DeadLetter":
        deadletter.count(record)
    elif schema == "NodeResource" and PER_NODE_ENABLED:
        for resource, value in record["allocatable"].items():
            NODE_ALLOCATABLE.labels(record["nodeName"], resource).set(value)
    elif schema == "ElasticQuotaStatus":
        for field in ("runtime", "used", "request"):
            for resource, value in record[field].items():
                QUOTA.labels(record["name"], resource, field).set(value)
