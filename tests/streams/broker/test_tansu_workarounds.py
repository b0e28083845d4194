"""Fetch pacing: the wait a Tansu consumer uses for its next fetch, from when it last saw records."""

from __future__ import annotations

import asyncio

import pytest

from streams.broker.tansu_workarounds import FETCH_PACING, FetchPacer, FetchPacing, pace_fetches

PACING = FetchPacing(active_wait_ms=10, idle_after_s=1.0, idle_wait_ms=100)


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
])
def test_wait_after_each_fetch(fetches, waits):
    clock = Clock()
    pacer = FetchPacer(PACING, clock)
    observed = []
    for at, found in fetches:
        clock.now = at
        observed.append(pacer.observe(found))
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


class Fetcher:
    """What pacing touches of aiokafka's Fetcher: the wait it puts in its next FetchRequest and the
    coroutine that handles one response (True when it added records)."""

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


def test_paced_consumer_sets_the_wait_of_each_next_fetch():
    consumer = pace_fetches(Consumer([True, False, False]), FetchPacing(active_wait_ms=10, idle_after_s=0,
                                                                          idle_wait_ms=30))

    async def run() -> list[tuple[bool, int]]:
        await consumer.start()
        fetcher = consumer._fetcher
        waits = [fetcher._fetch_max_wait_ms]
        for _ in range(3):
            found = await fetcher._proc_fetch_request(None, 0, None)
            waits.append((found, fetcher._fetch_max_wait_ms))
        return waits

    assert asyncio.run(run()) == [10, (True, 10), (False, 20), (False, 30)]
