"""The fetch wait of Faust's worker consumer on Tansu: paced (``tansu_workarounds.pace_fetches``) instead
of the fixed 1500 ms Faust gives it.

Tansu answers a waiting Fetch only when its wait runs out, so each Faust consumer hop would add up to
1.5 s (``streams.broker.tansu_workarounds`` explains the pacing and its price). Faust builds the worker
consumer in ``AIOKafkaConsumerThread._create_worker_consumer``; :func:`install_fetch_pacing` wraps it.
Checked against faust-streaming 0.15.3 (``FAUST_VERSION``).
"""

from __future__ import annotations

from streams.broker.tansu_workarounds import pace_fetches
from streams.faustcompat.workerconsumer import wrap_worker_consumer


def install_fetch_pacing(enabled: bool, cls: type | None = None) -> None:
    """Pace the fetch wait of Faust's worker consumers built from now on when ``enabled`` (on Tansu; not on
    Kafka); ``cls``: a stand-in for Faust's ``AIOKafkaConsumerThread`` (``workerconsumer.wrap_worker_consumer``)."""
    if cls is None:
        from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread as cls
    wrap_worker_consumer(cls, "fetch_pacing", pace_fetches, enabled)
