"""Where Faust's table recovery takes a changelog's highwater from: two wraps of
``AIOKafkaConsumerThread._highwaters`` (the aiokafka driver), checked against faust-streaming 0.15.3
(``FAUST_VERSION``).

Recovery replays a changelog partition up to its highwater, so a highwater too low leaves a restarted
worker with stale tables, and one of -1 restores nothing.

- On Tansu, whose ListOffsets "latest" is wrong (``streams.broker.tansu_workarounds``),
  :func:`install_true_highwaters` corrects Faust's answer with Fetch high watermarks
  (``tansu_workarounds.true_highwaters``).
- Under exactly-once Faust reads ``last_stable_offset``, which aiokafka knows only once it has fetched
  from the partition: a worker starting or taking over read -1 and restored nothing (found by the
  kill -9 test: the restarted worker had forgotten every node). :func:`install_committed_highwaters`
  asks the broker instead (ListOffsets, ``read_committed``: the last stable offset); Faust's recovery
  already ends at it when markers hide the last offsets.

The two never act on the same call: the first leaves a transactional consumer alone, the second
anything else. ``streams.faustcompat.install`` installs the first before the second.
"""

from __future__ import annotations

import asyncio

from streams.broker.tansu_workarounds import true_highwaters


def install_true_highwaters() -> None:
    """Make Faust's aiokafka driver use :func:`true_highwaters` for table recovery (idempotent)."""
    from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread

    if not getattr(AIOKafkaConsumerThread, "_koord_highwater_fix", False):
        correct_highwaters(AIOKafkaConsumerThread)


def correct_highwaters(cls: type) -> None:
    """Wrap ``_highwaters`` of ``cls``, a class with Faust's aiokafka consumer-thread interface
    (``consumer``, ``transport``, ``_create_client_consumer``): outside a transaction, Faust's answer
    corrected by a consumer of its own."""
    original = cls._highwaters

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

    cls._highwaters = _highwaters
    cls._koord_highwater_fix = True


def install_committed_highwaters() -> None:
    """Make Faust's aiokafka driver ask the broker for the changelog highwaters under exactly-once
    (idempotent)."""
    from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread

    if not getattr(AIOKafkaConsumerThread, "_koord_committed_highwaters", False):
        ask_for_highwaters(AIOKafkaConsumerThread)


def ask_for_highwaters(cls: type) -> None:
    """Wrap ``_highwaters`` of ``cls``, a class with Faust's aiokafka consumer-thread interface: under
    exactly-once, the end offsets its ``read_committed`` consumer gets from the broker."""
    original = cls._highwaters

    async def _highwaters(self, partitions):
        if not self.consumer.in_transaction:
            return await original(self, partitions)
        return await self._ensure_consumer().end_offsets(list(partitions))

    cls._highwaters = _highwaters
    cls._koord_committed_highwaters = True
