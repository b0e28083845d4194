"""The pods assigned to each node and the node's existing load (Koordinator's ``pod_assign_cache.go`` and
``helper.go``), as vectors over the plugin's resources.

Existing load of a node with a NodeMetric (updateTime U, report interval R, default 60 s), from its
assigned pods (time t = PodScheduled transition time, else the assignment's event time; u = the pod's
reported usage; e = its estimate)::

    estimate again if u is missing, or U - R < t, or t + estimatedSecondsAfter... > U
    nodeDelta += max(0, e - u) when estimating again;  nodeEstimated += e
    prodUsage = sum of u of prod pods reported as prod (+ systemUsage if prodUsageIncludeSys)
    prodDelta like nodeDelta, over prod pods
    load = prodUsage + prodDelta                      (prod pods with prod thresholds)
         = base + nodeDelta                           (base: nodeUsage, or the aggregated usage
                                                       of the configured type and duration)
         = nodeEstimated                              (when that aggregated usage is missing)
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping

from streams.koordinator.classes import PRIORITY_PROD
from streams.scheduler.plugins.loadaware.args import AGGREGATION_TYPES
from streams.objects.duration import parse_duration

DEFAULT_REPORT_INTERVAL_MS = 60_000


def json_object(text: str | None):
    """The JSON object in ``text``; None when absent, unparsable or not an object."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


@dataclasses.dataclass
class AssignedPod:
    """A pod on the node as the load counts it: its estimate (None when all zero) and when to stop estimating."""

    ns_name: tuple[str, str]
    prod: bool
    timestamp: int
    deadline: int | None
    estimated: list[int] | None


class NodeLoad:
    """One node's metric and assigned pods (Koordinator's podAssignCache nodeInfo)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.metric = False
        self.has_node_metric = False
        self.update_time: int | None = None
        self.report_interval = DEFAULT_REPORT_INTERVAL_MS
        self.node_usage: list[int] | None = None
        self.agg: dict[tuple[str, int], list[int]] = {}
        self.pod_usages: dict[tuple[str, str], list[int]] = {}
        self.prod_pods: set[tuple[str, str]] = set()
        self.sys_usage = [0] * size
        self.pods: dict[str, AssignedPod] = {}
        self.reset()

    def reset(self) -> None:
        self.prod_usage = [0] * self.size
        self.node_delta = [0] * self.size
        self.prod_delta = [0] * self.size
        self.node_estimated = [0] * self.size

    def _should(self, pod: AssignedPod, usage) -> bool:
        return (usage is None or (self.update_time or 0) - self.report_interval < pod.timestamp
                or (pod.deadline is not None and pod.deadline > (self.update_time or 0)))

    def apply(self, pod: AssignedPod, sign: int) -> None:
        """``addPod`` (sign 1) / ``deletePod`` (sign -1)."""
        usage = self.pod_usages.get(pod.ns_name)
        active_prod = pod.prod and pod.ns_name in self.prod_pods
        if active_prod and usage is not None:
            for i in range(self.size):
                self.prod_usage[i] += sign * usage[i]
        estimated = pod.estimated
        if estimated is None:
            return
        should = self._should(pod, usage)
        if should:
            for i in range(self.size):
                delta = estimated[i] - (usage[i] if usage is not None else 0)
                if delta > 0:
                    self.node_delta[i] += sign * delta
        for i in range(self.size):
            self.node_estimated[i] += sign * estimated[i]
        if not pod.prod:
            return
        if not active_prod and usage is not None:
            usage, should = None, True
        if should:
            for i in range(self.size):
                delta = estimated[i] - (usage[i] if usage is not None else 0)
                if delta > 0:
                    self.prod_delta[i] += sign * delta

    def set_metric(self, record: Mapping | None, vec: Callable[[Mapping | None], list[int]],
                   include_sys: bool) -> None:
        """Take the node's usage (a NodeUsage's fields, ``SchedulingDomain``'s ``Cluster.metrics`` entry;
        None: deleted) and count every assigned pod again."""
        self.reset()
        if record is None:
            self.metric = False
            self.has_node_metric = False
            self.update_time = None
            return
        interval = record.get("reportIntervalSeconds")
        self.metric = True
        self.has_node_metric = record.get("hasNodeMetric", True)
        self.update_time = record.get("updateTime")
        self.report_interval = interval * 1000 if interval else DEFAULT_REPORT_INTERVAL_MS
        self.node_usage = vec(record.get("nodeUsage")) if self.has_node_metric else None
        self.agg = {}
        longest: dict[str, int] = {}
        for window in record.get("aggregatedNodeUsages") or ():
            try:
                duration = parse_duration(window.get("duration") or "0")
            except ValueError:
                continue
            for kind in AGGREGATION_TYPES:
                if window.get(kind):
                    self.agg[(kind, duration)] = vec(window[kind])
                    longest[kind] = max(longest.get(kind, 0), duration)
        for kind, duration in longest.items():
            self.agg[(kind, 0)] = self.agg[(kind, duration)]
        self.pod_usages = {}
        self.prod_pods = set()
        for pod in record.get("podsMetric") or ():
            if not pod.get("usage"):
                continue
            key = (pod.get("namespace") or "", pod.get("name") or "")
            self.pod_usages[key] = vec(pod["usage"])
            if pod.get("priority") == PRIORITY_PROD:
                self.prod_pods.add(key)
        self.sys_usage = vec(record.get("systemUsage")) if include_sys else [0] * self.size
        self.prod_usage = list(self.sys_usage)
        for pod in self.pods.values():
            self.apply(pod, 1)

    def base(self, kind: str, duration_ms: int) -> list[int] | None:
        """The existing-load vector without prod: aggregated or node usage plus delta, else the full estimate."""
        if kind:
            usage = self.agg.get((kind, duration_ms))
            if usage is None and duration_ms == 0:
                usage = self.node_usage
        else:
            usage = self.node_usage
        if usage is None:
            return list(self.node_estimated)
        return [u + d for u, d in zip(usage, self.node_delta)]

    def prod_load(self) -> list[int]:
        return [u + d for u, d in zip(self.prod_usage, self.prod_delta)]
