"""NodeName: a pod that names its node may only go there (kube-scheduler ``nodename``).

Filter: with ``spec.nodeName`` set, every other node fails with "node(s)
didn't match the requested node name" (UnschedulableAndUnresolvable). The
domain binds such pods directly (result Bound); this decides for object pods,
whose nodeName pins them without binding them (a Reservation's
``template.spec.nodeName``), and when a profile schedules a named pod through
the cycle.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from streams.objects.args import no_args
from streams.objects.podinfo import PodInfo
from streams.scheduler.framework import (
    NODE_ADD, NODE_UPDATE, SKIP, SUCCESS, Code, CycleState, FilterResult, Status, register)
from streams.scheduler.state import Cluster

NAME = "NodeName"
REASON_NODE_NAME = "node(s) didn't match the requested node name"


@dataclasses.dataclass(frozen=True)
class NodeNameArgs:
    """No args."""

    @classmethod
    def from_config(cls, raw) -> "NodeNameArgs":
        no_args(NAME, raw)
        return cls()

    def validate(self) -> None:
        pass


class NodeName:
    name = NAME
    Args = NodeNameArgs
    events_to_register = register(NODE_ADD, NODE_UPDATE)

    def __init__(self, args: NodeNameArgs, cluster: Cluster) -> None:
        self.cluster = cluster

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        return SUCCESS if pod.node_name else SKIP

    def filter(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> FilterResult:
        if not pod.node_name:
            return FilterResult(candidates)
        match = np.zeros(len(candidates), dtype=bool)
        row = self.cluster.columns.row.get(pod.node_name)
        if row is not None:
            match[row] = True
        return FilterResult(candidates & match, ((REASON_NODE_NAME, ~match),), Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
