"""The seek fix on a stand-in with Faust's consumer interface: a seek waits for the record being handed over,
and no record fetched before it is handed over after it. The kill -9 test checks it on the real worker."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from faust.types import TP

from streams.faustcompat.seek import patch_consumer


class Consumer:
    """What the fix touches of ``faust.transport.consumer.Consumer``; ``getmany`` stops at the next record
    once the flow is stopped, as Faust's does."""

    def __init__(self, fetched: list[int], committed: dict[TP, int | None] | None = None) -> None:
        self.fetched = fetched
        self.committed = committed or {}
        self.flow_active = True
        self.log: list[str] = []
        self._read_offset: dict[TP, int | None] = {}
        self.app = SimpleNamespace(flow_control=SimpleNamespace(clear=lambda: self.log.append("clear buffers")),
                                   topics=SimpleNamespace(acks_enabled_for=lambda topic: not topic.endswith("changelog")))
        self._thread = SimpleNamespace(seek=self._seek)

    def _seek(self, tp, offset: int) -> None:
        self.log.append(f"position {tp.topic}/{tp.partition} {offset}")

    def assignment(self) -> set[TP]:
        return set(self.committed)

    def stop_flow(self) -> None:
        self.flow_active = False
        self.log.append("stop flow")

    def resume_flow(self) -> None:
        self.flow_active = True
        self.log.append("resume flow")

    async def getmany(self, timeout: float):
        for record in self.fetched:
            if not self.flow_active:
                break
            yield record

    async def perform_seek(self) -> None:
        """Faust's: the read offset of each assigned partition becomes its committed offset, or None."""
        self.log.append("seek")
        self._read_offset.update(self.committed)


patch_consumer(Consumer)


def test_a_seek_waits_for_the_record_in_hand_and_stale_records_are_not_handed_over():
    async def scenario() -> list[str]:
        consumer = Consumer(fetched=[7, 8, 9])
        in_hand, release = asyncio.Event(), asyncio.Event()

        async def delivery_loop():
            async for record in consumer.getmany(1.0):
                consumer.log.append(f"handing {record}")
                in_hand.set()
                await release.wait()
                consumer.log.append(f"handed {record}")

        loop = asyncio.create_task(delivery_loop())
        await in_hand.wait()
        seek = asyncio.create_task(consumer.perform_seek())
        for _ in range(5):
            await asyncio.sleep(0.01)
        assert "seek" not in consumer.log
        release.set()
        await asyncio.gather(seek, loop)
        return consumer.log

    assert asyncio.run(scenario()) == ["handing 7", "stop flow", "handed 7", "clear buffers", "seek", "resume flow"]


def test_stream_partitions_never_committed_are_read_again_from_their_first_offset():
    """aiokafka seeks only partitions with a committed offset; what the fix dropped from the buffers of the
    others would otherwise never be read. Offset 0 is the first offset, or out of range, which aiokafka resets
    to the first offset (``auto_offset_reset="earliest"``)."""
    consumer = Consumer(fetched=[], committed={TP("pods", 0): 12, TP("pods", 1): None, TP("pods", 2): None,
                                               TP("app-table-changelog", 0): None})
    asyncio.run(consumer.perform_seek())
    assert consumer.log == ["stop flow", "clear buffers", "seek", "position pods/1 0", "position pods/2 0",
                            "resume flow"]


def test_a_seek_with_the_flow_stopped_is_faust_own():
    consumer = Consumer(fetched=[])
    consumer.flow_active = False
    asyncio.run(consumer.perform_seek())
    assert consumer.log == ["seek"]
    assert consumer.flow_active is False


def test_the_patch_is_installed_once_on_faust_consumer():
    from faust.transport.consumer import Consumer as FaustConsumer

    from streams.faustcompat.seek import install_faust_seek_fix

    install_faust_seek_fix()
    patched = FaustConsumer.perform_seek
    install_faust_seek_fix()
    assert FaustConsumer.perform_seek is patched and FaustConsumer._koord_seek_fix


def test_a_seek_does_not_wait_forever_for_a_delivery_loop_that_is_gone(monkeypatch):
    import streams.faustcompat.seek as fix

    monkeypatch.setattr(fix, "DRAIN_WAIT_MAX_S", 0.05)

    async def scenario() -> list[str]:
        consumer = Consumer(fetched=[7, 8])
        abandoned = consumer.getmany(1.0)
        await abandoned.__anext__()
        await consumer.perform_seek()
        await abandoned.aclose()
        return consumer.log

    assert asyncio.run(scenario()) == ["stop flow", "clear buffers", "seek", "resume flow"]
