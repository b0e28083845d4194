"""An aggregate's states, one pure core per key, each restored from the aggregate's journaled table.

Every aggregate agent keeps one core per key (a scheduling domain; a routing or node-inbox partition)
and writes each batch's changes to one Faust table behind a journal per key
(``streams.agents.journal``). A core is forgotten when its inbox partition moves at a rebalance, since the
table may have moved under it, and restored from the table as soon as the rebalance has recovered the
table (Faust's ``on_rebalance_complete``, before the worker says it is ready), or else on first use. Restoring
them then makes "Worker ready" mean ready: restored on first use, a domain of 10,000 nodes and 50,000 pods
held up its first event, and every event behind it, by about 2.5 s.

A core's journal writes through a :class:`BatchedTable`: each write changes the table in memory and
queues its changelog record with the batch's other records (``streams.agents.transactions.Batches``), to
the changelog partition of the core's inbox partition, sent as record batches when the aggregate delivers
them, instead of one Faust send and delivery future per write.

A restore runs with Python's cyclic garbage collector paused: it makes a core's objects by the hundred
thousand, all long-lived, and the collector's passes over them find nothing. With the worker's thresholds
(``streams.app.GC_THRESHOLDS``) they took about a tenth of restoring a domain of 10,000 nodes and 20,000
pods (1.3 s of CPU, 1.15 s paused; 1.9 s with Python's default thresholds).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import time
from collections.abc import MutableMapping
from typing import Any, Callable, Generic, Hashable, Iterable, Iterator, TypeVar

from streams.agents.inbox import forget_moved
from streams.agents.journal import JSON_PARTS, RAW_PARTS, Journal, Keys
from streams.faustcompat.tables import raw_changelog, store_quietly
from streams.metrics import TABLE_ENTRIES, TABLE_SIZE_INTERVAL_S

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)
S = TypeVar("S")


class JournaledStates(Generic[K, S]):
    """The cores of the table ``name`` (``partitions`` changelog partitions, in ``batches``' transactions):
    ``keys(key)`` lays a key's entries out in the table, ``restore(key, entries)`` is its core from its
    entries, ``partition_of(key)`` its partition of the inbox ``topic`` and ``held(table_keys, partitions)``
    the keys of the cores the table holds of those inbox partitions. Values are JSON (Faust's table
    default: internal state, not a public contract), or raw bytes with ``raw_values``."""

    def __init__(self, app, name: str, partitions: int, batches, keys: Callable[[K], Keys],
                 restore: Callable[[K, dict], S], topic: str, partition_of: Callable[[K], int],
                 held: Callable[[Iterable[str], set[int]], Iterable[K]], raw_values: bool = False) -> None:
        self.table = app.Table(name, partitions=partitions)
        if raw_values:
            raw_changelog(self.table)
        self._batches, self._topic, self._partition_of = batches, topic, partition_of
        self._keys, self._restore = keys, restore
        self._parts = RAW_PARTS if raw_values else JSON_PARTS
        self._loaded: dict[K, tuple[S, Journal]] = {}
        forget_moved(app, topic, self._loaded, partition_of)

        @app.on_rebalance_complete.connect
        async def restore_held(sender, **kwargs) -> None:
            partitions = {tp.partition for tp in app.consumer.assignment() if tp.topic == topic}
            started = time.monotonic()
            keys = [key for key in held(self.table.keys(), partitions) if key not in self._loaded]
            for key in keys:
                self.load(key)
            if keys:
                log.info("restored %d cores of %s in %.2f s", len(keys), name, time.monotonic() - started)

        @app.timer(interval=TABLE_SIZE_INTERVAL_S, name=f"{name}-size")
        async def table_size() -> None:
            TABLE_ENTRIES.labels(name).set(len(self.table))

    def load(self, key: K) -> tuple[S, Journal]:
        """The core of ``key`` and the journal its changes are written behind."""
        if key not in self._loaded:
            table = BatchedTable(self.table, self._batches, (self._topic, self._partition_of(key)))
            journal = Journal(table, self._keys(key), self._parts)
            with collector_paused():
                self._loaded[key] = (self._restore(key, journal.restore()), journal)
        return self._loaded[key]

    def cores(self) -> Iterable[S]:
        return [core for core, _ in self._loaded.values()]


class BatchedTable(MutableMapping):
    """A Faust table as one core writes it: read as it is; a write changes it in memory and queues its
    changelog record in ``batches`` (``Batches.add``) to the partition of ``source`` (the core's inbox topic
    and partition, whose transaction it joins under exactly-once), for the aggregate to deliver."""

    def __init__(self, table, batches, source: tuple[str, int]) -> None:
        self.table, self.batches, self.source = table, batches, source

    def __getitem__(self, key: str) -> Any:
        return self.table[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._send(key, value)

    def __delitem__(self, key: str) -> None:
        if key not in self.table:
            raise KeyError(key)
        self._send(key, None)

    def put(self, key: str, value: Any, data: bytes) -> None:
        """``self[key] = value`` whose changelog value is ``data``, serialised already (the journal's)."""
        self._send(key, value, data)

    def _send(self, key: str, value: Any, data: bytes | None = None) -> None:
        key_bytes, value_bytes = store_quietly(self.table, key, value, data)
        self.batches.add(self.table.changelog_topic, key_bytes, value_bytes, self.source, partition=self.source[1])

    def __iter__(self) -> Iterator[str]:
        return iter(self.table)

    def __len__(self) -> int:
        return len(self.table)

    def __contains__(self, key: object) -> bool:
        return key in self.table

    def items(self):
        return self.table.items()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block (reference counting still frees), then as it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
