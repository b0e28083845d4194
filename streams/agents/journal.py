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

No part is bigger than a part's budget: a change larger than :data:`PART_BYTES` is cut into pieces, each in
a part of its own (``pieces``: how many), joined again when restored. An entry whose serialised value is
over ``streams.limits.STATE_ENTRY_MAX_BYTES`` would fail its changelog send and stop the worker: it is
neither journaled nor written but logged and counted (``koord_state_entries_refused``). The objects that
enter the pipeline are checked against that budget where they enter (``streams.objects.size.state_problem``),
so this is the last guard, not the way an object is refused.

Each change is serialised once (:attr:`Parts.form`): its size, its journal part and its entry are written from
that one form, where the table takes the bytes it sends (``streams.agents.states.BatchedTable.put``); a part
of JSON changes is their texts joined, the bytes Faust's JSON serialiser would write for the part.

Where a core's entries and journal sit in the table is its :class:`Keys`: under a common prefix
(:class:`Prefixed`, the scheduling domains and the routing partitions) or another layout the table
already had (the node aggregate's). A table whose values are raw bytes keeps its journal as bytes too
(:data:`RAW_PARTS`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any, Callable, Mapping, MutableMapping, Protocol

from streams.limits import STATE_ENTRY_MAX_BYTES
from streams.metrics import JOURNAL_PARTS_IGNORED, STATE_ENTRIES_REFUSED

log = logging.getLogger(__name__)

PART_BYTES = 256 * 1024
"""The most bytes of changes in one journal record, serialised: a part's own serialisation at most doubles
them (a piece is a string of JSON whose ``"`` and ``\\`` are escaped again), well under
``STATE_ENTRY_MAX_BYTES`` whatever the keys and framing add."""

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
    """How journal parts and entries are kept in the table. ``form`` is a change (or a piece of one) serialised
    as it is written, once; ``size`` the bytes a form takes in a part; ``data`` an entry's changelog bytes from
    its form; ``encode`` a part (a dict whose changes are values) with its changes' forms into (table value,
    changelog bytes); ``decode`` a table value back into the part; ``cut`` a form into pieces of at most
    ``PART_BYTES`` and ``join`` the pieces back into the change."""

    form: Callable[[Any], Any]
    size: Callable[[Any], int]
    data: Callable[[Any], bytes]
    encode: Callable[[dict, Mapping[str, Any]], tuple[Any, bytes]]
    decode: Callable[[Any], dict]
    cut: Callable[[Any], list]
    join: Callable[[list], Any]


def _json_text(value: Any) -> str:
    """``value`` as Faust's JSON serialiser writes a table value (compact, non-ASCII escaped)."""
    return json.dumps(value, separators=(",", ":"))


def _pieces(value):
    return [value[at:at + PART_BYTES] for at in range(0, len(value), PART_BYTES)]


def _json_encode(part: dict, forms: Mapping[str, str]) -> tuple[dict, bytes]:
    """The part as a dict, and its JSON text spliced from its changes' texts, fields and changes in order."""
    fields = (f'"{name}":{{{",".join(f"{_json_text(key)}:{forms[key]}" for key in value)}}}' if name == "changes"
              else f'"{name}":{_json_text(value)}' for name, value in part.items())
    return part, f'{{{",".join(fields)}}}'.encode()


JSON_PARTS = Parts(_json_text, len, str.encode, _json_encode, lambda value: value, _pieces,
                   lambda pieces: json.loads("".join(pieces)))
"""Parts as dicts, for a table of JSON values (Faust's table default); a piece is a slice of the change's
JSON text."""


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


def _raw_written(part: dict, forms: Mapping[str, Any]) -> tuple[bytes, bytes]:
    data = _raw_encode(part)
    return data, data


RAW_PARTS = Parts(lambda value: value, lambda value: 4 if value is None else len(value), lambda value: value,
                  _raw_written, _raw_decode, _pieces, b"".join)
"""Parts as bytes, for a table of raw bytes values (its changelog takes bytes only): a JSON line with each
change's key and length (-1: removed), then the values one after the other."""


def _readable(parts: Parts, key: str, value: Any) -> dict | None:
    """A journal part as written (sequence, index, count and changes), or None, logged, for one that is not:
    only the worker writes its changelog, but one unreadable record must not stop every restore of the table
    (its batch is then restored as the entries hold it, as if the journal had not reached the changelog)."""
    try:
        part = parts.decode(value)
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        part, error_text = None, f"{type(error).__name__}: {error}"
    else:
        fields_ok = (isinstance(part, dict) and isinstance(part.get("changes"), dict)
                     and all(type(part.get(name)) is int for name in ("seq", "part", "parts"))
                     and (type(part.get("pieces", 0)) is int))
        error_text = None if fields_ok else "not a journal part (seq, part, parts, changes)"
    if error_text is None:
        return part
    log.warning("journal: ignoring table entry %s: %s", key, error_text)
    JOURNAL_PARTS_IGNORED.inc()
    return None


class Journal:
    """The journal of one core's entries in ``table`` (laid out by ``keys``, kept as ``parts``): its last
    sequence number and how many parts the table holds, read from the table once. ``entries`` are the
    core's entries as last written, once restored."""

    def __init__(self, table: MutableMapping[str, Any], keys: Keys, parts: Parts = JSON_PARTS) -> None:
        self.table, self.keys, self.codec = table, keys, parts
        journal = keys.journal_key(0)[:-1]
        self._found = [part for key, value in table.items()
                       if key.startswith(journal) and key[len(journal):].isdigit()
                       for part in [_readable(parts, key, value)] if part is not None]
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
            pieces: dict[str, list] = {}
            for _, value in latest:
                for key, change in value["changes"].items():
                    if "pieces" in value:
                        pieces.setdefault(key, []).append(change)
                        if len(pieces[key]) < value["pieces"]:
                            continue
                        change = self.codec.join(pieces.pop(key))
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
        forms = self._forms_within_budget(changes)
        if not forms:
            return
        changes = {key: changes[key] for key in forms}
        table, keys, entries, codec = self.table, self.keys, self.entries, self.codec
        parts = _split(changes, forms, codec)
        self.seq += 1
        for index, (part, part_forms, pieces) in enumerate(parts):
            header = {"seq": self.seq, "part": index, "parts": len(parts)}
            _put(table, keys.journal_key(index),
                 *codec.encode({**header, "changes": part, **({"pieces": pieces} if pieces else {})}, part_forms))
        for index in range(len(parts), self.parts):
            table.pop(keys.journal_key(index), None)
        self.parts = len(parts)
        for key, value in changes.items():
            if value is None:
                table.pop(keys.table_key(key), None)
                entries.pop(key, None)
            else:
                _put(table, keys.table_key(key), value, codec.data(forms[key]))
                entries[key] = value

    def _forms_within_budget(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Each change's form, for the changes within the state budget; one over it is logged and counted, and
        left out."""
        forms = {}
        for key, value in changes.items():
            form = self.codec.form(value)
            size = self.codec.size(form)
            if size > STATE_ENTRY_MAX_BYTES:
                log.error("state entry %s is %d bytes, over the %d-byte budget of an entry: not written",
                          self.keys.table_key(key), size, STATE_ENTRY_MAX_BYTES)
                STATE_ENTRIES_REFUSED.inc()
            else:
                forms[key] = form
        return forms


def _put(table: MutableMapping[str, Any], key: str, value: Any, data: bytes) -> None:
    """``table[key] = value``, with ``data`` as its changelog bytes where the table takes them (``put``)."""
    put = getattr(table, "put", None)
    if put is None:
        table[key] = value
    else:
        put(key, value, data)


def _split(changes: Mapping[str, Any], forms: Mapping[str, Any],
           codec: Parts) -> list[tuple[dict[str, Any], dict[str, Any], int]]:
    """The journal's parts, each (changes, their forms, 0), or ({key: piece}, {key: its form}, pieces) for a
    piece of a change larger than a part."""
    parts: list[tuple[dict[str, Any], dict[str, Any], int]] = [({}, {}, 0)]
    total = 0
    for key, value in changes.items():
        form = forms[key]
        length = len(key) + codec.size(form)
        if length > PART_BYTES and value is not None:
            pieces = codec.cut(form)
            parts.extend(({key: piece}, {key: codec.form(piece)}, len(pieces)) for piece in pieces)
            parts.append(({}, {}, 0))
            total = 0
            continue
        if parts[-1][0] and total + length > PART_BYTES:
            parts.append(({}, {}, 0))
            total = 0
        parts[-1][0][key] = value
        parts[-1][1][key] = form
        total += length
    return [part for part in parts if part[0] or part[2]] or [({}, {}, 0)]
