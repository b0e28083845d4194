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
the order groups are read in does not matter). ``accumulate`` adds a group's pods per node row into a column; a
group on ``VECTOR_AT`` nodes or more keeps that column itself, updated with each pod added or removed (and
rebuilt when nodes are added or removed), so a cycle reads a big group in one numpy addition. Terms are parsed once per pod object (``terms_of``); ``node``
and ``relabelled`` serve preemption's RemovePod and the hints.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping

import numpy as np

from streams.objects.podinfo import PodInfo
from streams.scheduler.plugins.interpodaffinity.terms import AffinityTerm, PodTerms, parse
from streams.scheduler.state import Cluster, NodeChanged, PodAssigned, PodChanged, PodUnassigned

NodeCounts = dict[str, int]
LabelsKey = tuple[str, frozenset]
VECTOR_AT = 32
"""Nodes a group must be on before it keeps its own column (below, the few nodes are added one by one)."""


@dataclasses.dataclass(frozen=True)
class _Entry:
    node: str
    labels: LabelsKey
    terms: PodTerms


class AssignedPods:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
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
        self._columns: dict[tuple[str, object], np.ndarray] = {}
        """(kind, group) -> its pods per node row, for the groups on VECTOR_AT nodes or more once read."""
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

    def accumulate(self, out: np.ndarray, kind: str, group, weight: int = 1) -> None:
        """``out[row] += weight * pods of group on the node of row``; ``kind`` is "labels",
        "required_anti_affinity", "required_affinity" or "preferred" (pods on nodes the domain lacks count
        nowhere)."""
        per_node = getattr(self, kind)[group]
        if len(per_node) >= VECTOR_AT:
            column = self._columns.get((kind, group))
            if column is None or len(column) != len(self.cluster.columns):
                column = self._columns[(kind, group)] = self._column(per_node)
            out += column * weight if weight != 1 else column
            return
        rows = self.cluster.columns.row
        for node, pods in per_node.items():
            row = rows.get(node)
            if row is not None:
                out[row] += weight * pods

    def _column(self, per_node: NodeCounts) -> np.ndarray:
        rows = self.cluster.columns.row
        column = np.zeros(len(self.cluster.columns), dtype=np.int64)
        for node, pods in per_node.items():
            row = rows.get(node)
            if row is not None:
                column[row] = pods
        return column

    def observe(self, change: object) -> None:
        if isinstance(change, NodeChanged) and (change.old is None or change.new is None):
            self._columns.clear()
        elif isinstance(change, PodAssigned):
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
        column = self._columns.get((kind, group))
        if column is None:
            return
        if group not in groups:
            del self._columns[(kind, group)]
        elif row is not None and row < len(column):
            column[row] += sign
