"""Every producer refuses a record over the limit with an error, on a real broker, and sends nothing of it."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import MessageSizeTooLargeError

from streams import kafka, limits
from streams.broker import local
from streams.topology import load_topology
from tests.streams.end_offsets import end_offsets, record_count

pytestmark = pytest.mark.integration
TOPOLOGY = load_topology()
NAMES = TOPOLOGY.names()
KEY = b"default/web"


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory, broker_kind):
    with local.start(broker_kind, tmp_path_factory.mktemp(f"limits-{broker_kind}"), TOPOLOGY) as broker:
        yield broker.bootstrap


@pytest.fixture
def producer_env(monkeypatch, tmp_path, broker_kind) -> None:
    """The environment the producers read: the broker kind (Tansu has no idempotent producers)."""
    monkeypatch.setenv("KOORD_HOME", str(tmp_path))
    monkeypatch.setenv("KOORD_BROKER_KIND", broker_kind)


def _value_of_record_size(size: int) -> bytes:
    value = bytes(size - limits.record_size(KEY, b""))
    while limits.record_size(KEY, value) > size:
        value = value[:-1]
    assert limits.record_size(KEY, value) == size
    return value


async def _read(bootstrap: str, tp: TopicPartition, offset: int) -> bytes:
    consumer = AIOKafkaConsumer(**kafka.client_settings(bootstrap), group_id=None, enable_auto_commit=False,
                                max_partition_fetch_bytes=2 * limits.PRODUCER_MAX_BYTES)
    await consumer.start()
    try:
        consumer.assign([tp])
        consumer.seek(tp, offset)
        return (await consumer.getone()).value
    finally:
        await consumer.stop()


@pytest.mark.usefixtures("producer_env")
def test_the_producer_sends_a_record_of_its_limit_and_raises_for_one_byte_more(bootstrap):
    topic, largest = NAMES["nodes"], _value_of_record_size(limits.PRODUCER_MAX_BYTES)

    async def send():
        async with kafka.producer(bootstrap) as producer:
            placed = await (await producer.send(topic, key=KEY, value=largest, partition=0))
            with pytest.raises(MessageSizeTooLargeError, match="max_request_size"):
                await producer.send(topic, key=KEY, value=largest + b"x", partition=0)
            return placed

    placed = asyncio.run(send())
    tp = TopicPartition(topic, 0)
    assert end_offsets(bootstrap, topic)[tp] == placed.offset + 1
    assert asyncio.run(_read(bootstrap, tp, placed.offset)) == largest


@pytest.mark.usefixtures("producer_env")
def test_produce_sends_nothing_when_any_record_is_over_the_limit(bootstrap):
    topic = NAMES["pods"]
    before = record_count(bootstrap, topic)
    records = [(topic, "default/ok", b"small"), (topic, "default/big", bytes(limits.RECORD_MAX_BYTES))]

    with pytest.raises(MessageSizeTooLargeError, match=r"default/big: record is 1,044,5\d\d bytes.*nothing was sent"):
        asyncio.run(kafka.produce(bootstrap, records))
    assert record_count(bootstrap, topic) == before

    asyncio.run(kafka.produce(bootstrap, records[:1]))
    assert record_count(bootstrap, topic) == before + 1


def test_the_faust_producer_has_the_same_limit():
    """In a fresh interpreter: an app registers its metrics once per process."""
    script = ("from streams.app import create_app; from streams.topology import load_topology; "
              "app = create_app('127.0.0.1:9', load_topology()); "
              "print(app.conf.producer_max_request_size, app.producer._settings_default()['max_request_size'])")
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    assert shown.stdout.split() == [str(limits.PRODUCER_MAX_BYTES)] * 2
