"""Gathered fetches for Faust's worker consumer on Kafka: while records flow steadily, a fetch waits a
moment for more of them.

The worker consumes its source topics, inboxes and ticks in one consumer, and Kafka answers a Fetch as soon
as it has a byte for it (``fetch_min_bytes`` 1). At a steady moderate rate each record therefore made a
round trip of its own at every hop, and its per-batch costs (the fetch request, the hand-over to the stream,
the batch's produce and commit) were most of the worker's CPU: `koord bench scheduler --broker kafka
--nodes 5000 --pods 12000 --rate 200` took about 4,500 µs of worker CPU a pod against 1,700 µs saturated.

So each broker's fetches follow the flow (:class:`Gathering`):

- after at least ``GATHER_ABOVE`` fetches with records within a second, a fetch asks for ``GATHER_BYTES``
  and waits up to ``GATHER_WAIT_MS`` for them: Kafka answers once that many bytes are there or the wait
  is over, so a hop takes what arrived in the meantime as one batch;
- otherwise a fetch asks for one byte with the consumer's own wait (Faust: 1.5 s), and the first record
  after a quiet spell is answered at once.

The price is up to ``GATHER_WAIT_MS`` per hop while gathering. The same bench before and after, in turn
(2-core machine, Kafka, one worker): 4,488 and 4,473 µs of worker CPU a pod became 3,811 and 3,638, the
p50 submit-to-decision 52 and 50 ms became 62 and 72; at 500 pods/s the worker, which fell behind before
(485 and 459 pods/s), kept up (499). A 20 ms wait cut the CPU by a third but added 25 ms to p50; saturated
runs gather anyway and did not change.

:func:`install_fetch_gathering` wraps Faust's ``AIOKafkaConsumerThread._create_worker_consumer`` and the
built consumer's ``Fetcher._proc_fetch_request`` (an instance lookup, as ``fetchsession`` does; aiokafka
0.14, faust-streaming 0.15.3): it sets the wait and size of the request before it is sent, and reads
whether its answer held records (``_proc_fetch_request``'s result). Tansu answers a waiting fetch only
when its wait is over, so there the fetch wait is paced instead (``streams.faustcompat.fetchwait``).
"""

from __future__ import annotations

import time
from typing import Callable

from streams.broker.fetcher import ProcessFetch, wrap_fetch_requests
from streams.faustcompat.workerconsumer import wrap_worker_consumer

GATHER_ABOVE = 20
"""Fetches with records a second from which the next fetch gathers."""
GATHER_BYTES = 64 << 10
GATHER_WAIT_MS = 10


class Gathering:
    """Whether one broker's next fetch gathers: from the fetches with records in the current second and
    the one before."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.since = clock()
        self.found = 0
        """Fetches with records since ``since``."""
        self.before = 0
        """Fetches with records in the second before ``since`` (0 when more than a second passed)."""

    def observe(self, found_records: bool) -> None:
        now = self.clock()
        if now - self.since >= 1.0:
            self.before = self.found if now - self.since < 2.0 else 0
            self.found, self.since = 0, now
        self.found += found_records

    @property
    def gathering(self) -> bool:
        return max(self.found, self.before) >= GATHER_ABOVE

    def shape(self, request) -> None:
        """Make aiokafka FetchRequest ``request`` gather when the flow asks for it; else leave it as the
        consumer built it."""
        if self.gathering:
            request._min_bytes, request._max_wait_ms = GATHER_BYTES, GATHER_WAIT_MS


def gather_fetches(consumer, clock: Callable[[], float] = time.monotonic):
    """Make ``consumer`` (an aiokafka consumer, not yet started) gather its fetches, one :class:`Gathering`
    per broker (``consumer.koord_gathering``, by node id)."""
    gatherings: dict[int, Gathering] = {}
    consumer.koord_gathering = gatherings

    def gathered(fetcher, process: ProcessFetch) -> ProcessFetch:
        async def _proc_fetch_request(assignment, node_id, request):
            gathering = gatherings.get(node_id)
            if gathering is None:
                gathering = gatherings[node_id] = Gathering(clock)
            gathering.shape(request)
            found = await process(assignment, node_id, request)
            gathering.observe(bool(found))
            return found

        return _proc_fetch_request

    return wrap_fetch_requests(consumer, gathered)


def install_fetch_gathering(enabled: bool, cls: type | None = None) -> None:
    """Gather the fetches of Faust's worker consumers built from now on when ``enabled`` (on Kafka; not on
    Tansu); ``cls``: a stand-in for Faust's ``AIOKafkaConsumerThread`` (``workerconsumer.wrap_worker_consumer``)."""
    if cls is None:
        from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread as cls
    wrap_worker_consumer(cls, "fetch_gathering", gather_fetches, enabled)
