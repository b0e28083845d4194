"""Sending a bad Faust message to the dead-letter topic."""

from __future__ import annotations

from streams.deadletter import dead_letter, reference_key
from streams.schemas import codec


async def send_dead_letter(batches, topic, stage: str, message, reason: str) -> None:
    """Through ``batches`` (a ``streams.agents.transactions.Batches``), delivered with what it queued before:
    under exactly-once in the transaction of the partition ``message`` was read from. Keyed by the bad
    record's reference, as the cores' dead letters are (``outputs.output_key``): its own key may be what is
    wrong with it."""
    record = dead_letter(stage, message.topic, message.partition, message.offset, message.key,
                         message.value, reason, int(message.timestamp * 1000))
    batches.add(topic, reference_key(record).encode(), codec.encode_own("DeadLetter", record),
                (message.topic, message.partition))
    await batches.deliver()
