"""NodeResourcesFit: does the pod's request fit the node's free allocatable?

Filter (kube-scheduler ``noderesources.Fit``): a node fails for every
resource where ``requested + podRequest > allocatable``. The pod count is
always checked ("Too many pods"); other resources only when the pod requests
them ("Insufficient <resource>").

Score (the ``LeastAllocated`` strategy, kube-scheduler's default, weights
cpu=1 memory=1): for each weighted resource
``(allocatable - (requested + podRequest)) * 100 // allocatable``, then the
weighted mean, integer-divided as kube-scheduler does.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from streams.scheduler.columns import NodeColumns, PodRequest
from streams.scheduler.framework import MAX_NODE_SCORE, FilterResult

NAME = "NodeResourcesFit"
REASON_TOO_MANY_PODS = "Too many pods"
REASON_INSUFFICIENT = "Insufficient {resource}"


@dataclasses.dataclass(frozen=True)
class NodeResourcesFitArgs:
    score_resources: tuple[tuple[str, int], ...] = (("cpu", 1), ("memory", 1))
    """(resource, weight) pairs of the LeastAllocated score; kube-scheduler's default."""

    def validate(self) -> None:
        for resource, weight in self.score_resources:
            if weight <= 0:
                raise ValueError(f"{NAME}: weight of {resource} must be positive, got {weight}")


class NodeResourcesFit:
    name = NAME

    def __init__(self, args: NodeResourcesFitArgs = NodeResourcesFitArgs()) -> None:
        args.validate()
        self.args = args

    def filter(self, pod: PodRequest, nodes: NodeColumns, candidates: np.ndarray) -> FilterResult:
        request = nodes.vector({**pod.requests, "pods": 1})
        count = len(nodes)
        free = nodes.allocatable[:count] - nodes.requested[:count]
        short = (request > free) & (request > 0)
        passed = candidates & ~short.any(axis=1)
        reasons: list[tuple[str, ...]] = [()] * count
        for index in np.flatnonzero(candidates & ~passed):
            reasons[index] = tuple(
                REASON_TOO_MANY_PODS if nodes.resources[column] == "pods"
                else REASON_INSUFFICIENT.format(resource=nodes.resources[column])
                for column in np.flatnonzero(short[index])
            )
        return FilterResult(passed=passed, reasons=reasons)

    def score(self, pod: PodRequest, nodes: NodeColumns, candidates: np.ndarray) -> np.ndarray:
        count = len(nodes)
        total = np.zeros(count, dtype=np.int64)
        weights = 0
        for resource, weight in self.args.score_resources:
            column = nodes.column(resource)
            allocatable = nodes.allocatable[:count, column]
            used = nodes.requested[:count, column] + pod.requests.get(resource, 0)
            with np.errstate(divide="ignore", invalid="ignore"):
                share = np.where(
                    (allocatable > 0) & (used <= allocatable),
                    (allocatable - used) * MAX_NODE_SCORE // np.maximum(allocatable, 1), 0)
            total += share * weight
            weights += weight
        return total // weights if weights else total
