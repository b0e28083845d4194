"""NodeAffinity: nodeSelector and required node affinity (kube-scheduler ``nodeaffinity``).

Filter: a node passes when every ``spec.nodeSelector`` label matches and, if
the pod has ``requiredDuringSchedulingIgnoredDuringExecution``, at least one
of its nodeSelectorTerms matches (terms are ORed; within a term every
requirement must hold; a term without requirements matches nothing). Else
"node(s) didn't match Pod's node affinity/selector" (UnschedulableAndUnresolvable).

Operators on labels: In, NotIn (an absent label matches), Exists,
DoesNotExist, Gt and Lt (the label and the single value are integers; a
label that is not an integer does not match). ``matchFields`` supports
``metadata.name`` with In and NotIn.

Score (kube-scheduler v1.34 ``node_affinity.go``, ``PreferredSchedulingTerms.Score``): the sum of the
weights of the pod's preferred terms a node matches (a term of weight 0 or without requirements is
dropped), normalized over the feasible nodes (``helper.DefaultNormalizeScore``)::

    score = 100 * sum // max(sum)      (0 everywhere when no node matches a term)

A pod without preferred terms scores 0 everywhere, as kube-scheduler's PreScore skips it.

PreFilter skips pods with neither. Each requirement becomes a node mask,
cached until node labels change.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from streams.objects.args import no_args
from streams.objects.nodeselector import matches
from streams.objects.podinfo import PodInfo, Requirement
from streams.scheduler.framework import (
    NODE_ADD, NODE_UPDATE, SKIP, SUCCESS, Code, CycleState, FilterResult, Status, register)
from streams.scheduler.scoring import normalized
from streams.scheduler.state import Cluster

NAME = "NodeAffinity"
REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


@dataclasses.dataclass(frozen=True)
class NodeAffinityArgs:
    """No args are supported (kube-scheduler's ``addedAffinity`` is not)."""

    @classmethod
    def from_config(cls, raw) -> "NodeAffinityArgs":
        no_args(NAME, raw)
        return cls()

    def validate(self) -> None:
        pass


class NodeAffinity:
    name = NAME
    Args = NodeAffinityArgs
    events_to_register = register(NODE_ADD, NODE_UPDATE)

    def __init__(self, args: NodeAffinityArgs, cluster: Cluster) -> None:
        self.cluster = cluster
        self._masks: dict[tuple, np.ndarray] = {}
        self._version = -1

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        return SUCCESS if pod.node_selector or pod.required_terms is not None else SKIP

    def score(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> np.ndarray | int:
        if not pod.preferred_terms:
            return 0
        count = len(candidates)
        total = np.zeros(count, dtype=np.int64)
        for weight, term in pod.preferred_terms:
            total += weight * self._term_mask(term, count)
        return normalized(total, candidates)

    def _term_mask(self, term, count: int) -> np.ndarray:
        """Nodes matching every requirement of ``term``."""
        match = np.ones(count, dtype=bool)
        for requirement in term.match_expressions:
            match &= self._mask(("label", requirement), count)
        for requirement in term.match_fields:
            match &= self._mask(("field", requirement), count)
        return match

    def filter(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> FilterResult:
        count = len(candidates)
        match = np.ones(count, dtype=bool)
        for key, value in sorted(pod.node_selector.items()):
            match &= self._mask(("label", Requirement(key, "In", (value,))), count)
        if pod.required_terms is not None:
            any_term = np.zeros(count, dtype=bool)
            for term in pod.required_terms:
                if term.match_expressions or term.match_fields:
                    any_term |= self._term_mask(term, count)
            match &= any_term
        return FilterResult(candidates & match, ((REASON_NODE_AFFINITY, ~match),), Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def _mask(self, key: tuple, count: int) -> np.ndarray:
        if self._version != self.cluster.labels_version:
            self._masks.clear()
            self._version = self.cluster.labels_version
        mask = self._masks.get(key)
        if mask is None or len(mask) != count:
            kind, requirement = key
            if kind == "field":
                names = self.cluster.columns.names[:count]
                supported = requirement.key == "metadata.name" and requirement.operator in ("In", "NotIn")
                mask = np.array([supported and matches(requirement, name) for name in names], dtype=bool)
            else:
                labels = self.cluster.row_labels()[:count]
                mask = np.array([matches(requirement, node_labels.get(requirement.key)) for node_labels in labels],
                                dtype=bool)
            self._masks[key] = mask
        return mask
