"""A consumer that serves one poll and then stops its reader: the loops around ``streams.records`` without Kafka."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace


def message(topic: str, offset: int, value: bytes | None, key: bytes = b"k") -> SimpleNamespace:
    return SimpleNamespace(topic=topic, partition=0, offset=offset, key=key, value=value, timestamp=0)


class OnePollConsumer:
    """``getmany`` returns ``messages`` (one partition per topic) once and sets ``stop``; later polls are empty."""

    def __init__(self, messages: list, stop: asyncio.Event) -> None:
        self.batches = {}
        for msg in messages:
            self.batches.setdefault(msg.topic, []).append(msg)
        self.done, self.committed = stop, 0

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    async def getmany(self, timeout_ms: int) -> dict:
        batches, self.batches = self.batches, {}
        self.done.set()
        return batches

    async def commit(self) -> None:
        self.committed += 1
