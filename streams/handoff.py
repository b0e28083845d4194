"""Source records decoded once per worker: a router hands what it decoded to the inbox reader.

The router decodes every source record to check it (``validation.check_source``) and forwards its bytes
unchanged inside an InboxEvent; so does the domain router with the pods it reads itself, to the scheduling
inbox. When the inbox is read in the same process, the reader would decode the same
bytes again (a NodeMetric of 20 pods: about 90 µs). ``Handoff`` keeps the router's decoded record under its
bytes until one reader takes it. Each decoded record goes to one reader only, so no two events share a dict,
and the router does not keep it.

A record is kept only when it is forwarded to an inbox partition this process reads (``hold``: the worker's
assignment, which a rebalance replaces, dropping what was kept), so another worker's records take no room. When
``CAPACITY`` records wait, a new one is not kept: a router that runs ahead of the reader (a burst) then keeps the
records the reader comes to first, where dropping the oldest would drop each one just before its reader came to
it. A router does not wait for the reader: Faust hands every agent of a worker its records from one consumer,
so a router that waited would hold back the records of the very reader it waits for.

A replay decodes every record itself. The record a reader takes is the one decoding those bytes would give,
so replays agree.
"""

from __future__ import annotations

from collections.abc import Iterable

CAPACITY = 2048
"""Records kept at most: about four router batches (``streams.agents.inbox.BATCH_MAX``)."""


class Handoff:
    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self.held: frozenset[tuple[str, int]] = frozenset()
        """The (inbox topic, partition) pairs this process reads."""
        self._records: dict[bytes, tuple[str, dict]] = {}

    def hold(self, partitions: Iterable[tuple[str, int]]) -> None:
        """The inbox partitions this process reads from now on (a rebalance's assignment); drops what was kept."""
        self.held = frozenset(partitions)
        self._records.clear()

    def put(self, value: bytes, kind: str, record: dict, to: Iterable[tuple[str, int]]) -> None:
        """Keep ``record``, decoded from ``value``, for the reader of one of the (inbox topic, partition) pairs
        ``to``, if this process reads one and fewer than ``capacity`` records wait."""
        if len(self._records) < self.capacity and any(destination in self.held for destination in to):
            self._records[value] = (kind, record)

    def take(self, value: bytes) -> tuple[str, dict] | None:
        """(kind, record) decoded from ``value`` if the router left it, once."""
        return self._records.pop(value, None)

    def __len__(self) -> int:
        return len(self._records)


HANDOFF = Handoff()
"""This process's handoff, shared by its router and its inbox readers."""
