"""A batch's table writes restore all or nothing: whatever prefix of the changelog records a killed worker left,
the restored entries are those before the batch or those after it."""

from __future__ import annotations

import pytest
from faust.serializers.codecs import get_codec

import streams.agents.journal as journal_module
from streams import limits
from streams.agents.journal import Journal, Prefixed
from streams.metrics import STATE_ENTRIES_REFUSED

FAUST_JSON = get_codec("json")

PREFIX = "default|"
KEYS = Prefixed(PREFIX)


class Changelog(dict):
    """A table that also records its writes in order, as its changelog does (None = a tombstone), and takes the
    bytes the journal serialised, checked against what Faust's serialiser writes for the value."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[tuple[str, object]] = []

    def __setitem__(self, key, value) -> None:
        super().__setitem__(key, value)
        self.records.append((key, value))

    def put(self, key, value, data: bytes) -> None:
        assert data == (value if isinstance(value, bytes) else FAUST_JSON.dumps(value)), key
        self[key] = value

    def pop(self, key, default=None):
        self.records.append((key, None))
        return super().pop(key, default)


def recovered(records: list[tuple[str, object]]) -> dict:
    """The table a worker recovers from a prefix of the changelog."""
    table: dict = {}
    for key, value in records:
        if value is None:
            table.pop(key, None)
        else:
            table[key] = value
    return table


BEFORE = {"meta": {"seq": 1}, "pod/a": {"node": "n1"}, "pod/b": {"node": None}, "source/pods/0": {"offset": 4}}
BATCH = {"meta": {"seq": 2}, "pod/b": {"node": "n2"}, "pod/c": {"node": "n1"}, "pod/gone": None,
         "source/pods/0": {"offset": 7}}


def after(before: dict, changes: dict) -> dict:
    out = dict(before)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


@pytest.mark.parametrize("part_bytes", [1 << 20, 40])
def test_every_prefix_of_the_changelog_restores_the_state_before_or_after_the_batch(monkeypatch, part_bytes):
    monkeypatch.setattr(journal_module, "PART_BYTES", part_bytes)
    table = Changelog()
    Journal(table, KEYS).write({**BEFORE, "pod/gone": {"node": "n3"}})
    first = table.records[:]
    journal = Journal(recovered(first), KEYS)
    journal.table = table
    journal.write(BATCH)
    states = set()
    for cut in range(len(first), len(table.records) + 1):
        restored = Journal(recovered(table.records[:cut]), KEYS).restore()
        assert restored in ({**BEFORE, "pod/gone": {"node": "n3"}}, after(BEFORE, BATCH)), cut
        states.add(repr(sorted(restored)))
    assert len(states) == 2
    assert part_bytes == 1 << 20 or sum(key.startswith(PREFIX + "journal/") for key, _ in table.records[len(first):]) > 1


def test_a_smaller_journal_removes_the_parts_a_larger_one_left(monkeypatch):
    monkeypatch.setattr(journal_module, "PART_BYTES", 40)
    table = Changelog()
    journal = Journal(table, KEYS)
    journal.write(BATCH)
    assert journal.parts > 1
    journal.write({"meta": {"seq": 3}})
    assert sorted(key for key in table if "journal/" in key) == [PREFIX + "journal/0"]
    assert Journal(table, KEYS).restore()["meta"] == {"seq": 3}


def test_a_new_worker_numbers_its_journals_after_the_ones_in_the_table():
    table = Changelog()
    Journal(table, KEYS).write(BEFORE)
    Journal(table, KEYS).write(BATCH)
    assert Journal(table, KEYS).seq == 2
    assert Journal(table, KEYS).restore() == after(BEFORE, BATCH)


def test_other_prefixes_are_left_alone():
    table = Changelog()
    Journal(table, KEYS).write(BEFORE)
    Journal(table, Prefixed("other|")).write({"meta": {"seq": 9}})
    assert Journal(table, KEYS).restore() == BEFORE
    assert Journal(table, Prefixed("other|")).restore() == {"meta": {"seq": 9}}


def test_what_a_restore_completed_is_written_again_before_the_next_journal_replaces_it():
    """A killed worker left the journal of its last batch and only some of its entries; the survivor restores
    the whole batch, and the entries the table lacked go out with its own next batch."""
    table = Changelog()
    Journal(table, KEYS).write(BEFORE)
    killed = Journal(recovered(table.records), KEYS)
    killed.table = table
    killed.write(BATCH)
    cut = next(i for i, (key, _) in enumerate(table.records) if key == PREFIX + "pod/c")
    left = recovered(table.records[:cut])
    survivor = Journal(left, KEYS)
    assert survivor.restore() == after(BEFORE, BATCH)
    survivor.write({"pod/d": {"node": "n2"}})
    assert Journal(left, KEYS).restore() == {**after(BEFORE, BATCH), "pod/d": {"node": "n2"}}
    assert {key: value for key, value in left.items() if "journal/" not in key} == {
        PREFIX + key: value for key, value in {**after(BEFORE, BATCH), "pod/d": {"node": "n2"}}.items()}


def test_raw_parts_keep_bytes_values_and_removals_whatever_the_keys_hold():
    part = {"seq": 3, "part": 0, "parts": 1, "changes": {"n1": b"\x00\n{}", "odd\nkey": b"", "gone": None}}
    value, data = journal_module.RAW_PARTS.encode(part, part["changes"])
    assert value == data and journal_module.RAW_PARTS.decode(data) == part


BIG = {"pod/quotes": {"record": {"manifest": '"' * 400_000}}, "pod/small": {"node": "n1"}, "meta": {"seq": 4}}


def test_a_change_larger_than_a_part_is_cut_into_pieces_that_each_fit_the_budget_and_restore_all_or_nothing():
    table = Changelog()
    Journal(table, KEYS).write(BEFORE)
    first = table.records[:]
    journal = Journal(recovered(first), KEYS)
    journal.table = table
    journal.write(BIG)
    parts = [value for key, value in table.records[len(first):] if key.startswith(PREFIX + "journal/")]
    assert len(parts) >= 4
    assert max(len(FAUST_JSON.dumps(part)) for part in parts) <= 2 * journal_module.PART_BYTES + 1_024
    for cut in range(len(first), len(table.records) + 1):
        assert Journal(recovered(table.records[:cut]), KEYS).restore() in (BEFORE, after(BEFORE, BIG)), cut


def test_raw_parts_cut_a_large_value_into_pieces_too():
    table = Changelog()
    value = bytes(range(256)) * 4_000
    Journal(table, KEYS, journal_module.RAW_PARTS).write({"n1": value, "n2": b"x"})
    parts = [v for key, v in table.items() if key.startswith(PREFIX + "journal/")]
    assert len(parts) == 5 and max(len(part) for part in parts) <= journal_module.PART_BYTES + 200
    journal_only = {key: part for key, part in table.items() if key.startswith(PREFIX + "journal/")}
    assert Journal(journal_only, KEYS, journal_module.RAW_PARTS).restore() == {"n1": value, "n2": b"x"}


def test_an_entry_over_the_budget_is_neither_journaled_nor_written_but_counted():
    table = Changelog()
    before = STATE_ENTRIES_REFUSED._value.get()
    Journal(table, KEYS).write({"pod/huge": {"blob": "x" * limits.STATE_ENTRY_MAX_BYTES}, "pod/ok": {"node": "n1"}})
    assert STATE_ENTRIES_REFUSED._value.get() - before == 1
    assert Journal(table, KEYS).restore() == {"pod/ok": {"node": "n1"}}
    assert max(len(FAUST_JSON.dumps(value)) for value in table.values()) < 1_000


@pytest.mark.parametrize("garbage", [
    pytest.param([1, 2], id="a-list"), pytest.param({"seq": "2", "part": 0, "parts": 1, "changes": {}}, id="seq-text"),
    pytest.param({"seq": 2, "part": 0, "parts": 1}, id="no-changes"),
    pytest.param({"seq": 2, "part": 0, "parts": 1, "changes": [], "pieces": 1}, id="changes-a-list"),
])
def test_a_table_entry_under_a_journal_key_that_is_no_journal_part_is_ignored_and_counted(garbage):
    """Issue 37's last fragile spot: a JSON value of the wrong shape under ``journal/0`` stopped every restore."""
    from streams.metrics import JOURNAL_PARTS_IGNORED

    table = Changelog()
    Journal(table, KEYS).write(BEFORE)
    table[KEYS.journal_key(1)] = garbage
    ignored = JOURNAL_PARTS_IGNORED._value.get()
    journal = Journal(table, KEYS)
    assert journal.restore() == BEFORE
    assert JOURNAL_PARTS_IGNORED._value.get() == ignored + 1
    journal.write(BATCH)
    assert Journal(table, KEYS).restore() == after(BEFORE, BATCH)


def test_raw_parts_that_do_not_decode_are_ignored():
    table = {KEYS.journal_key(0): b"not json\n", PREFIX + "n1": b"x"}
    assert Journal(table, KEYS, journal_module.RAW_PARTS).restore() == {"n1": b"x"}

