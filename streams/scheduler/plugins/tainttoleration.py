"""TaintToleration: a pod only lands on nodes whose hard taints it tolerates (kube-scheduler ``tainttoleration``).

Filter: the node's first NoSchedule or NoExecute taint (in the node's order)
that none of the pod's tolerations tolerates fails it with
"node(s) had untolerated taint {<key>: <value>}" (UnschedulableAndUnresolvable).
PreferNoSchedule taints never filter.

Vectorized by caching: only tainted nodes are examined, once per distinct set
of tolerations, until a node's taints change.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from streams.objects.args import no_args
from streams.objects.podinfo import PodInfo
from streams.scheduler.framework import NODE_ADD, NODE_UPDATE, Code, CycleState, FilterResult, register
from streams.scheduler.state import NO_SCHEDULE_EFFECTS, Cluster
from streams.scheduler.taints import key_of, tolerated

NAME = "TaintToleration"
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
        self._version = -1

    def filter(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> FilterResult:
        cluster = self.cluster
        if self._version != cluster.taints_version:
            self._cache.clear()
            self._version = cluster.taints_version
        key = key_of(pod.tolerations)
        cached = self._cache.get(key)
        if cached is None or len(cached[0]) != len(candidates):
            cached = self._evaluate(pod, len(candidates))
            self._cache[key] = cached
        failed, reasons = cached
        if not reasons:
            return FilterResult(candidates)
        return FilterResult(candidates & ~failed, reasons, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

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
