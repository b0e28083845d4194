"""NodeUnschedulable: cordoned nodes take no new pods (kube-scheduler ``nodeunschedulable``).

Filter: a node with ``spec.unschedulable`` fails with "node(s) were
unschedulable" (UnschedulableAndUnresolvable), unless the pod tolerates the
``node.kubernetes.io/unschedulable:NoSchedule`` taint.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from streams.objects.args import no_args
from streams.objects.podinfo import PodInfo
from streams.scheduler.framework import NODE_ADD, NODE_UPDATE, Code, CycleState, FilterResult, register
from streams.scheduler.state import Cluster
from streams.scheduler.taints import UNSCHEDULABLE_TAINT, tolerated

NAME = "NodeUnschedulable"
REASON_UNSCHEDULABLE = "node(s) were unschedulable"


@dataclasses.dataclass(frozen=True)
class NodeUnschedulableArgs:
    """No args."""

    @classmethod
    def from_config(cls, raw) -> "NodeUnschedulableArgs":
        no_args(NAME, raw)
        return cls()

    def validate(self) -> None:
        pass


class NodeUnschedulable:
    name = NAME
    Args = NodeUnschedulableArgs
    events_to_register = register(NODE_ADD, NODE_UPDATE)

    def __init__(self, args: NodeUnschedulableArgs, cluster: Cluster) -> None:
        self.cluster = cluster

    def filter(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> FilterResult:
        cordoned = self.cluster.columns.unschedulable[: len(candidates)]
        if not cordoned.any() or tolerated(UNSCHEDULABLE_TAINT, pod.tolerations):
            return FilterResult(candidates)
        return FilterResult(candidates & ~cordoned, ((REASON_UNSCHEDULABLE, cordoned),),
                            Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
