"""InterPodAffinity PreFilter and Filter (kube-scheduler v1.34 ``interpodaffinity/filtering.go``).

PreFilter counts, per topology pair (key, value) of the node an assigned pod ``q`` runs on:

    existing_anti[pair]  += 1 for each required anti-affinity term of q that matches the incoming pod p
    affinity[pair]       += 1 for each required affinity term of p, when q matches ALL of p's affinity terms
    anti[pair]           += 1 for each required anti-affinity term of p that q matches

(a term counts only where q's node has its topology key). Filter, for a node with labels L, fails with the
first of:

    affinity:       a topology key of p's affinity terms is missing from L, or affinity[(k, L[k])] == 0 for
                    some term, unless no pair counts at all and p matches its own terms (the first pod of a
                    group that has affinity to itself)            -> "node(s) didn't match pod affinity rules"
                                                                     (UnschedulableAndUnresolvable)
    anti-affinity:  anti[(k, L[k])] > 0 for some term of p        -> "node(s) didn't match pod anti-affinity
                                                                     rules" (Unschedulable)
    symmetry:       existing_anti[(k, v)] > 0 for a label k=v of L -> "node(s) didn't satisfy existing pods
                                                                     anti-affinity rules" (Unschedulable)

``update_with_pod`` is kube-scheduler's AddPod/RemovePod: the counts with one pod added or taken away, which
is how preemption's dry runs see a node without its victims.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping

import numpy as np

from streams.objects.podinfo import PodInfo
from streams.scheduler.plugins.interpodaffinity.terms import AffinityTerm, PodTerms
from streams.scheduler.plugins.interpodaffinity.topology import Topology

Pair = tuple[str, str]
NamespaceLabels = Callable[[str], Mapping[str, str]]
NodeLabels = Callable[[str], Mapping[str, str] | None]
"""A node's labels by name; None for a node the domain does not hold (its pods count nowhere)."""


@dataclasses.dataclass
class PreFilterState:
    pod: PodInfo
    terms: PodTerms
    existing_anti: dict[Pair, int]
    affinity: dict[Pair, int]
    anti: dict[Pair, int]

    def copy(self) -> "PreFilterState":
        return PreFilterState(self.pod, self.terms, dict(self.existing_anti), dict(self.affinity), dict(self.anti))

    def update_with_pod(self, other: PodInfo, other_terms: PodTerms, node_labels: Mapping[str, str], sign: int,
                        namespace_labels: NamespaceLabels) -> None:
        """``preFilterState.updateWithPod``: count (sign 1) or uncount (-1) assigned pod ``other``."""
        pod = self.pod
        for term in other_terms.required_anti_affinity:
            if term.matches(pod.namespace, pod.labels, namespace_labels):
                _add(self.existing_anti, node_labels, term.topology_key, sign)
        if matches_all(self.terms.required_affinity, other.namespace, other.labels, namespace_labels):
            for term in self.terms.required_affinity:
                _add(self.affinity, node_labels, term.topology_key, sign)
        for term in self.terms.required_anti_affinity:
            if term.matches(other.namespace, other.labels, namespace_labels):
                _add(self.anti, node_labels, term.topology_key, sign)


def _add(counts: dict[Pair, int], node_labels: Mapping[str, str] | None, key: str, amount: int) -> None:
    value = node_labels.get(key) if node_labels is not None else None
    if value is None:
        return
    pair = (key, value)
    total = counts.get(pair, 0) + amount
    if total:
        counts[pair] = total
    else:
        counts.pop(pair, None)


def matches_all(terms: tuple[AffinityTerm, ...], namespace: str, labels: Mapping[str, str],
                namespace_labels: NamespaceLabels) -> bool:
    """``podMatchesAllAffinityTerms`` for a pod of ``namespace`` with ``labels``: false without terms."""
    return bool(terms) and all(term.matches(namespace, labels, namespace_labels) for term in terms)


def existing_anti_counts(pod: PodInfo, anti_terms: Mapping[AffinityTerm, Mapping[str, int]], node_labels: NodeLabels,
                         namespace_labels: NamespaceLabels) -> dict[Pair, int]:
    """``getExistingAntiAffinityCounts``: the assigned pods' required anti-affinity terms (each with the number of
    pods carrying it per node) that match the incoming pod."""
    counts: dict[Pair, int] = {}
    for term, per_node in anti_terms.items():
        if term.matches(pod.namespace, pod.labels, namespace_labels):
            for node, pods in per_node.items():
                _add(counts, node_labels(node), term.topology_key, pods)
    return counts


def incoming_counts(terms: PodTerms, groups: Iterable[tuple[str, Mapping[str, str], Mapping[str, int]]],
                    node_labels: NodeLabels, namespace_labels: NamespaceLabels
                    ) -> tuple[dict[Pair, int], dict[Pair, int]]:
    """``getIncomingAffinityAntiAffinityCounts``: (affinity, anti) over the assigned pods, given as groups of
    (namespace, labels, pods per node)."""
    affinity: dict[Pair, int] = {}
    anti: dict[Pair, int] = {}
    for namespace, labels, per_node in groups:
        if matches_all(terms.required_affinity, namespace, labels, namespace_labels):
            for term in terms.required_affinity:
                for node, pods in per_node.items():
                    _add(affinity, node_labels(node), term.topology_key, pods)
        for term in terms.required_anti_affinity:
            if term.matches(namespace, labels, namespace_labels):
                for node, pods in per_node.items():
                    _add(anti, node_labels(node), term.topology_key, pods)
    return affinity, anti


def _by_key(counts: Mapping[Pair, int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (key, value), amount in counts.items():
        out.setdefault(key, {})[value] = amount
    return out


def failures(state: PreFilterState, topology: Topology, count: int,
             namespace_labels: NamespaceLabels) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fails affinity, fails anti-affinity, fails existing pods' anti-affinity) per node, each node in the first
    of the three it fails only."""
    pod_affinity = np.zeros(count, dtype=bool)
    terms = state.terms.required_affinity
    if terms:
        all_keys = np.ones(count, dtype=bool)
        pods_exist = np.ones(count, dtype=bool)
        affinity = _by_key(state.affinity)
        for term in terms:
            all_keys &= topology.has(term.topology_key)[:count]
            pods_exist &= topology.per_node(term.topology_key, affinity.get(term.topology_key, {}))[:count] > 0
        first_of_group = not state.affinity and matches_all(terms, state.pod.namespace, state.pod.labels,
                                                            namespace_labels)
        pod_affinity = ~all_keys | (~pods_exist & (not first_of_group))
    pod_anti = np.zeros(count, dtype=bool)
    if state.anti:
        anti = _by_key(state.anti)
        for term in state.terms.required_anti_affinity:
            if term.topology_key in anti:
                pod_anti |= topology.per_node(term.topology_key, anti[term.topology_key])[:count] > 0
    existing = np.zeros(count, dtype=bool)
    for key, by_value in sorted(_by_key(state.existing_anti).items()):
        existing |= topology.per_node(key, {v: n for v, n in by_value.items() if n > 0})[:count] > 0
    pod_anti &= ~pod_affinity
    existing &= ~pod_affinity & ~pod_anti
    return pod_affinity, pod_anti, existing
