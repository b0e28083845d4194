"""``uncommitted_on_failure``: a batch the agent did not finish is not acknowledged by take_events.
``forget_moved``: a rebalance forgets the in-memory cores of the partitions that moved, and only those."""

from __future__ import annotations

import asyncio
import types

import pytest

from streams.agents.inbox import forget_moved, uncommitted_on_failure


def _events(n: int) -> list:
    return [types.SimpleNamespace(message=types.SimpleNamespace(acked=False)) for _ in range(n)]


def test_a_finished_batch_is_left_for_faust_to_acknowledge():
    events = _events(3)
    with uncommitted_on_failure(events):
        pass
    assert [e.message.acked for e in events] == [False] * 3


@pytest.mark.parametrize("error", [RuntimeError("delivery failed"), GeneratorExit()])
def test_a_failed_or_stopped_batch_is_marked_so_its_offsets_are_not_committed(error):
    events = _events(3)
    with pytest.raises(type(error)):
        with uncommitted_on_failure(events):
            raise error
    assert [e.message.acked for e in events] == [True] * 3


class _Signals:
    """The one signal ``forget_moved`` listens to, fired by hand."""

    def __init__(self) -> None:
        self.handlers = []
        self.on_partitions_assigned = types.SimpleNamespace(connect=self.handlers.append)

    def assign(self, *tps) -> None:
        for handler in self.handlers:
            asyncio.run(handler(None, [types.SimpleNamespace(topic=topic, partition=p) for topic, p in tps]))


def test_a_rebalance_forgets_only_the_cores_of_partitions_that_moved():
    app, cores = _Signals(), {}
    forget_moved(app, "inbox", cores, lambda key: key // 10)
    app.assign(("inbox", 0), ("inbox", 1), ("other", 2))
    cores.update({0: "a", 1: "b", 10: "c", 20: "d"})
    app.assign(("inbox", 1), ("inbox", 2), ("other", 0))
    assert cores == {10: "c"}, "partition 1 was held throughout; 0 left, 2 is new"
