"""What the scheduling domains read of a node's NodeMetric, and when the node aggregate sends it again.

Load-aware scheduling and the descheduler read a NodeMetric's node, system and aggregated usage, its pods'
usage and priority class, its ``updateTime``, its report interval and whether it reports node usage at all
(Koordinator's ``loadaware`` and ``lownodeload`` plugins read nothing else). ``summary`` keeps exactly that:
the ``NodeUsage`` record, without the manifest, the host applications and the node-side figures (about
half the bytes, and no manifest for the scheduler to parse). The raw NodeMetric goes to the node inbox only.

A summary is sent (``check``) when

- nothing was sent yet, or the NodeMetric was deleted;
- what it is made of changed: whether it reports node usage, its report interval, its pods or their
  priority classes, its aggregation windows;
- its ``updateTime`` is at least one report interval past the last one sent. The scheduler's copy is then
  never older than one report interval, the age Koordinator's estimation rule already allows for (a pod
  assigned less than one interval before ``updateTime`` is estimated again); at koordlet's own cadence (one
  report per interval) every report is sent;
- a figure entered another step of ``USAGE_CHANGE`` of the node's allocatable of its resource (steps of 1
  for a resource the node does not list, or before its Node is known), so the scheduler's copy of a figure
  is always less than one step from the reported one. The figures are the node, system and aggregated
  usages and the pods' usage summed per priority class (what the prod thresholds read); one pod's own usage
  is sent with the next summary, at the latest one report interval later. Koordinator's load-aware score is
  an integer percent of allocatable per resource and its thresholds are integer percents: a difference of
  less than one step moves a score by at most one point and a filter outcome only for a node within 1 %
  of its threshold. The state keeps a digest of the steps, not the figures, so a node's state stays
  within 4 KB.

This is a deliberate deviation from Koordinator, whose scheduler reads every NodeMetric update: reports
faster than the interval that do not move the load are not sent.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping

from streams.events import Causation, decision_id

USAGE_CHANGE = 0.01
"""A summary is sent again when a figure moved by at least this share of the node's allocatable."""
DEFAULT_REPORT_INTERVAL_S = 60
"""Koordinator's default ``reportIntervalSeconds`` (``DefaultNodeMetricReportInterval``)."""
AGGREGATIONS = ("avg", "p50", "p90", "p95", "p99")


@dataclasses.dataclass(frozen=True)
class Sent:
    """The last summary sent for a node, as ``check`` compares it: its update time and a digest of what it is
    made of and of its figures in steps of ``USAGE_CHANGE`` of allocatable."""

    update_time_ms: int | None
    digest: str

    def to_json(self, metric_time_ms: int | None) -> list:
        """As stored beside the NodeMetric of update time ``metric_time_ms``: the update time as an offset
        before that one when both are known (mostly 0: a few bytes per node)."""
        if self.update_time_ms is None or metric_time_ms is None:
            return [self.update_time_ms, self.digest, 0]
        return [metric_time_ms - self.update_time_ms, self.digest]

    @classmethod
    def from_json(cls, value: list, metric_time_ms: int | None) -> "Sent":
        if len(value) > 2:
            return cls(value[0], value[1])
        return cls(metric_time_ms - value[0], value[1])


def _manifest_facts(manifest: str | None) -> tuple[bool, int | None]:
    """(has a ``status.nodeMetric`` section, ``spec.metricCollectPolicy.reportIntervalSeconds``) of the
    manifest; a record without a manifest (or with an empty one) counts as reporting node usage."""
    try:
        body = json.loads(manifest) if manifest else None
    except ValueError:
        body = None
    if not body or not isinstance(body, dict):
        return True, None
    status = body.get("status") if isinstance(body.get("status"), dict) else {}
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    policy = spec.get("metricCollectPolicy")
    if not isinstance(policy, dict):
        policy = spec.get("collectPolicy") if isinstance(spec.get("collectPolicy"), dict) else {}
    interval = policy.get("reportIntervalSeconds")
    return "nodeMetric" in status, interval if isinstance(interval, int) and not isinstance(interval, bool) else None


def summary(node_name: str, record: Mapping | None, causation: Causation, timestamp_ms: int) -> dict:
    """The NodeUsage record of a NodeMetric record (None: the NodeMetric was deleted), complete: it decodes
    back to itself, so a replay compares it field for field with the one recorded."""
    out = {"decisionId": decision_id(causation, 0, f"{node_name}/usage"), "nodeName": node_name,
           "causation": causation.to_record(), "timestamp": timestamp_ms}
    if record is None:
        return {**out, "deleted": True, "hasNodeMetric": True, "reportIntervalSeconds": None, "updateTime": None,
                "nodeUsage": {}, "systemUsage": {}, "aggregatedNodeUsages": [], "podsMetric": []}
    has_node_metric, interval = _manifest_facts(record.get("manifest"))
    return {**out, "deleted": False, "hasNodeMetric": has_node_metric, "reportIntervalSeconds": interval,
            "updateTime": record.get("updateTime"), "nodeUsage": dict(record.get("nodeUsage") or {}),
            "systemUsage": dict(record.get("systemUsage") or {}),
            "aggregatedNodeUsages": [{"duration": window["duration"],
                                      **{kind: dict(window.get(kind) or {}) for kind in AGGREGATIONS}}
                                     for window in record.get("aggregatedNodeUsages") or ()],
            "podsMetric": [{"namespace": pod["namespace"], "name": pod["name"], "usage": dict(pod.get("usage") or {}),
                            "priority": pod.get("priority")} for pod in record.get("podsMetric") or ()]}


def _digest(usage: Mapping, allocatable: Mapping[str, int] | None) -> str:
    """A digest of what ``usage`` is made of (whether it reports node usage, its report interval, its pods and
    their priority classes, its windows) and of its figures, each in steps of ``USAGE_CHANGE`` of the node's
    allocatable of its resource (steps of 1 for a resource the node does not list): the node, system and
    aggregated usages and the pods' usage summed per priority class."""
    allocatable = allocatable or {}
    parts: list = [usage["hasNodeMetric"], usage["reportIntervalSeconds"]]

    def add(label: str, values: Mapping[str, int]) -> None:
        parts.append([label, [[name, values[name] // max(int(allocatable.get(name, 0) * USAGE_CHANGE), 1)]
                              for name in sorted(values)]])

    add("node", usage["nodeUsage"])
    add("system", usage["systemUsage"])
    for window in usage["aggregatedNodeUsages"]:
        for kind in AGGREGATIONS:
            add(f"{window['duration']}/{kind}", window.get(kind) or {})
    by_class: dict[str, dict[str, int]] = {}
    for pod in usage["podsMetric"]:
        parts.append([pod["namespace"], pod["name"], pod["priority"]])
        total = by_class.setdefault(str(pod["priority"]), {})
        for name, value in pod["usage"].items():
            total[name] = total.get(name, 0) + value
    for priority in sorted(by_class):
        add(f"pods/{priority}", by_class[priority])
    return hashlib.sha256(json.dumps(parts, separators=(",", ":")).encode()).hexdigest()[:8]


def sent(usage: Mapping, allocatable: Mapping[str, int] | None) -> Sent | None:
    """What ``check`` remembers of a NodeUsage record once it is sent (None for a deletion)."""
    return None if usage["deleted"] else Sent(usage["updateTime"], _digest(usage, allocatable))


def check(last: Sent | None, usage: Mapping, allocatable: Mapping[str, int] | None) -> tuple[bool, Sent | None]:
    """(whether the NodeUsage record ``usage`` must be sent, what to remember of the last one sent afterwards),
    ``last`` being the last one sent (None: none, or the NodeMetric was deleted since) and ``allocatable`` the
    node's (None: its Node is not known)."""
    current = sent(usage, allocatable)
    if current is None:
        return True, None
    if last is None or current.digest != last.digest:
        return True, current
    update, previous = current.update_time_ms, last.update_time_ms
    if update is None or previous is None:
        return (True, current) if update != previous else (False, last)
    interval_ms = (usage["reportIntervalSeconds"] or DEFAULT_REPORT_INTERVAL_S) * 1000
    if update - previous >= interval_ms or update < previous:
        return True, current
    return False, last

