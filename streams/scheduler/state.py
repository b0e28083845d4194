"""The cluster as one scheduling domain sees it, and the changes plugins observe.

``Cluster`` holds the objects of the domain (nodes as ``NodeColumns`` plus
their labels, annotations and taints; pods and where they are assigned;
each node's usage (NodeUsage); ElasticQuotas and ElasticQuotaProfiles; the objects of the kinds plugins
watch; the pods waiting on Permit) and the event time. The
domain changes it and tells every plugin that observes it what changed
(``NodeChanged``, ``PodChanged``, ``PodAssigned``, ...), the way informers
feed kube-scheduler plugins.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from streams.objects.podinfo import PodInfo
from streams.scheduler.columns import NodeColumns

NO_SCHEDULE_EFFECTS = ("NoSchedule", "NoExecute")
USAGE_FIELDS = ("hasNodeMetric", "reportIntervalSeconds", "updateTime", "nodeUsage", "systemUsage",
                "aggregatedNodeUsages", "podsMetric")
"""What the domain keeps of a NodeUsage record (``Cluster.metrics``): its usage, not its id and causation."""


@dataclasses.dataclass(frozen=True)
class NodeObject:
    name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    taints: tuple[Mapping, ...]
    unschedulable: bool
    allocatable: Mapping[str, int]
    """Effective allocatable: the Node's, overlaid with NodeResource (batch/mid) values."""
    images: tuple[tuple[tuple[str, ...], int], ...] = ()
    """(names, size in bytes) of the images on the node (the Node record's bounded ``images``)."""


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
    ended: str | None = None
    """The phase a pod gone because it ended had (Succeeded, Failed); None when it was deleted."""


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
class ObjectChanged:
    """An object of a watched kind (``framework.WatchesObjects``) was added, changed or deleted (``new``
    None); ``name`` is its key ("namespace/name", or the name of a cluster-scoped object)."""

    kind: str
    name: str
    old: Mapping | None
    new: Mapping | None


@dataclasses.dataclass
class WaitingPod:
    node: str
    deadline_ms: int
    """Event time at which the pod is rejected if still waiting."""
    timeout_ms: int
    pending: tuple[str, ...]
    """Plugins whose Permit said Wait and have not allowed it yet."""


class WaitingPods:
    """Pods held by Permit (kube-scheduler's waiting pods map). Plugins allow or reject them; the domain
    carries the verdicts out after the plugin call that made them, in the order they were made."""

    def __init__(self) -> None:
        self.pods: dict[str, WaitingPod] = {}
        self.verdicts: list[tuple[str, str, str, str]] = []
        """(pod key, "allow" | "reject", plugin, message), not yet carried out."""

    def __contains__(self, key: str) -> bool:
        return key in self.pods

    def allow(self, key: str, plugin: str) -> None:
        if key in self.pods:
            self.verdicts.append((key, "allow", plugin, ""))

    def reject(self, key: str, plugin: str, message: str) -> None:
        if key in self.pods:
            self.verdicts.append((key, "reject", plugin, message))

    def take_verdicts(self) -> list[tuple[str, str, str, str]]:
        verdicts, self.verdicts = self.verdicts, []
        return verdicts


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
        """Each node's usage as its last NodeUsage said it (``USAGE_FIELDS``), by node name."""
        self.quotas: dict[str, Mapping] = {}
        """ElasticQuota records by quota name (names are unique in a domain)."""
        self.profiles: dict[str, Mapping] = {}
        """ElasticQuotaProfile records by "namespace/name"."""
        self.objects: dict[str, dict[str, Mapping]] = {}
        """Objects of the kinds plugins watch: kind -> key -> record."""
        self.waiting = WaitingPods()
        self.bind_annotations: dict[str, dict[str, str]] = {}
        """What PreBind plugins wrote on each assigned pod."""
        self.volume_bindings: dict[str, tuple[tuple[str, str | None], ...]] = {}
        """The claims PreBind bound for each assigned pod: (claim key, volume or None to provision), on its node."""
        self.now_ms = 0
        self.next_start_row = 0
        """Where the next cycle's search for feasible nodes starts (kube-scheduler's ``nextStartNodeIndex``)."""
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
