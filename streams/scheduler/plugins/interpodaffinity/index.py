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
the order groups are read in does not matter). Terms are parsed once per pod object (``terms_of``); ``node``
and ``relabelled`` serve preemption's RemovePod and the hints.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping

from streams.objects.podinfo import PodInfo
from streams.scheduler.plugins.interpodaffinity.terms import AffinityTerm, PodTerms, parse
from streams.scheduler.state import Cluster, PodAssigned, PodChanged, PodUnassigned

NodeCounts = dict[str, int]
LabelsKey = tuple[str, frozenset]


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

    def label_groups(self, namespaces: frozenset[str] | None = None
                     ) -> Iterator[tuple[str, Mapping[str, str], NodeCounts]]:
        """(namespace, labels, pods per node) of the assigned pods, of ``namespaces`` only when given."""
        keys = self.labels if namespaces is None else \
            [key for namespace in sorted(namespaces) for key in self.labels_by_namespace.get(namespace, ())]
        for key in keys:
            yield key[0], self._label_maps[key], self.labels[key]

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
        _bump(self.labels, entry.labels, node, sign)
        for term in terms.required_anti_affinity:
            _bump(self.required_anti_affinity, term, node, sign)
        for term in terms.required_affinity:
            _bump(self.required_affinity, term, node, sign)
        for weighted in terms.preferred_affinity:
            _bump(self.preferred, (weighted.term, weighted.weight), node, sign)
        for weighted in terms.preferred_anti_affinity:
            _bump(self.preferred, (weighted.term, -weighted.weight), node, sign)


def _bump(groups: dict, group, node: str, sign: int) -> None:
    counts = groups.setdefault(group, {})
    total = counts.get(node, 0) + sign
    if total:
        counts[node] = total
    else:
        counts.pop(node, None)
        if not counts:
            del groups[group]
