"""One node's state and its transition: calculate (``streams.noderesource``), then plan (``streams.nodeqos``).

Pure and deterministic: the configuration comes in as ``NodeAggregateSettings``
(``settings``), the slo-controller-config as the parsed ``SloConfig`` in force;
``stats``, when given, counts and times the plugin calls.

Events (``event.kind``; records as the Avro schemas decode them):

- ``Node`` — the node's capacity, allocatable, labels and annotations; a
  deletion forgets the node (nothing is published). **Every Node event
  publishes one NodeResource**, whatever Koordinator's sync rules say: the
  read model and ``koord apply --wait`` wait for a NodeResource caused by
  each Node event. Koordinator would skip an unchanged node until
  ``updateTimeThresholdSeconds``; this is a deliberate deviation.
- ``NodeMetric`` — first sends the scheduling domains its ``NodeUsage`` when one is due (``usage``: what
  load-aware scheduling and the descheduler read of it, when it moved or aged enough); then trains the
  node profile (``prediction.profile``) and recalculates; publishes only when Koordinator would update
  the node (first calculation, a batch/mid value moving by more than ``resourceDiffThreshold``,
  ``updateTimeThresholdSeconds`` elapsed, or a new CPU normalization ratio). A deleted NodeMetric degrades
  the node and forgets when it was last published (Koordinator cleans its sync context).
  Then the node's QoS is planned (``streams.nodeqos.planner``): Actuation
  records for the targets whose values changed, signed with
  ``settings.signing_key``, and Eviction decisions.
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
  and pinned cpuset of its ``scheduling.koordinator.sh/resource-status`` annotation);
  ``Released``/``Preempted`` removes it. No publication: Koordinator does not
  recalculate on pod changes, the next NodeMetric or tick does. A replay of a
  decision already applied, or older than the pod's last one, changes nothing
  (``replays``: the state keeps a mark per pod and bounded tombstones of the
  pods that left).
- ``Device`` — the node's devices (``views.DeviceView``): a changed one (a deletion forgets it) recalculates
  and publishes, so the GPU and RDMA resources the device plugins derive from it (``GPUDeviceResource``,
  ``RDMADeviceResource``) reach the node, as koord-manager's Device event handler enqueues the node.
- ``YarnNode`` — the NodeManager on the node, as the YARN bridge read it (``noderesource.yarnshare``):
  YARN's allocations become the node's ``hadoop-yarn`` koord-batch third-party allocation; a changed one
  (a deletion gives the share back) recalculates and publishes. While the node has a share, every
  NodeResource carries the allocation and the NodeManager total, and a calculation that moves that total
  (a BE pod bound or released, at the next Tick or NodeMetric) publishes.
- ``Tick`` — lets time pass: recalculates, so a NodeMetric older than
  ``degradeTimeMinutes`` resets batch and mid, and an unchanged node is
  re-published after ``updateTimeThresholdSeconds``; then re-plans the node's
  QoS at the tick's time (pods bound since the last plan, eviction cool-downs
  that ended), emitting only settings that changed. Per-report samples of the
  NodeMetric (throttled ratios) are not acted on again.
- other kinds (a ConfigMap included: ``partition`` calls ``recalculate`` for
  it) are ignored and not recorded as applied.

``recalculate`` runs the calculation after a config change (same sync rules)
and plans the node's QoS again. Outputs are (schema, record) pairs:
``NodeUsage``, ``NodeResource``, then ``Actuation`` and ``Eviction``.
Idempotence: the last source offset per source partition is remembered and
an event at or below it is ignored; a SchedulingDecision sent again (a new
source offset) is ignored by its pod's mark (``replays``). Time is
``event.timestamp_ms`` only.

When a NodeMetric carries no ``prodReclaimableMetric``, ProdReclaimable is
predicted from the node profile (``MidResourceArgs.predict_unreported_reclaimable``);
koordlet would have reported it, and Koordinator's slo-controller would
count a missing one as 0.

The state's binary form is ``statecodec``'s.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from types import MappingProxyType

from streams.events import Causation, InboxEvent, decision_id
from streams.koordinator.annotations import ANNOTATION_ORIGIN_EXTENDED_ALLOCATABLE, ANNOTATION_THIRD_PARTY_ALLOCATIONS
from streams.koordinator.classes import decision_priority_class, qos_class_by_name
from streams.koordinator.resources import BATCH_CPU, BATCH_MEMORY
from streams.nodeaggregate import replays, usage
from streams.nodeaggregate.replays import Mark
from streams.nodeaggregate.settings import NodeAggregateSettings
from streams.nodeaggregate.usage import Sent
from streams.nodeqos import planner
from streams.nodeqos.planner import QoSMemory
from streams.decisions import ANNOTATIONS, LABELS, selected
from streams.noderesource.prediction.profile import (
    NodeProfile, forget_pod, next_prediction_change_ms, predict, train,
)
from streams.noderesource.reconcile import Published, published_after, reconcile, strategies
from streams.noderesource.views import (
    DeviceView, MetricView, NodeView, PodTable, PodView, Zone, cpuset_of, device_view, metric_view, node_view,
    numa_nodes_of, zones_of,
)
from streams.noderesource.yarnshare import (
    ANNOTATION_YARN_NODE_RESOURCE, YarnShare, allocation_annotation, be_requests, node_resource_annotation,
    share_of, third_party_batch, yarn_total)
from streams.objects.quantity import to_canonical
from streams.pluginstats import PluginStats
from streams.sloconfig.configmap import SloConfig

RUNNING_RESULTS = ("Scheduled", "Bound")
ENDED_RESULTS = ("Released", "Preempted")


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
    due_ms: float = 0
    """Event time of the next Tick that can change the node's outcome (``tick_due_ms``; 0: the next one).
    ``partition`` sets it; it is kept with the state so that a restarted worker skips the Ticks its replay
    skips."""
    usage_sent: Sent | None = None
    """What the last NodeUsage sent to the scheduling domains said (``usage.check``); None: none since the
    NodeMetric was last deleted."""
    decided: Mapping[str, Mark] = dataclasses.field(default_factory=dict)
    """Pod key -> the last SchedulingDecision applied about it (``replays``): of the pods bound to the node, and
    tombstones of at most ``replays.MAX_TOMBSTONES`` that left it."""
    yarn: YarnShare | None = None
    """The NodeManager on the node, as its last YarnNode said (``yarnshare``); None: none."""
    device: DeviceView | None = None
    """The node's Device, as last applied; None: none."""
    encoded: list = dataclasses.field(default_factory=list, compare=False, repr=False)
    """Memo of the encoded node, pod table and zones; not part of the state."""


def initial_state() -> NodeState:
    return NodeState()


def _replace(state: NodeState, sources: Mapping[str, int] | None = None, node: object = ..., pods=None,
             metric: object = ..., profile: NodeProfile | None = None, published: Published | None = None,
             qos: QoSMemory | None = None, zones: tuple[Zone, ...] | None = None,
             usage_sent: object = ..., decided: Mapping[str, Mark] | None = None, yarn: object = ...,
             device: object = ...) -> NodeState:
    """``state`` with the given fields replaced (faster than ``dataclasses.replace`` on the hot path)."""
    keep_encoded = (node is ... and pods is None and zones is None and decided is None and yarn is ...
                    and device is ...)
    return NodeState(state.sources if sources is None else sources,
                     state.node if node is ... else node,
                     state.zones if zones is None else zones,
                     state.pods if pods is None else pods,
                     state.metric if metric is ... else metric,
                     state.profile if profile is None else profile,
                     state.published if published is None else published,
                     state.qos if qos is None else qos,
                     state.due_ms,
                     state.usage_sent if usage_sent is ... else usage_sent,
                     state.decided if decided is None else decided,
                     state.yarn if yarn is ... else yarn,
                     state.device if device is ... else device,
                     state.encoded if keep_encoded else [])


def _seen(state: NodeState, cause: Causation) -> dict[str, int] | None:
    """The sources after applying ``cause``; None when it was applied already (``Causation.seen_key``: per
    source partition, and per writer for an aggregate's own copies)."""
    source = cause.seen_key
    if state.sources.get(source, -1) >= cause.source_offset:
        return None
    return {**state.sources, source: cause.source_offset}


def handle(state: NodeState, event: InboxEvent, config: SloConfig, settings: NodeAggregateSettings,
           stats: PluginStats | None = None) -> tuple[NodeState, list[tuple[str, dict]]]:
    """Apply one inbox event; return the new state and the (schema, record) outputs to publish."""
    sources = _seen(state, event.causation)
    if sources is None:
        return state, []
    kind, now = event.kind, event.timestamp_ms
    if kind == "NodeMetric":
        state, outputs = _usage(state, event)
        if event.deleted:
            state = _replace(state, sources=sources, metric=None,
                             published=dataclasses.replace(state.published, synced_ms=None))
        else:
            metric = metric_view(event.record)
            profile = train(state.profile, metric, state.pods, now, settings.prediction)
            state = _replace(state, sources=sources, metric=metric, profile=profile)
        state, calculated = _calculate(state, config, now, event.causation, settings, stats, force=False)
        outputs += calculated
        return _plan_qos(state, config, now, event.causation, outputs, settings, stats, metric_is_new=not event.deleted)
    if kind == "Node":
        if event.deleted:
            return _replace(state, sources=sources, node=None, published=Published()), []
        return _calculate(_replace(state, sources=sources, node=node_view(event.record)), config, now,
                          event.causation, settings, stats, force=True)
    if kind == "Tick":
        state, outputs = _calculate(state, config, now, event.causation, settings, stats, force=False)
        return _plan_qos(state, config, now, event.causation, outputs, settings, stats)
    if kind == "YarnNode":
        share = None if event.deleted else share_of(event.record)
        if share is not None and state.yarn is not None:
            share = dataclasses.replace(share, total=state.yarn.total)
        if share == state.yarn:
            return _replace(state, sources=sources), []
        return _calculate(_replace(state, sources=sources, yarn=share), config, now, event.causation, settings, stats,
                          force=True)
    if kind == "Device":
        device = None if event.deleted else device_view(event.record)
        if device == state.device:
            return _replace(state, sources=sources), []
        return _calculate(_replace(state, sources=sources, device=device), config, now, event.causation, settings,
                          stats, force=True)
    if kind == "NodeResourceTopology":
        return _on_topology(_replace(state, sources=sources), event, config, settings, stats)
    if kind == "SchedulingDecision":
        if event.deleted or is_replay(state, event):
            return state, []
        return _on_decision(_replace(state, sources=sources), event), []
    return state, []


PLANNING_KINDS = frozenset({"NodeMetric", "Tick"})
"""Event kinds after which the node is calculated and its QoS planned. A SchedulingDecision only changes an
input; a Node or NodeResourceTopology event calculates but does not plan QoS, so the next Tick must."""


def inputs_changed(before: NodeState, after: NodeState) -> bool:
    """Whether ``after`` differs from ``before`` in what a calculation or plan reads: any field but the sources,
    the decision marks and the due time. By identity: a transition keeps the objects of the fields it does not
    change (``_replace``), so a SchedulingDecision that only updated its pod's mark changed no input."""
    return not (after.node is before.node and after.zones is before.zones and after.pods is before.pods
                and after.metric is before.metric and after.profile is before.profile
                and after.published is before.published and after.qos is before.qos
                and after.usage_sent is before.usage_sent and after.yarn is before.yarn
                and after.device is before.device)


def tick_due_ms(state: NodeState, config: SloConfig, calculated_ms: int, settings: NodeAggregateSettings) -> float:
    """The earliest event time after ``calculated_ms`` (when the node was last calculated and planned) at which
    a Tick can change the node's outcome: its NodeResource expiring (``updateTimeThresholdSeconds``), its
    NodeMetric going stale (``degradeTimeMinutes``), when ProdReclaimable is predicted, a prediction input
    crossing its cold start or expiry, or an eviction cool-down ending (``planner.next_plan_change_ms``).
    The outcome is a step function of time with steps only there, so a Tick before it recalculates and
    re-plans to what was already decided (``math.inf``: no Tick ever will)."""
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
    if metric is not None and metric.prod_reclaimable is None and settings.predicts_reclaimable:
        times.append(next_prediction_change_ms(state.profile, state.pods, metric, calculated_ms,
                                               settings.prediction))
    times.append(planner.next_plan_change_ms(settings.qos_strategies, state.qos, metric, calculated_ms))
    return min((t for t in times if t > calculated_ms), default=math.inf)


def recalculate(state: NodeState, config: SloConfig, now_ms: int, causation: Causation,
                settings: NodeAggregateSettings,
                stats: PluginStats | None = None) -> tuple[NodeState, list[tuple[str, dict]]]:
    """Recalculate after a config change (publishes when Koordinator would update the node) and re-plan QoS."""
    sources = _seen(state, causation)
    if sources is None:
        return state, []
    state, outputs = _calculate(_replace(state, sources=sources), config, now_ms, causation, settings, stats,
                                force=False)
    return _plan_qos(state, config, now_ms, causation, outputs, settings, stats)


def _plan_qos(state: NodeState, config: SloConfig, now_ms: int, cause: Causation, outputs: list[tuple[str, dict]],
              settings: NodeAggregateSettings, stats: PluginStats | None,
              metric_is_new: bool = False) -> tuple[NodeState, list[tuple[str, dict]]]:
    """Plan the node's QoS after the NodeResource outputs; nothing before the Node is known. ``metric_is_new``:
    planned for the NodeMetric just received (its throttled ratios scale quota burst once)."""
    node = state.node
    if node is None:
        return state, outputs
    strategy = config.qos.for_node(node.labels)
    memory, planned = planner.plan_node(settings.qos_strategies, node, state.pods, state.metric, strategy, now_ms,
                                        state.qos, cause, settings.signing_key, stats, metric_is_new)
    if memory is not state.qos:
        state = _replace(state, qos=memory)
    return state, outputs + planned


def _usage(state: NodeState, event: InboxEvent) -> tuple[NodeState, list[tuple[str, dict]]]:
    """The NodeUsage for the scheduling domains, when one is due (``usage.check``), with the state remembering it."""
    record = usage.summary(event.key, event.record, event.causation, event.timestamp_ms)
    allocatable = state.node.allocatable if state.node is not None else None
    send, remembered = usage.check(state.usage_sent, record, allocatable)
    if not send:
        return state, []
    return _replace(state, usage_sent=remembered), [("NodeUsage", record)]


def _on_topology(state: NodeState, event: InboxEvent, config: SloConfig, settings: NodeAggregateSettings,
                 stats: PluginStats | None) -> tuple[NodeState, list[tuple[str, dict]]]:
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
    return _calculate(state, config, event.timestamp_ms, event.causation, settings, stats, force=dropped)


def is_replay(state: NodeState, event: InboxEvent) -> bool:
    """Whether SchedulingDecision ``event`` was applied already or is older than the node's last decision about
    its pod (``replays``)."""
    record = event.record
    return record is not None and replays.is_replay(state.decided.get(replays.pod_key(record)), record)


def _on_decision(state: NodeState, event: InboxEvent) -> NodeState:
    record = event.record
    pod = record["pod"]
    key = replays.pod_key(record)
    result = record["result"]
    if result in ENDED_RESULTS:
        if key not in state.pods:
            return _replace(state, decided=_remember(state, key, record, state.pods))
        pods = PodTable((k, v) for k, v in state.pods.items() if k != key)
        return _replace(state, pods=pods, profile=forget_pod(state.profile, key), qos=state.qos.forget_pod(key),
                        decided=_remember(state, key, record, pods))
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
        request_batch_memory=requests.get(BATCH_MEMORY, 0),
        priority=record.get("priority"),
        labels=tuple(sorted(selected(record.get("labels"), LABELS).items())),
        annotations=tuple(sorted(selected(record.get("annotations"), ANNOTATIONS).items())),
        cpuset=cpuset_of(record.get("annotations")))
    if view == known:
        return _replace(state, decided=_remember(state, key, record, state.pods))
    pods = PodTable(state.pods)
    pods[key] = view
    return _replace(state, pods=pods, decided=_remember(state, key, record, pods))


def _remember(state: NodeState, key: str, record: dict, pods: Mapping[str, PodView]) -> dict[str, Mark]:
    """The node's marks after applying decision ``record`` about ``key``, ``pods`` the pods bound after it."""
    return replays.remember(state.decided, key, replays.mark_of(record), pods)


def _calculate(state: NodeState, config: SloConfig, now_ms: int, cause: Causation, settings: NodeAggregateSettings,
               stats: PluginStats | None, force: bool) -> tuple[NodeState, list[tuple[str, dict]]]:
    node = state.node
    if node is None:
        return state, []
    metric = state.metric
    if metric is not None and metric.prod_reclaimable is None and settings.predicts_reclaimable:
        reclaimable, _ = predict(state.profile, node, state.pods, metric, now_ms, settings.prediction)
        if reclaimable is not None:
            metric = dataclasses.replace(metric, prod_reclaimable=reclaimable)
    share = state.yarn
    if share is not None:
        node = dataclasses.replace(node, third_party_batch=third_party_batch(node.annotations, node.third_party_batch,
                                                                             share))
    outcome = reconcile(settings.resource_plugins, config, node, state.pods, metric, now_ms, state.published, stats,
                        state.zones, state.device)
    status = outcome.status
    total = _yarn_total(status.annotations, state.pods) if share is not None else None
    moved = total is not None and total != share.total
    if not (force or moved or outcome.status_sync[0] or outcome.meta_sync[0] or outcome.zone_sync[0]):
        return state, []
    if share is not None:
        status.annotations[ANNOTATION_THIRD_PARTY_ALLOCATIONS] = allocation_annotation(share)
        status.annotations[ANNOTATION_YARN_NODE_RESOURCE] = node_resource_annotation(share, total)
        if moved:
            state = _replace(state, yarn=dataclasses.replace(share, total=total))
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
        "labels": status.labels,
        "zones": [{"name": zone.name, "resources": dict(published.zones[zone.name])} for zone in state.zones
                  if zone.name in published.zones],
    }
    return _replace(state, published=published), [("NodeResource", record)]


def _yarn_total(annotations: dict[str, str], pods: Mapping[str, PodView]) -> tuple[int, int]:
    """The NodeManager's total (``yarnshare.yarn_total``): the origin batch Prepare recorded minus BE pods' requests."""
    origin = json.loads(annotations.get(ANNOTATION_ORIGIN_EXTENDED_ALLOCATABLE) or "{}").get("resources") or {}
    origin_batch = (int(origin.get(BATCH_CPU) or 0), to_canonical(BATCH_MEMORY, origin.get(BATCH_MEMORY) or "0"))
    return yarn_total(origin_batch, be_requests(pods.values()))
