"""Faust's Prometheus sensor without its per-event bookkeeping.

Faust's ``Monitor`` stamps the time of every message, event, send and table access and keeps their
latencies for its web statistics page, which the worker does not serve (``web_enabled=False``);
``PrometheusMonitor`` adds a labelled-series lookup to each hook. Together they were 7.5 % of a worker's
CPU on the node path (sampled while ``koord bench nodes`` ran 2,000 nodes on Kafka).

:class:`LeanMonitor` exports the same per-topic, per-stream and per-table counters, the read, end and
committed offsets, rebalances and assignments, each labelled series looked up once and kept until Faust
clears it at a rebalance. It leaves out what needs a timestamp per event: the event runtime and producer
send latency histograms and the active messages and events gauges.

Faust's consumer reads ``Monitor.stream_inbound_time`` (a stream's last event) to warn of a stream that
stopped processing; it is kept. Checked against faust-streaming 0.15.3 (``FAUST_VERSION``).
"""

from __future__ import annotations

from time import monotonic
from typing import Any

from faust.sensors.prometheus import FaustMetrics, PrometheusMonitor
from prometheus_client import REGISTRY

from streams.metrics import FAUST_PREFIX


class LeanMonitor(PrometheusMonitor):
    """``PrometheusMonitor``'s counters and offsets, without timing every event."""

    def __init__(self, metrics: FaustMetrics, **kwargs: Any) -> None:
        super().__init__(metrics, **kwargs)
        self._series: dict[tuple, Any] = {}
        self._stream_events: dict[Any, Any] = {}

    def _series_of(self, metric, *labels):
        """The child of ``metric`` with ``labels``, looked up once."""
        key = (metric, labels)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = metric.labels(*labels)
        return series

    def _clear_partition_related_metrics(self) -> None:
        super()._clear_partition_related_metrics()
        self._series.clear()

    def on_message_in(self, tp, offset: int, message) -> None:
        self._metrics.messages_received.inc()
        self._series_of(self._metrics.messages_received_per_topics, tp.topic).inc()
        self._series_of(self._metrics.messages_received_per_topics_partition, tp.topic, tp.partition).set(offset)

    def on_stream_event_in(self, tp, offset: int, stream, event) -> None:
        self.stream_inbound_time[tp] = monotonic()
        self._metrics.total_events.inc()
        series = self._stream_events.get(stream)
        if series is None:
            series = self._stream_events[stream] = self._metrics.total_events_per_stream.labels(
                f"stream.{self._stream_label(stream)}.events")
        series.inc()
        return None

    def on_stream_event_out(self, tp, offset: int, stream, event, state=None) -> None:
        pass

    def on_message_out(self, tp, offset: int, message) -> None:
        pass

    def on_table_get(self, table, key) -> None:
        self._series_of(self._metrics.table_operations, f"table.{table.name}", self.KEYS_RETRIEVED).inc()

    def on_table_set(self, table, key, value) -> None:
        self._series_of(self._metrics.table_operations, f"table.{table.name}", self.KEYS_UPDATED).inc()

    def on_table_del(self, table, key) -> None:
        self._series_of(self._metrics.table_operations, f"table.{table.name}", self.KEYS_DELETED).inc()

    def on_send_initiated(self, producer, topic: str, message, keysize: int, valsize: int) -> None:
        self._series_of(self._metrics.topic_messages_sent, f"topic.{topic}").inc()
        return None

    def on_send_completed(self, producer, state, metadata) -> None:
        self._metrics.total_sent_messages.inc()

    def on_send_error(self, producer, exc: BaseException, state) -> None:
        self._metrics.total_error_messages_sent.inc()

    def track_tp_end_offset(self, tp, offset: int) -> None:
        self._series_of(self._metrics.topic_partition_end_offset, tp.topic, tp.partition).set(offset)


def install_monitor(app) -> None:
    """Attach Faust's Prometheus series to ``app`` (served by our HTTP server, not Faust's web), through
    :class:`LeanMonitor`."""
    app.monitor = LeanMonitor(metrics=FaustMetrics.create(REGISTRY, FAUST_PREFIX))
