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
"""

from __future__ import annotations

import time

from streams import deadletter
from streams.events import DELETES, InboxEvent
from streams.metrics import DECISION_LATENCY, NODE_ALLOCATABLE, OUTPUTS, PER_NODE_ENABLED, QUOTA
from streams.outputs import FORWARDED, OUTPUT_TOPICS, ack, output_key
from streams.routing import ACK_HEADERS
from streams.schemas import codec
from streams.signing import SIGNED_OUTPUTS, Signer


async def send_outputs(batches, topics: dict, aggregate: str, inbox: str,
                       caused: list[tuple[InboxEvent, list[tuple[str, dict]]]], signer: Signer | None = None) -> None:
    """Send every event's outputs (schema, record) to ``topics`` (schema -> Faust topic) through
    ``batches`` (a ``streams.agents.transactions.Batches``), each followed by the Ack of ``inbox``'s
    aggregate when the event asked for one, and wait until all are delivered, with what ``batches`` had
    queued before (the domain router's forwards). With a ``signer``, an output
    to a topic whose records the pipeline signs (``streams.signing.SIGNED_OUTPUTS``) carries its signature."""
    now = time.time()
    for event, outputs in caused:
        if event.ack:
            outputs = [*outputs, ack(inbox, event, outputs)]
        source = (event.causation.inbox_topic, event.causation.inbox_partition)
        for schema, record in outputs:
            key = output_key(schema, record).encode()
            value = None if DELETES in record else codec.encode(schema, record)
            headers = list(ACK_HEADERS) if event.ack and schema in FORWARDED else []
            if signer is not None and OUTPUT_TOPICS[schema] in SIGNED_OUTPUTS:
                headers.append(signer.header(OUTPUT_TOPICS[schema], key, value))
            batches.add(topics[schema], key, value, source, headers=headers or None)
            _observe(aggregate, schema, record)
        if outputs:
            DECISION_LATENCY.labels(aggregate).observe(max(0.0, now - event.timestamp_ms / 1000))
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
