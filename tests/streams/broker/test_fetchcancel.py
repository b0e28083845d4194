"""A fetch cancelled during its retry backoff ends with no records, as one cancelled in flight does.

A stand-in for the Fetcher's ``self`` whose client fails every send as a broker that is gone does; the real
broker case (a SIGKILLed broker, then SIGTERM) is ``tests/integration/test_sigterm.py``."""

from __future__ import annotations

import asyncio

import aiokafka
import pytest
from aiokafka.consumer.fetcher import Fetcher
from aiokafka.errors import NodeNotReadyError

from streams.broker import fetchcancel


class GoneBroker:
    async def send(self, node_id, request):
        raise NodeNotReadyError(f"Attempt to send a request to node which is not ready (node id {node_id}).")


class FetcherSelf:
    """What ``_proc_fetch_request`` reads of its Fetcher before it fails a send."""

    _client = GoneBroker()
    _retry_backoff = 30.0

    def _invalidate_preferred_read_replica_for_node(self, node_id, request):
        pass


async def _cancelled_in_backoff(proc_fetch_request) -> object:
    task = asyncio.create_task(proc_fetch_request(FetcherSelf(), None, 111, type("Request", (), {"topics": []})()))
    await asyncio.sleep(0.05)
    task.cancel()
    return await task


def test_the_pinned_aiokafka_is_the_one_checked():
    assert aiokafka.__version__ == fetchcancel.AIOKAFKA_VERSION


def test_aiokafka_alone_raises_the_cancellation_from_the_backoff():
    fetchcancel.install()
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(_cancelled_in_backoff(Fetcher._proc_fetch_request.__wrapped__))


def test_a_fetch_cancelled_in_its_backoff_ends_with_no_records():
    fetchcancel.install()
    fetchcancel.install()
    assert asyncio.run(_cancelled_in_backoff(Fetcher._proc_fetch_request)) is False
