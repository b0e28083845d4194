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

Where a core's entries and journal sit in the table is its :class:`Keys`: under a common prefix
(:class:`Prefixed`, the scheduling domains and the routing partitions) or another layout the table
already had (the node aggregate's). A table whose values are raw bytes keeps its journal as bytes too
(:data:`RAW_PARTS`).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Callable, Mapping, MutableMapping, Protocol

PART_BYTES = 256 * 1024
"""The most JSON bytes of changes in one journal record: well under a record's limit
(``streams.limits.PRODUCER_MAX_BYTES``, 1 MiB), whatever the keys and framing add."""

PREFIX = "journal/"


class Keys(Protocol):
    """Where one core's entries and its journal sit in the table."""

    def table_key(self, key: str) -> str:
        """The table key of the core's entry ``key``."""

    def key_of(self, table_key: str) -> str | None:
        """The core's entry key held under ``table_key``; None for another core's entry or any journal."""

    def journal_key(self, index: int) -> str:
        """The table key of the core's journal part ``index``: a common prefix, then the index."""


@dataclasses.dataclass(frozen=True)
class Prefixed:
    """A core's entries under ``prefix``, its journal under ``prefix`` + ``journal/``."""

    prefix: str

    def table_key(self, key: str) -> str:
        return self.prefix + key

    def key_of(self, table_key: str) -> str | None:
        if not table_key.startswith(self.prefix) or table_key.startswith(self.prefix + PREFIX):
            return None
        return table_key[len(self.prefix):]

    def journal_key(self, index: int) -> str:
        return f"{self.prefix}{PREFIX}{index}"


@dataclasses.dataclass(frozen=True)
class Parts:
    """How journal parts are kept in the table: ``encode`` a part (a dict) into a table value, ``decode``
    it back, and ``size`` the bytes one change takes in a part."""

    encode: Callable[[dict], Any]
    decode: Callable[[Any], dict]
    size: Callable[[Any], int]


JSON_PARTS = Parts(lambda part: part, lambda value: value, lambda value: len(json.dumps(value, separators=(",", ":"))))
"""Parts as they are, for a table of JSON values (Faust's table default)."""


def _raw_encode(part: dict) -> bytes:
    values = part["changes"]
    header = {**part, "changes": [[key, -1 if value is None else len(value)] for key, value in values.items()]}
    return (json.dumps(header, separators=(",", ":")).encode() + b"\n"
            + b"".join(value for value in values.values() if value is not None))


def _raw_decode(value: bytes) -> dict:
    header, _, body = value.partition(b"\n")
    part, changes, at = json.loads(header), {}, 0
    for key, length in part["changes"]:
        changes[key] = None if length < 0 else body[at:at + length]
        at += max(length, 0)
    part["changes"] = changes
    return part


RAW_PARTS = Parts(_raw_encode, _raw_decode, lambda value: 4 if value is None else len(value))
"""Parts as bytes, for a table of raw bytes values (its changelog takes bytes only): a JSON line with each
change's key and length (-1: removed), then the values one after the other."""


class Journal:
    """The journal of one core's entries in ``table`` (laid out by ``keys``, kept as ``parts``): its last
    sequence number and how many parts the table holds, read from the table once. ``entries`` are the
    core's entries as last written, once restored."""

    def __init__(self, table: MutableMapping[str, Any], keys: Keys, parts: Parts = JSON_PARTS) -> None:
        self.table, self.keys, self.codec = table, keys, parts
        journal = keys.journal_key(0)[:-1]
        self._found = [parts.decode(value) for key, value in table.items()
                       if key.startswith(journal) and key[len(journal):].isdigit()]
        self.seq = max((part["seq"] for part in self._found), default=0)
        self.parts = len(self._found)
        self.repaired: dict[str, Any] = {}
        self.entries: dict[str, Any] = {}

    def restore(self) -> dict[str, Any]:
        """The core's entries, completed by the latest journal if every part of it is in the table. Called
        once, before any :meth:`write`: it reads the parts found at construction."""
        key_of = self.keys.key_of
        entries = {}
        for table_key, value in self.table.items():
            key = key_of(table_key)
            if key is not None:
                entries[key] = value
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
        self.entries = entries
        return entries

    def write(self, changes: Mapping[str, Any]) -> None:
        """Write ``changes`` (None = removed), with the entries the restore completed: the journal first,
        then each entry."""
        changes, self.repaired = {**self.repaired, **changes}, {}
        if not changes:
            return
        table, keys, entries = self.table, self.keys, self.entries
        parts = _split(changes, self.codec.size)
        self.seq += 1
        for index, part in enumerate(parts):
            table[keys.journal_key(index)] = self.codec.encode(
                {"seq": self.seq, "part": index, "parts": len(parts), "changes": part})
        for index in range(len(parts), self.parts):
            table.pop(keys.journal_key(index), None)
        self.parts = len(parts)
        for key, value in changes.items():
            if value is None:
                table.pop(keys.table_key(key), None)
                entries.pop(key, None)
            else:
                table[keys.table_key(key)] = value
                entries[key] = value


def _split(changes: Mapping[str, Any], size: Callable[[Any], int]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{}]
    total = 0
    for key, value in changes.items():
        length = len(key) + size(value)
        if parts[-1] and total + length > PART_BYTES:
            parts.append({})
            total = 0
        parts[-1][key] = value
        total += length
    return parts
