"""Node aggregate agent: one state per node, keyed by node name.

Reads the node inbox, applies the pure core (``streams.noderesource``),
sends NodeResource records, then stores the node's state in the
``node-state`` table (outputs first, as in the scheduling agent).
"""

from __future__ import annotations

import faust

from streams.agents.inbox import inbox_events
from streams.agents.outputs import OUTPUT_TOPICS, send_outputs
from streams.app import raw_topic
from streams.metrics import NODE_USAGE, PER_NODE_ENABLED, TABLE_ENTRIES, TABLE_SIZE_INTERVAL_S
from streams.noderesource import aggregate
from streams.topology import Topology

STAGE = "node"
PARTITION_WIDE = ("Tick", "ConfigMap")
"""Kinds broadcast to every partition rather than addressed to one node."""


def register(app: faust.App, topology: Topology) -> None:
    inbox_spec = topology.spec("inbox-node")
    topics = {schema: raw_topic(app, topology.name(topic_id)) for schema, topic_id in OUTPUT_TOPICS.items()}
    dead_letters = topics["DeadLetter"]
    topic_ids = {name: topic_id for topic_id, name in topology.names().items()}
    table = app.Table("node-state", partitions=inbox_spec.partitions)
    """Values are JSON (Faust's table default): internal state, not a public contract."""

    @app.timer(interval=TABLE_SIZE_INTERVAL_S)
    async def table_size() -> None:
        TABLE_ENTRIES.labels("node-state").set(len(table))

    @app.agent(raw_topic(app, inbox_spec.name), name="koord-node")
    async def aggregate_node(stream):
        async for key, event in inbox_events(stream, topic_ids, dead_letters, STAGE):
            if event.kind in PARTITION_WIDE:
                continue
            if event.kind == "NodeMetric" and event.record is not None and PER_NODE_ENABLED:
                for resource, value in event.record["nodeUsage"].items():
                    NODE_USAGE.labels(key, resource).set(value)
            state, outputs = aggregate.handle(table.get(key) or aggregate.initial_state(), event)
            await send_outputs(topics, STAGE, event, [("NodeResource", o) for o in outputs])
            table[key] = state
