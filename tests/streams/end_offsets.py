"""How many records topics hold on a real broker: end offsets, corrected on Tansu by Fetch high
watermarks (``streams.broker.tansu_workarounds.true_highwaters``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from aiokafka import AIOKafkaConsumer, TopicPartition

from streams import kafka
from streams.broker.tansu_workarounds import true_highwaters


async def _end_offsets(bootstrap: str, topics: Iterable[str]) -> dict[TopicPartition, int]:
    consumer = AIOKafkaConsumer(**kafka.client_settings(bootstrap), group_id=None, enable_auto_commit=False)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for topic in topics for p in await kafka.partitions_for(consumer, topic)]
        return await true_highwaters(consumer, await consumer.end_offsets(tps))
    finally:
        await consumer.stop()


def end_offsets(bootstrap: str, *topics: str) -> dict[TopicPartition, int]:
    """The end offset of every partition of ``topics``."""
    return asyncio.run(_end_offsets(bootstrap, topics))


def record_count(bootstrap: str, *topics: str) -> int:
    """Records ever written to ``topics``: their end offsets added up (compaction does not lower them)."""
    return sum(end_offsets(bootstrap, *topics).values())
