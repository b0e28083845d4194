"""``raw_changelog`` gives a Faust table a raw changelog topic; ``store_quietly`` changes a table's store and
returns the changelog record Faust would have sent, serialised as Faust serialises it."""

from __future__ import annotations

import json

import faust

from streams.faustcompat.tables import raw_changelog, store_quietly


def test_a_raw_table_sends_raw_values_to_its_changelog():
    app = faust.App("tables-test", broker="kafka://127.0.0.1:9", store="memory://", web_enabled=False)
    table = app.Table("state", partitions=4)
    assert table.changelog_topic.value_serializer != "raw"
    raw_changelog(table)
    assert (table.value_serializer, table.changelog_topic.value_serializer) == ("raw", "raw")
    assert (table.changelog_topic.get_topic_name(), table.changelog_topic.partitions) == (
        "tables-test-state-changelog", 4)


def test_a_quiet_write_changes_the_store_and_returns_fausts_changelog_record():
    app = faust.App("tables-test", broker="kafka://127.0.0.1:9", store="memory://", web_enabled=False)
    table, raw = app.Table("state", partitions=4), app.Table("raw", partitions=4)
    raw_changelog(raw)
    topic = table.changelog_topic
    value = {"pods": ["ns/a"], "text": "naïve"}
    assert store_quietly(table, "d|ns/a", value) == (topic.prepare_key("d|ns/a", table.key_serializer)[0],
                                                    topic.prepare_value(value, table.value_serializer)[0])
    assert table["d|ns/a"] == value and json.loads(store_quietly(table, "k", value)[1]) == value
    assert store_quietly(raw, "node-1", b"\x00state") == (b'"node-1"', b"\x00state")
    assert store_quietly(table, "d|ns/a", None) == (b'"d|ns/a"', None)
    assert "d|ns/a" not in table and raw["node-1"] == b"\x00state"
