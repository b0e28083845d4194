"""The lean delivery race, on a mode ``Service`` as Faust's consumer is one: a delivery that never waits wins
at once and the rest are closed unstarted; one that waits still races, is abandoned when the flow is
suspended first and wins when it finishes first; a failure propagates; a stopped service races as before."""

from __future__ import annotations

import asyncio
import inspect
import warnings

import pytest
from mode import Service

from streams.faustcompat.drain import patch_wait_first, resumed


class Consumer(Service):
    """A stand-in with Faust consumer's base class."""


patch_wait_first(Consumer)


def _race(delivery, suspend_first: bool = False):
    """Run ``consumer.wait_first(delivery(log), suspended.wait())`` as the delivery loop does (the flow suspended
    after 10 ms with ``suspend_first``); the winners' types and what the delivery logged."""
    async def run():
        consumer, suspended, log = Consumer(), asyncio.Event(), []
        if suspend_first:
            asyncio.get_running_loop().call_later(0.01, suspended.set)
        result = await consumer.wait_first(delivery(log), suspended.wait())
        await asyncio.sleep(0.05)
        return [type(winner).__name__ for winner in result.done], log

    return asyncio.run(run())


async def immediate(log):
    log.append("delivered")
    return "put"


async def stuck(log):
    try:
        await asyncio.sleep(10)
        log.append("delivered")
    except asyncio.CancelledError:
        log.append("abandoned")
        raise


async def slow(log):
    await asyncio.sleep(0.001)
    log.append("delivered")
    return "put"


def test_a_delivery_that_never_waits_wins_alone_and_the_rest_is_closed_unstarted():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        winners, log = _race(immediate)
    assert log == ["delivered"]
    assert winners == ["coroutine"]


def test_a_stuck_delivery_is_abandoned_when_the_flow_is_suspended_first():
    winners, log = _race(stuck, suspend_first=True)
    assert log == ["abandoned"]
    assert winners == ["coroutine"]


def test_a_delivery_that_waits_then_finishes_wins():
    winners, log = _race(slow, suspend_first=False)
    assert log == ["delivered"]
    assert winners == ["resumed"]


def test_a_failing_delivery_propagates_and_the_rest_is_closed_unstarted():
    """Left open, the suspended flow's wait warned "coroutine 'Event.wait' was never awaited" whenever the
    garbage collector reached it, in whatever test ran then."""
    async def failing(log):
        raise ValueError("bad record")

    async def run():
        waiting = asyncio.Event().wait()
        with pytest.raises(ValueError, match="bad record"):
            await Consumer().wait_first(failing([]), waiting)
        return inspect.getcoroutinestate(waiting)

    assert asyncio.run(run()) == inspect.CORO_CLOSED


def test_a_stopped_consumer_races_as_before():
    async def run():
        consumer, suspended = Consumer(), asyncio.Event()
        consumer._stopped.set()
        log = []
        result = await consumer.wait_first(immediate(log), suspended.wait())
        return result.stopped

    assert asyncio.run(run()) is True


def test_resumed_goes_on_from_the_first_step():
    async def two_steps():
        await asyncio.sleep(0)
        await asyncio.sleep(0.001)
        return 7

    async def run():
        coro = two_steps()
        first = coro.send(None)
        return await resumed(coro, first)

    assert asyncio.run(run()) == 7
