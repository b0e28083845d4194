"""Faust's own partition assignor for every worker, with tables or without.

Faust gives its worker consumer aiokafka's round-robin assignor when the app has no changelog table and no
standby replica (``AIOKafkaConsumerThread._create_worker_consumer``). Its exactly-once producer, though,
names the transactional id of each assigned partition after the assignor's topic group
(``Consumer._tps_to_active_tpgs``: ``app.assignor.group_for_topic``), which only Faust's assignor records: a
worker of a role without tables (the router's, ``streams.roles``) crashed at its first rebalance under
exactly-once with ``KeyError: 'koord.nodeusages'``. :func:`install_own_assignor` wraps that builder so the
consumer assigns with ``app.assignor`` always (co-partitioned: partition p of every source topic of a
partition count goes to one worker). Checked against faust-streaming 0.15.3 (``FAUST_VERSION``) and
aiokafka's ``AIOKafkaConsumer._partition_assignment_strategy``, read when the consumer starts.
"""

from __future__ import annotations


def install_own_assignor() -> None:
    """Make Faust's worker consumer assign with the app's assignor (idempotent)."""
    from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread

    if not getattr(AIOKafkaConsumerThread, "_koord_own_assignor", False):
        use_own_assignor(AIOKafkaConsumerThread)


def use_own_assignor(cls: type) -> None:
    """Wrap ``_create_worker_consumer`` of ``cls``, a class with Faust's aiokafka consumer-thread interface
    (``app``, ``_assignor``), so that the consumer it builds (not yet started) assigns with ``app.assignor``."""
    original = cls._create_worker_consumer

    def _create_worker_consumer(self, transport):
        consumer = original(self, transport)
        self._assignor = self.app.assignor
        consumer._partition_assignment_strategy = [self.app.assignor]
        return consumer

    cls._create_worker_consumer = _create_worker_consumer
    cls._koord_own_assignor = True
