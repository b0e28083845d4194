"""What the seek fix (``streams.faustcompat.seek``) relies on, on the real brokers: a consumer whose partition
is set to offset 0 while a fetch is in flight reads from the log's first offset, also when the log no longer
starts at 0 (its first records deleted): aiokafka answers OFFSET_OUT_OF_RANGE with a reset to the earliest
offset (``auto_offset_reset="earliest"``, the worker's)."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic, RecordsToDelete
from aiokafka.errors import KafkaError

from tests.integration.conftest import start_broker

pytestmark = pytest.mark.integration

TOPIC = "rewind"


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory, broker_kind):
    broker = start_broker(broker_kind, tmp_path_factory.mktemp("rewind"), None)
    try:
        yield broker.bootstrap
    finally:
        broker.stop()


def test_a_partition_set_to_offset_0_is_read_from_its_first_offset(bootstrap):
    first = asyncio.run(_scenario(bootstrap))
    if isinstance(first, KafkaError):
        pytest.skip(f"the broker does not do DeleteRecords ({type(first).__name__}: {first}), so no log here "
                    "starts after offset 0")
    assert first == [(4, b"4"), (5, b"5"), (6, b"6"), (7, b"7")]


async def _scenario(bootstrap: str) -> list[tuple[int, bytes]] | KafkaError:
    tp = TopicPartition(TOPIC, 0)
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                                fetch_max_wait_ms=1500)
    await admin.start()
    await producer.start()
    try:
        await admin.create_topics([NewTopic(TOPIC, 1, 1)])
        for value in range(8):
            await producer.send_and_wait(TOPIC, str(value).encode(), partition=0)
        try:
            await admin.delete_records({tp: RecordsToDelete(before_offset=4)})
        except KafkaError as error:
            return error
        await consumer.start()
        consumer.assign([tp])
        consumer.seek(tp, 8)
        waiting = asyncio.ensure_future(consumer.getmany(tp, timeout_ms=300))
        await asyncio.sleep(0.1)
        consumer.seek(tp, 0)
        read = [(r.offset, r.value) for r in (await waiting).get(tp, [])]
        for _ in range(10):
            if len(read) >= 4:
                break
            read += [(r.offset, r.value) for r in (await consumer.getmany(tp, timeout_ms=1000)).get(tp, [])]
        return read
    finally:
        await consumer.stop()
        await producer.stop()
        await admin.close()
