"""``streams.agents.transactions``: a batch's scope under each guarantee, a stopped batch breaks the gate,
and exactly-once refused on Tansu. The commit patches are tested in ``tests/streams/faustcompat``."""

from __future__ import annotations

import asyncio
import types

import pytest

from streams.agents.transactions import Batches
from streams.app import UnsupportedGuarantee, create_app
from streams.replay.reader import default_isolation_level
from streams.settings import Settings
from streams.topology import load_topology


def _app(guarantee: str):
    return types.SimpleNamespace(conf=types.SimpleNamespace(processing_guarantee=guarantee),
                                 sensors=types.SimpleNamespace(on_message_out=lambda *args: None))


def _events(n: int) -> list:
    events = []
    for offset in range(n):
        message = types.SimpleNamespace(acked=False, tp="tp", offset=offset)

        def ack(message=message) -> bool:
            first, message.acked = not message.acked, True
            return first

        events.append(types.SimpleNamespace(message=message, ack=ack))
    return events


def test_an_exactly_once_batch_is_acknowledged_inside_its_scope():
    async def scenario() -> list:
        batches, events = Batches(_app("exactly_once")), _events(3)
        async with batches.scope(events):
            assert batches.gate.open_batches == 1
        assert batches.gate.open_batches == 0
        return [e.message.acked for e in events]

    assert asyncio.run(scenario()) == [True] * 3


def test_an_at_least_once_batch_is_left_to_faust():
    async def scenario() -> list:
        batches, events = Batches(_app("at_least_once")), _events(3)
        async with batches.scope(events):
            pass
        return [e.message.acked for e in events]

    assert asyncio.run(scenario()) == [False] * 3


def test_a_stopped_exactly_once_batch_breaks_the_gate():
    async def scenario() -> bool:
        batches = Batches(_app("exactly_once"))
        with pytest.raises(asyncio.CancelledError):
            async with batches.scope(_events(2)):
                raise asyncio.CancelledError()
        return batches.gate.broken

    assert asyncio.run(scenario()) is True


def test_exactly_once_is_refused_on_tansu():
    settings = Settings(broker_kind="tansu", processing_guarantee="exactly_once")
    with pytest.raises(UnsupportedGuarantee, match="Tansu"):
        create_app("127.0.0.1:9092", load_topology(), settings)


@pytest.mark.parametrize("guarantee, level", [("at_least_once", "read_uncommitted"),
                                              ("exactly_once", "read_committed")])
def test_replay_reads_as_the_workers_do(guarantee, level):
    assert default_isolation_level(Settings(processing_guarantee=guarantee)) == level
