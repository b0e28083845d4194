"""An aggregate's cores (``streams.agents.states``): restored with Python's cyclic garbage collector paused, and
as soon as a rebalance has recovered their table."""

from __future__ import annotations

import asyncio
import gc
from types import SimpleNamespace

from faust.types import TP

from streams.agents.journal import Prefixed
from streams.agents.scheduling import SEPARATOR, domains_in
from streams.agents.states import JournaledStates, collector_paused


def test_a_restore_runs_with_the_collector_paused_and_leaves_it_as_it_was():
    seen = []
    for before in (True, False):
        (gc.enable if before else gc.disable)()
        with collector_paused():
            seen.append(gc.isenabled())
        assert gc.isenabled() is before
    gc.enable()
    assert seen == [False, False]


class _App:
    """What ``JournaledStates`` uses of a Faust app: a table (a dict here), a timer, the two rebalance signals
    (fired by hand) and the consumer's assignment."""

    def __init__(self, table: dict) -> None:
        self.table, self.assigned, self.on_assigned, self.on_complete = table, set(), [], []
        self.on_partitions_assigned = SimpleNamespace(connect=self.on_assigned.append)
        self.on_rebalance_complete = SimpleNamespace(connect=self.on_complete.append)
        self.consumer = SimpleNamespace(assignment=lambda: set(self.assigned))

    def Table(self, name: str, partitions: int) -> dict:
        return self.table

    def timer(self, interval: float, name: str):
        return lambda function: function

    def rebalance(self, *tps: tuple[str, int]) -> None:
        self.assigned = {TP(topic, partition) for topic, partition in tps}
        for handler in self.on_assigned:
            asyncio.run(handler(self, self.assigned))
        for handler in self.on_complete:
            asyncio.run(handler(self))


def test_the_cores_of_the_partitions_a_rebalance_assigns_are_restored_once_it_has_recovered_the_table():
    """As the scheduling aggregate lays its domains out: ``domain|entry`` keys, a domain's inbox partition
    from its name. Domains a and c (partition 0) are restored when the rebalance completes, with their
    entries, before any event; b (partition 1, not held) is not; a later first use finds them restored."""
    table = {"a|pod": 1, "b|pod": 2, "c|node": 3, "c|pod": 4, "a|journal/0": None}
    partition = {"a": 0, "b": 1, "c": 0}
    restored = []

    def restore(domain: str, entries: dict) -> tuple:
        restored.append(domain)
        return domain, entries

    app = _App(table)
    states = JournaledStates(app, "state", 2, batches=None, keys=lambda domain: Prefixed(domain + SEPARATOR),
                             restore=restore, topic="inbox", partition_of=partition.__getitem__,
                             held=lambda keys, held: sorted(d for d in domains_in(keys) if partition[d] in held))
    app.rebalance(("inbox", 0), ("other", 1))
    assert restored == ["a", "c"]
    assert sorted(states.cores()) == [("a", {"pod": 1}), ("c", {"node": 3, "pod": 4})]
    assert states.load("c")[0] == ("c", {"node": 3, "pod": 4}) and restored == ["a", "c"]
    app.rebalance(("inbox", 0), ("inbox", 1))
    assert restored == ["a", "c", "b"], "a and c were held throughout and kept"
