"""InterPodAffinity: required and preferred pod affinity and anti-affinity (kube-scheduler v1.34
``pkg/scheduler/framework/plugins/interpodaffinity``).

| module | what |
| --- | --- |
| ``terms`` | a pod's affinity terms (namespaces, namespaceSelector, matchLabelKeys) and when a term matches a pod |
| ``index`` | the assigned pods by namespace, with their terms (kube-scheduler's ``PodsWithAffinity`` lists) |
| ``topology`` | per topology key, each node's label value as a column code |
| ``filtering`` | PreFilter counts per topology pair, Filter (formulas there) and AddPod/RemovePod |
| ``scoring`` | PreScore weights per topology pair, Score and NormalizeScore (formulas there) |
| ``hints`` | the queueing hints for assigned pod and node events |

PreFilter returns Skip when the pod has no required term and no assigned pod's required anti-affinity matches
it, so a pod without affinity in a cluster without anti-affinity costs a few lookups. Filter fails a
node for the pod's affinity with UnschedulableAndUnresolvable (removing pods cannot add a matching one) and
for anti-affinity, the pod's or an existing pod's, with Unschedulable (preemption may remove the pod in the
way: a PostFilter's dry run lists the pods it took away under ``framework.REMOVED_PODS`` and Filter leaves them
out, kube-scheduler's RemovePod).

Namespace labels, which ``namespaceSelector`` reads: those of the Namespace object when the domain holds one
(kind "Namespace", watched by this plugin), else ``kubernetes.io/metadata.name=<name>``, the label the API
server puts on every namespace. With no Namespace objects, then, ``namespaceSelector: {}`` selects every
namespace, a selector on ``kubernetes.io/metadata.name`` selects by name, and a selector that requires any
other label selects no namespace.

Events: an assigned pod added, relabelled or deleted, a node added or updated, each with kube-scheduler's
queueing hint (``hints``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from streams.objects.args import ArgsReader
from streams.objects.podinfo import PodInfo
from streams.scheduler.framework import (
    ADD, ASSIGNED_POD, DELETE, NODE, REMOVED_PODS, SKIP, SUCCESS, UPDATE, ClusterEvent, Code, CycleState,
    FilterResult, Status, register)
from streams.scheduler.plugins.interpodaffinity import hints
from streams.scheduler.plugins.interpodaffinity.filtering import (
    PairCounts, PreFilterState, existing_anti_counts, failures, incoming_counts)
from streams.scheduler.plugins.interpodaffinity.index import AssignedPods
from streams.scheduler.plugins.interpodaffinity.scoring import normalized, topology_score
from streams.scheduler.plugins.interpodaffinity.topology import Topology
from streams.scheduler.state import Cluster, NodeChanged, NodeObject, PodUnassigned

NAME = "InterPodAffinity"
REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
NAMESPACE = "Namespace"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@dataclasses.dataclass(frozen=True)
class InterPodAffinityArgs:
    hard_pod_affinity_weight: int = 1
    """``hardPodAffinityWeight`` (0..100, kube-scheduler's default 1): the score weight an existing pod's
    required affinity term gives the nodes of its topology when the incoming pod matches it."""
    ignore_preferred_terms_of_existing_pods: bool = False
    """``ignorePreferredTermsOfExistingPods``: score only pods that have preferred terms themselves (cheaper in
    big clusters; existing pods' terms then do not attract or repel pods without terms)."""

    @classmethod
    def from_config(cls, raw: Mapping | None) -> "InterPodAffinityArgs":
        reader = ArgsReader(NAME, raw, {"hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"})
        args = cls(reader.integer("hardPodAffinityWeight", 1),
                   reader.boolean("ignorePreferredTermsOfExistingPods", False))
        if not 0 <= args.hard_pod_affinity_weight <= 100:
            raise reader.fail("hardPodAffinityWeight", "not in valid range [0-100]")
        return args

    def validate(self) -> None:
        if not 0 <= self.hard_pod_affinity_weight <= 100:
            raise ValueError(f"{NAME}: hardPodAffinityWeight: not in valid range [0-100]")


class InterPodAffinity:
    name = NAME
    Args = InterPodAffinityArgs
    watched_kinds = frozenset({NAMESPACE})

    def pod_change_may_help(self, event: ClusterEvent, pod: PodInfo) -> bool:
        """Hint for an assigned pod added, relabelled or deleted (``event.name`` its key; ``hints``). A deletion
        that does not name its pod (a preemption's several victims) or names one this plugin did not see leave
        its node: Queue."""
        if event.action == DELETE:
            released = self._released
            if not event.name or released is None or released[0] != event.name:
                return True
            return hints.pod_change_may_help(self.index.terms_of(pod), released[1], None, self.namespace_labels)
        other = self.cluster.pods.get(event.name)
        node = self.index.node.get(event.name)
        if other is None or node is None:
            return True
        new = dataclasses.replace(other, node_name=node)
        old = self.index.relabelled.get(event.name) if event.action == UPDATE else None
        if old is not None:
            old = dataclasses.replace(old, node_name=node)
        return hints.pod_change_may_help(self.index.terms_of(pod), old, new, self.namespace_labels)

    def node_change_may_help(self, event: ClusterEvent, pod: PodInfo) -> bool:
        """Hint for a node added or updated (``hints``), against its labels before the change; Queue when the
        domain no longer holds it."""
        node = self.cluster.nodes.get(event.name)
        if node is None:
            return True
        old = self._node_before.get(event.name) if event.action == UPDATE else None
        return hints.node_change_may_help(self.index.terms_of(pod), old.labels if old else None, node.labels)

    events_to_register = (
        *register(ClusterEvent(ASSIGNED_POD, ADD), ClusterEvent(ASSIGNED_POD, UPDATE),
                  ClusterEvent(ASSIGNED_POD, DELETE), hint=pod_change_may_help),
        *register(ClusterEvent(NODE, ADD), ClusterEvent(NODE, UPDATE), hint=node_change_may_help))

    def __init__(self, args: InterPodAffinityArgs, cluster: Cluster) -> None:
        args.validate()
        self.args = args
        self.cluster = cluster
        self.topology = Topology(cluster)
        self.index = AssignedPods(cluster, self.topology)
        self._node_before: dict[str, NodeObject] = {}
        """The node last changed, as it was before (the queueing hint of its Update compares both)."""
        self._released: tuple[str, PodInfo] | None = None
        """The pod that last left its node, with that node (the queueing hint of its Delete reads it)."""

    def observe(self, change: object) -> None:
        if isinstance(change, PodUnassigned):
            self._released = (change.key, dataclasses.replace(change.pod, node_name=change.node))
        self.index.observe(change)
        if isinstance(change, NodeChanged):
            self._node_before = {change.name: change.old} if change.old is not None else {}

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        record = self.cluster.objects.get(NAMESPACE, {}).get(namespace)
        if record is None:
            return {NAMESPACE_NAME_LABEL: namespace}
        return (record.get("metadata") or {}).get("labels") or {}

    def _node_labels(self, node: str) -> Mapping[str, str] | None:
        held = self.cluster.nodes.get(node)
        return held.labels if held is not None else None

    # -- PreFilter / Filter --------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        terms = self.index.terms_of(pod)
        if terms.error is not None:
            return Status.unschedulable(f"parsing pod: {terms.error}", NAME, resolvable=False)
        index = self.index
        required = terms.required_affinity or terms.required_anti_affinity
        if not index.required_anti_affinity and not required:
            return SKIP
        existing = existing_anti_counts(pod, index, self.topology, self.namespace_labels)
        if not existing and not required:
            return SKIP
        affinity, anti = PairCounts(self.topology), PairCounts(self.topology)
        if required:
            affinity, anti = incoming_counts(terms, index, self._term_namespaces(terms), self.topology,
                                             self.namespace_labels)
        state[NAME] = PreFilterState(pod, terms, existing, affinity, anti)
        return SUCCESS

    @staticmethod
    def _term_namespaces(terms) -> frozenset[str] | None:
        """The namespaces the pod's required terms can match; None (all) when a term selects namespaces by
        labels."""
        required = terms.required_affinity + terms.required_anti_affinity
        if any(term.namespace_selector.error is None for term in required):
            return None
        return frozenset().union(*(term.namespaces for term in required))

    def filter(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> FilterResult:
        prefilter = state.get(NAME)
        if prefilter is None:
            scratch = CycleState()
            status = self.pre_filter(scratch, pod)
            if status.code == Code.SKIP:
                return FilterResult(candidates)
            if not status.ok:
                return FilterResult(np.zeros_like(candidates), ((status.message, candidates),), status.code)
            prefilter = scratch[NAME]
        removed = state.get(REMOVED_PODS)
        if removed:
            prefilter = prefilter.copy()
            for key in sorted(removed):
                node = self.index.node.get(key)
                labels = self._node_labels(node) if node is not None else None
                if labels is not None:
                    other = self.cluster.pods[key]
                    prefilter.update_with_pod(other, self.index.terms_of(other), labels, -1, self.namespace_labels)
        affinity, anti, existing = failures(prefilter, self.topology, len(candidates), self.namespace_labels)
        failed = affinity | anti | existing
        if not failed.any():
            return FilterResult(candidates)
        return FilterResult(candidates & ~failed, ((REASON_AFFINITY, affinity), (REASON_ANTI_AFFINITY, anti),
                                                   (REASON_EXISTING_ANTI_AFFINITY, existing)),
                            Code.UNSCHEDULABLE, unresolvable=affinity)

    # -- Score ---------------------------------------------------------------------------------

    def score(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> np.ndarray | int:
        terms = self.index.terms_of(pod)
        if not terms.preferred and (self.args.ignore_preferred_terms_of_existing_pods or not self.index.any_terms):
            return 0
        scores = topology_score(pod, terms, self.index, self.args.hard_pod_affinity_weight, self.namespace_labels)
        return normalized(scores, self.topology, candidates)
