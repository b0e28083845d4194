"""The fetch wait of Faust's worker consumer on Tansu: paced (``tansu_workarounds.pace_fetches``) instead
of the fixed 1500 ms Faust gives it.

Tansu answers a waiting Fetch only when its wait runs out, so each Faust consumer hop would add up to
1.5 s (``streams.broker.tansu_workarounds`` explains the pacing and its price). Faust builds the worker
consumer in ``AIOKafkaConsumerThread._create_worker_consumer``; :func:`install_fetch_pacing` wraps it.
Checked against faust-streaming 0.15.3 (``FAUST_VERSION``).
"""

from __future__ import annotations

from streams.broker.tansu_workarounds import pace_fetches


def install_fetch_pacing() -> None:
    """Pace the fetch wait of Faust's worker consumer (idempotent)."""
    from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread

    if not getattr(AIOKafkaConsumerThread, "_koord_fetch_wait_fix", False):
        pace_worker_consumer(AIOKafkaConsumerThread)


def pace_worker_consumer(cls: type) -> None:
    """Wrap ``_create_worker_consumer`` of ``cls``, a class with Faust's aiokafka consumer-thread
    interface, so that the consumer it builds paces its fetches."""
    original = cls._create_worker_consumer

    def _create_worker_consumer(self, transport):
        return pace_fetches(original(self, transport))

    cls._create_worker_consumer = _create_worker_consumer
    cls._koord_fetch_wait_fix = True
