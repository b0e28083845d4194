"""TaintToleration: a pod only lands on nodes whose hard taints it tolerates (kube-scheduler ``tainttoleration``).

Filter: the node's first NoSchedule or NoExecute taint (in the node's order)
that none of the pod's tolerations tolerates fails it with
"node(s) had untolerated taint {<key>: <value>}" (UnschedulableAndUnresolvable).
PreferNoSchedule taints never filter.

Score (kube-scheduler v1.34 ``taint_toleration.go``): a node's count of
PreferNoSchedule taints that none of the pod's tolerations with an empty or
PreferNoSchedule effect tolerates, normalized in reverse over the feasible
nodes (``helper.DefaultNormalizeScore``)::

    score = 100 - 100 * count // max(count)      (100 everywhere when max(count) = 0)

Vectorized by caching: only tainted nodes are examined, once per distinct set
of tolerations, until a node's taints change.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from streams.objects.args import no_args
from streams.objects.podinfo import PodInfo
from streams.scheduler.framework import MAX_NODE_SCORE, NODE_ADD, NODE_UPDATE, Code, CycleState, FilterResult, register
from streams.scheduler.scoring import normalized
from streams.scheduler.state import NO_SCHEDULE_EFFECTS, Cluster
from streams.scheduler.taints import key_of, tolerated

NAME = "TaintToleration"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
REASON_UNTOLERATED = "node(s) had untolerated taint {{{key}: {value}}}"


@dataclasses.dataclass(frozen=True)
class TaintTolerationArgs:
    """No args."""

    @classmethod
    def from_config(cls, raw) -> "TaintTolerationArgs":
        no_args(NAME, raw)
        return cls()

    def validate(self) -> None:
        pass


class TaintToleration:
    name = NAME
    Args = TaintTolerationArgs
    events_to_register = register(NODE_ADD, NODE_UPDATE)

    def __init__(self, args: TaintTolerationArgs, cluster: Cluster) -> None:
        self.cluster = cluster
        self._cache: dict[tuple, tuple[np.ndarray, tuple[tuple[str, np.ndarray], ...]]] = {}
        self._intolerable: dict[tuple, tuple[int, np.ndarray | None]] = {}
        self._version = -1

    def _current(self) -> None:
        if self._version != self.cluster.taints_version:
            self._cache.clear()
            self._intolerable.clear()
            self._version = self.cluster.taints_version

    def filter(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> FilterResult:
        self._current()
        key = key_of(pod.tolerations)
        cached = self._cache.get(key)
        if cached is None or len(cached[0]) != len(candidates):
            cached = self._evaluate(pod, len(candidates))
            self._cache[key] = cached
        failed, reasons = cached
        if not reasons:
            return FilterResult(candidates)
        return FilterResult(candidates & ~failed, reasons, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def score(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> np.ndarray | int:
        """No node with a PreferNoSchedule taint the pod does not tolerate: 100 on every node (what the reversed
        normalization of all-zero counts gives), without an array."""
        self._current()
        tolerations = tuple(t for t in pod.tolerations if t.get("effect") in (None, "", PREFER_NO_SCHEDULE))
        key = key_of(tolerations)
        cached = self._intolerable.get(key)
        if cached is None or cached[0] != len(candidates):
            counts = self._count_intolerable(tolerations, len(candidates))
            cached = self._intolerable[key] = (len(candidates), counts if counts.any() else None)
        counts = cached[1]
        return MAX_NODE_SCORE if counts is None else normalized(counts, candidates, reverse=True)

    def _count_intolerable(self, tolerations: tuple, count: int) -> np.ndarray:
        """Per node, its PreferNoSchedule taints none of ``tolerations`` tolerates."""
        counts = np.zeros(count, dtype=np.int64)
        for row, name in enumerate(self.cluster.columns.names[:count]):
            counts[row] = sum(1 for taint in self.cluster.nodes[name].taints
                              if taint.get("effect") == PREFER_NO_SCHEDULE and not tolerated(taint, tolerations))
        return counts

    def _evaluate(self, pod: PodInfo, count: int):
        failed = np.zeros(count, dtype=bool)
        by_reason: dict[str, np.ndarray] = {}
        for row, name in enumerate(self.cluster.columns.names[:count]):
            for taint in self.cluster.nodes[name].taints:
                if taint.get("effect") in NO_SCHEDULE_EFFECTS and not tolerated(taint, pod.tolerations):
                    reason = REASON_UNTOLERATED.format(key=taint.get("key"), value=taint.get("value") or "")
                    by_reason.setdefault(reason, np.zeros(count, dtype=bool))[row] = True
                    failed[row] = True
                    break
        return failed, tuple(sorted(by_reason.items()))
