"""The take fix on Faust's own stream: batches come out as Faust's do (full, or at most ``within`` after their
first event), every event is acknowledged once its batch is done, and an idle batching agent does not
wake its event loop."""

from __future__ import annotations

import asyncio

import faust

from streams.faustcompat.take import install_faust_take_fix

install_faust_take_fix()


def _app() -> tuple[faust.App, faust.TopicT]:
    app = faust.App("take-fix-test", broker="kafka://127.0.0.1:9", store="memory://", web_enabled=False)
    return app, app.topic("take-fix-test", value_type=int)


def test_batches_are_full_or_cut_within_after_their_first_event():
    app, topic = _app()
    batches: list[list[int]] = []

    @app.agent(topic)
    async def batcher(stream):
        async for events in stream.take_events(3, within=0.05):
            batches.append([event.value for event in events])
            yield len(events)

    async def run() -> None:
        async with batcher.test_context() as agent:
            for value in range(5):
                await agent.put(value, wait=False)
            for _ in range(100):
                if sum(map(len, batches)) == 5:
                    break
                await asyncio.sleep(0.01)

    asyncio.run(run())
    assert batches == [[0, 1, 2], [3, 4]]


def test_idle_take_waits_for_the_first_event_without_waking():
    app, topic = _app()
    waits: list[object] = []

    @app.agent(topic)
    async def batcher(stream):
        original = stream.wait_for_stopped

        async def wait_for_stopped(*events, timeout=None):
            waits.append(timeout)
            return await original(*events, timeout=timeout)

        stream.wait_for_stopped = wait_for_stopped
        async for events in stream.take_events(3, within=0.001):
            yield len(events)

    async def run() -> list[object]:
        async with batcher.test_context():
            await asyncio.sleep(0.2)
            return list(waits)

    assert asyncio.run(run()) == [None]
