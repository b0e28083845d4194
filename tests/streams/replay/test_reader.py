"""Reading a topic back under ``read_committed`` on a real Kafka: committed records behind a transaction
still open are waited for, not left out (``streams.replay.reader``)."""

import asyncio

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import NewTopic

from streams.broker import local
from streams.kafka import admin_client
from streams.replay.reader import read_topic
from streams.topology import load_topology
from tests.brokers import require_kafka


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    require_kafka()
    started = local.start("kafka", tmp_path_factory.mktemp("reader"), load_topology(), 1)
    try:
        yield started
    finally:
        started.stop()


def test_committed_records_behind_an_open_transaction_are_read_once_it_ends(kafka):
    async def scenario() -> tuple[list[bytes], list[bytes]]:
        async with admin_client(kafka.bootstrap) as admin:
            await admin.create_topics([NewTopic("reader-probe", 1, 1)])
        slow = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap, transactional_id="reader-slow")
        fast = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap, transactional_id="reader-fast")
        await slow.start()
        await fast.start()
        try:
            await slow.begin_transaction()
            await slow.send_and_wait("reader-probe", b"aborted")
            async with fast.transaction():
                await fast.send_and_wait("reader-probe", b"committed-after")
            reading = asyncio.create_task(read_topic(kafka.bootstrap, "reader-probe", isolation_level="read_committed"))
            await asyncio.sleep(3)
            still_waiting = not reading.done()
            await slow.abort_transaction()
            async with slow.transaction():
                await slow.send_and_wait("reader-probe", b"committed-last")
            committed = [record.value for record in await reading]
            everything = [record.value for record in await read_topic(kafka.bootstrap, "reader-probe",
                                                                      isolation_level="read_uncommitted")]
            assert still_waiting, "the reader stopped at the last stable offset"
            return committed, everything
        finally:
            await slow.stop()
            await fast.stop()

    committed, everything = asyncio.run(scenario())
    assert committed[:1] == [b"committed-after"]
    assert b"aborted" not in committed
    assert everything[:2] == [b"aborted", b"committed-after"]
