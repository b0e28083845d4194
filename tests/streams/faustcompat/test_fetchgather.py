"""Gathered fetches without a broker: when a broker's fetches gather, what a request asks for then and
otherwise, one Gathering per broker (the switch on the worker consumer: ``test_workerconsumer.py``).
``tests/integration/test_fetch_gathering.py`` consumes through them on Kafka."""

from __future__ import annotations

import asyncio

from aiokafka.protocol.fetch import FetchRequest

from streams.faustcompat import fetchgather
from streams.faustcompat.fetchgather import GATHER_ABOVE, GATHER_BYTES, GATHER_WAIT_MS, Gathering


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _request() -> FetchRequest:
    return FetchRequest(1500, 1, 50 << 20, 0, [("a", [(0, 10, 1 << 20)])])


def test_a_quiet_consumer_asks_for_one_byte_with_its_own_wait():
    gathering = Gathering(Clock())
    for _ in range(GATHER_ABOVE - 1):
        gathering.observe(True)
    request = _request()
    gathering.shape(request)
    assert (request._min_bytes, request._max_wait_ms) == (1, 1500)


def test_a_steady_flow_gathers_and_empty_fetches_do_not_count():
    clock = Clock()
    gathering = Gathering(clock)
    for _ in range(GATHER_ABOVE * 3):
        gathering.observe(False)
    assert not gathering.gathering
    for _ in range(GATHER_ABOVE):
        clock.now += 0.01
        gathering.observe(True)
    request = _request()
    gathering.shape(request)
    assert (request._min_bytes, request._max_wait_ms) == (GATHER_BYTES, GATHER_WAIT_MS)


def test_the_last_full_second_keeps_it_gathering_and_a_quiet_one_stops_it():
    clock = Clock()
    gathering = Gathering(clock)
    for _ in range(GATHER_ABOVE):
        gathering.observe(True)
    clock.now += 1.5
    gathering.observe(True)
    assert (gathering.found, gathering.before, gathering.gathering) == (1, GATHER_ABOVE, True)
    clock.now += 1.0
    gathering.observe(False)
    assert (gathering.found, gathering.before, gathering.gathering) == (0, 1, False)
    for _ in range(GATHER_ABOVE):
        gathering.observe(True)
    clock.now += 2.5
    gathering.observe(False)
    assert (gathering.before, gathering.gathering) == (0, False)


def test_each_broker_gathers_on_its_own_flow():
    shaped: list[tuple[int, int, int]] = []

    class Fetcher:
        async def _proc_fetch_request(self, assignment, node_id, request):
            shaped.append((node_id, request._min_bytes, request._max_wait_ms))
            return node_id == 1

    class Consumer:
        async def start(self):
            self._fetcher = Fetcher()

    async def fetch() -> None:
        consumer = fetchgather.gather_fetches(Consumer(), Clock())
        await consumer.start()
        for _ in range(GATHER_ABOVE + 1):
            for node_id in (1, 2):
                await consumer._fetcher._proc_fetch_request(None, node_id, _request())

    asyncio.run(fetch())
    assert shaped[-2:] == [(1, GATHER_BYTES, GATHER_WAIT_MS), (2, 1, 1500)]
    assert shaped[2 * GATHER_ABOVE - 2] == (1, 1, 1500)
    assert shaped[2 * GATHER_ABOVE] == (1, GATHER_BYTES, GATHER_WAIT_MS)

