"""An aggregate's states, one pure core per key, each restored from the aggregate's journaled table.

The scheduling and domain-router agents keep one core per key (a scheduling domain; a routing
partition) and write each batch's changes to one Faust table behind a journal per key
(``streams.agents.journal``). A core is restored from the table on first use and forgotten whenever
partitions move, since the table may have moved under it.
"""

from __future__ import annotations

from typing import Callable, Generic, Hashable, Iterable, TypeVar

from streams.agents.inbox import forget_on_rebalance
from streams.agents.journal import Journal
from streams.metrics import TABLE_ENTRIES, TABLE_SIZE_INTERVAL_S

K = TypeVar("K", bound=Hashable)
S = TypeVar("S")


class JournaledStates(Generic[K, S]):
    """The cores of the table ``name`` (``partitions`` changelog partitions, in ``batches``' transactions):
    ``prefix(key)`` is a key's entry prefix, ``restore(key, entries)`` its core from its entries.
    Values are JSON (Faust's table default): internal state, not a public contract."""

    def __init__(self, app, name: str, partitions: int, batches, prefix: Callable[[K], str],
                 restore: Callable[[K, dict], S]) -> None:
        self.table = app.Table(name, partitions=partitions)
        batches.track_changelog(self.table)
        self._prefix, self._restore = prefix, restore
        self._loaded: dict[K, tuple[S, Journal]] = {}
        forget_on_rebalance(app, self._loaded)

        @app.timer(interval=TABLE_SIZE_INTERVAL_S, name=f"{name}-size")
        async def table_size() -> None:
            TABLE_ENTRIES.labels(name).set(len(self.table))

    def load(self, key: K) -> tuple[S, Journal]:
        """The core of ``key`` and the journal its changes are written behind."""
        if key not in self._loaded:
            journal = Journal(self.table, self._prefix(key))
            self._loaded[key] = (self._restore(key, journal.restore()), journal)
        return self._loaded[key]

    def cores(self) -> Iterable[S]:
        return [core for core, _ in self._loaded.values()]
