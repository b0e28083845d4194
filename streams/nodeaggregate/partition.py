"""One node-inbox partition: every node's state and the slo-controller-config in force.

The Faust agent and ``koord replay`` both drive the node aggregate through
this class, so the live stream and its replay apply events the same way:

- a Node, NodeMetric or NodeResourceTopology event goes to the state of the
  node it is keyed by,
  a SchedulingDecision to the state of its ``nodeName`` (its key names the
  pod: the router keeps a source event's key);
- the slo-controller-config ConfigMap (broadcast to every partition) is
  parsed; a bad one is rejected with a DeadLetter naming the reason and the
  previous config stays in force; a good one is stored and every node of the
  partition is recalculated;
- a Tick (broadcast too) lets time pass for the nodes of the partition whose
  outcome time alone can change by now (``aggregate.tick_due_ms``): between
  those moments a recalculation gives the same outcome and publishes nothing,
  so the others are skipped. Which nodes are due is remembered in memory
  only; a node not remembered (after a restart, a replay, a pod change that
  waits for the next calculation) is due.

The config in force carries its parsed node-QoS sections (``sloconfig.configmap``):
an invalid resource-threshold/resource-qos/cpu-burst/system/host-application
config is rejected like any other. Outputs are the aggregate's (schema, record)
pairs: NodeResource, Actuation, Eviction.

States live in ``store`` as ``dump_state`` bytes, the config as its Avro
record under ``CONFIG_KEY``; a state is written back only when its bytes
changed, so ticks that change nothing cost no changelog traffic.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, MutableMapping

from streams.deadletter import dead_letter
from streams.events import InboxEvent
from streams.nodeaggregate import node as aggregate
from streams.schemas import codec
from streams.sloconfig.configmap import DEFAULT_CONFIG, parse_slo_config
from streams.sloconfig.document import CONFIG_NAME, CONFIG_NAMESPACE, ConfigError

CONFIG_KEY = "__slo-controller-config__"
CONFIG_OBJECT_KEY = f"{CONFIG_NAMESPACE}/{CONFIG_NAME}"
STAGE = "node"


class NodePartition:
    def __init__(self, store: MutableMapping[str, bytes], nodes: Iterable[str] = ()) -> None:
        self.store = store
        self.nodes = set(nodes)
        self.due: dict[str, float] = {}
        """Node -> event time of the next Tick that can change its outcome (see ``aggregate.tick_due_ms``)."""
        raw = store.get(CONFIG_KEY)
        self.config = parse_slo_config(codec.decode(raw)[1], DEFAULT_CONFIG) if raw else DEFAULT_CONFIG

    def apply(self, event: InboxEvent) -> list[tuple[str, dict]]:
        """Apply one inbox event; return the (schema, record) outputs it causes."""
        if event.kind == "ConfigMap":
            return self._on_config(event)
        if event.kind == "Tick":
            now = event.timestamp_ms
            return [out for node in sorted(self.nodes) if self.due.get(node, 0) <= now
                    for out in self._on_node(node, lambda state: aggregate.handle(state, event, self.config), now)]
        if event.kind == "SchedulingDecision" and event.record is not None:
            event = dataclasses.replace(event, key=event.record["nodeName"])
        calculated = event.timestamp_ms if event.kind in aggregate.CALCULATING_KINDS else None
        return self._on_node(event.key, lambda state: aggregate.handle(state, event, self.config), calculated)

    def _on_config(self, event: InboxEvent) -> list[tuple[str, dict]]:
        if event.key != CONFIG_OBJECT_KEY:
            return []
        try:
            config = parse_slo_config(event.record, self.config)
        except ConfigError as error:
            cause = event.causation
            return [("DeadLetter", dead_letter(
                STAGE, cause.source_topic, cause.source_partition, cause.source_offset, event.key.encode(),
                None, f"slo-controller-config rejected, the previous one stays in force: {error}",
                event.timestamp_ms))]
        self.config = config
        if event.record is None:
            self.store.pop(CONFIG_KEY, None)
        else:
            self.store[CONFIG_KEY] = codec.encode("ConfigMap", event.record)

        def step(state):
            return aggregate.recalculate(state, config, event.timestamp_ms, event.causation)

        return [out for node in sorted(self.nodes) for out in self._on_node(node, step, event.timestamp_ms)]

    def _on_node(self, node: str, step, calculated_ms: int | None) -> list[tuple[str, dict]]:
        """Run ``step`` on the node's state; ``calculated_ms``: the event time when ``step`` recalculates
        the node (then its next due tick is known), None when it only changed an input (due at once)."""
        before = self.store.get(node)
        state = aggregate.load_state(before) if before is not None else aggregate.initial_state()
        state, outputs = step(state)
        after = aggregate.dump_state(state)
        if after != before:
            self.store[node] = after
            self.nodes.add(node)
        self.due[node] = 0 if calculated_ms is None else aggregate.tick_due_ms(state, self.config, calculated_ms)
        return outputs
