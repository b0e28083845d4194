"""Sending a bad Faust message to the dead-letter topic."""

from __future__ import annotations

from streams.deadletter import dead_letter
from streams.schemas import codec


async def send_dead_letter(topic, stage: str, message, reason: str) -> None:
    record = dead_letter(stage, message.topic, message.partition, message.offset, message.key,
                         message.value, reason, int(message.timestamp * 1000))
    await topic.send(key=message.key, value=codec.encode("DeadLetter", record), force=True)
