"""Node aggregate agent: the node inbox through one ``NodePartition`` per inbox partition.

Reads the node inbox in batches, hands each event to the partition's pure
core (``streams.nodeaggregate.partition``), sends the outputs (NodeResource,
Actuation, Eviction, DeadLetter for a rejected config, Acks), then writes the
entries each partition changed (``take_changes()``) to the ``node-state``
table, with an event of that partition as Faust's current event (Faust
routes a table write to the changelog partition of the current event).
Outputs are delivered before the table is written, for the reason given in
``agents/scheduling.py``. Values are ``statecodec.dump_state`` bytes (raw,
not JSON); the config entry is kept per partition (``CONFIG_KEY/<partition>``).

The cores are rebuilt from the table on first use after every rebalance and
configured once, from the environment (``NodeAggregateSettings``).
"""

from __future__ import annotations

import faust

from streams.agents.inbox import forget_on_rebalance, inbox_batches, write_as
from streams.agents.outputs import send_outputs
from streams.agents.topics import raw_topic
from streams.agents.transactions import Batches
from streams.faustcompat.tables import raw_changelog
from streams.inbox import handle_guarded
from streams.metrics import (
    NODE_USAGE, PER_NODE_ENABLED, PLUGIN_STATS_INTERVAL_S, TABLE_ENTRIES, TABLE_SIZE_INTERVAL_S, export_plugin_stats)
from streams.nodeaggregate.partition import CONFIG_KEY, NodePartition
from streams.nodeaggregate.settings import NodeAggregateSettings
from streams.outputs import OUTPUT_TOPICS
from streams.partitioning import partition_for
from streams.pluginstats import PluginStats
from streams.topology import Topology

STAGE = "node"


def table_key(key: str, partition: int) -> str:
    """The table key of a partition's entry: nodes by name, the config once per partition."""
    return f"{key}/{partition}" if key == CONFIG_KEY else key


class _TableSlice:
    """The entries of one partition, as its core reads them."""

    def __init__(self, table, partition: int) -> None:
        self.table, self.partition = table, partition

    def get(self, key: str):
        return self.table.get(table_key(key, self.partition))


def register(app: faust.App, topology: Topology) -> None:
    settings = NodeAggregateSettings.from_environment()
    settings.validate()
    inbox_spec = topology.spec("inbox-node")
    outputs = {schema: raw_topic(app, topology.name(topic_id)) for schema, topic_id in OUTPUT_TOPICS.items()}
    table = app.Table("node-state", partitions=inbox_spec.partitions)
    # Values are dump_state bytes (and the config record): the changelog carries them raw.
    raw_changelog(table)
    batches = Batches(app)
    batches.track_changelog(table)
    partitions: dict[int, NodePartition] = {}

    def load(partition: int) -> NodePartition:
        if partition not in partitions:
            nodes = [key for key in table.keys() if not key.startswith(CONFIG_KEY)
                     and partition_for(inbox_spec.partitions, key) == partition]
            partitions[partition] = NodePartition(settings, _TableSlice(table, partition), nodes, PluginStats())
        return partitions[partition]

    @app.timer(interval=TABLE_SIZE_INTERVAL_S)
    async def table_size() -> None:
        TABLE_ENTRIES.labels("node-state").set(len(table))

    @app.timer(interval=PLUGIN_STATS_INTERVAL_S)
    async def plugin_stats() -> None:
        for core in partitions.values():
            export_plugin_stats(core.stats)

    forget_on_rebalance(app, partitions)

    @app.agent(raw_topic(app, inbox_spec.name), name="koord-node")
    async def aggregate_node(stream):
        async for batch in inbox_batches(app, topology, "inbox-node", stream, outputs["DeadLetter"], STAGE, batches):
            caused, touched = [], {}
            for key, event, faust_event in batch:
                if event.kind == "NodeMetric" and event.record is not None and PER_NODE_ENABLED:
                    for resource, value in event.record["nodeUsage"].items():
                        NODE_USAGE.labels(key, resource).set(value)
                partition = event.causation.inbox_partition
                core = load(partition)
                caused.append((event, handle_guarded(STAGE, event, core.apply)))
                touched[core] = (partition, faust_event)
            await send_outputs(batches, outputs, STAGE, "inbox-node", caused)
            for core, (partition, faust_event) in touched.items():
                write_as(faust_event)
                for key, value in core.take_changes().items():
                    if value is None:
                        table.pop(table_key(key, partition), None)
                    else:
                        table[table_key(key, partition)] = value
