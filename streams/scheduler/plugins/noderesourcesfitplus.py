"""NodeResourcesFitPlus: a scoring strategy per resource (Koordinator v1.6, ``noderesourcefitplus``).

Lets GPU pods pack (MostAllocated) while cpu and memory spread
(LeastAllocated). Score only. Over the resources the pod requests (> 0;
cpu, memory, ephemeral-storage, extended resources; never ``pods``) that
``resources`` configures, with A = node allocatable and
R = node-side + pod-side request::

    node-side: cpu, memory -> the node's non-zero requested (100m / 200Mi per container
               without a request); other resources -> the node's requested
    pod-side:  containers summed with the same non-zero defaults, sidecar init
               containers added, other init containers by max, plus overhead in
               whole units (Koordinator's ``calculatePodResourceRequest``)
    MostAllocated:  0 if A == 0, else min(R, A) * 100 // A
    LeastAllocated: 0 if A == 0 or R > A, else (A - R) * 100 // A
    score = sum(s * weight) // sum(weight), or 100 when no requested resource is configured

Koordinator neither defaults nor validates the args (an empty ``resources``
scores every node 100); here an unknown ``type`` is rejected rather than
silently scoring 0.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from streams.objects.args import ArgsError, ArgsReader
from streams.objects.podinfo import PodInfo
from streams.scheduler.columns import CPU, MEMORY
from streams.scheduler.framework import MAX_NODE_SCORE, CycleState, register
from streams.scheduler.scoring import least_requested, most_requested
from streams.scheduler.state import Cluster

NAME = "NodeResourcesFitPlus"
MOST_ALLOCATED, LEAST_ALLOCATED = "MostAllocated", "LeastAllocated"
NONZERO_ROWS = {"cpu": CPU, "memory": MEMORY}


@dataclasses.dataclass(frozen=True)
class NodeResourcesFitPlusArgs:
    resources: tuple[tuple[str, str, int], ...] = ()
    """``resources``: {name: {type: MostAllocated|LeastAllocated, weight}} as (name, type, weight); no default."""

    @classmethod
    def from_config(cls, raw) -> "NodeResourcesFitPlusArgs":
        reader = ArgsReader(NAME, raw, {"resources"})
        resources = reader.mapping("resources") or {}
        out = []
        for name, spec in sorted(resources.items()):
            sub = ArgsReader(NAME, spec if isinstance(spec, dict) else None, {"type", "weight"})
            if not isinstance(spec, dict):
                raise ArgsError(f"{NAME}: resources.{name} must be an object with type and weight")
            out.append((str(name), sub.string("type", "") or "", sub.integer("weight", 0) or 0))
        args = cls(tuple(out))
        args.validate()
        return args

    def validate(self) -> None:
        for name, kind, _ in self.resources:
            if kind not in (MOST_ALLOCATED, LEAST_ALLOCATED):
                raise ArgsError(f"{NAME}: resources.{name}.type must be MostAllocated or LeastAllocated, got {kind!r}")


class NodeResourcesFitPlus:
    name = NAME
    Args = NodeResourcesFitPlusArgs
    events_to_register = register()
    """Score only: it rejects no pod."""

    def __init__(self, args: NodeResourcesFitPlusArgs, cluster: Cluster) -> None:
        args.validate()
        self.args = args
        self.cluster = cluster

    def score(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> np.ndarray:
        columns = self.cluster.columns
        count = len(candidates)
        total = np.zeros(count, dtype=np.float64)
        weight_sum = 0
        for resource, kind, weight in self.args.resources:
            if resource == "pods" or pod.requests.get(resource, 0) <= 0:
                continue
            weight_sum += weight
            index = columns.index.get(resource)
            if index is None:
                continue
            allocatable = columns.allocatable[index, :count]
            node_side = (columns.nonzero[NONZERO_ROWS[resource], :count] if resource in NONZERO_ROWS
                         else columns.requested[index, :count])
            used = node_side + pod.nonzero_request(resource)
            scorer = most_requested if kind == MOST_ALLOCATED else least_requested
            total += scorer(used, allocatable) * float(weight)
        if weight_sum == 0:
            return np.full(count, MAX_NODE_SCORE, dtype=np.int64)
        return np.floor(total / weight_sum).astype(np.int64)
