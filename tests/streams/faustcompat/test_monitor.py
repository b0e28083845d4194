"""``LeanMonitor`` exports Faust's per-topic, per-stream and per-table series, keeps counting after Faust
clears them at a rebalance, and keeps the stream inbound time Faust's livelock warning reads."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from faust.sensors.prometheus import FaustMetrics
from faust.types import TP
from prometheus_client import CollectorRegistry

from streams.faustcompat.monitor import LeanMonitor

PREFIX = "test"


class Stream:
    """What the monitor reads of a Faust stream: its label (and that it is hashable)."""

    shortlabel = "Stream: koord-scheduling"


@pytest.fixture()
def monitor():
    registry = CollectorRegistry()
    lean = LeanMonitor(metrics=FaustMetrics.create(registry, PREFIX))
    lean.registry = registry
    return lean


def value(monitor, name: str, **labels) -> float | None:
    return monitor.registry.get_sample_value(f"{PREFIX}_{name}", labels)


def test_messages_in_count_per_topic_and_set_the_read_offset(monitor):
    tp = TP("koord.inbox.node", 2)
    for offset in (10, 11, 12):
        monitor.on_message_in(tp, offset, message=None)
    assert value(monitor, "messages_received_total") == 3
    assert value(monitor, "messages_received_per_topic_total", topic="koord.inbox.node") == 3
    assert value(monitor, "messages_received_per_topics_partition", topic="koord.inbox.node", partition="2") == 12


def test_counting_goes_on_after_a_rebalance_clears_the_topic_series(monitor):
    tp = TP("koord.pods", 0)
    monitor.on_message_in(tp, 1, message=None)
    monitor.on_send_initiated(None, "koord.inbox.routing", None, 3, 100)
    monitor.on_rebalance_start(SimpleNamespace(rebalancing_count=1))
    assert value(monitor, "messages_received_per_topic_total", topic="koord.pods") is None
    monitor.on_message_in(tp, 2, message=None)
    monitor.on_send_initiated(None, "koord.inbox.routing", None, 3, 100)
    assert value(monitor, "messages_received_per_topic_total", topic="koord.pods") == 1
    assert value(monitor, "topic_messages_sent_total", topic="topic.koord.inbox.routing") == 1
    assert value(monitor, "total_rebalances") == 1


def test_stream_events_stamp_the_inbound_time_and_count_per_stream(monitor):
    tp = TP("koord.inbox.scheduling", 1)
    stream = Stream()
    assert monitor.on_stream_event_in(tp, 5, stream, event=None) is None
    monitor.on_stream_event_in(tp, 6, stream, event=None)
    monitor.on_stream_event_out(tp, 6, stream, event=None, state=None)
    assert tp in monitor.stream_inbound_time
    assert value(monitor, "total_events_total") == 2
    assert value(monitor, "total_events_per_stream_total", stream="stream.koord-scheduling.events") == 2


def test_table_operations_sends_and_end_offsets(monitor):
    table = SimpleNamespace(name="node-state")
    monitor.on_table_get(table, "n1")
    monitor.on_table_set(table, "n1", b"v")
    monitor.on_table_set(table, "n2", b"v")
    monitor.on_table_del(table, "n1")
    monitor.on_send_completed(None, None, None)
    monitor.on_send_error(None, RuntimeError("refused"), None)
    monitor.track_tp_end_offset(TP("koord.nodes", 3), 42)
    operations = {operation: value(monitor, "table_operations_total", table="table.node-state", operation=operation)
                  for operation in ("keys_retrieved", "keys_updated", "keys_deleted")}
    assert operations == {"keys_retrieved": 1, "keys_updated": 2, "keys_deleted": 1}
    assert value(monitor, "total_sent_messages_total") == 1
    assert value(monitor, "total_error_messages_sent_total") == 1
    assert value(monitor, "topic_partition_end_offset", topic="koord.nodes", partition="3") == 42
