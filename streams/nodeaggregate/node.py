"""The node aggregate: one state per node, fed by the node inbox; pure and deterministic.

Events (``event.kind``; records as the Avro schemas decode them):

- ``Node`` — the node's capacity, allocatable, labels and annotations; a
  deletion forgets the node (nothing is published). **Every Node event
  publishes one NodeResource**, whatever Koordinator's sync rules say: the
  read model and ``koord apply --wait`` wait for a NodeResource caused by
  each Node event. Koordinator would skip an unchanged node until
  ``updateTimeThresholdSeconds``; this is a deliberate deviation.
- ``NodeMetric`` — trains the node profile (``prediction.profile``) and
  recalculates; publishes only when Koordinator would update the node
  (first calculation, a batch/mid value moving by more than
  ``resourceDiffThreshold``, ``updateTimeThresholdSeconds`` elapsed, or a new
  CPU normalization ratio). A deleted NodeMetric degrades the node and
  forgets when it was last published (Koordinator cleans its sync context).
  Then the node's QoS is planned (``streams.nodeqos.planner``): Actuation
  records for the targets whose values changed, Eviction decisions.
- ``NodeResourceTopology`` — the node's NUMA zones (their cpu and memory
  allocatable; none unless a zone lists cpu or memory); recalculates with the
  NodeMetric rules, as Koordinator's NRT event handler enqueues the node. The
  published zone resources of zones no longer listed are dropped (koordlet's
  NRT merge) and a deletion forgets them with their sync time (Koordinator
  cleans its NRT sync context); when that changes the published zones, a
  NodeResource is published so readers drop them too (in Koordinator they
  live in the NRT object, which the update or deletion already changed).
- ``SchedulingDecision`` — ``Scheduled``/``Bound`` to this node adds or
  updates the pod (requests, priority class and QoS with default, NUMA nodes
  of its ``scheduling.koordinator.sh/resource-status`` annotation);
  ``Released``/``Preempted`` removes it. No publication: Koordinator does not
  recalculate on pod changes, the next NodeMetric or tick does.
- ``Tick`` — lets time pass: recalculates, so a NodeMetric older than
  ``degradeTimeMinutes`` resets batch and mid, and an unchanged node is
  re-published after ``updateTimeThresholdSeconds``.
- other kinds (a ConfigMap included: the shell calls ``recalculate`` for it)
  are ignored and not recorded as applied.

``recalculate`` runs the calculation after a config change (same sync rules)
and plans the node's QoS again. Outputs are (schema, record) pairs:
``NodeResource``, then ``Actuation`` and ``Eviction``.
Idempotence: the last source offset per source partition is remembered and
an event at or below it is ignored. Time is ``event.timestamp_ms`` only.

When a NodeMetric carries no ``prodReclaimableMetric``, ProdReclaimable is
predicted from the node profile (``MidResourceArgs.predict_unreported_reclaimable``);
koordlet would have reported it, and Koordinator's slo-controller would
count a missing one as 0.

``dump_state``/``load_state`` give a compact, exact binary form: node, pod
table and NUMA zones as zlib-compressed JSON (encoded again only when they change), the
NodeMetric and the profile's histograms as packed integers and numpy arrays,
then the QoS memory (``planner.QoSMemory``) and the host-application names
and classes of the NodeMetric as one zlib-compressed JSON tail, pod UIDs
written as their position among the pod table's UIDs (absent in states
written before node QoS: they load with an empty memory). States written
before NUMA zones load without zones.
"""

from __future__ import annotations

import dataclasses
import json
import math
import struct
import zlib
from collections.abc import Mapping
from types import MappingProxyType

from streams.events import Causation, InboxEvent, decision_id
from streams.koordinator.classes import (
    KNOWN_PRIORITY_CLASSES, PRIORITY_CODES, QOS_BY_CODE, QOS_CODES, decision_priority_class, qos_class_by_name,
)
from streams.koordinator.resources import BATCH_CPU, BATCH_MEMORY, EXTENDED_RESOURCES
from streams.nodeqos import planner
from streams.nodeqos import registry as qos_registry
from streams.nodeqos.planner import QoSMemory
from streams.nodeqos.podmeta import ANNOTATIONS, LABELS, selected
from streams.noderesource import registry
from streams.noderesource.plugins import midresource
from streams.noderesource.prediction.profile import (
    NodeProfile, PredictionArgs, forget_pod, next_prediction_change_ms, predict, profile_from_bytes, profile_to_bytes,
    train,
)
from streams.noderesource.reconcile import Observer, Published, published_after, reconcile, strategies
from streams.noderesource.views import (
    HostAppMetric, MetricView, NodeView, PodTable, PodView, Zone, build_node_view, metric_view, node_view,
    numa_nodes_of, zones_of,
)
from streams.sloconfig.configmap import SloConfig

PLUGINS = registry.build()
QOS_STRATEGIES = qos_registry.build()
"""The node-QoS strategies in ``qos_registry.ORDER`` (a shell may replace them, e.g. to turn eviction on)."""
PREDICTION_ARGS = PredictionArgs()
"""koordlet's prediction settings the node profile follows (a shell may replace them at start-up)."""
OBSERVER: Observer | None = None
"""Set by the shell to count and time plugin calls (``reconcile.Observer``); None: not observed."""
RUNNING_RESULTS = ("Scheduled", "Bound")
ENDED_RESULTS = ("Released", "Preempted")
FORMAT = b"KNR1"


@dataclasses.dataclass(frozen=True)
class NodeState:
    sources: Mapping[str, int] = dataclasses.field(default_factory=dict)
    """``topic/partition`` of a source -> the last source offset applied."""
    node: NodeView | None = None
    zones: tuple[Zone, ...] = ()
    """The NUMA zones of the node's NodeResourceTopology (empty: none, or none listing cpu or memory)."""
    pods: Mapping[str, PodView] = dataclasses.field(default_factory=lambda: PodTable())
    """Pods bound to the node, by ``namespace/name``."""
    metric: MetricView | None = None
    """The last NodeMetric, as reported."""
    profile: NodeProfile = NodeProfile()
    published: Published = Published()
    qos: QoSMemory = QoSMemory()
    """What the node-QoS plan emitted last, the actuation sequence and eviction bookkeeping."""
    encoded: list = dataclasses.field(default_factory=list, compare=False, repr=False)
    """Memo of the encoded node, pod table and zones; not part of the state."""


def initial_state() -> NodeState:
    return NodeState()


def _replace(state: NodeState, sources: Mapping[str, int] | None = None, node: object = ..., pods=None,
             metric: object = ..., profile: NodeProfile | None = None, published: Published | None = None,
             qos: QoSMemory | None = None, zones: tuple[Zone, ...] | None = None) -> NodeState:
    """``state`` with the given fields replaced (faster than ``dataclasses.replace`` on the hot path)."""
    keep_encoded = node is ... and pods is None and zones is None
    return NodeState(state.sources if sources is None else sources,
                     state.node if node is ... else node,
                     state.zones if zones is None else zones,
                     state.pods if pods is None else pods,
                     state.metric if metric is ... else metric,
                     state.profile if profile is None else profile,
                     state.published if published is None else published,
                     state.qos if qos is None else qos,
                     state.encoded if keep_encoded else [])


def _seen(state: NodeState, cause: Causation) -> dict[str, int] | None:
    """The sources after applying ``cause``; None when it was applied already."""
    source = f"{cause.source_topic}/{cause.source_partition}"
    if state.sources.get(source, -1) >= cause.source_offset:
        return None
    return {**state.sources, source: cause.source_offset}


def handle(state: NodeState, event: InboxEvent, config: SloConfig) -> tuple[NodeState, list[tuple[str, dict]]]:
    """Apply one inbox event; return the new state and the (schema, record) outputs to publish."""
    sources = _seen(state, event.causation)
    if sources is None:
        return state, []
    kind, now = event.kind, event.timestamp_ms
    if kind == "NodeMetric":
        if event.deleted:
            state = _replace(state, sources=sources, metric=None,
                             published=dataclasses.replace(state.published, synced_ms=None))
        else:
            metric = metric_view(event.record)
            profile = train(state.profile, metric, state.pods, now, PREDICTION_ARGS)
            state = _replace(state, sources=sources, metric=metric, profile=profile)
        state, outputs = _calculate(state, config, now, event.causation, force=False)
        return _plan_qos(state, config, now, event.causation, outputs)
    if kind == "Node":
        if event.deleted:
            return _replace(state, sources=sources, node=None, published=Published()), []
        return _calculate(_replace(state, sources=sources, node=node_view(event.record)), config, now,
                          event.causation, force=True)
    if kind == "Tick":
        return _calculate(state, config, now, event.causation, force=False)
    if kind == "NodeResourceTopology":
        return _on_topology(_replace(state, sources=sources), event, config)
    if kind == "SchedulingDecision":
        if event.deleted:
            return state, []
        return _on_decision(_replace(state, sources=sources), event), []
    return state, []


CALCULATING_KINDS = frozenset({"NodeMetric", "Node", "Tick", "NodeResourceTopology"})
"""Event kinds after which the node's calculation is up to date (a SchedulingDecision only changes an input)."""


def tick_due_ms(state: NodeState, config: SloConfig, calculated_ms: int) -> float:
    """The earliest event time after ``calculated_ms`` (when the node was last calculated) at which a Tick
    can change the node's outcome: its NodeResource expiring (``updateTimeThresholdSeconds``), its
    NodeMetric going stale (``degradeTimeMinutes``), or, when ProdReclaimable is predicted, a prediction
    input crossing its cold start or expiry. The outcome is a step function of time with steps only there,
    so a Tick before it recalculates to what was already decided (``math.inf``: no Tick ever will)."""
    node, published = state.node, state.published
    if node is None:
        return math.inf
    if published.synced_ms is None:
        return calculated_ms
    strategy, _ = strategies(config, node)
    times = [published.synced_ms + strategy.update_time_threshold_seconds * 1000 + 1]
    if state.zones and published.zones_synced_ms is not None:
        times.append(published.zones_synced_ms + strategy.update_time_threshold_seconds * 1000 + 1)
    metric = state.metric
    if metric is not None and metric.update_time_ms is not None:
        times.append(metric.update_time_ms + strategy.degrade_time_minutes * 60_000 + 1)
    if (metric is not None and metric.prod_reclaimable is None
            and PLUGINS[midresource.NAME].args.predict_unreported_reclaimable):
        times.append(next_prediction_change_ms(state.profile, state.pods, metric, calculated_ms, PREDICTION_ARGS))
    return min((t for t in times if t > calculated_ms), default=math.inf)


def recalculate(state: NodeState, config: SloConfig, now_ms: int,
                causation: Causation) -> tuple[NodeState, list[tuple[str, dict]]]:
    """Recalculate after a config change (publishes when Koordinator would update the node) and re-plan QoS."""
    sources = _seen(state, causation)
    if sources is None:
        return state, []
    state, outputs = _calculate(_replace(state, sources=sources), config, now_ms, causation, force=False)
    return _plan_qos(state, config, now_ms, causation, outputs)


def _plan_qos(state: NodeState, config: SloConfig, now_ms: int, cause: Causation,
              outputs: list[tuple[str, dict]]) -> tuple[NodeState, list[tuple[str, dict]]]:
    """Plan the node's QoS after the NodeResource outputs; nothing before the Node is known."""
    node = state.node
    if node is None:
        return state, outputs
    strategy = config.qos.for_node(node.labels)
    memory, planned = planner.plan_node(QOS_STRATEGIES, node, state.pods, state.metric, strategy, now_ms,
                                        state.qos, cause)
    if memory is not state.qos:
        state = _replace(state, qos=memory)
    return state, outputs + planned


def _on_topology(state: NodeState, event: InboxEvent, config: SloConfig) -> tuple[NodeState, list[tuple[str, dict]]]:
    """A NodeResourceTopology event: new zones, published zone resources trimmed to them, recalculation."""
    published = state.published
    zones = () if event.deleted else zones_of(event.record)
    names = {zone.name for zone in zones}
    kept = {name: values for name, values in published.zones.items() if name in names}
    synced = None if event.deleted else published.zones_synced_ms
    dropped = len(kept) != len(published.zones)
    if dropped or synced != published.zones_synced_ms:
        published = dataclasses.replace(published, zones=MappingProxyType(kept), zones_synced_ms=synced)
    state = _replace(state, zones=zones, published=published)
    return _calculate(state, config, event.timestamp_ms, event.causation, force=dropped)



def _on_decision(state: NodeState, event: InboxEvent) -> NodeState:
    record = event.record
    pod = record["pod"]
    key = f"{pod['namespace']}/{pod['name']}"
    result = record["result"]
    if result in ENDED_RESULTS:
        if key not in state.pods:
            return state
        pods = PodTable((k, v) for k, v in state.pods.items() if k != key)
        return _replace(state, pods=pods, profile=forget_pod(state.profile, key), qos=state.qos.forget_pod(key))
    if result not in RUNNING_RESULTS or record.get("nodeName") != event.key:
        return state
    requests = record.get("requests") or {}
    limits = record.get("limits") or {}
    qos = qos_class_by_name(record.get("qosClass"))
    known = state.pods.get(key)
    view = PodView(
        request_cpu=requests.get("cpu", 0), request_memory=requests.get("memory", 0),
        priority_class=decision_priority_class(record.get("priorityClass"), record.get("priority"), qos),
        qos=qos, since_ms=known.since_ms if known is not None else event.timestamp_ms,
        numa_nodes=numa_nodes_of(record.get("annotations")),
        uid=pod.get("uid"), limit_cpu=limits.get("cpu", 0), request_batch_cpu=requests.get(BATCH_CPU, 0),
        priority=record.get("priority"),
        labels=tuple(sorted(selected(record.get("labels"), LABELS).items())),
        annotations=tuple(sorted(selected(record.get("annotations"), ANNOTATIONS).items())))
    if view == known:
        return state
    pods = PodTable(state.pods)
    pods[key] = view
    return _replace(state, pods=pods)


def _calculate(state: NodeState, config: SloConfig, now_ms: int, cause: Causation,
               force: bool) -> tuple[NodeState, list[tuple[str, dict]]]:
    node = state.node
    if node is None:
        return state, []
    metric = state.metric
    if (metric is not None and metric.prod_reclaimable is None
            and PLUGINS[midresource.NAME].args.predict_unreported_reclaimable):
        reclaimable, _ = predict(state.profile, node, state.pods, metric, now_ms, PREDICTION_ARGS)
        if reclaimable is not None:
            metric = MetricView(metric.update_time_ms, metric.node_usage, metric.system_usage, metric.host_apps,
                                reclaimable, metric.pods)
    outcome = reconcile(PLUGINS, config, node, state.pods, metric, now_ms, state.published, OBSERVER, state.zones)
    if not (force or outcome.status_sync[0] or outcome.meta_sync[0] or outcome.zone_sync[0]):
        return state, []
    status = outcome.status
    published = published_after(outcome, now_ms, state.published)
    record = {
        "decisionId": decision_id(cause, 0, node.name),
        "nodeName": node.name,
        "capacity": status.capacity,
        "allocatable": status.allocatable,
        "message": outcome.message(),
        "causation": cause.to_record(),
        "timestamp": now_ms,
        "annotations": status.annotations,
        "zones": [{"name": zone.name, "resources": dict(published.zones[zone.name])} for zone in state.zones
                  if zone.name in published.zones],
    }
    return _replace(state, published=published), [("NodeResource", record)]


# --- persistence -------------------------------------------------------------------------------------

ZONE_RESOURCES = (BATCH_CPU, BATCH_MEMORY)
"""The resources of a published zone, in the order the state stores them."""
_NO_PRIORITY = 255
"""Code of a pod or host-application metric without priority class (or with a name Koordinator does not know,
which every calculation treats alike)."""


def _static_section(state: NodeState) -> tuple[bytes, list[str]]:
    """The compressed node and pod table, and the sorted pod keys the other sections index into."""
    if state.encoded:
        return state.encoded[0], state.encoded[1]
    keys = sorted(state.pods)
    node = state.node
    node_json = None if node is None else [node.name, node.capacity, node.allocatable, node.labels, node.annotations]
    pods_json = [[key, p.request_cpu, p.request_memory, PRIORITY_CODES[p.priority_class], QOS_CODES[p.qos],
                  p.since_ms, list(p.numa_nodes), p.uid, p.limit_cpu, p.request_batch_cpu, p.priority,
                  dict(p.labels), dict(p.annotations)] for key in keys for p in (state.pods[key],)]
    static = [node_json, pods_json]
    if state.zones:
        static.append([[zone.name, zone.cpu, zone.memory] for zone in state.zones])
    data = zlib.compress(json.dumps(static, separators=(",", ":")).encode(), 6)
    state.encoded[:] = [data, keys]
    return data, keys


_METRIC_HEADER = "<Bq6qHH"
_POD_METRIC = "<HiqB"
"""Pod index, cpu milli-cores (int32: up to 2 million cores), memory bytes, priority code."""
_POD_METRIC_SIZE = struct.calcsize(_POD_METRIC)


def _priority_code(name: str | None) -> int:
    return _NO_PRIORITY if name is None else PRIORITY_CODES.get(name, _NO_PRIORITY)


def _metric_section(metric: MetricView | None, index: Mapping[str, int]) -> tuple[bytes, list[str]]:
    """The NodeMetric packed; pods named by their index in the pod table, others listed by key."""
    if metric is None:
        return b"\x00", []
    flags = 1 | (2 if metric.node_usage is not None else 0) | (4 if metric.prod_reclaimable is not None else 0)
    node_usage = metric.node_usage or (0, 0)
    reclaimable = metric.prod_reclaimable or (0, 0)
    parts = [struct.pack(_METRIC_HEADER, flags, -1 if metric.update_time_ms is None else metric.update_time_ms,
                         *node_usage, *metric.system_usage, *reclaimable, len(metric.host_apps), len(metric.pods))]
    parts.extend(struct.pack("<Bqq", _priority_code(app.priority), app.cpu, app.memory) for app in metric.host_apps)
    others = []
    for key, (cpu, memory, priority) in metric.pods.items():
        position = index.get(key)
        if position is None:
            position = 0x8000 | len(others)
            others.append(key)
        parts.append(struct.pack(_POD_METRIC, position, cpu, memory, _priority_code(priority)))
    return b"".join(parts), others


def dump_state(state: NodeState) -> bytes:
    """Compact bytes of the state; ``load_state`` gives it back exactly."""
    static, keys = _static_section(state)
    index = {key: position for position, key in enumerate(keys)}
    metric, other_keys = _metric_section(state.metric, index)
    published = state.published
    extended = [published.extended.get(name) for name in EXTENDED_RESOURCES]
    dynamic_json = [state.sources, published.synced_ms, extended, dict(published.annotations), other_keys]
    if published.zones or published.zones_synced_ms is not None:
        zones = {zone: [values.get(name) for name in ZONE_RESOURCES] for zone, values in published.zones.items()}
        dynamic_json += [zones, published.zones_synced_ms]
    dynamic = json.dumps(dynamic_json, separators=(",", ":")).encode()
    profile = profile_to_bytes(state.profile, index)
    apps = [[app.name, app.qos] for app in state.metric.host_apps] if state.metric is not None else []
    tail = b""
    if state.qos != QoSMemory() or any(name or qos for name, qos in apps):
        uids = _uids(state.pods)
        memory = state.qos.to_json({uid: position for position, uid in enumerate(uids)})
        tail = zlib.compress(json.dumps([memory, apps], separators=(",", ":")).encode(), 9)
    return b"".join((FORMAT, struct.pack("<III", len(static), len(dynamic), len(metric)),
                     static, dynamic, metric, profile, tail))


def _load_metric(data: bytes, offset: int, keys: list[str], other_keys: list[str]) -> MetricView | None:
    if data[offset] == 0:
        return None
    flags, update, usage_cpu, usage_memory, system_cpu, system_memory, reclaim_cpu, reclaim_memory, apps, pods = \
        struct.unpack_from(_METRIC_HEADER, data, offset)
    offset += struct.calcsize(_METRIC_HEADER)
    names = {code: name for name, code in PRIORITY_CODES.items()}
    host_apps = []
    for _ in range(apps):
        code, cpu, memory = struct.unpack_from("<Bqq", data, offset)
        offset += 17
        host_apps.append(HostAppMetric(names.get(code), cpu, memory))
    pod_metrics = {}
    for _ in range(pods):
        position, cpu, memory, code = struct.unpack_from(_POD_METRIC, data, offset)
        offset += _POD_METRIC_SIZE
        key = other_keys[position & 0x7FFF] if position & 0x8000 else keys[position]
        pod_metrics[key] = (cpu, memory, names.get(code))
    return MetricView(
        update_time_ms=None if update < 0 else update,
        node_usage=(usage_cpu, usage_memory) if flags & 2 else None,
        system_usage=(system_cpu, system_memory),
        host_apps=tuple(host_apps),
        prod_reclaimable=(reclaim_cpu, reclaim_memory) if flags & 4 else None,
        pods=pod_metrics,
    )


def _uids(pods: Mapping[str, PodView]) -> list[str]:
    """The pods' UIDs, sorted: the QoS memory names pod targets by position in this list (the pod table
    already holds the UIDs)."""
    return sorted({pod.uid for pod in pods.values() if pod.uid})


def _pod_view(entry: list) -> PodView:
    """A pod-table entry; entries written before node QoS have only the first seven fields."""
    _, cpu, memory, priority, qos, since, numa, *more = entry
    uid, limit_cpu, batch_cpu, spec_priority, labels, annotations = more or (None, 0, 0, None, {}, {})
    return PodView(cpu, memory, KNOWN_PRIORITY_CLASSES[priority], QOS_BY_CODE[qos], since, tuple(numa), uid, limit_cpu,
                   batch_cpu, spec_priority, tuple(sorted(labels.items())), tuple(sorted(annotations.items())))


def load_state(data: bytes) -> NodeState:
    if data[:4] != FORMAT:
        raise ValueError("not a node-aggregate state (bad format marker)")
    static_length, dynamic_length, metric_length = struct.unpack_from("<III", data, 4)
    offset = 16
    node_json, pods_json, *zones_json = json.loads(zlib.decompress(data[offset:offset + static_length]))
    offset += static_length
    sources, synced, extended, annotations, other_keys, *zones_published = \
        json.loads(data[offset:offset + dynamic_length])
    offset += dynamic_length
    keys = [entry[0] for entry in pods_json]
    metric = _load_metric(data, offset, keys, other_keys)
    offset += metric_length
    profile, offset = profile_from_bytes(data, offset, keys)
    pods = PodTable((entry[0], _pod_view(entry)) for entry in pods_json)
    qos_memory = QoSMemory()
    if offset < len(data):
        memory_json, apps = json.loads(zlib.decompress(data[offset:]))
        qos_memory = QoSMemory.from_json(memory_json, _uids(pods))
        if metric is not None:
            metric = dataclasses.replace(metric, host_apps=tuple(
                dataclasses.replace(app, name=name, qos=qos) for app, (name, qos) in zip(metric.host_apps, apps)))
    node = None if node_json is None else build_node_view(*node_json)
    zones = tuple(Zone(*entry) for entry in zones_json[0]) if zones_json else ()
    published_zones, zones_synced = zones_published or ({}, None)
    published = Published(synced, MappingProxyType({name: value for name, value in zip(EXTENDED_RESOURCES, extended)
                                                    if value is not None}), MappingProxyType(annotations),
                          MappingProxyType({zone: {name: value for name, value in zip(ZONE_RESOURCES, values)
                                                   if value is not None}
                                            for zone, values in published_zones.items()}), zones_synced)
    state = NodeState(sources, node, zones, pods, metric, profile, published, qos_memory)
    state.encoded[:] = [data[16:16 + static_length], keys]
    return state
