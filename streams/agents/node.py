"""Node aggregate agent: the node inbox through one ``NodePartition`` per inbox partition.

Reads the node inbox in batches and hands each event to the partition's pure core
(``streams.nodeaggregate.partition``), in the shell every aggregate runs in (``streams.agents.aggregate``):
outputs (NodeResource, Actuation, Eviction, DeadLetter for a rejected config, Acks) delivered, then the
entries the partition changed written to the ``node-state`` table behind the partition's journal. The
SchedulingDecisions the partition ignores as replays are counted in ``koord_decision_replays_total``.

The table keeps its layout (:class:`NodeKeys`): values are ``statecodec.dump_state`` bytes (raw, not
JSON) under the node's name, the config record once per partition (``CONFIG_KEY/<partition>``), and the
journal's parts, raw JSON too, under ``journal/<partition>/<part>``; a node belongs to the partition the
producers put its name in. The cores are configured once, from the environment
(``NodeAggregateSettings``).
"""

from __future__ import annotations

import dataclasses

import faust

from streams.agents.aggregate import Aggregate, Handled, register_aggregate
from streams.agents.journal import PREFIX
from streams.events import InboxEvent
from streams.inbox import handle_guarded
from streams.metrics import DECISION_REPLAYS, NODE_USAGE, PER_NODE_ENABLED
from streams.nodeaggregate.partition import CONFIG_KEY, NodePartition
from streams.nodeaggregate.settings import NodeAggregateSettings
from streams.partitioning import partition_for
from streams.pluginstats import PluginStats
from streams.topology import Topology

STAGE = "node"


@dataclasses.dataclass(frozen=True)
class NodeKeys:
    """Where one node-inbox partition's entries sit in the ``node-state`` table (``streams.agents.journal.Keys``)."""

    partition: int
    partitions: int

    def table_key(self, key: str) -> str:
        return f"{key}/{self.partition}" if key == CONFIG_KEY else key

    def key_of(self, table_key: str) -> str | None:
        if table_key.startswith(CONFIG_KEY):
            return CONFIG_KEY if table_key == self.table_key(CONFIG_KEY) else None
        if table_key.startswith(PREFIX) or partition_for(self.partitions, table_key) != self.partition:
            return None
        return table_key

    def journal_key(self, index: int) -> str:
        return f"{PREFIX}{self.partition}/{index}"


def register(app: faust.App, topology: Topology) -> None:
    settings = NodeAggregateSettings.from_environment()
    settings.validate()
    partitions = topology.spec("inbox-node").partitions

    def restore(partition: int, entries: dict) -> NodePartition:
        return NodePartition(settings, entries, [key for key in entries if key != CONFIG_KEY], PluginStats())

    register_aggregate(app, topology, Aggregate(
        stage=STAGE, agent="koord-node", inbox="inbox-node", table="node-state",
        core_of=lambda key, event: event.causation.inbox_partition,
        partition_of=lambda partition: partition,
        keys=lambda partition: NodeKeys(partition, partitions),
        restore=restore, step=_apply, raw_values=True, stats=lambda core: [core.stats]))


def _apply(core: NodePartition, event: InboxEvent, value: bytes) -> Handled:
    if event.kind == "NodeMetric" and event.record is not None and PER_NODE_ENABLED:
        for resource, used in event.record["nodeUsage"].items():
            NODE_USAGE.labels(event.key, resource).set(used)
    replays = core.replays
    handled = Handled(handle_guarded(STAGE, event, core.apply), event)
    if core.replays != replays:
        DECISION_REPLAYS.labels(STAGE).inc(core.replays - replays)
    return handled
