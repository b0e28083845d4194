"""The switch by which a module of this package changes the consumer Faust builds for its worker.

Faust builds the worker's aiokafka consumer in ``AIOKafkaConsumerThread._create_worker_consumer``
(faust-streaming 0.15.3); ``fetchwait`` (on Tansu), ``fetchsession`` and ``fetchgather`` (on Kafka) each
pass it through a function of theirs, and the tests switch them on and off on a stand-in class.
"""

from __future__ import annotations

from typing import Any, Callable


def wrap_worker_consumer(cls: type, name: str, wrap: Callable[[Any], Any], enabled: bool) -> None:
    """Make ``cls._create_worker_consumer`` (a class with Faust's aiokafka consumer-thread interface) pass the
    consumer it builds through ``wrap`` while ``enabled``: wrapped once under ``name`` (the class's
    ``_koord_<name>`` flag), the switch follows the last call."""
    setattr(cls, f"_koord_{name}_enabled", enabled)
    if cls.__dict__.get(f"_koord_{name}"):
        return
    original = cls._create_worker_consumer

    def _create_worker_consumer(self, transport):
        consumer = original(self, transport)
        return wrap(consumer) if getattr(cls, f"_koord_{name}_enabled") else consumer

    cls._create_worker_consumer = _create_worker_consumer
    setattr(cls, f"_koord_{name}", True)
