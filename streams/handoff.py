"""Source records decoded once per worker: a router hands what it decoded to the inbox reader.

The router decodes every source record to check it (``validation.check_source``) and forwards its bytes
unchanged inside an InboxEvent; so does the domain router with the pods it reads itself, to the scheduling
inbox. When the inbox is read in the same process, the reader would decode the same
bytes again (a NodeMetric of 20 pods: about 90 µs). ``Handoff`` keeps the router's decoded record under its
bytes until one reader takes it. Each decoded record goes to one reader only, so no two events share a dict,
and the router does not keep it. A record forwarded to a partition another worker reads is never taken, so the
oldest go first past ``CAPACITY``.

It is open only in a process that reads an inbox a router writes (``streams.agents.inbox``). A replay decodes
every record itself. The record a reader takes is the one decoding those bytes would give, so replays agree.
"""

from __future__ import annotations

CAPACITY = 2048
"""Records kept at most: about four router batches (``streams.agents.inbox.BATCH_MAX``)."""


class Handoff:
    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self.open = False
        self._records: dict[bytes, tuple[str, dict]] = {}

    def put(self, value: bytes, kind: str, record: dict) -> None:
        """Keep ``record``, decoded from ``value``, for the reader that will read ``value`` (if open)."""
        if not self.open:
            return
        records = self._records
        records[value] = (kind, record)
        if len(records) > self.capacity:
            del records[next(iter(records))]

    def take(self, value: bytes) -> tuple[str, dict] | None:
        """(kind, record) decoded from ``value`` if the router left it, once."""
        return self._records.pop(value, None)

    def __len__(self) -> int:
        return len(self._records)


HANDOFF = Handoff()
"""This process's handoff, shared by its router and its inbox readers."""
