"""How many assigned pods of a namespace match a selector, per node, kept up to date incrementally.

kube-scheduler counts, in every PreFilter and PreScore, the pods on each node that are in the incoming pod's
namespace, match the constraint's selector and are not terminating (``countPodsMatchSelector``; a null selector
matches none, and v1.34 counts none for an empty one, ``{}``, too: kubernetes#116607, changed after v1.34 by
kubernetes#141340). Here the count per node is kept for each (namespace, selector) asked for, and a pod
change moves only that pod's contribution::

    count[namespace, selector][node] = |{assigned pods p on node : p.namespace = namespace,
                                          no deletionTimestamp, selector matches p.labels}|

Summed per domain of a topology key (``per_domain``), the counts are kept the same way, a pod change moving
one domain's count: kube-scheduler's ``TpPairToMatchNum`` without a pass over the nodes, when every node with
the key counts.

Each observed pod change re-reads that pod from the cluster (its node in ``Cluster.assignment``, its labels),
so the counts follow the cluster whatever order the changes come in; a pod the scheduler assumed earlier in
the same batch counts as soon as it is assigned. The index is built from the cluster on first use, so a
plugin made after pods were placed starts right. At most ``MAX_SELECTORS`` selectors are kept, the least
recently used dropped first.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np

from streams.objects.podinfo import PodInfo
from streams.scheduler.plugins.podtopologyspread.constraints import Selector
from streams.scheduler.state import Cluster, PodAssigned, PodChanged, PodUnassigned

MAX_SELECTORS = 256

Placed = tuple[str, str, Mapping[str, str]]
"""(node, namespace, labels) of a counted pod."""


def terminating(pod: PodInfo) -> bool:
    """Whether the pod's manifest has a ``metadata.deletionTimestamp``."""
    text = (pod.record or {}).get("manifest")
    if not isinstance(text, str) or '"deletionTimestamp"' not in text:
        return False
    try:
        meta = json.loads(text).get("metadata") or {}
    except (ValueError, AttributeError):
        return False
    return bool(isinstance(meta, dict) and meta.get("deletionTimestamp"))


class SelectorCounts:
    """One (namespace, selector)'s per-node counts, the same in node row order, and summed per domain of each
    topology key asked for (kube-scheduler's ``TpPairToMatchNum`` when every node with the key counts): built
    when the rows change (a node added or removed, or relabelled, bumps ``labels_version``), else updated in
    place by each change."""

    def __init__(self, selector: Selector, cluster: Cluster) -> None:
        self.selector = selector
        self.cluster = cluster
        self.by_node: dict[str, int] = {}
        self.used = 0
        self._vector: tuple[tuple[int, int], np.ndarray] | None = None
        self._domains: dict[str, tuple[tuple[int, int], np.ndarray, np.ndarray]] = {}
        """Topology key -> (rows it was built for, each row's domain index, the counts per domain)."""

    def _rows_key(self) -> tuple[int, int]:
        return self.cluster.labels_version, len(self.cluster.columns.names)

    def add(self, node: str, delta: int) -> None:
        value = self.by_node.get(node, 0) + delta
        if value:
            self.by_node[node] = value
        else:
            self.by_node.pop(node, None)
        if self._vector is None and not self._domains:
            return
        rows_key, row = self._rows_key(), self.cluster.columns.row.get(node)
        if self._vector is not None:
            if self._vector[0] != rows_key:
                self._vector = None
            elif row is not None:
                self._vector[1][row] = value
        for key, (built, ids, table) in list(self._domains.items()):
            if built != rows_key:
                del self._domains[key]
            elif row is not None and ids[row] >= 0:
                table[ids[row]] += delta

    def by_domain(self, key: str, ids: np.ndarray, domains: int) -> np.ndarray:
        """The counts summed per domain of topology ``key`` over every node with it (``ids``: each node row's
        domain index, -1 without the key, for the current rows). Read only."""
        rows_key = self._rows_key()
        held = self._domains.get(key)
        if held is None or held[0] != rows_key:
            has = ids >= 0
            table = np.bincount(ids[has], weights=self.vector()[has], minlength=domains).astype(np.int64)
            held = self._domains[key] = (rows_key, ids, table)
        return held[2]

    def vector(self) -> np.ndarray:
        """The counts in node row order (pods on nodes the domain does not know are left out). Read only."""
        key = self._rows_key()
        if self._vector is None or self._vector[0] != key:
            rows = self.cluster.columns.row
            out = np.zeros(key[1], dtype=np.int64)
            for node, count in self.by_node.items():
                row = rows.get(node)
                if row is not None:
                    out[row] = count
            self._vector = (key, out)
        return self._vector[1]


class MatchingPods:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._placed: dict[str, Placed] | None = None
        self._counts: dict[str, dict[Selector, SelectorCounts]] = {}
        self._size = 0
        self._tick = 0

    def observe(self, change: object) -> None:
        if self._placed is not None and isinstance(change, (PodChanged, PodAssigned, PodUnassigned)):
            self._resync(change.key)

    def counted(self) -> int:
        """The number of (namespace, selector) counts kept."""
        return self._size

    def per_node(self, namespace: str, selector: Selector) -> np.ndarray:
        """Matching pods per node row (zeros for an empty or NOTHING selector)."""
        if selector.empty or selector.nothing:
            return np.zeros(len(self.cluster.columns.names), dtype=np.int64)
        counts = self._of(namespace, selector)
        self._tick += 1
        counts.used = self._tick
        return counts.vector()

    def per_domain(self, namespace: str, selector: Selector, key: str, ids: np.ndarray, domains: int) -> np.ndarray:
        """Matching pods per domain of ``key`` over every node with it (``SelectorCounts.by_domain``; zeros for an
        empty or NOTHING selector). Read only."""
        if selector.empty or selector.nothing:
            return np.zeros(domains, dtype=np.int64)
        counts = self._of(namespace, selector)
        self._tick += 1
        counts.used = self._tick
        return counts.by_domain(key, ids, domains)

    def _entry(self, key: str) -> Placed | None:
        node = self.cluster.assignment.get(key)
        pod = self.cluster.pods.get(key)
        if node is None or pod is None or terminating(pod):
            return None
        return node, pod.namespace, pod.labels

    def _index(self) -> dict[str, Placed]:
        if self._placed is None:
            placed = {}
            for key in sorted(self.cluster.assignment):
                entry = self._entry(key)
                if entry is not None:
                    placed[key] = entry
            self._placed = placed
        return self._placed

    def _resync(self, key: str) -> None:
        old = self._placed.pop(key, None)
        new = self._entry(key)
        if new is not None:
            self._placed[key] = new
        if old == new:
            return
        for entry, delta in ((old, -1), (new, 1)):
            if entry is None:
                continue
            node, namespace, labels = entry
            for counts in self._counts.get(namespace, {}).values():
                if counts.selector.matches(labels):
                    counts.add(node, delta)

    def _of(self, namespace: str, selector: Selector) -> SelectorCounts:
        by_selector = self._counts.setdefault(namespace, {})
        counts = by_selector.get(selector)
        if counts is None:
            if self._size >= MAX_SELECTORS:
                self._evict()
                by_selector = self._counts.setdefault(namespace, {})
            counts = by_selector[selector] = SelectorCounts(selector, self.cluster)
            self._size += 1
            for node, pod_namespace, labels in self._index().values():
                if pod_namespace == namespace and selector.matches(labels):
                    counts.add(node, 1)
        return counts

    def _evict(self) -> None:
        namespace, selector = min(((ns, sel) for ns, group in self._counts.items() for sel in group),
                                  key=lambda item: self._counts[item[0]][item[1]].used)
        del self._counts[namespace][selector]
        if not self._counts[namespace]:
            del self._counts[namespace]
        self._size -= 1
