"""Fetch pacing: the wait a Tansu consumer uses for its next fetch, from when it last saw records."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import TopicPartition

from streams.broker.tansu_workarounds import FETCH_PACING, FetchPacer, FetchPacing, fetch_starved, pace_fetches

PACING = FetchPacing(active_wait_ms=10, idle_after_s=1.0, idle_wait_ms=100)
STARVED = "starved"
"""A fetch that found nothing although records waited (in the ``fetches`` tables, beside True and False)."""


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("fetches, waits", [
    pytest.param([(0.5, False), (0.9, False)], [10, 10], id="short-while-records-are-recent"),
    pytest.param([(1.0, False), (1.1, False), (1.2, False), (1.3, False), (1.4, False)], [20, 40, 80, 100, 100],
                 id="doubles-once-idle-up-to-the-idle-wait"),
    pytest.param([(1.0, False), (1.1, False), (1.2, True), (1.3, False)], [20, 40, 10, 10],
                 id="first-record-makes-it-short-again"),
    pytest.param([(0.1, STARVED), (0.2, STARVED)], [20, 40], id="starved-doubles-at-once"),
    pytest.param([(0.1, STARVED), (0.2, STARVED), (0.3, True), (0.4, False), (0.5, True)], [20, 40, 40, 40, 40],
                 id="records-after-starvation-keep-the-raised-floor"),
    pytest.param([(0.1, STARVED)] * 5 + [(0.2, True)], [20, 40, 80, 100, 100, 100],
                 id="floor-never-exceeds-the-idle-wait"),
    pytest.param([(0.1, STARVED), (0.2, True), (1.2, False), (1.3, False), (1.4, False), (1.5, True)],
                 [20, 20, 40, 80, 100, 20], id="idle-after-a-floor-still-doubles-up-to-the-idle-wait"),
    pytest.param([(0.9, STARVED), (1.5, False)], [20, 20], id="starved-is-not-idle"),
])
def test_wait_after_each_fetch(fetches, waits):
    clock = Clock()
    pacer = FetchPacer(PACING, clock)
    observed = []
    for at, outcome in fetches:
        clock.now = at
        observed.append(pacer.observe(outcome is True, outcome is STARVED))
    assert observed == waits


@pytest.mark.parametrize("pacing", [
    pytest.param(FetchPacing(active_wait_ms=0), id="zero-active-wait"),
    pytest.param(FetchPacing(active_wait_ms=600, idle_wait_ms=500), id="idle-shorter-than-active"),
    pytest.param(FetchPacing(idle_after_s=-1), id="negative-idle-after"),
])
def test_invalid_pacing_is_rejected(pacing):
    with pytest.raises(ValueError):
        pacing.validate()


def test_default_pacing_is_valid_and_starts_short():
    FETCH_PACING.validate()
    assert FetchPacer().wait_ms == FETCH_PACING.active_wait_ms


class PartitionState:
    def __init__(self, highwater: int | None) -> None:
        self.highwater = highwater


class Assignment:
    """What starvation detection reads of aiokafka's assignment: whether it is still current and each
    partition's state, whose high watermark the fetch's response set."""

    def __init__(self, highwaters: dict[TopicPartition, int | None], active: bool = True) -> None:
        self.active = active
        self.states = {tp: PartitionState(highwater) for tp, highwater in highwaters.items()}

    def state_value(self, tp: TopicPartition) -> PartitionState | None:
        return self.states.get(tp)


class Request:
    """A FetchRequest's partitions as aiokafka builds them: ``[(topic, [(partition, offset, max_bytes)])]``."""

    def __init__(self, offsets: dict[TopicPartition, int]) -> None:
        self.topics = [(topic, [(tp.partition, offset, 1_048_576) for tp, offset in offsets.items()
                                if tp.topic == topic])
                       for topic in sorted({tp.topic for tp in offsets})]


A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)
AT_END = (Assignment({A0: 5}), Request({A0: 5}))
"""A fetch at the partition's end: nothing waits, so finding nothing is idle."""


class Fetcher:
    """What pacing touches of aiokafka's Fetcher: the wait it puts in its next FetchRequest and the
    coroutine that handles one response (True when it added records; the response's high watermarks
    are already in the assignment here)."""

    def __init__(self, results: list[bool]) -> None:
        self._fetch_max_wait_ms = 1500
        self.results = results

    async def _proc_fetch_request(self, assignment, node_id, request) -> bool:
        return self.results.pop(0)


class Consumer:
    def __init__(self, results: list[bool]) -> None:
        self.results = results
        self._fetcher = None

    async def start(self) -> None:
        self._fetcher = Fetcher(self.results)


def paced_waits(results: list[bool], fetches: list[tuple[Assignment, Request]], pacing: FetchPacing) -> list:
    """The wait before the first fetch, then (found, wait) after each of ``fetches``."""
    consumer = pace_fetches(Consumer(results), pacing)

    async def run() -> list:
        await consumer.start()
        fetcher = consumer._fetcher
        waits = [fetcher._fetch_max_wait_ms]
        for assignment, request in fetches:
            found = await fetcher._proc_fetch_request(assignment, 0, request)
            waits.append((found, fetcher._fetch_max_wait_ms))
        return waits

    return asyncio.run(run())


def test_paced_consumer_sets_the_wait_of_each_next_fetch():
    pacing = FetchPacing(active_wait_ms=10, idle_after_s=0, idle_wait_ms=30)
    assert paced_waits([True, False, False], [AT_END] * 3, pacing) == [10, (True, 10), (False, 20), (False, 30)]


@pytest.mark.parametrize("assignment, request_, starved", [
    pytest.param(Assignment({A0: 5}), Request({A0: 5}), False, id="at-the-end-is-idle"),
    pytest.param(Assignment({A0: 9}), Request({A0: 5}), True, id="records-waiting-past-the-offset"),
    pytest.param(Assignment({A0: 5, A1: 3, B0: 4}), Request({A0: 5, A1: 2, B0: 4}), True,
                 id="one-partition-of-several-waiting"),
    pytest.param(Assignment({A0: None}), Request({A0: 5}), False, id="no-highwater-yet"),
    pytest.param(Assignment({A0: 9}, active=False), Request({A0: 5}), False, id="assignment-changed-during-fetch"),
    pytest.param(Assignment({}), Request({A0: 5}), False, id="partition-no-longer-assigned"),
])
def test_fetch_starved(assignment, request_, starved):
    assert fetch_starved(assignment, request_) is starved


def test_paced_consumer_raises_its_wait_on_a_starved_fetch():
    pacing = FetchPacing(active_wait_ms=10, idle_after_s=60, idle_wait_ms=1000)
    behind = (Assignment({A0: 900}), Request({A0: 5}))
    waits = paced_waits([False, False, True, False], [behind, behind, behind, AT_END], pacing)
    assert waits == [10, (False, 20), (False, 40), (True, 40), (False, 40)]


def test_records_found_are_never_starved():
    pacing = FetchPacing(active_wait_ms=10, idle_after_s=60, idle_wait_ms=1000)
    assert paced_waits([True], [(Assignment({A0: 900}), Request({A0: 5}))], pacing) == [10, (True, 10)]
