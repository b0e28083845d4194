"""DefaultPreemption: kube-scheduler's priority preemption in PostFilter
(``framework/plugins/defaultpreemption``, ``framework/preemption``).

A pod that found no node may free one by evicting lower-priority pods:

1. Eligible unless ``preemptionPolicy: Never`` ("not eligible due to preemptionPolicy=Never.").
2. Candidates: the nodes that failed only with Unschedulable (removing pods may help; a PreFilter failure
   makes none). On each: take away every assigned pod of lower priority; if the pod still does not pass
   the profile's filters there, the node is no candidate. Else put the potential victims back one by one,
   most important first (higher priority, then earlier start), those whose eviction would violate a
   PodDisruptionBudget first: a pod that can stay while the preemptor still fits is reprieved, the others
   are the node's victims.
3. The node, in kube-scheduler's order (``pickOneNodeForPreemption``): fewest PDB violations, lowest highest
   victim priority, lowest sum of (priority + 2^31) over the victims, fewest victims, latest start among
   its highest-priority victims, then node name.

PDBs: PodDisruptionBudget objects (policy/v1) in the pod's namespace whose ``spec.selector`` matches and
that do not list the pod in ``status.disruptedPods``; each allows ``status.disruptionsAllowed`` evictions,
the victims use them up in importance order, and a victim beyond them violates the budget.

kube-scheduler examines a random sample of the candidates (``minCandidateNodesPercentage`` 10,
``minCandidateNodesAbsolute`` 100); this plugin examines every candidate, so the same inbox always picks
the same node. Waiting (Permit) pods are never victims.

With ElasticQuota, which runs first: a pod of a quota is preempted for only by ElasticQuota (within its
quota; it ends the PostFilter stage with UnschedulableAndUnresolvable when it finds no victims), so quota
guarantees are never bypassed; a pod of the default quota, which ElasticQuota leaves alone
(``disableDefaultQuotaPreemption``), gets kube-scheduler's preemption here. A pod that failed a PreFilter
(over its quota) gets none. Assignments are the only accounting, so no pod is counted twice.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

from streams.objects.args import ArgsReader
from streams.objects.podinfo import PodInfo
from streams.scheduler.framework import (
    REASON_NOT_ELIGIBLE, REMOVED_PODS, SUCCESS, CycleState, Diagnosis, PostFilterResult, Status, Victim,
    preemption_failure)
from streams.scheduler.state import Cluster
from streams.sloconfig.selectors import parse_selector

NAME = "DefaultPreemption"
PDB = "PodDisruptionBudget"
PRIORITY_OFFSET = 2**31
"""kube-scheduler adds MaxInt32 + 1 to each victim priority before summing, so negative priorities count."""


@dataclasses.dataclass(frozen=True)
class DefaultPreemptionArgs:
    min_candidate_nodes_percentage: int = 10
    """Accepted for compatibility; every candidate node is examined (see the module docstring)."""
    min_candidate_nodes_absolute: int = 100

    @classmethod
    def from_config(cls, raw: Mapping | None) -> "DefaultPreemptionArgs":
        reader = ArgsReader(NAME, raw, {"minCandidateNodesPercentage", "minCandidateNodesAbsolute"})
        percentage = reader.integer("minCandidateNodesPercentage", 10)
        absolute = reader.integer("minCandidateNodesAbsolute", 100)
        if not 0 <= percentage <= 100:
            raise reader.fail("minCandidateNodesPercentage", "not in valid range [0, 100]")
        if absolute < 0:
            raise reader.fail("minCandidateNodesAbsolute", "not in valid range [0, inf)")
        if percentage == 0 and absolute == 0:
            raise reader.fail("minCandidateNodesAbsolute", "cannot be zero at the same time as minCandidateNodesPercentage")
        return cls(percentage, absolute)


@dataclasses.dataclass(frozen=True)
class Budget:
    namespace: str
    selector: object
    allowed: int
    disrupted: frozenset[str]


class DefaultPreemption:
    name = NAME
    Args = DefaultPreemptionArgs
    watched_kinds = frozenset({PDB})

    def __init__(self, args: DefaultPreemptionArgs, cluster: Cluster) -> None:
        self.args = args
        self.cluster = cluster

    def post_filter(self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis) -> PostFilterResult:
        cluster = self.cluster
        count = len(cluster.columns)
        if pod.preemption_policy == "Never":
            return PostFilterResult(Status.unschedulable("preemption: " + REASON_NOT_ELIGIBLE, NAME))
        resolvable = diagnosis.resolvable if diagnosis.prefilter is None else None
        best = None
        for node in sorted(cluster.columns.names):
            row = cluster.columns.row[node]
            if resolvable is None or not resolvable[row]:
                continue
            found = self._victims_on(state, pod, node, row, diagnosis)
            if found is None:
                continue
            victims, violations = found
            key = self._rank(victims, violations, node)
            if best is None or key < best[0]:
                best = (key, node, victims)
        if best is None:
            helpful = 0 if resolvable is None else int(resolvable[:count].sum())
            return PostFilterResult(Status.unschedulable(preemption_failure(count, helpful), NAME))
        _, node, victims = best
        return PostFilterResult(SUCCESS, node, tuple(Victim(key, node) for key in victims))

    # -- one node --------------------------------------------------------------------------

    def _importance(self, key: str) -> tuple:
        """Most important first (``MoreImportantPod``): higher priority, then earlier start."""
        return (-self.cluster.pods[key].sort_priority, self.cluster.assigned_at.get(key, 0), key)

    def _victims_on(self, state: CycleState, pod: PodInfo, node: str, row: int, diagnosis: Diagnosis):
        """(victims most important first, PDB violations), or None when evicting cannot make the pod fit. The
        filters run with the pods taken away listed under ``REMOVED_PODS`` (kube-scheduler's RemovePod)."""
        cluster = self.cluster
        columns = cluster.columns
        potential = sorted((key for key in cluster.pods_assigned_to(node)
                            if key not in cluster.waiting and cluster.pods[key].sort_priority < pod.sort_priority),
                           key=self._importance)
        if not potential:
            return None
        removed = list(potential)
        for key in removed:
            victim = cluster.pods[key]
            columns.add_pod(node, victim.requests, victim.nonzero_requests(), -1)
        try:
            if not self._fits(state, removed, row, diagnosis):
                return None
            violating, fine = self._split_by_budget(potential)
            victims, violations = [], 0
            for group, violates in ((violating, True), (fine, False)):
                for key in group:
                    victim = cluster.pods[key]
                    columns.add_pod(node, victim.requests, victim.nonzero_requests(), 1)
                    removed.remove(key)
                    if self._fits(state, removed, row, diagnosis):
                        continue
                    columns.add_pod(node, victim.requests, victim.nonzero_requests(), -1)
                    removed.append(key)
                    victims.append(key)
                    violations += violates
            return sorted(victims, key=self._importance), violations
        finally:
            state.pop(REMOVED_PODS, None)
            for key in removed:
                victim = cluster.pods[key]
                columns.add_pod(node, victim.requests, victim.nonzero_requests(), 1)

    @staticmethod
    def _fits(state: CycleState, removed: list[str], row: int, diagnosis: Diagnosis) -> bool:
        state[REMOVED_PODS] = frozenset(removed)
        return bool(diagnosis.run_filters()[row]) if diagnosis.run_filters else True

    def _rank(self, victims: list[str], violations: int, node: str) -> tuple:
        pods = self.cluster.pods
        priorities = [pods[key].sort_priority for key in victims]
        top = max(priorities)
        earliest_top = min(self.cluster.assigned_at.get(key, 0) for key in victims if pods[key].sort_priority == top)
        return (violations, top, sum(p + PRIORITY_OFFSET for p in priorities), len(victims), -earliest_top, node)

    # -- PodDisruptionBudgets --------------------------------------------------------------

    def _budgets(self) -> list[Budget]:
        out = []
        for key, record in sorted(self.cluster.objects.get(PDB, {}).items()):
            manifest = _manifest(record)
            spec, status = manifest.get("spec") or {}, manifest.get("status") or {}
            try:
                selector = parse_selector(spec.get("selector") or {}, "spec.selector")
            except ValueError:
                continue
            if selector.empty or selector.error:
                continue
            out.append(Budget(key.partition("/")[0], selector, int(status.get("disruptionsAllowed") or 0),
                              frozenset((status.get("disruptedPods") or {}).keys())))
        return out

    def _split_by_budget(self, keys: list[str]) -> tuple[list[str], list[str]]:
        """``filterPodsWithPDBViolation``: (violating, not violating), each in the given order."""
        budgets = self._budgets()
        allowed = [budget.allowed for budget in budgets]
        violating, fine = [], []
        for key in keys:
            pod = self.cluster.pods[key]
            violates = False
            for index, budget in enumerate(budgets):
                if budget.namespace != pod.namespace or not budget.selector.matches(pod.labels) \
                        or pod.name in budget.disrupted:
                    continue
                allowed[index] -= 1
                if allowed[index] < 0:
                    violates = True
            (violating if violates else fine).append(key)
        return violating, fine


def _manifest(record: Mapping) -> dict:
    try:
        value = json.loads(record.get("manifest") or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
