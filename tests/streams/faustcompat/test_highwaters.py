"""The highwater patches on a stand-in with Faust's aiokafka consumer-thread interface: on Tansu the reported
highwaters are corrected by a consumer of the patch's own, under exactly-once they come from the broker;
each leaves the other's case to Faust."""

from __future__ import annotations

import asyncio
import types

import pytest

from streams.faustcompat import highwaters


class Thread:
    """What the patches touch of ``AIOKafkaConsumerThread``: Faust reports -1 or 10 per partition."""

    def __init__(self, in_transaction: bool, reported: int = 10) -> None:
        self.consumer = types.SimpleNamespace(in_transaction=in_transaction)
        self.transport = "transport"
        self.reported = reported
        self.probes: list[str] = []

    async def _highwaters(self, partitions):
        return {tp: self.reported for tp in partitions}

    def _ensure_consumer(self):
        async def end_offsets(partitions):
            return {tp: 42 for tp in partitions}
        return types.SimpleNamespace(end_offsets=end_offsets)

    def _create_client_consumer(self, transport):
        probes = self.probes

        async def start():
            probes.append(f"start on {transport}")

        async def stop():
            probes.append("stop")

        return types.SimpleNamespace(start=start, stop=stop)


def test_changelog_highwaters_come_from_the_broker_under_exactly_once():
    class Patched(Thread):
        pass

    highwaters.ask_for_highwaters(Patched)
    assert asyncio.run(Patched(True, reported=-1)._highwaters(["tp"])) == {"tp": 42}
    assert asyncio.run(Patched(False, reported=-1)._highwaters(["tp"])) == {"tp": -1}


@pytest.fixture
def tansu_answers(monkeypatch):
    async def true_highwaters(consumer, reported):
        return {tp: offset + 3 for tp, offset in reported.items()}

    monkeypatch.setattr(highwaters, "true_highwaters", true_highwaters)


@pytest.mark.parametrize("in_transaction, reported, expected, probes", [
    pytest.param(False, 10, {"tp": 13}, ["start on transport", "stop"], id="corrected-by-a-probe-consumer"),
    pytest.param(False, 0, {"tp": 0}, [], id="empty-partitions-are-not-probed"),
    pytest.param(True, 10, {"tp": 10}, [], id="transactional-consumer-left-alone"),
])
def test_tansu_highwaters_are_corrected_with_fetch_high_watermarks(tansu_answers, in_transaction, reported,
                                                                   expected, probes):
    class Patched(Thread):
        pass

    highwaters.correct_highwaters(Patched)
    thread = Patched(in_transaction, reported)
    assert asyncio.run(thread._highwaters(["tp"])) == expected
    assert thread.probes == probes


def test_both_installed_the_exactly_once_one_decides_first(tansu_answers):
    class Patched(Thread):
        pass

    highwaters.correct_highwaters(Patched)
    highwaters.ask_for_highwaters(Patched)
    assert asyncio.run(Patched(True)._highwaters(["tp"])) == {"tp": 42}
    assert asyncio.run(Patched(False)._highwaters(["tp"])) == {"tp": 13}
