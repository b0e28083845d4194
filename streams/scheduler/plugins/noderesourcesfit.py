"""NodeResourcesFit: does the pod's request fit the node's free allocatable? (kube-scheduler ``noderesources.Fit``)

Filter: "Too many pods" when the node already holds its ``pods`` allocatable;
then, for every resource the pod requests (> 0), "Insufficient <resource>"
when ``request > allocatable - requested``. Extended resources are checked
like any other, including Koordinator's overcommitted ones: a BE pod asks for
``kubernetes.io/batch-cpu`` (milli-cores) and ``kubernetes.io/batch-memory``,
a mid pod for ``kubernetes.io/mid-cpu``/``mid-memory``, and fits against the
batch/mid allocatable the node advertises. A node fails with every short
resource (Unschedulable: removing pods can help).

Score (``scoringStrategy``, default LeastAllocated with cpu=1, memory=1): per
weighted resource with allocatable A > 0 (an extended resource only when the
pod requests it), with R = node requested + pod request, where cpu and memory
use kube-scheduler's non-zero requests (100m / 200Mi per container without
one)::

    LeastAllocated: (A - R) * 100 // A   (0 when R > A)
    MostAllocated:  min(R, A) * 100 // A
    score = sum(weight * s) // sum(weight)   (over the resources with A > 0; 0 when none)
"""

from __future__ import annotations

import dataclasses

import numpy as np

from streams.objects.args import ArgsError, ArgsReader
from streams.objects.podinfo import PodInfo
from streams.scheduler.columns import CPU, MEMORY, PODS
from streams.scheduler.framework import (
    ASSIGNED_POD_DELETE, NODE_ADD, NODE_UPDATE, RESTORED, SUCCESS, CycleState, FilterResult, Status, register,
    scored_rows)
from streams.scheduler.scoring import Capacity
from streams.scheduler.state import Cluster

NAME = "NodeResourcesFit"
REASON_TOO_MANY_PODS = "Too many pods"
REASON_INSUFFICIENT = "Insufficient {resource}"
LEAST_ALLOCATED, MOST_ALLOCATED = "LeastAllocated", "MostAllocated"
NONZERO_ROWS = {"cpu": CPU, "memory": MEMORY}


@dataclasses.dataclass(frozen=True)
class NodeResourcesFitArgs:
    scoring_type: str = LEAST_ALLOCATED
    """``scoringStrategy.type``: LeastAllocated (spread, kube-scheduler's default) or MostAllocated (pack)."""
    score_resources: tuple[tuple[str, int], ...] = (("cpu", 1), ("memory", 1))
    """``scoringStrategy.resources``: (name, weight); kube-scheduler's default cpu=1, memory=1."""
    ignored_resources: tuple[str, ...] = ()
    """``ignoredResources``: extended resources the filter does not check."""
    ignored_resource_groups: tuple[str, ...] = ()
    """``ignoredResourceGroups``: prefixes ("example.com" for "example.com/x") the filter does not check."""

    @classmethod
    def from_config(cls, raw) -> "NodeResourcesFitArgs":
        reader = ArgsReader(NAME, raw, {"scoringStrategy", "ignoredResources", "ignoredResourceGroups"})
        args = cls()
        strategy = reader.mapping("scoringStrategy")
        if strategy is not None:
            sub = ArgsReader(NAME, strategy, {"type", "resources", "requestedToCapacityRatio"})
            kind = sub.string("type", LEAST_ALLOCATED)
            if kind == "RequestedToCapacityRatio" or sub.has("requestedToCapacityRatio"):
                raise ArgsError(f"{NAME}: scoringStrategy.type RequestedToCapacityRatio is not supported")
            resources = sub.sequence("resources")
            pairs = args.score_resources
            if resources is not None:
                pairs = []
                for item in resources:
                    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                        raise ArgsError(f"{NAME}: scoringStrategy.resources: each entry needs a name, got {item!r}")
                    weight = item.get("weight", 1)
                    if isinstance(weight, bool) or not isinstance(weight, int):
                        raise ArgsError(f"{NAME}: scoringStrategy.resources[{item['name']}].weight must be an integer")
                    pairs.append((item["name"], weight))
                pairs = tuple(pairs)
            args = dataclasses.replace(args, scoring_type=kind, score_resources=pairs)
        ignored = reader.sequence("ignoredResources") or []
        groups = reader.sequence("ignoredResourceGroups") or []
        return dataclasses.replace(args, ignored_resources=tuple(map(str, ignored)),
                                   ignored_resource_groups=tuple(map(str, groups)))

    def validate(self) -> None:
        if self.scoring_type not in (LEAST_ALLOCATED, MOST_ALLOCATED):
            raise ArgsError(f"{NAME}: scoringStrategy.type must be LeastAllocated or MostAllocated, "
                            f"got {self.scoring_type}")
        for resource, weight in self.score_resources:
            if not 1 <= weight <= 100:
                raise ArgsError(f"{NAME}: scoringStrategy.resources[{resource}].weight must be in [1, 100], "
                                f"got {weight}")


class NodeResourcesFit:
    name = NAME
    Args = NodeResourcesFitArgs
    events_to_register = register(NODE_ADD, NODE_UPDATE, ASSIGNED_POD_DELETE)

    def __init__(self, args: NodeResourcesFitArgs, cluster: Cluster) -> None:
        args.validate()
        self.args = args
        self.cluster = cluster
        self._prepared: tuple | None = None
        self._reasons: dict[str, str] = {}

    def _checked(self, resource: str) -> bool:
        if not self.args.ignored_resources and not self.args.ignored_resource_groups:
            return True
        if resource in self.args.ignored_resources:
            return False
        group = resource.split("/", 1)[0] if "/" in resource else None
        return group is None or group not in self.args.ignored_resource_groups

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        columns = self.cluster.columns
        reasons = self._reasons
        wanted = []
        for resource, value in pod.requests.items():
            if value > 0 and self._checked(resource):
                reason = reasons.get(resource)
                if reason is None:
                    reason = reasons[resource] = REASON_INSUFFICIENT.format(resource=resource)
                wanted.append((columns.column(resource), value, reason))
        state[NAME] = wanted
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> FilterResult:
        columns = self.cluster.columns
        count = len(candidates)
        allocatable, requested = columns.allocatable, columns.requested
        restored = state.get(RESTORED)
        if restored:
            requested = requested[:, :count].copy()
            for row, amounts in restored.items():
                for resource, amount in amounts.items():
                    index = columns.index.get(resource)
                    if index is not None and row < count:
                        requested[index, row] -= amount
        too_many = requested[PODS, :count] + 1 > allocatable[PODS, :count]
        failed = too_many.copy()
        reasons = [(REASON_TOO_MANY_PODS, too_many)]
        for index, value, reason in state[NAME]:
            short = requested[index, :count] + value > allocatable[index, :count]
            failed |= short
            reasons.append((reason, short))
        return FilterResult(candidates & ~failed, tuple(reasons))

    def _capacities(self, count: int) -> list[tuple[str, int, Capacity, np.ndarray]]:
        """Per score resource: (name, row, prepared capacity, weight where the node has it), per node change."""
        columns = self.cluster.columns
        key = (columns.version, count, len(columns.resources))
        if self._prepared is None or self._prepared[0] != key:
            prepared = []
            for resource, weight in self.args.score_resources:
                index = columns.index.get(resource)
                if index is None:
                    continue
                capacity = Capacity(columns.allocatable[index, :count])
                prepared.append((resource, index, capacity, capacity.present * float(weight)))
            self._prepared = (key, prepared)
        return self._prepared[1]

    def score(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> np.ndarray:
        columns = self.cluster.columns
        count = len(candidates)
        rows = scored_rows(state, candidates)
        width = rows.stop - rows.start
        total = np.zeros(width, dtype=np.float64)
        weights = None
        most = self.args.scoring_type == MOST_ALLOCATED
        for resource, index, capacity, present in self._capacities(count):
            if resource in NONZERO_ROWS:
                used = columns.nonzero[NONZERO_ROWS[resource], rows] + pod.nonzero_requests().get(resource, 0)
            else:
                request = pod.requests.get(resource, 0)
                if request == 0:
                    continue
                used = columns.requested[index, rows] + request
            share = capacity.most_requested(used, rows) if most else capacity.least_requested(used, rows)
            share *= present[rows]
            total += share
            weights = present[rows] if weights is None else weights + present[rows]
        out = np.zeros(count, dtype=np.int64)
        if weights is not None:
            total /= np.maximum(weights, 1.0)
            out[rows] = np.floor(total, out=total)
        return out
