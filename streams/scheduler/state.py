"""The cluster as one scheduling domain sees it, and the changes plugins observe.

``Cluster`` holds the objects of the domain (nodes as ``NodeColumns`` plus
their labels, annotations and taints; pods and where they are assigned;
NodeMetrics; ElasticQuotas and ElasticQuotaProfiles) and the event time. The
domain changes it and tells every plugin that observes it what changed
(``NodeChanged``, ``PodChanged``, ``PodAssigned``, ...), the way informers
feed kube-scheduler plugins.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from streams.scheduler.columns import NodeColumns
from streams.scheduler.podinfo import PodInfo

NO_SCHEDULE_EFFECTS = ("NoSchedule", "NoExecute")


@dataclasses.dataclass(frozen=True)
class NodeObject:
    name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    taints: tuple[Mapping, ...]
    unschedulable: bool
    allocatable: Mapping[str, int]
    """Effective allocatable: the Node's, overlaid with NodeResource (batch/mid) values."""


@dataclasses.dataclass(frozen=True)
class NodeChanged:
    name: str
    old: NodeObject | None
    new: NodeObject | None
    moved: str | None = None
    """On removal: the node moved into the removed node's row."""


@dataclasses.dataclass(frozen=True)
class PodChanged:
    """A pod became known, changed, or is gone (``new`` None). Pending or assigned."""

    key: str
    old: PodInfo | None
    new: PodInfo | None


@dataclasses.dataclass(frozen=True)
class PodAssigned:
    key: str
    pod: PodInfo
    node: str
    at_ms: int


@dataclasses.dataclass(frozen=True)
class PodUnassigned:
    key: str
    pod: PodInfo
    node: str


@dataclasses.dataclass(frozen=True)
class MetricChanged:
    node: str
    record: Mapping | None


@dataclasses.dataclass(frozen=True)
class QuotaObjectsChanged:
    """ElasticQuotas or ElasticQuotaProfiles changed (already validated)."""


@dataclasses.dataclass(frozen=True)
class TimePassed:
    now_ms: int


class Cluster:
    def __init__(self) -> None:
        self.columns = NodeColumns()
        self.nodes: dict[str, NodeObject] = {}
        self.pods: dict[str, PodInfo] = {}
        self.assignment: dict[str, str] = {}
        self.assigned_at: dict[str, int] = {}
        self.pods_on_node: dict[str, set[str]] = {}
        self.metrics: dict[str, Mapping] = {}
        self.quotas: dict[str, Mapping] = {}
        """ElasticQuota records by quota name (names are unique in a domain)."""
        self.profiles: dict[str, Mapping] = {}
        """ElasticQuotaProfile records by "namespace/name"."""
        self.now_ms = 0
        self.labels_version = 0
        self.taints_version = 0
        self._row_labels: tuple[int, list[Mapping[str, str]]] | None = None

    def node_at(self, row: int) -> NodeObject:
        return self.nodes[self.columns.names[row]]

    def row_labels(self) -> list[Mapping[str, str]]:
        """Labels of each node, in row order (cached until labels or rows change)."""
        if self._row_labels is None or self._row_labels[0] != self.labels_version:
            self._row_labels = (self.labels_version, [self.nodes[name].labels for name in self.columns.names])
        return self._row_labels[1]

    def pods_assigned_to(self, node: str) -> list[str]:
        return sorted(self.pods_on_node.get(node, ()))
