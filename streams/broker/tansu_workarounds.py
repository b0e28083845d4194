"""Workarounds for the embedded broker's defects, harmless on real Kafka.

Tansu (the embedded broker) answers ListOffsets "latest" with the base offset
of the last record batch plus one instead of the last offset plus one
(``shared/BROKER-NOTES.md``, defect 1). Faust takes that answer as the
changelog highwater when it recovers a table, so a restarted worker would
stop recovering before the last updates and come back with stale tables.

:func:`true_highwaters` asks the question differently: seek just before the
reported end, fetch, and read the high watermark from the Fetch response,
which Tansu reports correctly. On real Kafka the two answers are equal, so
the fix changes nothing there except one small fetch per changelog partition
at recovery.

Tansu also leaves a waiting Fetch waiting when records arrive: a fetch that
found nothing returns only after its full ``fetch_max_wait_ms`` (Faust
hard-codes 1500 ms, aiokafka defaults to 500 ms), so each consumer hop of the
pipeline added up to that much latency. :data:`FETCH_MAX_WAIT_MS` caps it for
every consumer koordstream makes (:func:`install_faust_fetch_wait_fix` for
Faust's worker consumer, ``streams.kafka.consumer_settings()`` for the rest).
On real Kafka, where a waiting fetch is answered as soon as data arrives, the
cost is an idle consumer polling every ``FETCH_MAX_WAIT_MS`` instead of every
1.5 s: a few hundred small requests per second across a deployment.

Everything else the project needs from the broker avoids end offsets on its
own: "caught up" for ``koord apply --wait`` is read from the read model
(source offsets carried through every output), never from lag.
"""

from __future__ import annotations

import asyncio
from typing import Mapping

from aiokafka import AIOKafkaConsumer, TopicPartition

_FETCH_TIMEOUT_S = 10.0
FETCH_MAX_WAIT_MS = 10
"""Longest a fetch that found no records waits before it returns."""


async def true_highwaters(consumer: AIOKafkaConsumer, reported: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """Correct reported end offsets with Fetch high watermarks.

    ``consumer`` is a started consumer without a group, used only here.
    A partition reported empty (0) is empty on either broker.
    """
    result = {tp: offset for tp, offset in reported.items()}
    pending = {tp for tp, offset in reported.items() if offset and offset > 0}
    if not pending:
        return result
    consumer.assign(sorted(pending))
    for tp in pending:
        consumer.seek(tp, reported[tp] - 1)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _FETCH_TIMEOUT_S
    while pending and loop.time() < deadline:
        await consumer.getmany(*pending, timeout_ms=200)
        for tp in list(pending):
            highwater = consumer.highwater(tp)
            if highwater is not None:
                result[tp] = max(highwater, reported[tp])
                pending.discard(tp)
    if pending:
        raise TimeoutError(f"no fetch high watermark for {sorted(pending)} within {_FETCH_TIMEOUT_S:.0f}s")
    return result


def install_faust_highwater_fix() -> None:
    """Make Faust's aiokafka driver use :func:`true_highwaters` for table recovery."""
    from faust.transport.drivers import aiokafka as driver

    thread_cls = driver.AIOKafkaConsumerThread
    if getattr(thread_cls, "_koord_highwater_fix", False):
        return
    original = thread_cls._highwaters

    async def _highwaters(self, partitions):
        reported = await original(self, partitions)
        if self.consumer.in_transaction or not any(reported.values()):
            return reported

        async def probe() -> dict:
            consumer = self._create_client_consumer(self.transport)
            await consumer.start()
            try:
                return await true_highwaters(consumer, reported)
            finally:
                await consumer.stop()

        # A consumer of its own, on an event loop of its own: started and
        # stopped inside Faust's consumer-thread loop, aiokafka hangs in stop().
        return await asyncio.to_thread(asyncio.run, probe())

    thread_cls._highwaters = _highwaters
    thread_cls._koord_highwater_fix = True


def install_faust_fetch_wait_fix() -> None:
    """Cap the fetch wait of Faust's worker consumer at :data:`FETCH_MAX_WAIT_MS`."""
    from faust.transport.drivers import aiokafka as driver

    thread_cls = driver.AIOKafkaConsumerThread
    if getattr(thread_cls, "_koord_fetch_wait_fix", False):
        return
    original = thread_cls._create_worker_consumer

    def _create_worker_consumer(self, transport):
        consumer = original(self, transport)
        consumer._fetch_max_wait_ms = FETCH_MAX_WAIT_MS  # read by start(), which builds the Fetcher
        return consumer

    thread_cls._create_worker_consumer = _create_worker_consumer
    thread_cls._koord_fetch_wait_fix = True
