"""``raw_changelog`` gives a Faust table a raw changelog topic; ``on_changelog_send`` sees every changelog
write's delivery future, which the write still returns."""

from __future__ import annotations

import types

import faust

from streams.faustcompat.tables import on_changelog_send, raw_changelog


def test_a_raw_table_sends_raw_values_to_its_changelog():
    app = faust.App("tables-test", broker="kafka://127.0.0.1:9", store="memory://", web_enabled=False)
    table = app.Table("state", partitions=4)
    assert table.changelog_topic.value_serializer != "raw"
    raw_changelog(table)
    assert (table.value_serializer, table.changelog_topic.value_serializer) == ("raw", "raw")
    assert (table.changelog_topic.get_topic_name(), table.changelog_topic.partitions) == (
        "tables-test-state-changelog", 4)


def test_every_changelog_write_is_handed_over():
    sent, seen = [], []
    table = types.SimpleNamespace(send_changelog=lambda *args, **kwargs: sent.append((args, kwargs)) or len(sent))
    on_changelog_send(table, seen.append)
    assert [table.send_changelog(0, b"k", b"v"), table.send_changelog(1, key=b"j", value=None)] == [1, 2]
    assert seen == [1, 2]
    assert sent == [((0, b"k", b"v"), {}), ((1,), {"key": b"j", "value": None})]
