"""Kafka clients for the CLI and the non-Faust processes (aiokafka).

Every client connects with ``streams.broker.connection``'s settings (and
``admin_client`` is its admin client), so the TLS/SASL configuration applies to
every client alike; one place builds producers, so every one of them refuses a
record over ``streams.limits`` with ``MessageSizeTooLargeError`` instead of losing it.
"""

from __future__ import annotations

import contextlib
from typing import AsyncIterator, Sequence

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import MessageSizeTooLargeError
from aiokafka.structs import RecordMetadata

from streams import limits
from streams.broker import fetchcancel
from streams.broker.connection import admin_client, client_settings
from streams.broker.tansu_workarounds import FETCH_MAX_WAIT_MS, pace_fetches
from streams.settings import Settings

SESSION_TIMEOUT_MS = 10_000
"""Consumer-group session timeout; see ``streams.app.SESSION_TIMEOUT_S``."""


@contextlib.asynccontextmanager
async def producer(bootstrap: str) -> AsyncIterator[AIOKafkaProducer]:
    """An ``acks=all`` producer; on Kafka also idempotent, so a send retried after a broker failover is
    written once (Tansu has no idempotent producers: InitProducerId fails there). A send of a record
    over ``limits.PRODUCER_MAX_BYTES`` raises ``MessageSizeTooLargeError`` and sends nothing."""
    client = AIOKafkaProducer(**client_settings(bootstrap), acks="all", linger_ms=5,
                              max_request_size=limits.PRODUCER_MAX_BYTES,
                              enable_idempotence=not Settings.from_env().tansu)
    await client.start()
    try:
        yield client
    finally:
        await client.stop()


async def produce(bootstrap: str, records: Sequence[tuple[str, str, bytes | None]],
                  headers: Sequence[tuple[str, bytes]] = ()) -> list[RecordMetadata]:
    """Send (topic, key, value) records in order, each with ``headers``; return where each landed.

    All or nothing for size: a record over ``limits.RECORD_MAX_BYTES`` raises MessageSizeTooLargeError
    before any record is sent."""
    for topic, key, value in records:
        reason = limits.too_big(value, key, headers)
        if reason:
            raise MessageSizeTooLargeError(f"{topic} {key}: {reason}; nothing was sent")
    async with producer(bootstrap) as client:
        futures = [await client.send(topic, key=key.encode(), value=value, headers=list(headers) or None)
                   for topic, key, value in records]
        return [await future for future in futures]


def consumer_settings() -> dict:
    """For the short-lived readers of live outputs (benchmarks): on Tansu a short fetch wait (``tansu_workarounds``:
    a waiting fetch is not woken by new records); on Kafka aiokafka's defaults, since Kafka answers a
    waiting fetch as soon as records arrive."""
    return {"fetch_max_wait_ms": FETCH_MAX_WAIT_MS} if Settings.from_env().tansu else {}


def consumer(bootstrap: str, topics: Sequence[str], group_id: str | None, from_beginning: bool) -> AIOKafkaConsumer:
    """A consumer for the long-running loops (projection, decision stream, node agents, bridge), reading with
    the processing guarantee's isolation level (``Settings.isolation_level``); on Tansu its fetch wait is
    paced (``tansu_workarounds.pace_fetches``): short while records flow, longer when idle. It stops while its
    broker is down (``fetchcancel``)."""
    fetchcancel.install()
    settings = Settings.from_env()
    client = AIOKafkaConsumer(
        *topics, **client_settings(bootstrap), **consumer_settings(), group_id=group_id, enable_auto_commit=False,
        auto_offset_reset="earliest" if from_beginning else "latest", isolation_level=settings.isolation_level,
        session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=2_000,
    )
    return pace_fetches(client) if settings.tansu else client


async def partitions_for(consumer: AIOKafkaConsumer, topic: str) -> list[int]:
    """The partitions of ``topic``, in order, for a started consumer that has not subscribed to it.

    A consumer's own metadata covers only the topics it subscribed to on Kafka (Tansu answers with every
    topic), so this refreshes the metadata of all topics first."""
    found = consumer.partitions_for_topic(topic)
    if not found:
        await consumer._client.force_metadata_update()
        found = consumer.partitions_for_topic(topic)
    if not found:
        raise KeyError(f"topic {topic} does not exist")
    return sorted(found)


async def end_offsets(client: AIOKafkaConsumer, partitions: Sequence[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """The end offset (the next offset to be written) of each (topic, partition), through a started consumer
    without a group that is used for nothing else. On Tansu, whose ListOffsets is wrong, corrected with
    Fetch high watermarks (``tansu_workarounds.true_highwaters``)."""
    from aiokafka.structs import TopicPartition

    from streams.broker.tansu_workarounds import true_highwaters

    found = await client.end_offsets([TopicPartition(topic, partition) for topic, partition in partitions])
    if Settings.from_env().tansu:
        found = await true_highwaters(client, found)
    return {(tp.topic, tp.partition): offset for tp, offset in found.items()}


async def read_end_offsets(bootstrap: str, partitions: Sequence[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """:func:`end_offsets` through a consumer of its own, for a one-off question."""
    client = consumer(bootstrap, [], None, from_beginning=True)
    await client.start()
    try:
        return await end_offsets(client, partitions)
    finally:
        await client.stop()
