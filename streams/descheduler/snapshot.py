"""What a descheduling round reads: nodes with their metrics and pods, as plain frozen values.

Units as Kubernetes counts them: cpu in millicores, memory in bytes, pods as a count. The caller (the
scheduling domain's descheduling stage) builds these from the objects it already holds, so the round
itself reads no clock and no table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping


@dataclasses.dataclass(frozen=True)
class PodView:
    key: str
    """"namespace/name"."""
    namespace: str
    name: str
    priority: int
    """spec.priority (0 when unset, kube-scheduler's ``PodPriority``)."""
    priority_class: str
    """Koordinator priority class with default (``classes.priority_class_with_default``)."""
    koord_qos: str
    """Koordinator QoS class with default."""
    kube_qos: str
    deletion_cost: int = 0
    eviction_cost: int = 0
    created_ms: int = 0
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    owner_kinds: tuple[str, ...] = ()
    evict_annotated: bool = False
    """Carries ``descheduler.alpha.kubernetes.io/evict``: every evictor filter is bypassed."""
    critical: bool = False
    """System-critical priority (>= 2000000000, ``system-cluster-critical`` / ``system-node-critical``)."""
    mirror: bool = False
    """A mirror or static pod (``kubernetes.io/config.mirror`` / ``kubernetes.io/config.source`` not api)."""
    terminating: bool = False
    local_storage: bool = False
    """Has an emptyDir or hostPath volume."""
    pvc: bool = False
    phase: str = "Running"


@dataclasses.dataclass(frozen=True)
class NodeView:
    name: str
    allocatable: Mapping[str, int]
    """Raw allocatable: ``node.koordinator.sh/raw-allocatable`` when present and valid, else status.allocatable."""
    labels: Mapping[str, str]
    unschedulable: bool
    pods: tuple[PodView, ...]
    """Every pod assigned to the node, in key order."""
    system_usage: Mapping[str, int] | None
    """NodeMetric ``systemUsage``; None when the node has no fresh NodeMetric (it is then skipped)."""
    pod_usage: Mapping[str, Mapping[str, int]] = dataclasses.field(default_factory=dict)
    """NodeMetric ``podsMetric`` usage by pod key."""
