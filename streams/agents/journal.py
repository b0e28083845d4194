"""A batch's table writes, restored all or nothing.

An aggregate writes the entries one inbox batch changed to its Faust table, one changelog record per
entry. Under at-least-once nothing makes those records one unit: a worker killed while they go out
leaves the changelog with some of the batch's entries and not the others (found by the kill -9 test:
pods already assigned while the offsets of their inbox records were not, so the survivor decided
them again, differently). Under exactly-once the batch's transaction already makes them one unit.

Before the entries, the batch's whole change set goes to the table as a *journal*: records of at
most :data:`PART_BYTES` under ``journal/0`` … ``journal/n-1``, each carrying the journal's sequence
number and ``n``. A changelog partition keeps its order, so a restore sees either no journal of the
batch (and none of its entries) or, once every part of it is there, the journal and a prefix of the
entries: :meth:`Journal.restore` lays the latest complete journal over the entries, which completes them.
What it completed is written again with the next batch (the next journal replaces this one).
"""

from __future__ import annotations

import json
from typing import Any, Mapping, MutableMapping

PART_BYTES = 256 * 1024
"""The most JSON bytes of changes in one journal record: well under a record's limit
(``streams.limits.PRODUCER_MAX_BYTES``, 1 MiB), whatever the keys and framing add."""

PREFIX = "journal/"


class Journal:
    """The journal of one aggregate's entries in ``table`` under ``prefix``: its last sequence number and
    how many parts the table holds, read from the table once."""

    def __init__(self, table: MutableMapping[str, Any], prefix: str) -> None:
        self.table, self.prefix = table, prefix
        self._found = [value for key, value in table.items() if key.startswith(prefix + PREFIX)]
        self.seq = max((part["seq"] for part in self._found), default=0)
        self.parts = len(self._found)
        self.repaired: dict[str, Any] = {}

    def restore(self) -> dict[str, Any]:
        """The entries under ``prefix`` (without it), completed by the latest journal if every part of it
        is in the table. Called once, before any :meth:`write`: it reads the parts found at construction."""
        prefix, journal = self.prefix, self.prefix + PREFIX
        entries = {key[len(prefix):]: value for key, value in self.table.items()
                   if key.startswith(prefix) and not key.startswith(journal)}
        latest = sorted((value["part"], value) for value in self._found if value["seq"] == self.seq)
        if latest and [part for part, _ in latest] == list(range(latest[0][1]["parts"])):
            for _, value in latest:
                for key, change in value["changes"].items():
                    if entries.get(key) != change:
                        self.repaired[key] = change
                    if change is None:
                        entries.pop(key, None)
                    else:
                        entries[key] = change
        return entries

    def write(self, changes: Mapping[str, Any]) -> None:
        """Write ``changes`` (None = removed), with the entries the restore completed: the journal first,
        then each entry."""
        changes, self.repaired = {**self.repaired, **changes}, {}
        if not changes:
            return
        table, prefix = self.table, self.prefix
        parts = _split(changes)
        self.seq += 1
        for index, part in enumerate(parts):
            table[f"{prefix}{PREFIX}{index}"] = {"seq": self.seq, "part": index, "parts": len(parts), "changes": part}
        for index in range(len(parts), self.parts):
            table.pop(f"{prefix}{PREFIX}{index}", None)
        self.parts = len(parts)
        for key, value in changes.items():
            if value is None:
                table.pop(prefix + key, None)
            else:
                table[prefix + key] = value


def _split(changes: Mapping[str, Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{}]
    size = 0
    for key, value in changes.items():
        length = len(key) + len(json.dumps(value, separators=(",", ":")))
        if parts[-1] and size + length > PART_BYTES:
            parts.append({})
            size = 0
        parts[-1][key] = value
        size += length
    return parts
