"""The commit patches on a stand-in with Faust's consumer interface: a commit waits for the open batch and
new batches for the commit, a broken gate commits nothing, the offset committed follows the highest
acknowledgement, a revocation commits first; each only in a transaction."""

from __future__ import annotations

import asyncio
import types

import pytest

from streams.agents.transactions import BatchGate, batch_gate
from streams.faustcompat.commits import commit_after_highest_ack, commit_before_revocation, gate_commits


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

        async def on_partitions_revoked(self, revoked):
            log.append(f"revoke {revoked}")

    return Consumer


def test_a_commit_waits_for_the_open_batch_and_new_batches_wait_for_the_commit():
    async def scenario() -> list:
        log, gate = [], BatchGate()
        app = types.SimpleNamespace(koord_batch_gate=gate)
        consumer_class = _consumer_class(True, log)
        gate_commits(consumer_class, batch_gate)
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
        gate_commits(transactional, batch_gate)
        gate_commits(plain, batch_gate)
        return await transactional(app).force_commit(), await plain(app).force_commit(), log

    assert asyncio.run(scenario()) == (False, True, ["commit"])


@pytest.mark.parametrize("in_transaction, acked, expected", [
    pytest.param(True, [12, 10, 15], 16, id="gaps-of-markers-are-bridged"),
    pytest.param(True, [], None, id="nothing-acknowledged"),
    pytest.param(False, [10, 12], "faust's", id="at-least-once-unchanged"),
])
def test_the_offset_committed_follows_the_highest_acknowledgement(in_transaction, acked, expected):
    consumer_class = _consumer_class(in_transaction, [])
    commit_after_highest_ack(consumer_class)
    consumer = consumer_class(app=None)
    consumer._acked["tp"], consumer._acked_index["tp"], consumer._gap["tp"] = list(acked), set(acked), object()
    assert consumer._new_offset("tp") == expected
    if in_transaction and acked:
        assert (consumer._acked["tp"], consumer._acked_index["tp"], "tp" in consumer._gap) == ([], set(), False)


@pytest.mark.parametrize("in_transaction, expected", [
    pytest.param(True, ["commit", "revoke {'tp'}"], id="exactly-once-commits-first"),
    pytest.param(False, ["revoke {'tp'}"], id="at-least-once-unchanged"),
])
def test_a_revocation_commits_before_faust_forgets_the_acknowledgements(in_transaction, expected):
    log: list = []
    consumer_class = _consumer_class(in_transaction, log)
    commit_before_revocation(consumer_class)
    asyncio.run(consumer_class(app=None).on_partitions_revoked({"tp"}))
    assert log == expected
