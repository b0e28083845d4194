"""The one way koordstream changes how an aiokafka consumer handles each of its fetches.

aiokafka 0.14 builds a consumer's Fetcher in ``start()``. Each fetch from one broker goes through the
Fetcher's ``_proc_fetch_request(assignment, node_id, request)``: it sends ``request``, takes the answer's
records and returns whether it added any. It is an instance lookup, so replacing it on the one Fetcher
changes nothing else. The Tansu fetch pacing (``tansu_workarounds.pace_fetches``), the fetch sessions
(``streams.faustcompat.fetchsession``) and the gathered fetches (``streams.faustcompat.fetchgather``) go
through :func:`wrap_fetch_requests`.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

ProcessFetch = Callable[[Any, int, Any], Awaitable[bool]]
"""A Fetcher's ``_proc_fetch_request``."""


def wrap_fetch_requests(consumer, wrap: Callable[[Any, ProcessFetch], ProcessFetch]):
    """Make ``consumer`` (an aiokafka consumer, not yet started) handle each fetch, once it has started, with
    ``wrap(fetcher, process)``, where ``process`` is its Fetcher's own ``_proc_fetch_request``; returns it."""
    start = consumer.start

    async def started() -> None:
        await start()
        fetcher = consumer._fetcher
        fetcher._proc_fetch_request = wrap(fetcher, fetcher._proc_fetch_request)

    consumer.start = started
    return consumer
