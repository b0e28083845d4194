"""Workarounds for the embedded broker's defects, harmless on real Kafka.

Tansu (the embedded broker) answers ListOffsets "latest" with the base offset
of the last record batch plus one instead of the last offset plus one (right
only when the last batch holds one record; a Fetch's high watermark is right,
``tests/integration/test_brokers.py`` shows both). Faust takes that answer as the
changelog highwater when it recovers a table, so a restarted worker would
stop recovering before the last updates and come back with stale tables
(``streams.faustcompat.highwaters`` makes Faust use :func:`true_highwaters`).

:func:`true_highwaters` asks the question differently: seek just before the
reported end, fetch, and read the high watermark from the Fetch response,
which Tansu reports correctly. On real Kafka the two answers are equal, so
the fix changes nothing there except one small fetch per changelog partition
at recovery.

Tansu also leaves a waiting Fetch waiting when records arrive: a fetch that
found nothing returns only after its full ``fetch_max_wait_ms`` (Faust
hard-codes 1500 ms, aiokafka defaults to 500 ms), so each consumer hop of the
pipeline adds up to that much latency. A short wait for every fetch makes
every idle consumer poll a hundred times a second, which keeps the broker and
the clients busy doing nothing. The long-running consumers (Faust's worker
consumer through ``streams.faustcompat.fetchwait``, ``streams.kafka.consumer``
for the rest) therefore pace their fetch wait (:class:`FetchPacing`): short
while records flow, growing to a second once a consumer has seen nothing for
a moment, short again from the first record. The price is on
the first record after a quiet spell: it waits up to
``FetchPacing.idle_wait_ms`` at each idle consumer it passes. Short-lived
readers of live outputs (the benchmarks') take the short wait throughout
(``streams.kafka.consumer_settings()``). None of this is installed on real
Kafka, which answers a waiting fetch as soon as records arrive.

Tansu answers a fetch with what it has read within the fetch wait, and a
wait too short for the records asked for gets none of them, fetch after fetch:
a 130 MB changelog partition of the scheduling state was never served at
10 ms, served in 17 s at 20 ms and in 1.7 s at 50 to 500 ms, and twelve
changelog partitions read together took 3.2 s at 500 ms where at 10 ms a
third of their records took 25 s. Readers of a topic's history (table
recovery, ``streams.faustcompat.recovery``; replay, ``streams.replay.reader``)
therefore keep aiokafka's default wait of 500 ms, as on Kafka: there are
records to read, so the wait is not spent. How long Tansu needs grows with
the partition, at its end too: at 300,000 records (300 MB) a 10 ms fetch of
its last 50 got 15 records in 2.2 s, a 100 ms one all 50 in 0.02 s. A paced
consumer that shortened its wait on such a partition would starve again and
read in bursts, so it tells a starved fetch from an idle one: a fetch that
found nothing although the response's high watermark says records wait past
the offset it asked for. On a busy machine Tansu now and then misses a wait
it usually meets, so one starved fetch is weak evidence; two in a row at the
same offsets double the consumer's wait and make it a floor that fetches
with records return to. The wait that suffices changes with the partition
and the machine's load, so the floor is probed down: the first fetch with
records ``FetchPacing.floor_decay_s`` after the floor last moved halves it
(not below ``active_wait_ms``), and two starved fetches raise it again
(:class:`FetchPacer`).

Everything else the project needs from the broker avoids end offsets on its
own: "caught up" for ``koord apply --wait`` is read from the read model
(source offsets carried through every output), never from lag.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Callable, Hashable, Mapping

from aiokafka import AIOKafkaConsumer, TopicPartition

from streams.broker.fetcher import ProcessFetch, wrap_fetch_requests

_FETCH_TIMEOUT_S = 10.0


@dataclasses.dataclass(frozen=True)
class FetchPacing:
    """How long a fetch that finds nothing waits on Tansu, by how recently its consumer saw records."""

    active_wait_ms: int = 10
    """Fetch wait while records flow, and so what one busy consumer hop adds at most, until a starved
    fetch raises it (:class:`FetchPacer`). Lower costs more requests per second under load for little
    gain; Python's own per-hop cost is of this order."""

    idle_after_s: float = 0.2
    """Seconds without records after which a consumer counts as idle and its wait starts doubling per
    empty fetch. A stream of more than about five records a second keeps its consumers at
    ``active_wait_ms``; longer makes every clock tick (``streams.agents.ticks``) cost a longer burst
    of short fetches."""

    idle_wait_ms: int = 1000
    """Longest fetch wait of an idle consumer: the most the first record after a quiet spell waits at
    each idle consumer it passes. An idle consumer sends about ``1000 / idle_wait_ms`` fetches a second
    instead of ``1000 / active_wait_ms``; Tansu spends a few milliseconds of CPU on each fetch of the
    worker's or the projection's forty-odd partitions, records or not. An idle ``koord up --nodes 0``
    measured 4.3 % of a core in total with 1000 ms, 5.7 % with 500 ms (``koord bench idle``)."""

    floor_decay_s: float = 10.0
    """Seconds a raised floor (:class:`FetchPacer`) holds before the next fetch with records halves it.
    A halving that goes too far costs two starved fetches at the halved wait before the floor is back,
    once per this interval; longer keeps an overshot floor longer (from 640 ms down to 10 ms takes six
    intervals)."""

    def validate(self) -> None:
        if not 0 < self.active_wait_ms <= self.idle_wait_ms:
            raise ValueError("FetchPacing needs 0 < active_wait_ms <= idle_wait_ms")
        if self.idle_after_s < 0:
            raise ValueError("FetchPacing.idle_after_s must not be negative")
        if self.floor_decay_s <= 0:
            raise ValueError("FetchPacing.floor_decay_s must be positive")


FETCH_PACING = FetchPacing()
FETCH_MAX_WAIT_MS = FETCH_PACING.active_wait_ms
"""Fetch wait of the short-lived readers of live outputs, which do not pace."""


class FetchPacer:
    """The fetch wait of one consumer: :attr:`wait_ms` after each fetch, from whether it found records
    and, if not, whether records it did not get were waiting (a starved fetch, known by the offsets it
    asked for).

    - A fetch with records sets the wait to :attr:`floor_ms` (``active_wait_ms`` at first).
    - An empty fetch that is not starved is idle: once the consumer has seen neither records nor a
      starved fetch for ``idle_after_s``, each one doubles the wait, up to ``idle_wait_ms``.
    - A starved fetch right after a starved fetch at the same offsets (no fetch between them) doubles
      the wait at once (up to ``idle_wait_ms``) and raises the floor to it: the wait was too short for
      Tansu to read the records, twice. The pair is then used up; the next raise needs two more. A
      single starved fetch changes no wait, since a busy machine makes Tansu miss a wait it usually
      meets now and then.
    - A fetch with records at least ``floor_decay_s`` after the floor last moved halves the floor
      (not below ``active_wait_ms``) before the wait is set to it: a smaller wait may suffice now, and
      if it does not, two starved fetches raise it back.

    The price of a raised floor: a record that finds the consumer's fetch waiting waits up to
    ``floor_ms`` there instead of up to ``active_wait_ms``, the first record after a quiet spell and,
    in a steady trickle, most records.
    """

    def __init__(self, pacing: FetchPacing = FETCH_PACING, clock: Callable[[], float] = time.monotonic) -> None:
        pacing.validate()
        self.pacing = pacing
        self.clock = clock
        self.wait_ms = pacing.active_wait_ms
        self.floor_ms = pacing.active_wait_ms
        self.last_records = self.floor_moved = clock()
        self.starved_at: Hashable | None = None
        """The offsets of the last fetch if it starved and did not raise the floor."""

    def observe(self, found_records: bool, starved_at: Hashable | None = None) -> int:
        """Record one completed fetch; return the wait for the next one. ``starved_at`` is the offsets it
        asked for (:func:`fetched_offsets`) if it found nothing although records waited, else None."""
        now = self.clock()
        if found_records or starved_at is not None:
            self.last_records = now
        if starved_at is not None:
            if starved_at == self.starved_at:
                self.wait_ms = self.floor_ms = min(self.wait_ms * 2, self.pacing.idle_wait_ms)
                self.floor_moved = now
                self.starved_at = None
            else:
                self.starved_at = starved_at
            return self.wait_ms
        self.starved_at = None
        if found_records:
            if self.floor_ms > self.pacing.active_wait_ms and now - self.floor_moved >= self.pacing.floor_decay_s:
                self.floor_ms = max(self.floor_ms // 2, self.pacing.active_wait_ms)
                self.floor_moved = now
            self.wait_ms = self.floor_ms
        elif now - self.last_records >= self.pacing.idle_after_s:
            self.wait_ms = min(self.wait_ms * 2, self.pacing.idle_wait_ms)
        return self.wait_ms


def fetched_offsets(request) -> frozenset[tuple[str, int, int]]:
    """The (topic, partition, offset) set a FetchRequest asked for."""
    return frozenset((topic, partition, offset) for topic, partitions in request.topics
                     for partition, offset, _ in partitions)


def fetch_starved(assignment, request) -> bool:
    """Whether a fetch that found nothing left records waiting: for some partition it asked for, the
    high watermark its response set (aiokafka keeps it in the partition's state) is past the offset
    it asked from. False when the assignment changed during the fetch."""
    if not assignment.active:
        return False
    for topic, partitions in request.topics:
        for partition, offset, _ in partitions:
            state = assignment.state_value(TopicPartition(topic, partition))
            if state is not None and state.highwater is not None and state.highwater > offset:
                return True
    return False


def pace_fetches(consumer: AIOKafkaConsumer, pacing: FetchPacing = FETCH_PACING) -> AIOKafkaConsumer:
    """Make ``consumer`` (not yet started) pace its fetch wait with a :class:`FetchPacer`.

    aiokafka's Fetcher reads ``_fetch_max_wait_ms`` afresh for every FetchRequest; ``_proc_fetch_request``
    (``streams.broker.fetcher``) leaves the response's high watermarks in the assignment
    (:func:`fetch_starved`). Both are instance lookups on the one Fetcher (aiokafka 0.14).
    """

    def paced(fetcher, process: ProcessFetch) -> ProcessFetch:
        pacer = FetchPacer(pacing)

        async def _proc_fetch_request(assignment, node_id, request):
            found = await process(assignment, node_id, request)
            starved = not found and fetch_starved(assignment, request)
            fetcher._fetch_max_wait_ms = pacer.observe(found, fetched_offsets(request) if starved else None)
            return found

        fetcher._fetch_max_wait_ms = pacer.wait_ms
        return _proc_fetch_request

    return wrap_fetch_requests(consumer, paced)


async def true_highwaters(consumer: AIOKafkaConsumer,
                          reported: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """Correct reported end offsets with Fetch high watermarks.

    ``consumer`` is a started consumer without a group, used only here.
    A partition reported empty (0) is empty on either broker.
    """
    result = {tp: offset for tp, offset in reported.items()}
    pending = {tp for tp, offset in reported.items() if offset and offset > 0}
    if not pending:
        return result
    consumer.assign(sorted(pending))
    for tp in pending:
        consumer.seek(tp, reported[tp] - 1)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _FETCH_TIMEOUT_S
    while pending and loop.time() < deadline:
        await consumer.getmany(*pending, timeout_ms=200)
        for tp in list(pending):
            highwater = consumer.highwater(tp)
            if highwater is not None:
                result[tp] = max(highwater, reported[tp])
                pending.discard(tp)
    if pending:
        raise TimeoutError(f"no fetch high watermark for {sorted(pending)} within {_FETCH_TIMEOUT_S:.0f}s")
    return result

