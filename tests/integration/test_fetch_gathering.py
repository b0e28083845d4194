"""A consumer gathering its fetches (``streams.faustcompat.fetchgather``) on top of fetch sessions, as the
worker's on Kafka: it reads every record of a steady flow once and in order with gathering fetches, and after
a quiet spell a lone record with a fetch that asks for one byte again (the fetch already in flight when it is
sent, or one after it: the fetcher prefetches while the test sleeps). The worker gathers on Kafka only:
Tansu answers a waiting fetch only when its wait is over (``streams.broker.tansu_workarounds``)."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from streams.faustcompat.fetchgather import GATHER_BYTES, GATHER_WAIT_MS, Gathering, gather_fetches
from streams.faustcompat.fetchsession import use_fetch_sessions
from tests.integration.conftest import broker_with_topics

pytestmark = pytest.mark.integration

TOPIC = "gathering"
PARTITIONS = 4


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory, broker_kind):
    if broker_kind != "kafka":
        pytest.skip("the worker gathers its fetches on Kafka only: Tansu answers a waiting fetch only when its "
                    "wait is over, so there the wait is paced instead (streams.faustcompat.fetchwait)")
    with broker_with_topics(broker_kind, tmp_path_factory.mktemp("fetch-gathering"), {TOPIC: PARTITIONS}) as bootstrap:
        yield bootstrap


def test_a_gathering_consumer_reads_a_steady_flow_in_gathered_fetches_and_a_lone_record_at_once(bootstrap,
                                                                                                 monkeypatch):
    asked: list[tuple[int, int]] = []
    shape = Gathering.shape

    def recorded(gathering, request):
        shape(gathering, request)
        asked.append((request._min_bytes, request._max_wait_ms))

    monkeypatch.setattr(Gathering, "shape", recorded)
    flow, lone = asyncio.run(_consume(bootstrap, asked))
    assert flow.count((GATHER_BYTES, GATHER_WAIT_MS)) > 10, flow
    assert flow[0] == (1, 500) and lone and set(lone) == {(1, 500)}, lone


async def _consume(bootstrap: str, asked: list) -> tuple[list, list]:
    partitions = [TopicPartition(TOPIC, partition) for partition in range(PARTITIONS)]
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    consumer = gather_fetches(use_fetch_sessions(AIOKafkaConsumer(
        bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False, fetch_max_wait_ms=500)))
    await producer.start()
    await consumer.start()
    try:
        consumer.assign(partitions)
        sent: dict[TopicPartition, list[bytes]] = {tp: [] for tp in partitions}
        read: dict[TopicPartition, list[bytes]] = {tp: [] for tp in partitions}

        async def send(count: int) -> None:
            for index in range(count):
                tp = partitions[index % PARTITIONS]
                value = f"{tp.partition}/{len(sent[tp])}".encode()
                sent[tp].append(value)
                await producer.send_and_wait(tp.topic, value, partition=tp.partition)
                await asyncio.sleep(0.002)

        async def read_until_all(sending: asyncio.Future, seconds: float = 60) -> None:
            deadline = asyncio.get_running_loop().time() + seconds
            while (not sending.done() or read != sent) and asyncio.get_running_loop().time() < deadline:
                for tp, records in (await consumer.getmany(timeout_ms=200)).items():
                    read[tp].extend(record.value for record in records)

        sending = asyncio.ensure_future(send(600))
        await read_until_all(sending)
        await sending
        assert read == sent
        flow = list(asked)
        gathering = consumer.koord_gathering
        await asyncio.sleep(2.5)
        in_flight = asked[-1:]
        del asked[:]
        sending = asyncio.ensure_future(send(1))
        await read_until_all(sending)
        assert read == sent and list(gathering.values())[0].gathering is False
        return flow, in_flight + asked
    finally:
        await consumer.stop()
        await producer.stop()
