"""A batch's records sent as Kafka record batches, under Faust's producer.

Faust's ``Topic.send`` makes a ``FutureMessage``, runs the sensors and awaits aiokafka's ``send`` for every
record, and the caller then awaits every record's delivery future. The agents send what one inbox batch
caused all at once, so here those records are grouped by (producer, topic, partition), written into aiokafka
record batches (``create_batch``/``send_batch``: one delivery future per record batch, not per record) and
awaited together. A record without a partition goes where aiokafka's own default partitioner puts its key
(``AIOKafkaProducer._partition``), so keys land where ``send`` would have put them; within a partition the
records keep their order, and :func:`send_all` returns where each landed (a record batch's base offset plus
the record's place in it), which an aggregate needs to copy an output into an inbox naming its position
(``streams.agents.outputs``). Under exactly-once each record goes through the transactional producer of its
transactional id, holding Faust's lock of that id as ``Producer.send`` does. The per-topic sent counter
Faust's sensors keep (``topic_messages_sent``, read by the dashboard) is counted here.

Reaches into ``faust.transport.drivers.aiokafka.Producer`` (``_ensure_producer``, ``_transaction_producers``,
``_trn_locks``) and ``aiokafka.AIOKafkaProducer`` (``client._wait_on_metadata``, ``_partition``): checked
against faust-streaming 0.15.3 and aiokafka 0.14.0.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses

import faust
from faust.exceptions import ProducerSendError


@dataclasses.dataclass(frozen=True)
class Outgoing:
    """One record to send."""

    topic: str
    key: bytes | None
    value: bytes | None
    partition: int | None = None
    headers: list[tuple[str, bytes]] | None = None
    transactional_id: str | None = None
    timestamp_ms: int | None = None
    """The record's Kafka timestamp (default: the producer's clock when it is batched)."""


async def send_all(app: faust.App, records: list[Outgoing]) -> list[tuple[int, int]]:
    """Send ``records`` (in order within each partition) and return, once Kafka has acknowledged them all,
    the (partition, offset) of each, in the order of ``records``."""
    if not records:
        return []
    faust_producer = app.producer
    groups: dict[tuple[str | None, str, int], list[tuple[int, Outgoing]]] = {}
    for index, record in enumerate(records):
        producer = _producer(faust_producer, record.transactional_id)
        partition = record.partition
        if partition is None:
            await producer.client._wait_on_metadata(record.topic)
            partition = producer._partition(record.topic, None, record.key, record.value, record.key, record.value)
        groups.setdefault((record.transactional_id, record.topic, partition), []).append((index, record))
    futures, members = [], []
    for (transactional_id, topic, partition), group in groups.items():
        producer = _producer(faust_producer, transactional_id)
        lock = faust_producer._trn_locks[transactional_id] if transactional_id else contextlib.nullcontext()
        async with lock:
            batch, indexes = producer.create_batch(), []
            for index, record in group:
                if batch.append(key=record.key, value=record.value, timestamp=record.timestamp_ms,
                                headers=record.headers or []) is None:
                    futures.append(await producer.send_batch(batch, topic, partition=partition))
                    members.append(indexes)
                    batch, indexes = producer.create_batch(), []
                    batch.append(key=record.key, value=record.value, timestamp=record.timestamp_ms,
                                 headers=record.headers or [])
                indexes.append(index)
            futures.append(await producer.send_batch(batch, topic, partition=partition))
            members.append(indexes)
        _count_sent(app, topic, len(group))
    positions: list[tuple[int, int]] = [(-1, -1)] * len(records)
    for metadata, indexes in zip(await asyncio.gather(*futures), members):
        if metadata is None:
            raise ProducerSendError("the broker acknowledged a record batch without its offset (producer acks=0)")
        for place, index in enumerate(indexes):
            positions[index] = (metadata.partition, metadata.offset + place)
    return positions


def _producer(faust_producer, transactional_id: str | None):
    """The aiokafka producer a record goes through (its transaction's under exactly-once)."""
    if transactional_id is None:
        return faust_producer._ensure_producer()
    producer = faust_producer._transaction_producers.get(transactional_id)
    if producer is None:
        raise ProducerSendError(f"No transaction producer found for : {transactional_id}")
    return producer


def _count_sent(app: faust.App, topic: str, count: int) -> None:
    """Faust's per-topic sent counter, as its sensors count one ``send``."""
    monitor = app.monitor
    for _ in range(count):
        monitor.on_send_initiated(None, topic, None, 0, 0)
