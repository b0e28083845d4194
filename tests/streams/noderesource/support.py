"""Builders for node-aggregate tests: records as the Avro schemas decode them, inbox events, strategies.

Units follow the records: cpu in milli-cores, memory in bytes. ``G`` is 10**9 bytes and ``Gi`` 2**30,
as in Koordinator's tests.
"""

from __future__ import annotations

import dataclasses
import itertools
import json

from streams.events import Causation, InboxEvent
from streams.noderesource.views import MetricView, PodView, build_node_view, metric_view
from streams.sloconfig.colocation import ColocationStrategy

G = 10**9
Gi = 1 << 30
Mi = 1 << 20
MINUTE = 60_000
NOW = 1_700_000_000_000
"""An arbitrary event time (ms); tests count from it."""

SOURCE_TOPICS = {"Node": "koord.nodes", "NodeMetric": "koord.nodemetrics", "SchedulingDecision": "koord.decisions",
                 "NodeResourceTopology": "koord.noderesourcetopologies",
                 "Tick": "koord.ticks", "ConfigMap": "koord.configs", "YarnNode": "koord.yarnnodes",
                 "Device": "koord.devices"}
_offsets = itertools.count(1)
_decision_offsets = itertools.count(1)
"""Scheduling-inbox offsets of the decisions ``decision`` builds: each is a new one, as the scheduler's are."""


def strategy(**fields) -> ColocationStrategy:
    """A strategy as Koordinator's tests write one: its fields over the defaults, co-location on."""
    return dataclasses.replace(ColocationStrategy(enable=True), **fields)


S65 = strategy(cpu_reclaim_threshold_percent=65, memory_reclaim_threshold_percent=65, degrade_time_minutes=15,
               update_time_threshold_seconds=300, resource_diff_threshold=0.1)
"""The strategy of most of Koordinator's batchresource TestPluginCalculate cases."""


def node_record(name: str = "test-node1", cpu: int = 100_000, memory: int = 120 * G, alloc_cpu: int | None = None,
                alloc_memory: int | None = None, labels: dict | None = None, annotations: dict | None = None) -> dict:
    capacity = {"cpu": cpu, "memory": memory, "pods": 110}
    allocatable = {"cpu": cpu if alloc_cpu is None else alloc_cpu,
                   "memory": memory if alloc_memory is None else alloc_memory, "pods": 110}
    return {"metadata": {"name": name, "namespace": None, "uid": None, "labels": labels or {},
                         "annotations": annotations or {}, "generation": 0},
            "manifest": "{}", "unschedulable": False, "taints": [], "capacity": capacity, "allocatable": allocatable}


def node(**kwargs):
    record = node_record(**kwargs)
    meta = record["metadata"]
    from streams.noderesource.views import KEPT_ANNOTATIONS
    annotations = {k: v for k, v in meta["annotations"].items() if k in KEPT_ANNOTATIONS}
    return build_node_view(meta["name"], record["capacity"], record["allocatable"], meta["labels"], annotations)


def pod_usage(namespace: str, name: str, cpu: int, memory: int, priority: str | None = None) -> dict:
    return {"namespace": namespace, "name": name, "uid": None, "usage": {"cpu": cpu, "memory": memory},
            "priority": priority, "qos": None}


def host_app(name: str, cpu: int, memory: int, priority: str | None) -> dict:
    return {"name": name, "priority": priority, "qos": None, "usage": {"cpu": cpu, "memory": memory}}


def metric_record(name: str = "test-node1", update_time: int | None = NOW, node_usage: dict | None = None,
                  system_usage: dict | None = None, pods: list | None = None, host_apps: list | None = None,
                  prod_reclaimable: dict | None = None) -> dict:
    return {"metadata": {"name": name, "namespace": None, "uid": None, "labels": {}, "annotations": {},
                         "generation": 0},
            "manifest": "{}", "nodeUsage": node_usage or {}, "podsMetric": pods or [], "updateTime": update_time,
            "systemUsage": system_usage or {}, "aggregatedNodeUsages": [], "hostApplicationMetric": host_apps or [],
            "prodReclaimable": prod_reclaimable or {}}


def metric(**kwargs) -> MetricView:
    return metric_view(metric_record(**kwargs))


def fixture_a_metric(**kwargs) -> dict:
    """``getTestResourceMetrics`` of batchresource/plugin_test.go."""
    defaults = dict(node_usage={"cpu": 50_000, "memory": 55 * G}, system_usage={"cpu": 7_000, "memory": 12 * G},
                    pods=[pod_usage("test", "podA", 11_000, 11 * G), pod_usage("test", "podB", 10_000, 10 * G),
                          pod_usage("test", "podC", 22_000, 22 * G)])
    return metric_record(**{**defaults, **kwargs})


def pod(cpu: int, memory: int, priority_class: str = "koord-prod", qos: str = "LS", since_ms: int = NOW - 48 * 3600_000,
        numa_nodes: tuple[int, ...] = ()) -> PodView:
    return PodView(cpu, memory, priority_class, qos, since_ms, numa_nodes)


def fixture_a_pods() -> dict[str, PodView]:
    """``getTestPodList``: podA LS 20/20G running, podB BE (batch), podC no labels 2x(10/20G) pending
    (Guaranteed -> LSR -> Prod); podD Succeeded is not bound any more."""
    return {"test/podA": pod(20_000, 20 * G, "koord-prod", "LS"),
            "test/podB": pod(0, 0, "koord-batch", "BE"),
            "test/podC": pod(20_000, 40 * G, "koord-prod", "LSR")}


def event(kind: str, key: str, record: dict | None, ts: int = NOW, offset: int | None = None,
          partition: int = 0) -> InboxEvent:
    offset = next(_offsets) if offset is None else offset
    cause = Causation("koord.inbox.node", 0, offset, SOURCE_TOPICS[kind], partition, offset)
    return InboxEvent(cause, ts, key, kind, record)


def decision(pod_name: str, node_name: str = "test-node1", result: str = "Bound", cpu: int = 1000,
             memory: int = Gi, priority: int | None = None, priority_class: str | None = None,
             qos: str | None = "LS", namespace: str = "test") -> dict:
    inbox_offset = next(_decision_offsets)
    return {"decisionId": f"d-{pod_name}-{inbox_offset}", "domain": "default",
            "pod": {"namespace": namespace, "name": pod_name, "uid": None}, "result": result,
            "nodeName": node_name, "reason": None, "message": "", "filterResults": [], "scores": [],
            "causation": {"inboxTopic": "koord.inbox.scheduling", "inboxPartition": 0, "inboxOffset": inbox_offset,
                          "sourceTopic": "koord.pods", "sourcePartition": 0, "sourceOffset": 0},
            "timestamp": NOW, "requests": {"cpu": cpu, "memory": memory}, "limits": {}, "priority": priority,
            "priorityClass": priority_class, "qosClass": qos}


def tick(ts: int) -> dict:
    return {"timestamp": ts}


def configmap(colocation: dict | None = None, cpu_normalization: dict | None = None, **other: str) -> dict:
    data = dict(other)
    if colocation is not None:
        data["colocation-config"] = json.dumps(colocation)
    if cpu_normalization is not None:
        data["cpu-normalization-config"] = json.dumps(cpu_normalization)
    return {"metadata": {"name": "slo-controller-config", "namespace": "koordinator-system", "uid": None,
                         "labels": {}, "annotations": {}, "generation": 0}, "manifest": "{}", "data": data}
