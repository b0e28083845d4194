"""Fetch pacing: the wait a Tansu consumer uses for its next fetch, from when it last saw records."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import TopicPartition

from streams.broker.tansu_workarounds import (FETCH_PACING, FetchPacer, FetchPacing, fetch_starved, fetched_offsets,
                                              pace_fetches)

PACING = FetchPacing(active_wait_ms=10, idle_after_s=1.0, idle_wait_ms=100, floor_decay_s=5.0)
AT5, AT6 = frozenset({("a", 0, 5)}), frozenset({("a", 0, 6)})
"""Fetches that found nothing although records waited past offset 5 (6) of partition a-0 (in the ``fetches``
tables, beside True for records found and False for an idle fetch)."""


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def waits_after(fetches: list[tuple[float, bool | frozenset]]) -> list[int]:
    clock = Clock()
    pacer = FetchPacer(PACING, clock)
    observed = []
    for at, outcome in fetches:
        clock.now = at
        observed.append(pacer.observe(outcome is True, outcome if isinstance(outcome, frozenset) else None))
    return observed


@pytest.mark.parametrize("fetches, waits", [
    pytest.param([(0.5, False), (0.9, False)], [10, 10], id="short-while-records-are-recent"),
    pytest.param([(1.0, False), (1.1, False), (1.2, False), (1.3, False), (1.4, False)], [20, 40, 80, 100, 100],
                 id="doubles-once-idle-up-to-the-idle-wait"),
    pytest.param([(1.0, False), (1.1, False), (1.2, True), (1.3, False)], [20, 40, 10, 10],
                 id="first-record-makes-it-short-again"),
    pytest.param([(0.1, AT5)], [10], id="one-starved-fetch-changes-no-wait"),
    pytest.param([(0.1, AT5), (0.2, AT5)], [10, 20], id="second-starved-at-the-same-offsets-doubles"),
    pytest.param([(0.1, AT5), (0.2, AT6), (0.3, AT5)], [10, 10, 10], id="starved-at-other-offsets-is-no-pair"),
    pytest.param([(0.1, AT5), (0.2, False), (0.3, AT5)], [10, 10, 10], id="an-idle-fetch-between-breaks-the-pair"),
    pytest.param([(0.1, AT5)] * 5, [10, 20, 20, 40, 40], id="each-raise-needs-a-new-pair"),
    pytest.param([(0.1, AT5), (0.2, AT5), (0.3, True), (0.4, False), (0.5, True)], [10, 20, 20, 20, 20],
                 id="records-after-starvation-keep-the-raised-floor"),
    pytest.param([(0.1, AT5)] * 10 + [(0.2, True)], [10, 20, 20, 40, 40, 80, 80, 100, 100, 100, 100],
                 id="floor-never-exceeds-the-idle-wait"),
    pytest.param([(0.1, AT5), (0.1, AT5), (0.2, True), (1.2, False), (1.3, False), (1.4, False), (1.5, True)],
                 [10, 20, 20, 40, 80, 100, 20], id="idle-after-a-floor-still-doubles-up-to-the-idle-wait"),
    pytest.param([(0.9, AT5), (1.5, False)], [10, 10], id="starved-is-not-idle"),
])
def test_wait_after_each_fetch(fetches, waits):
    assert waits_after(fetches) == waits


FLOOR_40 = [(0.1, AT5)] * 4
"""Two pairs of starved fetches at 0.1 s: the floor is 40 ms and last moved then."""


@pytest.mark.parametrize("fetches, waits", [
    pytest.param([(5.0, True), (5.1, True), (10.0, True), (10.1, True), (20.0, True)], [40, 20, 20, 10, 10],
                 id="halves-each-decay-interval-down-to-the-active-wait"),
    pytest.param([(5.1, True), (5.2, AT6), (5.3, AT6), (5.4, True), (10.2, True), (10.3, True)],
                 [20, 20, 40, 40, 40, 20], id="starvation-after-a-halving-raises-it-again-and-restarts-the-interval"),
    pytest.param([(3.0, AT6), (3.1, True), (5.1, True)], [40, 40, 20], id="a-single-starved-fetch-does-not-delay-it"),
    pytest.param([(2.0, True), (4.0, False), (5.0, False), (5.1, False), (6.0, True)], [40, 80, 100, 100, 20],
                 id="idle-fetches-do-not-halve-the-next-fetch-with-records-does"),
])
def test_raised_floor_decays(fetches, waits):
    assert waits_after(FLOOR_40 + fetches)[len(FLOOR_40):] == waits


def test_floor_halving_stops_at_the_active_wait():
    pacing = FetchPacing(active_wait_ms=15, idle_after_s=1.0, idle_wait_ms=100, floor_decay_s=1.0)
    clock = Clock()
    pacer = FetchPacer(pacing, clock)
    for _ in range(6):
        pacer.observe(False, AT5)
    assert pacer.floor_ms == 100
    floors = []
    for second in range(1, 6):
        clock.now = second
        pacer.observe(True)
        floors.append(pacer.floor_ms)
    assert floors == [50, 25, 15, 15, 15]


@pytest.mark.parametrize("pacing", [
    pytest.param(FetchPacing(active_wait_ms=0), id="zero-active-wait"),
    pytest.param(FetchPacing(active_wait_ms=600, idle_wait_ms=500), id="idle-shorter-than-active"),
    pytest.param(FetchPacing(idle_after_s=-1), id="negative-idle-after"),
    pytest.param(FetchPacing(floor_decay_s=0), id="zero-floor-decay"),
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


def test_fetched_offsets():
    assert fetched_offsets(Request({A0: 5, A1: 2, B0: 4})) == {("a", 0, 5), ("a", 1, 2), ("b", 0, 4)}


def test_paced_consumer_raises_its_wait_on_two_starved_fetches_at_the_same_offsets():
    pacing = FetchPacing(active_wait_ms=10, idle_after_s=60, idle_wait_ms=1000)
    behind = (Assignment({A0: 900}), Request({A0: 5}))
    waits = paced_waits([False, False, False, True, False], [behind, behind, behind, behind, AT_END], pacing)
    assert waits == [10, (False, 10), (False, 20), (False, 20), (True, 20), (False, 20)]


def test_paced_consumer_keeps_its_wait_when_starved_fetches_move_on():
    pacing = FetchPacing(active_wait_ms=10, idle_after_s=60, idle_wait_ms=1000)
    fetches = [(Assignment({A0: 900}), Request({A0: 5})), (Assignment({A0: 900}), Request({A0: 6}))]
    assert paced_waits([False, False], fetches, pacing) == [10, (False, 10), (False, 10)]


def test_records_found_are_never_starved():
    pacing = FetchPacing(active_wait_ms=10, idle_after_s=60, idle_wait_ms=1000)
    assert paced_waits([True], [(Assignment({A0: 900}), Request({A0: 5}))], pacing) == [10, (True, 10)]
