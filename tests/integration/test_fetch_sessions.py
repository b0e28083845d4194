"""A consumer fetching in sessions (``streams.faustcompat.fetchsession``) reads on the real brokers exactly what
it would read without them: every record of 24 partitions once and in order, while records arrive a few at a
time, while a partition is paused (nothing of it until it resumes) and after a seek back. On Kafka the
broker makes a session and the requests after the first are incremental; Tansu makes none, so its requests
stay full (the worker uses sessions on Kafka only)."""

from __future__ import annotations

import asyncio
import random

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from streams.faustcompat.fetchsession import FetchSession, use_fetch_sessions
from tests.integration.conftest import broker_with_topics

pytestmark = pytest.mark.integration

TOPICS = ("sessions-a", "sessions-b", "sessions-c")
PARTITIONS = 8


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory, broker_kind):
    with broker_with_topics(broker_kind, tmp_path_factory.mktemp("fetch-sessions"),
                            {topic: PARTITIONS for topic in TOPICS}) as bootstrap:
        yield bootstrap


def test_a_consumer_in_fetch_sessions_reads_every_record_once_and_in_order(bootstrap, broker_kind, monkeypatch):
    epochs: list[int] = []
    next_request = FetchSession.next_request

    def recorded(session, topics):
        found = next_request(session, topics)
        epochs.append(found[1])
        return found

    monkeypatch.setattr(FetchSession, "next_request", recorded)
    sessions = asyncio.run(_consume(bootstrap))
    if broker_kind == "kafka":
        assert [session.id != 0 for session in sessions.values()] == [True]
        assert epochs.count(0) <= 2 and len(epochs) > 20, epochs[:40]
    else:
        assert all(session.id == 0 for session in sessions.values()) and set(epochs) == {0}


async def _consume(bootstrap: str) -> dict:
    partitions = [TopicPartition(topic, partition) for topic in TOPICS for partition in range(PARTITIONS)]
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    consumer = use_fetch_sessions(AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                                   enable_auto_commit=False, fetch_max_wait_ms=100))
    await producer.start()
    await consumer.start()
    try:
        consumer.assign(partitions)
        sent: dict[TopicPartition, list[bytes]] = {tp: [] for tp in partitions}
        read: dict[TopicPartition, list[bytes]] = {tp: [] for tp in partitions}
        rng = random.Random(7)

        async def send(count: int, to: list[TopicPartition]) -> None:
            for _ in range(count):
                tp = rng.choice(to)
                value = f"{tp.topic}/{tp.partition}/{len(sent[tp])}".encode()
                sent[tp].append(value)
                await producer.send_and_wait(tp.topic, value, partition=tp.partition)

        async def read_until(expected, seconds: float = 30) -> None:
            deadline = asyncio.get_running_loop().time() + seconds
            while expected() and asyncio.get_running_loop().time() < deadline:
                for tp, records in (await consumer.getmany(timeout_ms=200)).items():
                    read[tp].extend(record.value for record in records)

        for _ in range(15):
            await send(rng.randint(1, 4), partitions)
            await read_until(lambda: read != sent)
        assert read == sent

        paused = partitions[3]
        consumer.pause(paused)
        await send(20, partitions)
        await send(3, [paused])
        others = [tp for tp in partitions if tp != paused]
        await read_until(lambda: any(read[tp] != sent[tp] for tp in others))
        assert all(read[tp] == sent[tp] for tp in others) and len(read[paused]) < len(sent[paused])
        consumer.resume(paused)
        await read_until(lambda: read != sent)
        assert read == sent

        again = partitions[10]
        consumer.seek(again, 0)
        before = list(read[again])
        read[again] = []
        await send(5, partitions)
        await read_until(lambda: read != sent)
        assert read == sent and read[again][:len(before)] == before
        return consumer.koord_fetch_sessions
    finally:
        await consumer.stop()
        await producer.stop()
