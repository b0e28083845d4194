"""Reading a topic back from the broker, start to end.

"End" is the high watermark the broker reports in Fetch responses, which
Tansu gets right (its ListOffsets answer is wrong; see
``streams.broker.tansu_workarounds``). A partition is done when the
consumer's position reaches that watermark.
"""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.structs import ConsumerRecord

from streams import kafka

IDLE_TIMEOUT_S = 5.0
"""Give up on a partition that answers no fetch for this long."""


async def read_topic(bootstrap: str, topic: str, partitions: list[int] | None = None) -> list[ConsumerRecord]:
    """Every record of ``topic`` (or of the given partitions), in partition then offset order."""
    consumer = AIOKafkaConsumer(**kafka.client_settings(bootstrap), **kafka.consumer_settings(), enable_auto_commit=False,
                                group_id=None, auto_offset_reset="earliest")
    await consumer.start()
    try:
        if partitions is None:
            partitions = await kafka.partitions_for(consumer, topic)
        tps = [TopicPartition(topic, p) for p in partitions]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        records: dict[int, list[ConsumerRecord]] = {p: [] for p in partitions}
        pending = set(tps)
        loop = asyncio.get_running_loop()
        last_progress = loop.time()
        while pending:
            batch = await consumer.getmany(*pending, timeout_ms=200)
            for tp, messages in batch.items():
                records[tp.partition].extend(messages)
            for tp in list(pending):
                highwater = consumer.highwater(tp)
                if highwater is not None and await consumer.position(tp) >= highwater:
                    pending.discard(tp)
                    last_progress = loop.time()
            if batch:
                last_progress = loop.time()
            elif loop.time() - last_progress > IDLE_TIMEOUT_S:
                raise TimeoutError(f"{topic}: no fetch answer for partitions {sorted(tp.partition for tp in pending)}")
        return [record for p in partitions for record in records[p]]
    finally:
        await consumer.stop()

