"""Node aggregate agent: one state per node, keyed by node name.

Reads the node inbox, applies the pure core (``streams.noderesource``),
sends NodeResource records, then stores the node's state in the
``node-state`` table (outputs first, as in the scheduling agent).
"""

from __future__ import annotations

import faust

from streams.agents.inbox import inbox_events
from streams.app import raw_topic
from streams.noderesource import aggregate
from streams.schemas import codec
from streams.topology import Topology

STAGE = "node"
PARTITION_WIDE = ("Tick", "ConfigMap")
"""Kinds broadcast to every partition rather than addressed to one node."""


def register(app: faust.App, topology: Topology) -> None:
    inbox_spec = topology.spec("inbox-node")
    node_resources = raw_topic(app, topology.name("noderesources"))
    dead_letters = raw_topic(app, topology.name("deadletters"))
    topic_ids = {name: topic_id for topic_id, name in topology.names().items()}
    table = app.Table("node-state", partitions=inbox_spec.partitions)
    """Values are JSON (Faust's table default): internal state, not a public contract."""

    @app.agent(raw_topic(app, inbox_spec.name), name="koord-node")
    async def aggregate_node(stream):
        async for key, event in inbox_events(stream, topic_ids, dead_letters, STAGE):
            if event.kind in PARTITION_WIDE:
                continue
            state, outputs = aggregate.handle(table.get(key) or aggregate.initial_state(), event)
            pending = [await node_resources.send(key=o["nodeName"].encode(), value=codec.encode("NodeResource", o))
                       for o in outputs]
            for future in pending:
                await future
            table[key] = state
