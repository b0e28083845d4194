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
  outcome time alone can change by now (``node.tick_due_ms``): between
  those moments a recalculation gives the same outcome and publishes nothing,
  so the others are skipped. A node is due at once after an event that
  changed its inputs without planning it (a pod change, its Node or
  NodeResourceTopology). The due time is part of the node's state
  (``NodeState.due_ms``), so a worker that restarts from the table skips
  exactly the Ticks that the uninterrupted run and ``koord replay`` skip; an
  event the node had applied already changes neither.
- a SchedulingDecision the node applied already, or older than its last one
  about the pod (``node.is_replay``), changes nothing; ``replays`` counts them.

The config in force carries its parsed node-QoS sections (``sloconfig.configmap``):
an invalid resource-threshold/resource-qos/cpu-burst/system/host-application
config is rejected like any other. Outputs are the aggregate's (schema, record)
pairs: NodeResource, Actuation, Eviction.

Persistence is the shell's, as for ``SchedulingDomain``: the partition reads
its table entries through ``entries`` (node name -> ``statecodec.dump_state``
bytes, ``CONFIG_KEY`` -> the config's Avro record) and never writes them; the
states it changed wait in memory, where it reads them first, until the shell
takes them (``take_changes``) to write them after the outputs are delivered.
They are encoded there, once per node however many of the batch's events
changed it, and an entry is changed only when its bytes changed, so ticks
that change nothing cost no changelog traffic.

Decoding a state costs as much as encoding it (about 90 µs at 10 pods a
node), so the partition keeps the states it decoded or changed, for up to
``DECODED_STATES`` nodes, and decodes the others from their entry on every
event. A binding then costs one encoding, not a decoding and an encoding.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from streams.deadletter import dead_letter_record
from streams.events import InboxEvent
from streams.nodeaggregate import node, statecodec
from streams.nodeaggregate.node import NodeState
from streams.nodeaggregate.settings import NodeAggregateSettings
from streams.pluginstats import PluginStats
from streams.schemas import codec
from streams.sloconfig.configmap import DEFAULT_CONFIG, parse_slo_config
from streams.sloconfig.document import CONFIG_NAME, CONFIG_NAMESPACE, ConfigError

CONFIG_KEY = "__slo-controller-config__"
CONFIG_OBJECT_KEY = f"{CONFIG_NAMESPACE}/{CONFIG_NAME}"
STAGE = "node"
DECODED_STATES = 4096
"""The most node states one partition keeps decoded. A decoded state takes about 17 KB at 10 pods a node and
24 KB at 20 (measured with ``tracemalloc``), so the default 4 node-inbox partitions keep 10,000 nodes decoded
in about 240 MB; nodes beyond it are decoded on every event instead (first come, first kept: round-robin
reports do not thrash it as they would a least-recently-used cache)."""


class NodePartition:
    def __init__(self, settings: NodeAggregateSettings, entries: Mapping[str, bytes] = MappingProxyType({}),
                 nodes: Iterable[str] = (), stats: PluginStats | None = None,
                 decoded_states: int = DECODED_STATES) -> None:
        """``entries``: the partition's table entries as they were last written (read with ``get`` only);
        ``nodes``: the nodes among them; ``stats``: where plugin calls are counted and timed, if anywhere;
        ``decoded_states``: how many node states to keep decoded."""
        self.settings = settings
        self.entries = entries
        self.nodes = set(nodes)
        self.stats = stats
        self.replays = 0
        """SchedulingDecisions ignored as replays (``node.is_replay``) since the partition was built."""
        self.due: dict[str, float] = {}
        """Node -> ``NodeState.due_ms`` as last read or set (a cache of the entries' due times)."""
        self._changes: dict[str, NodeState | bytes | None] = {}
        self._decoded: dict[str, NodeState] = {}
        self._decoded_states = decoded_states
        raw = entries.get(CONFIG_KEY)
        self.config = parse_slo_config(codec.decode(raw)[1], DEFAULT_CONFIG) if raw else DEFAULT_CONFIG

    def take_changes(self) -> dict[str, bytes | None]:
        """Entries changed since the last call, in the order they were first changed (None = removed); a
        node state is encoded here, and left out when its bytes are the entry's."""
        changes, self._changes = self._changes, {}
        taken = {}
        for key, value in changes.items():
            if isinstance(value, NodeState):
                value = statecodec.dump_state(value)
                if value == self.entries.get(key):
                    continue
            taken[key] = value
        return taken

    def _state(self, name: str) -> NodeState:
        """The node's state as it stands: changed and not yet taken, kept decoded, or decoded from its entry."""
        state = self._changes.get(name) or self._decoded.get(name)
        if state is None:
            entry = self.entries.get(name)
            state = statecodec.load_state(entry) if entry is not None else node.initial_state()
            self._keep(name, state)
        return state

    def _keep(self, name: str, state: NodeState) -> None:
        if name in self._decoded or len(self._decoded) < self._decoded_states:
            self._decoded[name] = state

    def apply(self, event: InboxEvent) -> list[tuple[str, dict]]:
        """Apply one inbox event; return the (schema, record) outputs it causes."""
        settings, stats = self.settings, self.stats
        if event.kind == "ConfigMap":
            return self._on_config(event)
        if event.kind == "Tick":
            now = event.timestamp_ms
            return [out for name in sorted(self.nodes) if self._due(name) <= now
                    for out in self._on_node(name, lambda state: node.handle(state, event, self.config, settings,
                                                                            stats), now, tick=True)]
        if event.kind == "SchedulingDecision" and event.record is not None:
            event = dataclasses.replace(event, key=event.record["nodeName"])

        def step(state: NodeState) -> tuple[NodeState, list[tuple[str, dict]]]:
            if event.kind == "SchedulingDecision" and node.is_replay(state, event):
                self.replays += 1
                return state, []
            return node.handle(state, event, self.config, settings, stats)

        planned = event.timestamp_ms if event.kind in node.PLANNING_KINDS else None
        return self._on_node(event.key, step, planned)

    def _on_config(self, event: InboxEvent) -> list[tuple[str, dict]]:
        if event.key != CONFIG_OBJECT_KEY:
            return []
        try:
            config = parse_slo_config(event.record, self.config)
        except ConfigError as error:
            cause = event.causation
            return [("DeadLetter", dead_letter_record(
                STAGE, cause.source_topic, cause.source_partition, cause.source_offset, event.key.encode(),
                None, f"slo-controller-config rejected, the previous one stays in force: {error}",
                event.timestamp_ms))]
        self.config = config
        self._changes[CONFIG_KEY] = None if event.record is None else codec.encode("ConfigMap", event.record)

        def step(state):
            return node.recalculate(state, config, event.timestamp_ms, event.causation, self.settings, self.stats)

        return [out for name in sorted(self.nodes) for out in self._on_node(name, step, event.timestamp_ms)]

    def _due(self, name: str) -> float:
        due = self.due.get(name)
        if due is None:
            entry = self.entries.get(name)
            due = self.due[name] = statecodec.due_ms(entry) if entry is not None else 0
        return due

    def _on_node(self, name: str, step, planned_ms: int | None, tick: bool = False) -> list[tuple[str, dict]]:
        """Run ``step`` on the node's state; ``planned_ms``: the event time when ``step`` recalculates and
        plans the node (then its next due tick is known), None when it does not (due at once when it changed an
        input, ``node.inputs_changed``; a decision that only moved its pod's mark leaves the due time).
        An event other than a Tick that left the state as it was (it was seen already) leaves its due time
        too; a Tick is not recorded among the sources, and one that changed nothing still moves it on."""
        state = self._state(name)
        applied, outputs = step(state)
        if applied is state and not tick:
            return outputs
        if planned_ms is not None:
            due = node.tick_due_ms(applied, self.config, planned_ms, self.settings)
        else:
            due = 0 if node.inputs_changed(state, applied) else state.due_ms
        if applied is not state or due != state.due_ms:
            applied = dataclasses.replace(applied, due_ms=due)
            self._changes[name] = applied
            self._keep(name, applied)
            self.nodes.add(name)
        self.due[name] = due
        return outputs
