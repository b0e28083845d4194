"""``streams.agents.transactions``: commits only between batches, a failed batch stops commits, commits
after the highest acknowledged offset, changelog highwaters from the broker (patches of faust-streaming
0.15.3, tested on stand-ins), and exactly-once refused on Tansu."""

from __future__ import annotations

import asyncio
import types

import pytest

from streams.agents import transactions
from streams.agents.transactions import BatchGate, Batches
from streams.app import UnsupportedGuarantee, create_app
from streams.replay.reader import default_isolation_level
from streams.settings import Settings
from streams.topology import load_topology


def _consumer_class(in_transaction: bool, log: list):
    class Consumer:
        def __init__(self, app):
            self.app, self.in_transaction = app, in_transaction
            self._acked, self._acked_index, self._gap = {}, {}, {}

        async def force_commit(self, *args, **kwargs):
            log.append("commit")
            return True

        def _new_offset(self, tp):
            return "faust's"

    return Consumer


def test_a_commit_waits_for_the_open_batch_and_new_batches_wait_for_the_commit():
    async def scenario() -> list:
        log, gate = [], BatchGate()
        app = types.SimpleNamespace(koord_batch_gate=gate)
        consumer_class = _consumer_class(True, log)
        transactions.gate_commits(consumer_class)
        consumer = consumer_class(app)

        async def batch(name: str, hold: asyncio.Event) -> None:
            async with gate.batch():
                log.append(f"{name} open")
                await hold.wait()
                log.append(f"{name} done")

        first_done, second_done = asyncio.Event(), asyncio.Event()
        first = asyncio.create_task(batch("first", first_done))
        await asyncio.sleep(0)
        commit = asyncio.create_task(consumer.force_commit())
        await asyncio.sleep(0)
        second = asyncio.create_task(batch("second", second_done))
        await asyncio.sleep(0.01)
        first_done.set()
        second_done.set()
        await asyncio.gather(first, commit, second)
        return log

    assert asyncio.run(scenario()) == ["first open", "first done", "commit", "second open", "second done"]


def test_a_broken_gate_commits_nothing_and_at_least_once_is_not_gated():
    async def scenario() -> tuple:
        log, gate = [], BatchGate()
        gate.broken = True
        app = types.SimpleNamespace(koord_batch_gate=gate)
        transactional, plain = _consumer_class(True, log), _consumer_class(False, log)
        transactions.gate_commits(transactional)
        transactions.gate_commits(plain)
        return await transactional(app).force_commit(), await plain(app).force_commit(), log

    assert asyncio.run(scenario()) == (False, True, ["commit"])


@pytest.mark.parametrize("in_transaction, acked, expected", [
    pytest.param(True, [12, 10, 15], 16, id="gaps-of-markers-are-bridged"),
    pytest.param(True, [], None, id="nothing-acknowledged"),
    pytest.param(False, [10, 12], "faust's", id="at-least-once-unchanged"),
])
def test_the_offset_committed_follows_the_highest_acknowledgement(in_transaction, acked, expected):
    consumer_class = _consumer_class(in_transaction, [])
    transactions.commit_after_highest_ack(consumer_class)
    consumer = consumer_class(app=None)
    consumer._acked["tp"], consumer._acked_index["tp"], consumer._gap["tp"] = list(acked), set(acked), object()
    assert consumer._new_offset("tp") == expected
    if in_transaction and acked:
        assert (consumer._acked["tp"], consumer._acked_index["tp"], "tp" in consumer._gap) == ([], set(), False)


def test_changelog_highwaters_come_from_the_broker_under_exactly_once():
    class Thread:
        def __init__(self, in_transaction: bool):
            self.consumer = types.SimpleNamespace(in_transaction=in_transaction)

        async def _highwaters(self, partitions):
            return {tp: -1 for tp in partitions}

        def _ensure_consumer(self):
            async def end_offsets(partitions):
                return {tp: 42 for tp in partitions}
            return types.SimpleNamespace(end_offsets=end_offsets)

    transactions.ask_for_highwaters(Thread)
    assert asyncio.run(Thread(True)._highwaters(["tp"])) == {"tp": 42}
    assert asyncio.run(Thread(False)._highwaters(["tp"])) == {"tp": -1}


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
