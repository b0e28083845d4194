"""Bulk table recovery's own decoding gives what the changelog channel's decoder gives, and the records it applies
leave the table as every record would (``streams.faustcompat.recovery``; on a real broker:
``tests/integration/test_bulk_recovery.py``)."""

from __future__ import annotations

import asyncio
import logging
from typing import NamedTuple

import faust
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faust.types import TP

from streams.faustcompat.changelogs import SKIPPED, install_skip_undecodable
from streams.faustcompat.recovery import ChangelogEvent, _decoded, _deciding, _json_values
from streams.faustcompat.tables import raw_changelog


class Record(NamedTuple):
    """The fields of an aiokafka ConsumerRecord the decoders read."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    checksum: None
    serialized_key_size: int
    serialized_value_size: int
    headers: tuple


def record(key: bytes | None, value: bytes | None, offset: int = 0, partition: int = 0) -> Record:
    return Record("t-state-changelog", partition, offset, 0, 0, key, value, None, 0, 0, ())


@pytest.fixture(scope="module")
def tables():
    install_skip_undecodable()
    app = faust.App("recovery-test", broker="kafka://127.0.0.1:9", store="memory://", web_enabled=False)
    json_table = app.Table("state", partitions=4)
    raw_table = app.Table("raw-state", partitions=4)
    raw_changelog(raw_table)
    return json_table, raw_table


def channel(table, rec: Record):
    event = asyncio.run(table.changelog_topic.decode(rec, propagate=True))
    return None if event.key is SKIPPED else (event.key, event.value)


CASES = [
    pytest.param(b'"a"', b'{"v":1,"w":[1,2]}', id="json"),
    pytest.param(b'"a"', None, id="removal"),
    pytest.param(b'"a"', b'"text"', id="json-text"),
    pytest.param(b'"a"', b"0", id="json-false"),
    pytest.param(b'"\\u00e9"', b'{"k":"\\u00e9"}', id="escaped"),
    pytest.param(b"\xff", b"{}", id="key-not-utf8"),
    pytest.param(b"12", b"{}", id="key-not-text"),
    pytest.param(None, b"{}", id="no-key"),
    pytest.param(b'"a"', b"{oops", id="value-not-json"),
    pytest.param(b'"a"', b"\xc3\x28", id="value-not-utf8"),
    pytest.param(b'"a"', b'{"__faust":{"ns":"no.such.Model"}}', id="model-marker"),
]


@pytest.mark.parametrize(("key", "value"), CASES)
def test_decoded_here_or_left_to_the_channel_gives_what_the_channel_gives(tables, key, value):
    for table in tables:
        rec = record(key, value)
        json_values = _json_values(table.changelog_topic.schema)
        assert json_values is (table.changelog_topic.schema.value_serializer == "json")
        mine = _decoded(rec, json_values)
        if mine is not None:
            assert mine == channel(table, rec)


KEYS = st.sampled_from([b'"a"', b'"b"', b' "a"', b"\xff", None])
VALUES = st.sampled_from([b'{"v":1}', b'{"v":2}', b"0", b"{}", b"{bad", None])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(KEYS, VALUES), max_size=30))
def test_the_deciding_records_leave_the_table_as_every_record_does(pairs):
    install_skip_undecodable()
    app = faust.App("recovery-prop", broker="kafka://127.0.0.1:9", store="memory://", web_enabled=False)
    every, deciding = app.Table("every", partitions=1), app.Table("deciding", partitions=1)
    chunk = [record(key, value, offset) for offset, (key, value) in enumerate(pairs)]
    every.apply_changelog_batch([asyncio.run(every.changelog_topic.decode(rec, propagate=True)) for rec in chunk])
    events = []
    for rec, decoded in _deciding(chunk, True):
        if decoded is None:
            event = asyncio.run(deciding.changelog_topic.decode(rec, propagate=True))
            decoded = event.key, event.value
        events.append(ChangelogEvent(*decoded, rec))
    deciding.apply_changelog_batch(events)
    assert dict(deciding.data.data) == dict(every.data.data)


def test_a_failed_bulk_read_leaves_the_changelogs_to_fausts_recovery(caplog):
    """The reader fails (a broker that refuses the connection): the seek still runs from the offsets Faust chose,
    so Faust's own recovery reads every record."""
    from streams.faustcompat.recovery import bulk_recovery

    seeks = []

    class StandIn:
        app = faust.App("recovery-fail", broker="kafka://127.0.0.1:9", store="memory://", web_enabled=False)
        tp_to_table = {("t", 0): object()}
        active_highwaters = {("t", 0): 10}

        async def _seek_offsets(self, consumer, tps, offsets, title):
            seeks.append((title, dict(offsets)))

    def failing_reader(app):
        raise ConnectionError("no broker")

    bulk_recovery(StandIn, failing_reader)
    asyncio.run(StandIn()._seek_offsets(None, {("t", 0)}, {("t", 0): -1}, "active"))
    assert seeks == [("active", {("t", 0): -1})]
    assert "bulk recovery failed" in caplog.text


def test_a_read_that_stalls_leaves_the_rest_to_fausts_recovery(tables, monkeypatch, caplog):
    """The broker answers the first fetch and then nothing for a partition not yet at its highwater: after
    ``STALL_S`` without a record the read stops, the offset reached stays, and the log names what Faust reads."""
    from streams.faustcompat import recovery

    caplog.set_level(logging.INFO, logger=recovery.__name__)
    monkeypatch.setattr(recovery, "STALL_S", 0.3)
    monkeypatch.setattr(recovery, "FETCH_TIMEOUT_MS", 50)
    json_table, _ = tables
    tp = json_table.changelog_topic.get_topic_name(), 0

    class Stalling:
        """An aiokafka consumer that has records 0-2 of a partition whose highwater is 9."""

        def __init__(self):
            self.fetches, self.at = 0, 0

        async def start(self):
            pass

        async def stop(self):
            pass

        def assign(self, partitions):
            self.partition = partitions[0]

        def seek(self, partition, offset):
            self.at = offset

        async def getmany(self, *partitions, timeout_ms):
            self.fetches += 1
            if self.fetches > 1:
                await asyncio.sleep(timeout_ms / 1000)
                return {}
            chunk = [record(b'"k%d"' % i, b'{"v":%d}' % i, i) for i in range(3)]
            self.at = 3
            return {self.partition: chunk}

        async def position(self, partition):
            return self.at

    changelog_tp = TP(*tp)
    offsets = {changelog_tp: -1}
    app = type("App", (), {"conf": type("Conf", (), {"broker_request_timeout": 90.0})()})()
    asyncio.run(recovery.read_changelogs(app, Stalling(), {changelog_tp: json_table}, [changelog_tp], offsets,
                                         {changelog_tp: 9}))
    assert offsets == {changelog_tp: 2}
    assert {key: json_table.data.data[key] for key in ("k0", "k1", "k2")} == {"k0": {"v": 0}, "k1": {"v": 1},
                                                                          "k2": {"v": 2}}
    assert "Faust's recovery reads the rest" in caplog.text
