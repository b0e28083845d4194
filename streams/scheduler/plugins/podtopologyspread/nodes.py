"""Per-node vectors the spread plugin reads: topology domains, node inclusion policies.

- ``domains(key)``: each node's domain for a topology key as an index into the sorted distinct values (-1: the
  node lacks the label); cached until node labels change (rows change with them).
- ``affinity_match(pod)``: kube's ``RequiredNodeAffinity.Match`` (``nodeSelector`` and required node affinity
  terms), for ``nodeAffinityPolicy: Honor``, with NodeAffinity's requirement matching
  (``streams.objects.nodeselector``); ``matchFields`` on ``metadata.name``; a term without requirements matches
  nothing.
- ``tolerated_nodes(pod)``: nodes without a NoSchedule/NoExecute taint the pod does not tolerate
  (``FindMatchingUntoleratedTaint`` with ``DoNotScheduleTaintsFilterFunc``), for ``nodeTaintsPolicy: Honor``.
"""

from __future__ import annotations

import numpy as np

from streams.objects.nodeselector import matches
from streams.objects.podinfo import PodInfo, SelectorTerm
from streams.scheduler.state import NO_SCHEDULE_EFFECTS, Cluster
from streams.scheduler.taints import key_of, tolerated


def term_matches(term: SelectorTerm, name: str, labels) -> bool:
    if not term.match_expressions and not term.match_fields:
        return False
    for requirement in term.match_fields:
        if requirement.key != "metadata.name" or requirement.operator not in ("In", "NotIn") or \
                not matches(requirement, name):
            return False
    return all(matches(r, labels.get(r.key)) for r in term.match_expressions)


MAX_CACHED = 256
"""Masks kept per kind (pods with distinct node affinities or tolerations); all are dropped beyond it."""


class NodeView:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._domains: dict[str, tuple[np.ndarray, list[str]]] = {}
        self._affinity: dict[tuple, np.ndarray] = {}
        self._tolerated: dict[tuple, np.ndarray] = {}
        self._labels_at = (-1, -1)
        self._taints_at = (-1, -1)

    def _fresh(self) -> None:
        cluster = self.cluster
        count = len(cluster.columns.names)
        if self._labels_at != (cluster.labels_version, count):
            self._domains.clear()
            self._affinity.clear()
            self._labels_at = (cluster.labels_version, count)
        if self._taints_at != (cluster.taints_version, count):
            self._tolerated.clear()
            self._taints_at = (cluster.taints_version, count)

    def domains(self, key: str) -> tuple[np.ndarray, list[str]]:
        """(domain index per node, -1 where the label is absent; the sorted distinct values)."""
        self._fresh()
        cached = self._domains.get(key)
        if cached is None:
            values = [labels.get(key) for labels in self.cluster.row_labels()]
            distinct = sorted({v for v in values if v is not None})
            index = {v: i for i, v in enumerate(distinct)}
            ids = np.fromiter((index.get(v, -1) if v is not None else -1 for v in values), dtype=np.int64,
                              count=len(values))
            cached = self._domains[key] = (ids, distinct)
        return cached

    def affinity_match(self, pod: PodInfo) -> np.ndarray:
        self._fresh()
        key = (tuple(sorted(pod.node_selector.items())), pod.required_terms)
        mask = self._affinity.get(key)
        if mask is None:
            if len(self._affinity) >= MAX_CACHED:
                self._affinity.clear()
            selector, terms = key
            names = self.cluster.columns.names
            mask = np.fromiter(
                (all(labels.get(k) == v for k, v in selector)
                 and (terms is None or any(term_matches(t, names[row], labels) for t in terms))
                 for row, labels in enumerate(self.cluster.row_labels())), dtype=bool, count=len(names))
            self._affinity[key] = mask
        return mask

    def tolerated_nodes(self, pod: PodInfo) -> np.ndarray:
        self._fresh()
        key = key_of(pod.tolerations)
        mask = self._tolerated.get(key)
        if mask is None:
            if len(self._tolerated) >= MAX_CACHED:
                self._tolerated.clear()
            nodes = self.cluster.nodes
            mask = np.fromiter(
                (not any(t.get("effect") in NO_SCHEDULE_EFFECTS and not tolerated(t, pod.tolerations)
                         for t in nodes[name].taints) for name in self.cluster.columns.names),
                dtype=bool, count=len(self.cluster.columns.names))
            self._tolerated[key] = mask
        return mask
