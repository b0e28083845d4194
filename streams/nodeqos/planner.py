"""One node-QoS plan: run the strategies, merge their settings, emit what changed as signed Actuations.

``plan_node`` is pure: it takes the node's frozen inputs and its ``QoSMemory``
(what was emitted last, the per-node sequence, eviction bookkeeping) and
returns the new memory and the (schema, record) outputs:

1. every strategy in ``registry.ORDER`` plans on the same ``Snapshot``;
2. settings for the same (targetKind, targetId, mechanism) are merged in that
   order (a later strategy's value for the same setting name wins);
3. a setting still at the kernel's default (``BASELINE``: no burst, not idle,
   bvt 0, default core-sched cookie) that was never emitted for its target is
   left out, so a default config sends nothing for every pod; a target is
   emitted only when its remaining values differ from the ones last emitted;
4. each emitted target takes the next per-node ``sequence`` and a decision id
   ``decision_id(cause, index, "<node>|<kind>|<id>|<mechanism>")``, stable
   across replays, and is signed with ``signing_key`` (``streams.actuation.sign``; None: unsigned);
5. evictions become Eviction decisions; an evicted pod is not picked again
   until it is released. A plan for anything but a new NodeMetric (a Tick, a
   config change) keeps a strategy's evictions only when the NodeMetric was
   reported after that strategy's last eviction: an older one still counts
   the evicted pods' usage, and acting on it again would evict more pods than
   the release needs.

``next_plan_change_ms`` says when time alone can change a plan: the end of an
eviction cool-down (``cool_down_seconds`` of a strategy's args) that a fresh
NodeMetric waits for.

Remembered values of pod targets whose pod left the node are dropped, so the
memory stays bounded by the pods on the node.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from streams import actuation
from streams.actuation import CPU_BURST, CPU_BVT_WARP, CPU_IDLE, TARGET_HOSTAPP, TARGET_POD, TASKS_PODS
from streams.events import Causation, decision_id
from streams.nodeqos.framework import CORE_SCHED_GROUP, CORE_SCHED_NONE, Eviction, Snapshot, Strategy, TargetKey
from streams.noderesource.views import MetricView, NodeView, PodView
from streams.pluginstats import PluginStats
from streams.sloconfig.nodeqos import NodeQoSStrategy

BASELINE = MappingProxyType({CPU_BURST: "0", CPU_IDLE: "0", CPU_BVT_WARP: "0", CORE_SCHED_GROUP: CORE_SCHED_NONE})
"""Settings whose kernel default needs no actuation when it was never changed."""


@dataclasses.dataclass(frozen=True)
class QoSMemory:
    sequence: int = 0
    """Sequence of the last Actuation emitted for the node."""
    last: Mapping[TargetKey, Mapping[str, str]] = dataclasses.field(default_factory=dict)
    """Values last emitted per target."""
    last_eviction_ms: Mapping[str, int] = dataclasses.field(default_factory=dict)
    evicted: frozenset[str] = frozenset()

    def forget_pod(self, key: str) -> QoSMemory:
        if key not in self.evicted:
            return self
        return dataclasses.replace(self, evicted=self.evicted - {key})

    def to_json(self, uid_index: Mapping[str, int]) -> list:
        """A JSON-able form with sorted keys (the state's bytes must not depend on dict order); pod UIDs in
        targets and ``tasks.pods`` are written as their index in ``uid_index`` (the pod table holds them)."""
        def uid(value: str) -> object:
            return uid_index.get(value, value)
        # A pod gone from ``uid_index`` keeps its UID (a string) until the next plan: sorted after the indexes.
        last = sorted(([target[0], uid(target[1]) if target[0] == TARGET_POD else target[1], target[2],
                        sorted((name, [uid(u) for u in value.split(",")] if name == TASKS_PODS and value else value)
                               for name, value in values.items())]
                       for target, values in self.last.items()),
                      key=lambda row: (row[0], isinstance(row[1], str), row[1], row[2]))
        return [self.sequence, last, sorted(self.last_eviction_ms.items()), sorted(self.evicted)]

    @staticmethod
    def from_json(data: list, uids: Sequence[str]) -> QoSMemory:
        def uid(value: object) -> str:
            return uids[value] if isinstance(value, int) else value
        sequence, last, evictions, evicted = data
        return QoSMemory(sequence, {(kind, uid(target), mechanism): {
            name: ",".join(uid(u) for u in value) if isinstance(value, list) else value for name, value in values}
            for kind, target, mechanism, values in last}, dict(evictions), frozenset(evicted))


def plan_node(strategies: Sequence[Strategy], node: NodeView, pods: Mapping[str, PodView],
              metric: MetricView | None, strategy: NodeQoSStrategy, now_ms: int, memory: QoSMemory,
              cause: Causation, signing_key: bytes | None = None,
              stats: PluginStats | None = None,
              metric_is_new: bool = False) -> tuple[QoSMemory, list[tuple[str, dict]]]:
    """Plan the node; return the new memory and the Actuation / Eviction records to publish. ``stats``, when
    given, counts and times each strategy's plan (stage ``Plan``); ``metric_is_new``: planned for ``metric``
    just received (``Snapshot.metric_is_new``)."""
    snapshot = Snapshot(node, pods, metric, strategy, now_ms, memory.last, memory.last_eviction_ms, memory.evicted,
                        metric_is_new)
    merged: dict[TargetKey, dict[str, str]] = {}
    evictions: list[tuple[str, Eviction]] = []
    last_eviction = dict(memory.last_eviction_ms)
    for plugin in strategies:
        started = time.perf_counter() if stats else 0.0
        plan = plugin.plan(snapshot)
        if stats:
            stats.record(plugin.name, "Plan", "success", started)
        for setting in plan.settings:
            merged.setdefault(setting.key, {}).update(setting.values)
        if metric_is_new or _reported_after(metric, memory.last_eviction_ms.get(plugin.name)):
            evictions.extend((plugin.name, eviction) for eviction in plan.evictions)
        if plan.start_cool_down:
            last_eviction.setdefault(plugin.name, now_ms)
    uids = {pod.uid for pod in pods.values() if pod.uid}
    apps = {app.name for app in strategy.host_apps}
    last = {target: values for target, values in memory.last.items()
            if (target[0] != TARGET_POD or target[1] in uids) and (target[0] != TARGET_HOSTAPP or target[1] in apps)}
    sequence, outputs = memory.sequence, []
    for index, (target, planned) in enumerate(merged.items()):
        before = last.get(target)
        values = {name: value for name, value in planned.items()
                  if before is not None and name in before or BASELINE.get(name) != value}
        if not values or before == values:
            continue
        sequence += 1
        last[target] = values
        outputs.append(("Actuation", actuation.sign({
            "decisionId": decision_id(cause, index, f"{node.name}|{'|'.join(target)}"),
            "nodeName": node.name,
            "sequence": sequence,
            "targetKind": target[0],
            "targetId": target[1],
            "mechanism": target[2],
            "values": dict(values),
            "causation": cause.to_record(),
            "timestamp": now_ms,
        }, signing_key)))
    evicted = set(memory.evicted)
    for index, (plugin_name, eviction) in enumerate(evictions):
        if eviction.pod_key in evicted:
            continue
        evicted.add(eviction.pod_key)
        last_eviction[plugin_name] = now_ms
        namespace, _, name = eviction.pod_key.partition("/")
        outputs.append(("Eviction", {
            "decisionId": decision_id(cause, index, f"{node.name}|evict|{eviction.pod_key}"),
            "nodeName": node.name,
            "pod": {"namespace": namespace, "name": name, "uid": eviction.uid},
            "reason": eviction.reason,
            "message": eviction.message,
            "causation": cause.to_record(),
            "timestamp": now_ms,
        }))
    evicted &= set(pods)
    new = QoSMemory(sequence, last, last_eviction, frozenset(evicted))
    return (memory if new == memory else new), outputs


def _reported_after(metric: MetricView | None, last_eviction_ms: int | None) -> bool:
    """Whether ``metric`` was reported after the eviction at ``last_eviction_ms`` (None: never evicted)."""
    if last_eviction_ms is None:
        return True
    return metric is not None and metric.update_time_ms is not None and metric.update_time_ms > last_eviction_ms


def next_plan_change_ms(strategies: Sequence[Strategy], memory: QoSMemory, metric: MetricView | None,
                        after_ms: int) -> float:
    """The earliest event time after ``after_ms`` at which a re-plan of the same inputs can differ: an eviction
    cool-down ending while the NodeMetric was reported after that eviction (``math.inf``: none)."""
    times = []
    for plugin in strategies:
        cool_down = getattr(getattr(plugin, "args", None), "cool_down_seconds", None)
        last = memory.last_eviction_ms.get(plugin.name)
        if cool_down is not None and last is not None and _reported_after(metric, last):
            times.append(last + cool_down * 1000)
    return min((t for t in times if t > after_ms), default=math.inf)
