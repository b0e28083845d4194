"""The assigned pods InterPodAffinity counts, grouped so that a cycle reads groups, not pods.

kube-scheduler's PreFilter and PreScore walk every pod of every node (``Pods``, ``PodsWithAffinity``,
``PodsWithRequiredAntiAffinity``). Replicas share their labels and their terms, so here the index keeps, updated
on every ``PodAssigned`` / ``PodUnassigned`` / ``PodChanged`` (a pod placed earlier in the same batch, bound,
scheduled or held by Permit, counts at once), how many assigned pods of each kind sit on each node:

    labels[(namespace, labels)][node]          pods with these labels    (what the incoming pod's terms match)
    required_anti_affinity[term][node]         occurrences of the term   (existing pods' anti-affinity, Filter)
    required_affinity[term][node]              occurrences of the term   (hardPodAffinityWeight, Score)
    preferred[(term, +w | -w)][node]           occurrences of the term   (existing pods' preferred terms, Score)

Counting a group once per node and multiplying gives the sums kube-scheduler gets pod by pod (integer sums:
the order groups are read in does not matter). ``add_to`` adds a group's pods per topology pair into a table of
the key (``Topology``); a group on ``VECTOR_AT`` nodes or more keeps that table for each key it was read with,
updated with each of its pods added or removed (kube-scheduler's PreFilter counts, kept between cycles) and
rebuilt when node labels or rows change, so a cycle reads a big group in one numpy addition. Terms are parsed
once per pod object (``terms_of``); ``node`` and ``relabelled`` serve preemption's RemovePod and the hints.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping

import numpy as np

from streams.objects.podinfo import PodInfo
from streams.scheduler.plugins.interpodaffinity.terms import AffinityTerm, PodTerms, parse
from streams.scheduler.plugins.interpodaffinity.topology import Topology
from streams.scheduler.state import Cluster, PodAssigned, PodChanged, PodUnassigned

NodeCounts = dict[str, int]
LabelsKey = tuple[str, frozenset]
VECTOR_AT = 32
"""Nodes a group must be on before it keeps its own tables (below, its few nodes are added one by one)."""


@dataclasses.dataclass(frozen=True)
class _Entry:
    node: str
    labels: LabelsKey
    terms: PodTerms


class AssignedPods:
    def __init__(self, cluster: Cluster, topology: Topology) -> None:
        self.cluster = cluster
        self.topology = topology
        self.node: dict[str, str] = {}
        """Assigned pod key -> its node."""
        self.labels: dict[LabelsKey, NodeCounts] = {}
        self.labels_by_namespace: dict[str, set[LabelsKey]] = {}
        self._label_maps: dict[LabelsKey, Mapping[str, str]] = {}
        self.required_anti_affinity: dict[AffinityTerm, NodeCounts] = {}
        self.required_affinity: dict[AffinityTerm, NodeCounts] = {}
        self.preferred: dict[tuple[AffinityTerm, int], NodeCounts] = {}
        self.relabelled: dict[str, PodInfo] = {}
        """The assigned pod last changed, as it was before (the queueing hint of its Update compares both)."""
        self._entries: dict[str, _Entry] = {}
        self._parsed: dict[str, tuple[PodInfo, PodTerms]] = {}
        self._tables: dict[tuple[str, object], dict[str, tuple[int, np.ndarray]]] = {}
        """(kind, group) -> topology key -> (``labels_version`` it was built at, the group's pods per value of the
        key), for the groups on VECTOR_AT nodes or more, once read."""
        for key in sorted(cluster.assignment):
            self._add(key, cluster.pods[key], cluster.assignment[key])

    def terms_of(self, pod: PodInfo) -> PodTerms:
        cached = self._parsed.get(pod.key)
        if cached is not None and cached[0] is pod:
            return cached[1]
        terms = parse(pod)
        self._parsed[pod.key] = (pod, terms)
        return terms

    @property
    def any_terms(self) -> bool:
        """Some assigned pod has a term Score reads."""
        return bool(self.required_affinity or self.preferred)

    def add_to(self, out: np.ndarray, key: str, kind: str, group, weight: int = 1) -> None:
        """``out[slot] += weight * pods of group`` on the nodes whose value of topology ``key`` has that slot
        (``Topology``'s tables); ``kind`` is "labels", "required_anti_affinity", "required_affinity" or
        "preferred". Pods on nodes the domain lacks, or without ``key``, count nowhere."""
        per_node = getattr(self, kind)[group]
        if len(per_node) >= VECTOR_AT:
            out += self._table(kind, group, key, per_node) * weight
            return
        rows, slots, absent = self.cluster.columns.row, self.topology.slots(key), len(out) - 1
        for node, pods in per_node.items():
            row = rows.get(node)
            if row is not None and slots[row] != absent:
                out[slots[row]] += weight * pods

    def _table(self, kind: str, group, key: str, per_node: NodeCounts) -> np.ndarray:
        tables = self._tables.setdefault((kind, group), {})
        version = self.cluster.labels_version
        held = tables.get(key)
        if held is not None and held[0] == version:
            return held[1]
        rows = self.cluster.columns.row
        column = np.zeros(len(self.cluster.columns), dtype=np.int64)
        for node, pods in per_node.items():
            row = rows.get(node)
            if row is not None:
                column[row] = pods
        table = self.topology.table(key, column)
        tables[key] = (version, table)
        return table

    def observe(self, change: object) -> None:
        if isinstance(change, PodAssigned):
            self._remove(change.key)
            self._add(change.key, change.pod, change.node)
        elif isinstance(change, PodUnassigned):
            self._remove(change.key)
        elif isinstance(change, PodChanged):
            if change.new is None:
                self._remove(change.key)
                self._parsed.pop(change.key, None)
                self.relabelled.pop(change.key, None)
            elif change.key in self.node:
                self.relabelled = {change.key: change.old} if change.old is not None else {}
                node = self.node[change.key]
                self._remove(change.key)
                self._add(change.key, change.new, node)

    def label_keys(self, namespaces: frozenset[str] | None = None
                   ) -> Iterator[tuple[LabelsKey, str, Mapping[str, str]]]:
        """(group, namespace, labels) of the assigned pods' label groups, of ``namespaces`` only when given."""
        keys = list(self.labels) if namespaces is None else \
            [key for namespace in sorted(namespaces) for key in self.labels_by_namespace.get(namespace, ())]
        for key in keys:
            yield key, key[0], self._label_maps[key]

    def _add(self, key: str, pod: PodInfo, node: str) -> None:
        terms = self.terms_of(pod)
        labels = (pod.namespace, frozenset(pod.labels.items()))
        self.node[key] = node
        self._entries[key] = entry = _Entry(node, labels, terms)
        self.labels_by_namespace.setdefault(pod.namespace, set()).add(labels)
        self._label_maps.setdefault(labels, dict(pod.labels))
        self._count(entry, 1)

    def _remove(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        del self.node[key]
        self._count(entry, -1)
        if entry.labels not in self.labels:
            del self._label_maps[entry.labels]
            namespace = entry.labels[0]
            self.labels_by_namespace[namespace].discard(entry.labels)
            if not self.labels_by_namespace[namespace]:
                del self.labels_by_namespace[namespace]

    def _count(self, entry: _Entry, sign: int) -> None:
        node, terms = entry.node, entry.terms
        row = self.cluster.columns.row.get(node)
        self._bump("labels", entry.labels, node, row, sign)
        for term in terms.required_anti_affinity:
            self._bump("required_anti_affinity", term, node, row, sign)
        for term in terms.required_affinity:
            self._bump("required_affinity", term, node, row, sign)
        for weighted in terms.preferred_affinity:
            self._bump("preferred", (weighted.term, weighted.weight), node, row, sign)
        for weighted in terms.preferred_anti_affinity:
            self._bump("preferred", (weighted.term, -weighted.weight), node, row, sign)

    def _bump(self, kind: str, group, node: str, row: int | None, sign: int) -> None:
        groups = getattr(self, kind)
        counts = groups.setdefault(group, {})
        total = counts.get(node, 0) + sign
        if total:
            counts[node] = total
        else:
            counts.pop(node, None)
            if not counts:
                del groups[group]
        tables = self._tables.get((kind, group))
        if tables is None:
            return
        if group not in groups:
            del self._tables[(kind, group)]
            return
        if row is None:
            return
        version = self.cluster.labels_version
        for key, (built, table) in tables.items():
            slot = self.topology.slots(key)[row] if built == version else len(table) - 1
            if slot != len(table) - 1:
                table[slot] += sign
