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

The counts are kept as per-value tables of each topology key (``PairCounts``): PreFilter adds up the tables the
index keeps per group (updated as pods come and go), and Filter reads each node's pair back as a column; no
loop runs over nodes or pods in Python.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import numpy as np

from streams.objects.podinfo import PodInfo
from streams.scheduler.plugins.interpodaffinity.index import AssignedPods
from streams.scheduler.plugins.interpodaffinity.terms import AffinityTerm, PodTerms
from streams.scheduler.plugins.interpodaffinity.topology import Topology

Pair = tuple[str, str]
NamespaceLabels = Callable[[str], Mapping[str, str]]
NodeLabels = Callable[[str], Mapping[str, str] | None]
"""A node's labels by name; None for a node the domain does not hold (its pods count nowhere)."""


class PairCounts:
    """Counts per topology pair (key, value), held as one table per key (``Topology.table``): reads as the dict
    of its non-zero pairs (``pairs``), so it compares equal to such a dict."""

    def __init__(self, topology: Topology, tables: dict[str, np.ndarray] | None = None) -> None:
        self.topology = topology
        self.tables: dict[str, np.ndarray] = tables if tables is not None else {}

    def table(self, key: str) -> np.ndarray:
        """The table of ``key``, zeros when new (to add counts into)."""
        table = self.tables.get(key)
        if table is None:
            table = self.tables[key] = self.topology.empty(key)
        return table

    def add(self, key: str, value: str | None, amount: int) -> None:
        """Count ``amount`` at (key, value); a value no node of the domain holds counts nowhere."""
        slot = self.topology.slot(key, value)
        if slot is not None:
            self.table(key)[slot] += amount

    def column(self, key: str, count: int) -> np.ndarray | None:
        """The count of each node row's pair of ``key`` (None: nothing counted for ``key``)."""
        table = self.tables.get(key)
        return None if table is None else self.topology.column(key, table)[:count]

    def copy(self) -> "PairCounts":
        return PairCounts(self.topology, {key: table.copy() for key, table in self.tables.items()})

    def pairs(self) -> dict[Pair, int]:
        out: dict[Pair, int] = {}
        for key, table in self.tables.items():
            names = self.topology.value_names(key)
            for slot in np.flatnonzero(table[:-1]):
                out[(key, names[slot])] = int(table[slot])
        return out

    def __bool__(self) -> bool:
        return any(table.any() for table in self.tables.values())

    def __eq__(self, other: object) -> bool:
        return self.pairs() == (other.pairs() if isinstance(other, PairCounts) else other)

    def __repr__(self) -> str:
        return f"PairCounts({self.pairs()})"


@dataclasses.dataclass
class PreFilterState:
    pod: PodInfo
    terms: PodTerms
    existing_anti: PairCounts
    affinity: PairCounts
    anti: PairCounts

    def copy(self) -> "PreFilterState":
        return PreFilterState(self.pod, self.terms, self.existing_anti.copy(), self.affinity.copy(), self.anti.copy())

    def update_with_pod(self, other: PodInfo, other_terms: PodTerms, node_labels: Mapping[str, str], sign: int,
                        namespace_labels: NamespaceLabels) -> None:
        """``preFilterState.updateWithPod``: count (sign 1) or uncount (-1) assigned pod ``other``."""
        pod = self.pod
        for term in other_terms.required_anti_affinity:
            if term.matches(pod.namespace, pod.labels, namespace_labels):
                self.existing_anti.add(term.topology_key, node_labels.get(term.topology_key), sign)
        if matches_all(self.terms.required_affinity, other.namespace, other.labels, namespace_labels):
            for term in self.terms.required_affinity:
                self.affinity.add(term.topology_key, node_labels.get(term.topology_key), sign)
        for term in self.terms.required_anti_affinity:
            if term.matches(other.namespace, other.labels, namespace_labels):
                self.anti.add(term.topology_key, node_labels.get(term.topology_key), sign)


def matches_all(terms: tuple[AffinityTerm, ...], namespace: str, labels: Mapping[str, str],
                namespace_labels: NamespaceLabels) -> bool:
    """``podMatchesAllAffinityTerms`` for a pod of ``namespace`` with ``labels``: false without terms."""
    return bool(terms) and all(term.matches(namespace, labels, namespace_labels) for term in terms)


def existing_anti_counts(pod: PodInfo, index: AssignedPods, topology: Topology,
                         namespace_labels: NamespaceLabels) -> PairCounts:
    """``getExistingAntiAffinityCounts``: the assigned pods' required anti-affinity terms (each with the number of
    pods carrying it per node) that match the incoming pod."""
    counts = PairCounts(topology)
    for term in index.required_anti_affinity:
        if term.matches(pod.namespace, pod.labels, namespace_labels):
            index.add_to(counts.table(term.topology_key), term.topology_key, "required_anti_affinity", term)
    return counts


def incoming_counts(terms: PodTerms, index: AssignedPods, namespaces: frozenset[str] | None, topology: Topology,
                    namespace_labels: NamespaceLabels) -> tuple[PairCounts, PairCounts]:
    """``getIncomingAffinityAntiAffinityCounts``: (affinity, anti) over the assigned pods of ``namespaces`` (all
    when None), read as groups of (namespace, labels, pods per node)."""
    affinity, anti = PairCounts(topology), PairCounts(topology)
    for group, namespace, labels in index.label_keys(namespaces):
        if matches_all(terms.required_affinity, namespace, labels, namespace_labels):
            for term in terms.required_affinity:
                index.add_to(affinity.table(term.topology_key), term.topology_key, "labels", group)
        for term in terms.required_anti_affinity:
            if term.matches(namespace, labels, namespace_labels):
                index.add_to(anti.table(term.topology_key), term.topology_key, "labels", group)
    return affinity, anti


def failures(state: PreFilterState, topology: Topology, count: int,
             namespace_labels: NamespaceLabels) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fails affinity, fails anti-affinity, fails existing pods' anti-affinity) per node, each node in the first
    of the three it fails only."""
    pod_affinity = np.zeros(count, dtype=bool)
    terms = state.terms.required_affinity
    if terms:
        all_keys = np.ones(count, dtype=bool)
        pods_exist = np.ones(count, dtype=bool)
        for term in terms:
            all_keys &= topology.has(term.topology_key)[:count]
            column = state.affinity.column(term.topology_key, count)
            pods_exist &= column > 0 if column is not None else False
        first_of_group = not state.affinity and matches_all(terms, state.pod.namespace, state.pod.labels,
                                                            namespace_labels)
        pod_affinity = ~all_keys | (~pods_exist & (not first_of_group))
    pod_anti = np.zeros(count, dtype=bool)
    for term in state.terms.required_anti_affinity:
        column = state.anti.column(term.topology_key, count)
        if column is not None:
            pod_anti |= column > 0
    existing = np.zeros(count, dtype=bool)
    for key in sorted(state.existing_anti.tables):
        existing |= state.existing_anti.column(key, count) > 0
    pod_anti &= ~pod_affinity
    existing &= ~pod_affinity & ~pod_anti
    return pod_affinity, pod_anti, existing
