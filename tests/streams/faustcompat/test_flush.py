"""The full flush on a stand-in with the interface of Faust's producer buffer: a flush returns only once every
record is handed over, also when the sender is slower than Faust's 100 ms wait, and gives up after a stall."""

from __future__ import annotations

import asyncio

import pytest

import streams.faustcompat.flush as flush_module
from streams.faustcompat.flush import patch_buffer


class Buffer:
    """What the patch touches of ``faust.transport.producer.ProducerBuffer``: a queue drained by a sender
    that takes ``send_s`` per record."""

    def __init__(self, records: int, send_s: float) -> None:
        self.pending = list(range(records))
        self.send_s = send_s
        self.state = "running"
        self.message_sent = asyncio.Event()
        self.handed: list[int] = []

    @property
    def size(self) -> int:
        return len(self.pending)

    async def _send_pending(self, fut: int) -> None:
        await asyncio.sleep(self.send_s)
        self.handed.append(fut)

    async def handle_pending(self) -> None:
        while self.pending:
            fut = self.pending.pop(0)
            await self._send_pending(fut)
            self.message_sent.set()


patch_buffer(Buffer)


def test_a_flush_waits_for_a_sender_slower_than_faust_own_wait():
    async def scenario() -> list[int]:
        buffer = Buffer(records=3, send_s=0.15)
        sender = asyncio.create_task(buffer.handle_pending())
        await buffer.flush()
        handed = list(buffer.handed)
        await sender
        return handed

    assert asyncio.run(scenario()) == [0, 1, 2]


def test_a_flush_counts_the_record_being_handed_over():
    async def scenario() -> list[int]:
        buffer = Buffer(records=1, send_s=0.05)
        sender = asyncio.create_task(buffer.handle_pending())
        await asyncio.sleep(0.01)
        assert buffer.size == 0
        await buffer.flush()
        handed = list(buffer.handed)
        await sender
        return handed

    assert asyncio.run(scenario()) == [0]


def test_a_flush_gives_up_when_nothing_is_handed_over(monkeypatch):
    monkeypatch.setattr(flush_module, "STALL_S", 0.2)

    async def scenario() -> None:
        await Buffer(records=2, send_s=0).flush()

    with pytest.raises(RuntimeError, match="nothing handed over for 0s, 2 records waiting"):
        asyncio.run(scenario())


def test_the_patch_is_installed_once_on_faust_buffer():
    from faust.transport.producer import ProducerBuffer

    from streams.faustcompat.flush import install_full_flush

    install_full_flush()
    patched = ProducerBuffer.flush
    install_full_flush()
    assert ProducerBuffer.flush is patched and ProducerBuffer._koord_full_flush
