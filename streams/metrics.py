"""The Prometheus metrics koordstream exports beside Faust's own.

Stream-level series (messages in and out per topic, events, table
operations, rebalances, read, end and committed offsets) come from Faust's
Prometheus sensor, trimmed of its per-event timing and installed with the
prefix ``koordstream_`` by ``streams.faustcompat.monitor.install_monitor``.
The series below are what Faust cannot know.
Every long-running process serves its registry with
``prometheus_client.start_http_server`` on ``--metrics-port``.

Per-node series (allocatable) can be numerous on a large fleet:
``KOORD_METRICS_PER_NODE=0`` turns them off.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from streams.deadletter import DEAD_LETTERS
from streams.settings import Settings

__all__ = ["DEAD_LETTERS", "DECISION_LATENCY", "OUTPUTS", "TABLE_ENTRIES", "NODE_ALLOCATABLE", "NODE_USAGE", "QUOTA", "CONSUMER_LAG",
           "FUTURE_TIMES", "DECISION_REPLAYS",
           "PER_NODE_ENABLED", "TABLE_SIZE_INTERVAL_S", "PLUGIN_RUNS", "PLUGIN_SECONDS", "PLUGIN_STATS_INTERVAL_S",
           "export_plugin_stats"]

FAUST_PREFIX = "koordstream"

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

DECISION_LATENCY = Histogram(
    "koord_decision_latency_seconds",
    "From the source record's timestamp to the aggregate sending its output",
    ["aggregate"], buckets=LATENCY_BUCKETS)
OUTPUTS = Counter("koord_outputs", "Records the aggregates emitted", ["aggregate", "schema"])
TABLE_ENTRIES = Gauge("koord_table_entries", "Entries in a Faust table on this worker", ["table"])
TABLE_SIZE_INTERVAL_S = 15.0
NODE_ALLOCATABLE = Gauge(
    "koord_node_allocatable", "Latest allocatable per node and resource (cpu in milli-cores, memory in bytes)",
    ["node", "resource"])
NODE_USAGE = Gauge(
    "koord_node_usage", "Latest node usage reported by its NodeMetric (cpu in milli-cores, memory in bytes)",
    ["node", "resource"])
QUOTA = Gauge("koord_quota", "ElasticQuota state per resource: field is runtime, used or request",
              ["quota", "resource", "field"])
PLUGIN_RUNS = Counter("koord_plugin_runs", "Plugin calls of the scheduler and the node aggregate",
                      ["plugin", "stage", "result"])
PLUGIN_SECONDS = Counter("koord_plugin_seconds", "Time spent in plugin calls of the scheduler and the node aggregate",
                         ["plugin", "stage", "result"])
PLUGIN_STATS_INTERVAL_S = 5.0
INBOX_SKIPPED = Counter(
    "koord_inbox_skipped", "Inbox records the consumer passed over within one consumer generation: each is "
    "processed late, out of inbox order, so this worker's decisions may differ from replay's", ["aggregate"])
STATE_ENTRIES_REFUSED = Counter(
    "koord_state_entries_refused", "State-table entries over streams.limits.STATE_ENTRY_MAX_BYTES, not written "
    "(their changelog record would be too big to send)")
JOURNAL_PARTS_IGNORED = Counter(
    "koord_journal_parts_ignored", "Table entries under a journal key that are not a journal part, ignored by the "
    "restore (streams.agents.journal)")
FUTURE_TIMES = Counter(
    "koord_future_times", "Record times more than streams.events.MAX_AHEAD_MS past the reader's clock: clamped "
    "(the router forwards the record at its clock plus that limit) or refused (dead-lettered)",
    ["stage", "action"])
DECISION_REPLAYS = Counter(
    "koord_decision_replays", "SchedulingDecisions ignored as replays: applied already, or older than the last "
    "one about their pod (streams.nodeaggregate.replays)", ["aggregate"])
CONSUMER_LAG = Gauge(
    "koord_consumer_lag", "Records behind the fetch high watermark (not ListOffsets, which Tansu gets wrong)",
    ["consumer", "topic", "partition"])

PER_NODE_ENABLED = Settings.from_env().metrics_per_node != "0"


def export_plugin_stats(stats) -> None:
    """Move a core's per-plugin counts and times (a ``streams.pluginstats.PluginStats``) into Prometheus,
    and reset them."""
    calls = stats.take()
    for (plugin, stage, result), (count, seconds) in calls.items():
        PLUGIN_RUNS.labels(plugin, stage, result).inc(count)
        PLUGIN_SECONDS.labels(plugin, stage, result).inc(seconds)


def serve(port: int | None, host: str) -> None:
    """Serve this process's registry on ``host:port`` (nothing when ``port`` is None or 0)."""
    if port:
        from prometheus_client import start_http_server

        start_http_server(port, addr=host)
