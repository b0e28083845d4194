"""Node aggregate agent: the node inbox through ``NodePartition``, one per partition.

Events are taken in batches; each goes to the driver of its inbox
partition, whose writes are held back until the batch's outputs
(NodeResource, DeadLetter for a rejected config, Acks) are delivered, then
written to the ``node-state`` table with an event of that partition as
Faust's current event (Faust routes a table write to the changelog
partition of the current event). Values are the compact ``dump_state``
bytes (raw, not JSON). The drivers are rebuilt from the table on first use
after every rebalance. Actuations are signed with the key of ``KOORD_ACTUATION_KEY``,
read once here (``planner.SIGNING_KEY``).
"""

from __future__ import annotations

import faust
from aiokafka.partitioner import DefaultPartitioner

from streams import actuation
from streams.agents.inbox import forget_on_rebalance, inbox_batches, write_as
from streams.agents.outputs import OUTPUT_TOPICS, send_outputs
from streams.agents.transactions import Batches
from streams.app import raw_topic
from streams.metrics import NODE_USAGE, PER_NODE_ENABLED, TABLE_ENTRIES, TABLE_SIZE_INTERVAL_S
from streams.nodeaggregate.partition import CONFIG_KEY, NodePartition
from streams.nodeqos import planner
from streams.topology import Topology

STAGE = "node"


class _TableSlice:
    """The part of the table one partition's driver sees; its config key is per partition."""

    def __init__(self, table, partition: int) -> None:
        self.table, self.partition = table, partition

    def _key(self, key: str) -> str:
        return f"{key}/{self.partition}" if key == CONFIG_KEY else key

    def get(self, key: str):
        return self.table.get(self._key(key))

    def __setitem__(self, key: str, value: bytes) -> None:
        self.table[self._key(key)] = value

    def pop(self, key: str, default=None):
        return self.table.pop(self._key(key), default)


def register(app: faust.App, topology: Topology) -> None:
    planner.SIGNING_KEY = actuation.signing_key()
    inbox_spec = topology.spec("inbox-node")
    topics = {schema: raw_topic(app, topology.name(topic_id)) for schema, topic_id in OUTPUT_TOPICS.items()}
    dead_letters = topics["DeadLetter"]
    topic_ids = {name: topic_id for topic_id, name in topology.names().items()}
    table = app.Table("node-state", partitions=inbox_spec.partitions)
    table.value_serializer = "raw"
    table.changelog_topic = table._new_changelog_topic()
    """Values are ``dump_state`` bytes (and the config record), so the changelog carries them raw;
    Faust has no constructor argument for a table's value serializer, hence the override."""
    batches = Batches(app)
    batches.track_changelog(table)
    partitions: dict[int, NodePartition] = {}
    partitioner = DefaultPartitioner()
    all_partitions = list(range(inbox_spec.partitions))

    def driver(partition: int) -> NodePartition:
        if partition not in partitions:
            nodes = [key for key in table.keys() if not key.startswith(CONFIG_KEY)
                     and partitioner(key.encode(), all_partitions, all_partitions) == partition]
            partitions[partition] = NodePartition(_TableSlice(table, partition), nodes)
        return partitions[partition]

    @app.timer(interval=TABLE_SIZE_INTERVAL_S)
    async def table_size() -> None:
        TABLE_ENTRIES.labels("node-state").set(len(table))

    forget_on_rebalance(app, partitions)

    @app.agent(raw_topic(app, inbox_spec.name), name="koord-node")
    async def aggregate_node(stream):
        async for batch in inbox_batches(stream, topic_ids, dead_letters, STAGE, batches):
            caused, written = [], {}
            for key, event, faust_event in batch:
                if event.kind == "NodeMetric" and event.record is not None and PER_NODE_ENABLED:
                    for resource, value in event.record["nodeUsage"].items():
                        NODE_USAGE.labels(key, resource).set(value)
                partition = driver(event.causation.inbox_partition)
                pending = written.setdefault(partition, ({}, faust_event))[0]
                written[partition] = (pending, faust_event)
                store = partition.store
                partition.store = _Buffer(store, pending)
                try:
                    caused.append((event, partition.apply(event)))
                finally:
                    partition.store = store
            await send_outputs(batches, topics, STAGE, "inbox-node", caused)
            for partition, (pending, faust_event) in written.items():
                write_as(faust_event)
                for node, value in pending.items():
                    if value is None:
                        partition.store.pop(node)
                    else:
                        partition.store[node] = value


class _Buffer:
    """Holds a driver's writes until its outputs are delivered (then the shell writes them)."""

    def __init__(self, store: _TableSlice, pending: dict) -> None:
        self.store, self.pending = store, pending

    def get(self, key: str):
        return self.pending[key] if key in self.pending else self.store.get(key)

    def __setitem__(self, key: str, value: bytes) -> None:
        self.pending[key] = value

    def pop(self, key: str, default=None):
        value = self.get(key)
        self.pending[key] = None
        return default if value is None else value
