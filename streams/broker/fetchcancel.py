"""A consumer whose broker is gone stops when asked to.

aiokafka 0.14's ``Fetcher._proc_fetch_request`` ends a fetch it cancels while the request is in flight with
no records (``except asyncio.CancelledError: return False``), but a fetch that failed (the broker is gone:
``NodeNotReadyError``) sleeps its retry backoff inside the ``except KafkaError`` clause, where that handler
does not apply. ``Fetcher.close`` cancels the pending fetches and awaits each without suppressing the
cancellation, so a consumer stopped while its broker is down raises ``CancelledError`` from ``stop()``
(aio-libs/aiokafka#647, open). In a Faust worker that error ends the consumer's thread before it reports
itself stopped, and the worker waits for it until its supervisor kills it (found with ``koord up``: a
SIGKILLed broker, then a worker that did not stop within the supervisor's 15 s and logged the traceback
line by line as WARNINGs).

:func:`install` makes a fetch cancelled during that backoff end as one cancelled in flight: no records.
Checked against the aiokafka version pinned in ``pyproject.toml`` (:data:`AIOKAFKA_VERSION`).
"""

from __future__ import annotations

import asyncio
import functools

AIOKAFKA_VERSION = "0.14.0"
"""The aiokafka version the fix was checked against; a test fails on any other."""


def install() -> None:
    """Make a cancelled fetch end with no records wherever it was cancelled (idempotent)."""
    from aiokafka.consumer.fetcher import Fetcher

    if getattr(Fetcher, "_koord_cancel_fix", False):
        return
    original = Fetcher._proc_fetch_request

    @functools.wraps(original)
    async def _proc_fetch_request(self, assignment, node_id, request):
        try:
            return await original(self, assignment, node_id, request)
        except asyncio.CancelledError:
            return False

    Fetcher._proc_fetch_request = _proc_fetch_request
    Fetcher._koord_cancel_fix = True
