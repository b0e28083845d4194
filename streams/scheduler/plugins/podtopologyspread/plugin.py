"""PodTopologySpread: spread matching pods evenly over topology domains (kube-scheduler v1.34
``podtopologyspread/{plugin,common,filtering,scoring}.go``).

Counting, per constraint (``calPreFilterState``): only nodes that carry every constraint's topology key take
part, and of those the nodes the constraint includes (``nodeAffinityPolicy: Honor``: the pod's nodeSelector and
required node affinity match; ``nodeTaintsPolicy: Honor``: the pod tolerates the node's NoSchedule/NoExecute
taints). A domain's count is the number of assigned, non-terminating pods of the pod's namespace matching the
selector on its included nodes (``counting``); the domains are those with at least one included node. When
every node with the key is included (no other constraint's key missing there, no inclusion policy leaving a
node out), the counts per domain are the ones ``counting`` keeps up to date as pods come and go; else they
are summed over the included nodes in one numpy pass.

Filter, ``whenUnsatisfiable: DoNotSchedule``, each constraint in order, a node fails at the first it breaks:

    node lacks the topology key                    -> "node(s) didn't match pod topology spread constraints
                                                       (missing required label)"  UnschedulableAndUnresolvable
    count[domain(node)] + self - min > maxSkew     -> "node(s) didn't match pod topology spread constraints"
                                                       Unschedulable

where ``self`` is 1 when the selector matches the pod's own labels and ``min`` the lowest domain count, or 0
when there are fewer domains than ``minDomains``. A ``FilterResult`` has one code: UnschedulableAndUnresolvable
when every failing node lacks a key, else Unschedulable for all of them (preemption then also tries the nodes
lacking a key, and finds they still fail).

Score, ``whenUnsatisfiable: ScheduleAnyway`` (``scoring.go``), over the feasible nodes. Nodes lacking one of the
keys are ignored (score 0) unless the constraints are the system defaults. Per constraint, with ``n`` the
number of distinct domains among the scored nodes (for ``kubernetes.io/hostname``: the number of scored nodes)::

    weight = log(n + 2)
    raw    = round(sum over constraints whose key the node has of count * weight + (maxSkew - 1))
    score  = 100 * (max + min - raw) // max      (100 everywhere when max is 0)

where ``count`` is the domain's count as for the filter, except that for hostname it is the node's own count
whatever the inclusion policies, and ``min``/``max`` run over the scored nodes: the emptier the domain, the
higher the score.

Default constraints apply to a pod without constraints of its own (``constraints``). PreFilter skips a pod
without DoNotSchedule constraints, so a pod without constraints and no defaults that apply costs one substring
test of its manifest.

Preemption's dry runs (``framework.REMOVED_PODS``) see a victim leave its domain, as kube-scheduler's
``RemovePod`` (``updateWithPod(victim, preemptor, node, -1)``): a victim in the pod's namespace, on a node with
every constraint's key, leaves the count of each constraint whose selector it matches and whose inclusion
policies take its node; the global minimum is then taken again.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from streams.objects.podinfo import PodInfo
from streams.scheduler.framework import (
    ASSIGNED_POD_DELETE, NODE_ADD, NODE_UPDATE, REMOVED_PODS, SKIP, SUCCESS, Code, CycleState, FilterResult, Status,
    register)
from streams.scheduler.plugins.podtopologyspread.args import NAME, SYSTEM, PodTopologySpreadArgs
from streams.scheduler.plugins.podtopologyspread.constraints import (
    DO_NOT_SCHEDULE, HONOR, HOSTNAME, SCHEDULE_ANYWAY, Constraint, constraints_of, own_constraints)
from streams.scheduler.plugins.podtopologyspread.counting import MatchingPods, terminating
from streams.scheduler.plugins.podtopologyspread.nodes import NodeView
from streams.scheduler.state import Cluster

REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
REASON_NODE_LABEL_NOT_MATCH = REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
OWN = NAME + "/own"
"""CycleState key: the pod's own raw constraints."""
NO_DOMAIN_MINIMUM = 2**31 - 1
"""kube-scheduler's empty critical path (``math.MaxInt32``), replaced by 0 as there are then fewer domains than
minDomains (at least 1)."""


@dataclasses.dataclass(frozen=True)
class ConstraintCounts:
    """What PreFilter computes for one DoNotSchedule constraint."""

    constraint: Constraint
    domain: np.ndarray
    """Each node's domain index (-1: the node lacks the key)."""
    values: list[str]
    """The domain (topology value) of each index."""
    count: np.ndarray
    """Matching pods per domain index (0 for a domain without included nodes)."""
    present: np.ndarray
    """Domains with at least one included node (kube-scheduler's ``TpValueToMatchNum`` keys)."""
    minimum: int
    """The global minimum: the lowest domain count, 0 when there are fewer domains than minDomains."""
    self_match: int
    included: np.ndarray
    """The nodes that count: with every constraint's key and taken by this constraint's inclusion policies."""


def _minimum(constraint: Constraint, count: np.ndarray, present: np.ndarray) -> int:
    """The global minimum over the present domains; 0 when there are fewer of them than ``minDomains``."""
    if int(present.sum()) < constraint.min_domains:
        return 0
    return int(count[present].min()) if present.any() else NO_DOMAIN_MINIMUM


class PodTopologySpread:
    name = NAME
    Args = PodTopologySpreadArgs
    events_to_register = register(NODE_ADD, NODE_UPDATE, ASSIGNED_POD_DELETE)

    def __init__(self, args: PodTopologySpreadArgs, cluster: Cluster) -> None:
        args.validate()
        self.cluster = cluster
        self.defaults = tuple(c.as_raw() for c in args.constraints)
        self.system_defaulted = args.defaulting_type == SYSTEM
        self._has_hard_defaults = any(c["whenUnsatisfiable"] == DO_NOT_SCHEDULE for c in self.defaults)
        self._has_soft_defaults = any(c["whenUnsatisfiable"] == SCHEDULE_ANYWAY for c in self.defaults)
        self.pods = MatchingPods(cluster)
        self.nodes = NodeView(cluster)

    def observe(self, change: object) -> None:
        self.pods.observe(change)

    # -- filter --------------------------------------------------------------------------

    def _own(self, state: CycleState, pod: PodInfo) -> tuple:
        """The pod's own raw constraints, read once per cycle."""
        own = state.get(OWN)
        if own is None:
            own = state[OWN] = own_constraints(pod.record)
        return own

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        own = self._own(state, pod)
        if not own and not self._has_hard_defaults:
            return SKIP
        constraints = constraints_of(own, pod.labels, pod.owner_kinds, self.defaults, DO_NOT_SCHEDULE)
        if not constraints:
            return SKIP
        state[NAME] = self._counts(pod, constraints)
        return SUCCESS

    def _counts(self, pod: PodInfo, constraints: tuple[Constraint, ...]) -> tuple[ConstraintCounts, ...]:
        """``calPreFilterState``: each constraint's domain counts and global minimum."""
        domains = [self.nodes.domains(c.topology_key) for c in constraints]
        with_keys = np.ones(len(self.cluster.columns.names), dtype=bool)
        for ids, _ in domains:
            with_keys &= ids >= 0
        out = []
        for constraint, (ids, values) in zip(constraints, domains):
            included = with_keys & self._included(pod, constraint)
            if np.array_equal(included, ids >= 0):
                count = self.pods.per_domain(pod.namespace, constraint.selector, constraint.topology_key, ids,
                                             len(values)).copy()
                present = np.ones(len(values), dtype=bool)
            else:
                per_node = self.pods.per_node(pod.namespace, constraint.selector)
                count = np.bincount(ids[included], weights=per_node[included],
                                    minlength=len(values)).astype(np.int64)
                present = np.bincount(ids[included], minlength=len(values)) > 0
            out.append(ConstraintCounts(constraint, ids, values, count, present, _minimum(constraint, count, present),
                                        int(constraint.selector.matches(pod.labels)), included))
        return tuple(out)

    def _without(self, pod: PodInfo, counts: tuple[ConstraintCounts, ...],
                 removed: frozenset[str]) -> tuple[ConstraintCounts, ...]:
        """``counts`` with the pods a preemption dry run took away left out (``RemovePod``)."""
        rows = self.cluster.columns.row
        lowered = [entry.count.copy() for entry in counts]
        for key in sorted(removed):
            victim, node = self.cluster.pods.get(key), self.cluster.assignment.get(key)
            row = rows.get(node) if node is not None else None
            if victim is None or row is None or victim.namespace != pod.namespace or terminating(victim):
                continue
            for entry, count in zip(counts, lowered):
                domain = int(entry.domain[row])
                if domain >= 0 and entry.included[row] and entry.constraint.selector.matches(victim.labels):
                    count[domain] -= 1
        return tuple(dataclasses.replace(entry, count=count, minimum=_minimum(entry.constraint, count, entry.present))
                     for entry, count in zip(counts, lowered))

    def _included(self, pod: PodInfo, constraint: Constraint) -> np.ndarray:
        """``matchNodeInclusionPolicies``."""
        included = np.ones(len(self.cluster.columns.names), dtype=bool)
        if constraint.node_affinity_policy == HONOR:
            included &= self.nodes.affinity_match(pod)
        if constraint.node_taints_policy == HONOR:
            included &= self.nodes.tolerated_nodes(pod)
        return included

    def filter(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> FilterResult:
        counts = state.get(NAME)
        if counts is None:
            constraints = constraints_of(self._own(state, pod), pod.labels, pod.owner_kinds, self.defaults,
                                         DO_NOT_SCHEDULE)
            counts = self._counts(pod, constraints)
        removed = state.get(REMOVED_PODS)
        if removed:
            counts = self._without(pod, counts, removed)
        size = len(candidates)
        undecided = candidates.copy()
        missing = np.zeros(size, dtype=bool)
        skewed = np.zeros(size, dtype=bool)
        for entry in counts:
            ids = entry.domain[:size]
            lacks = undecided & (ids < 0)
            missing |= lacks
            undecided &= ~lacks
            matched = entry.count[np.maximum(ids, 0)] if len(entry.count) else np.zeros(size, dtype=np.int64)
            breaks = undecided & (matched + entry.self_match - entry.minimum > entry.constraint.max_skew)
            skewed |= breaks
            undecided &= ~breaks
        failed = missing | skewed
        if not failed.any():
            return FilterResult(candidates)
        code = Code.UNSCHEDULABLE if skewed.any() else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        return FilterResult(candidates & ~failed, ((REASON_CONSTRAINTS_NOT_MATCH, skewed),
                                                   (REASON_NODE_LABEL_NOT_MATCH, missing)), code)

    # -- score ---------------------------------------------------------------------------

    def score(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> np.ndarray | int:
        size = len(candidates)
        own = self._own(state, pod)
        if not own and not self._has_soft_defaults:
            return 0
        constraints = constraints_of(own, pod.labels, pod.owner_kinds, self.defaults, SCHEDULE_ANYWAY)
        if not constraints:
            return 0
        require_all = bool(own) or not self.system_defaulted
        domains = [self.nodes.domains(c.topology_key) for c in constraints]
        with_keys = np.ones(size, dtype=bool)
        for ids, _ in domains:
            with_keys &= ids[:size] >= 0
        scored = candidates & with_keys if require_all else candidates.copy()
        eligible = with_keys if require_all else np.ones(size, dtype=bool)
        total = np.zeros(size, dtype=np.float64)
        for constraint, (ids, values) in zip(constraints, domains):
            ids = ids[:size]
            has = ids >= 0
            per_node = self.pods.per_node(pod.namespace, constraint.selector)[:size]
            if constraint.topology_key == HOSTNAME:
                count = per_node
                domains_seen = int(scored.sum())
            else:
                included = eligible & has & self._included(pod, constraint)[:size]
                by_domain = np.bincount(ids[included], weights=per_node[included], minlength=len(values))
                count = np.where(has, by_domain.astype(np.int64)[np.maximum(ids, 0)] if len(values) else 0, 0)
                domains_seen = len(np.unique(ids[scored & has])) + int(bool((scored & ~has).any()))
            weight = math.log(domains_seen + 2)
            total += np.where(has, count * weight + (constraint.max_skew - 1), 0.0)
        raw = np.floor(total + 0.5).astype(np.int64)
        return _normalized(raw, scored, candidates)


def _normalized(raw: np.ndarray, scored: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """``NormalizeScore``: ``100 * (max + min - raw) // max`` over the scored nodes (100 when max is 0); ignored
    candidates and non-candidates score 0."""
    out = np.zeros(len(raw), dtype=np.int64)
    if not scored.any():
        return out
    values = raw[scored]
    top, bottom = int(values.max()), int(values.min())
    out[scored] = 100 if top == 0 else 100 * (top + bottom - values) // top
    out[~candidates] = 0
    return out
