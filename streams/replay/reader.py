"""Reading a topic back from the broker, start to end.

"End" is the high watermark the broker reports in Fetch responses, which
Tansu gets right (its ListOffsets answer is wrong; see
``streams.broker.tansu_workarounds``). A partition is done when the
consumer's position reaches that watermark.

A ``read_committed`` reader sees only committed transactions: it skips aborted
records and the transaction markers (each takes an offset, so the offsets it
returns have gaps). It is done only when its position reaches the high
watermark, i.e. when no transaction is open any more: stopping at the last
stable offset would leave out every committed record behind a transaction
still open (one of a worker killed mid-batch stays open until a new producer
with its transactional id fences it, or its timeout). Under exactly-once the
aggregates read their inboxes that way, so replay must too: an aborted
forward read back would be an event the aggregate never saw.
"""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.structs import ConsumerRecord

from streams import kafka
from streams.settings import Settings

IDLE_TIMEOUT_S = 5.0
"""Give up on a partition that answers no fetch for this long."""
OPEN_TRANSACTION_TIMEOUT_S = 75.0
"""... or, for a ``read_committed`` reader, that waits this long for an open transaction to end (the
producers' transaction timeout is aiokafka's default, 60 s)."""

ISOLATION_LEVELS = ("read_uncommitted", "read_committed")


def default_isolation_level(settings: Settings | None = None) -> str:
    """How the workers read: ``read_committed`` under exactly-once, ``read_uncommitted`` otherwise."""
    return (settings or Settings.from_env()).isolation_level


async def read_topic(bootstrap: str, topic: str, partitions: list[int] | None = None,
                     isolation_level: str | None = None, idle_timeout_s: float = IDLE_TIMEOUT_S) -> list[ConsumerRecord]:
    """Every record of ``topic`` (or of the given partitions), in partition then offset order, read with
    ``isolation_level`` (default: :func:`default_isolation_level`); gives up after ``idle_timeout_s`` without
    a fetch answer. aiokafka's fetch wait on both brokers: Tansu serves a short one nothing of a large
    partition (``streams.broker.tansu_workarounds``)."""
    isolation_level = isolation_level or default_isolation_level()
    if isolation_level not in ISOLATION_LEVELS:
        raise ValueError(f"isolation_level must be one of {ISOLATION_LEVELS}, not {isolation_level!r}")
    committed = isolation_level == "read_committed"
    consumer = AIOKafkaConsumer(**kafka.client_settings(bootstrap), enable_auto_commit=False, group_id=None,
                                auto_offset_reset="earliest", isolation_level=isolation_level)
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
            waiting_on_transactions = False
            for tp in list(pending):
                end = consumer.highwater(tp)
                if end is not None and end >= 0 and await consumer.position(tp) >= end:
                    pending.discard(tp)
                    last_progress = loop.time()
                elif committed and (stable := consumer.last_stable_offset(tp)) is not None and end is not None:
                    waiting_on_transactions |= 0 <= stable < end
            if batch:
                last_progress = loop.time()
            elif loop.time() - last_progress > (OPEN_TRANSACTION_TIMEOUT_S if waiting_on_transactions
                                                 else idle_timeout_s):
                raise TimeoutError(f"{topic}: no fetch answer for partitions {sorted(tp.partition for tp in pending)}"
                                   + (" (a transaction stays open)" if waiting_on_transactions else ""))
        return [record for p in partitions for record in records[p]]
    finally:
        await consumer.stop()
