"""NodeResourcesBalancedAllocation: prefer the nodes whose resources the pod would leave used most evenly
(kube-scheduler v1.34 ``noderesources/balanced_allocation.go``).

Score, per node, over the ``resources`` with allocatable A > 0 (an extended resource only when the pod
requests it) and R = the node's requested plus the pod's request (actual requests, not the non-zero ones the
Fit score uses: kube-scheduler's ``useRequested``)::

    f_r   = min(R_r / A_r, 1)
    std   = |f_1 - f_2| / 2                     with two resources
          = sqrt(mean((f_r - mean(f))^2))      with more; 0 with fewer
    score = int((1 - std) * 100)

A pod that requests none of the resources (best effort) scores 0 everywhere: kube-scheduler's PreScore skips
it, so that best-effort pods do not all pile onto one node (kubernetes/kubernetes#129138). The resources'
weights are read and validated, as kube-scheduler does, but do not weigh.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from streams.objects.args import ArgsError, ArgsReader
from streams.objects.podinfo import PodInfo
from streams.scheduler.framework import CycleState, register, scored_rows
from streams.scheduler.state import Cluster

NAME = "NodeResourcesBalancedAllocation"
NATIVE = ("cpu", "memory", "ephemeral-storage")
"""Resources scored whether or not the pod requests them; any other counts only when it does."""


@dataclasses.dataclass(frozen=True)
class BalancedAllocationArgs:
    resources: tuple[tuple[str, int], ...] = (("cpu", 1), ("memory", 1))
    """``resources``: (name, weight); kube-scheduler's default cpu=1, memory=1."""

    @classmethod
    def from_config(cls, raw) -> "BalancedAllocationArgs":
        reader = ArgsReader(NAME, raw, {"resources"})
        items = reader.sequence("resources")
        if items is None:
            return cls()
        pairs = []
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise ArgsError(f"{NAME}: resources: each entry needs a name, got {item!r}")
            weight = item.get("weight", 1)
            if isinstance(weight, bool) or not isinstance(weight, int):
                raise ArgsError(f"{NAME}: resources[{item['name']}].weight must be an integer")
            pairs.append((item["name"], weight))
        return cls(tuple(pairs))

    def validate(self) -> None:
        for resource, weight in self.resources:
            if not 1 <= weight <= 100:
                raise ArgsError(f"{NAME}: resources[{resource}].weight must be in [1, 100], got {weight}")


class BalancedAllocation:
    name = NAME
    Args = BalancedAllocationArgs
    events_to_register = register()

    def __init__(self, args: BalancedAllocationArgs, cluster: Cluster) -> None:
        args.validate()
        self.args = args
        self.cluster = cluster
        self._prepared: tuple | None = None

    def _allocatable(self, count: int) -> list[tuple[str, int, np.ndarray, np.ndarray | None]]:
        """Per configured resource the nodes have: (name, row, allocatable as float with 0 read as 1, the
        mask of nodes that have it or None when all do), until the columns change."""
        columns = self.cluster.columns
        key = (columns.version, count, len(columns.resources))
        if self._prepared is None or self._prepared[0] != key:
            prepared = []
            for resource, _ in self.args.resources:
                index = columns.index.get(resource)
                if index is not None:
                    allocatable = columns.allocatable[index, :count].astype(np.float64)
                    has = allocatable > 0
                    prepared.append((resource, index, np.maximum(allocatable, 1.0), None if has.all() else has))
            self._prepared = (key, prepared)
        return self._prepared[1]

    def score(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> np.ndarray:
        count = len(candidates)
        if not any(pod.requests.get(resource, 0) for resource, _ in self.args.resources):
            return np.zeros(count, dtype=np.int64)
        rows = scored_rows(state, candidates)
        width = rows.stop - rows.start
        requested = self.cluster.columns.requested
        fractions, present = [], []
        for resource, index, allocatable, has in self._allocatable(count):
            request = pod.requests.get(resource, 0)
            if resource not in NATIVE and not request:
                continue
            fraction = np.minimum((requested[index, rows] + request) / allocatable[rows], 1.0)
            fractions.append(fraction if has is None else np.where(has[rows], fraction, 0.0))
            present.append(None if has is None else has[rows])
        out = np.zeros(count, dtype=np.int64)
        if not fractions:
            out[rows] = 100
            return out
        if len(fractions) == 2 and present[0] is None and present[1] is None:
            deviation = np.abs(fractions[0] - fractions[1]) / 2
        else:
            masks = [np.ones(width, dtype=bool) if has is None else has for has in present]
            deviation = _deviation(np.array(fractions), np.array(masks))
        out[rows] = 100 * (1 - deviation)
        return out


def _deviation(fractions: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Per node (column), the std of its present fractions, in ``balancedResourceScorer``'s float operations:
    ``|f_1 - f_2| / 2`` for two, the population std for more."""
    n = present.sum(axis=0)
    spread = (np.where(present, fractions, -np.inf).max(axis=0) - np.where(present, fractions, np.inf).min(axis=0)) / 2
    mean = (fractions * present).sum(axis=0) / np.maximum(n, 1)
    variance = (((fractions - mean) ** 2) * present).sum(axis=0) / np.maximum(n, 1)
    return np.where(n > 2, np.sqrt(variance), np.where(n == 2, spread, 0.0))
