"""Table recovery skips a changelog record it cannot decode (issue 37, failure 4): the record becomes an
event recovery counts but never applies, so a restarted worker's recovery reaches the changelog's end."""

from __future__ import annotations

import asyncio

import faust
import pytest
from faust.types import Message
from hypothesis import given
from hypothesis import strategies as st

from streams.faustcompat.changelogs import CHANGELOG_SKIPPED, SKIPPED, install_skip_undecodable
from streams.faustcompat.tables import raw_changelog


def message(key: bytes | None, value: bytes | None, offset: int = 0) -> Message:
    return Message("t-state-changelog", 0, offset, 0.0, 0, [], key, value, None)


@pytest.fixture
def app():
    install_skip_undecodable()
    return faust.App("changelogs-test", broker="kafka://127.0.0.1:9", store="memory://", web_enabled=False)


def decoded(table, record: Message):
    """The event the table manager's copy of ``table``'s changelog channel makes of ``record``."""
    channel = table.changelog_topic.clone_using_queue(asyncio.Queue())
    return asyncio.run(channel.decode(record, propagate=True))


@pytest.mark.parametrize(("key", "value"), [
    pytest.param(b"\xff\xfe", b'{"a":1}', id="key-not-utf8"),
    pytest.param(b"not json", b'{"a":1}', id="key-not-json"),
    pytest.param(b"123", b'{"a":1}', id="key-not-text"),
    pytest.param(None, b'{"a":1}', id="no-key"),
    pytest.param(b'"k"', b"\xc3\x28 garbage", id="value-not-utf8"),
    pytest.param(b'"k"', b"{not json", id="value-not-json"),
])
def test_an_undecodable_json_changelog_record_becomes_a_skipped_event(app, key, value):
    table = app.Table("state", partitions=4)
    before = CHANGELOG_SKIPPED.labels("state")._value.get()
    event = decoded(table, message(key, value))
    assert event.key is SKIPPED
    assert CHANGELOG_SKIPPED.labels("state")._value.get() == before + 1


def test_a_raw_table_takes_any_value_but_not_a_garbage_key(app):
    table = app.Table("raw-state", partitions=4)
    raw_changelog(table)
    assert decoded(table, message(b'"k"', b"\xff any bytes")).value == b"\xff any bytes"
    assert decoded(table, message(b"\xff", b"v")).key is SKIPPED


def test_skipped_events_are_not_applied_and_good_ones_are(app):
    table = app.Table("state", partitions=4)
    events = [decoded(table, record) for record in (
        message(b'"a"', b'{"v":1}', 0), message(b"\xff", b"{}", 1), message(b'"b"', b"{oops", 2),
        message(b'"c"', b'"x"', 3))]
    table.apply_changelog_batch(events)
    assert dict(table.data) == {"a": {"v": 1}, "c": "x"}
    assert [event.message.offset for event in events] == [0, 1, 2, 3]


BYTES = st.none() | st.binary(max_size=24) | st.sampled_from([b'"k"', b'"journal/0"', b"{}", b"null", b"[1]"])


@given(key=BYTES, value=BYTES, raw=st.booleans())
def test_any_changelog_record_decodes_to_a_text_key_or_is_skipped(key, value, raw):
    install_skip_undecodable()
    app = faust.App("changelogs-fuzz", broker="kafka://127.0.0.1:9", store="memory://", web_enabled=False)
    table = app.Table("state", partitions=4)
    if raw:
        raw_changelog(table)
    event = decoded(table, message(key, value))
    assert event.key is SKIPPED or isinstance(event.key, str)
    assert event.message.offset == 0
