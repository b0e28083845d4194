"""Node topology values as columns: for a topology key, each node row's value of that label as a code.

Counts kept per topology pair (key, value), as kube-scheduler keeps them, are per-value tables here: one
slot per value of the key (its code), plus a last slot, always 0, for the nodes without the key. Then

    table  = bincount(code of each node, weights = pods on each node)      (pods per pair, one pass)
    column = table[code of each node]                                      (the pair's count at each node)

so PreFilter, Filter and Score never loop over nodes in Python. Codes are cached per key until node labels or
rows change (``Cluster.labels_version``, bumped by both).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from streams.scheduler.state import Cluster

ABSENT = -1


class Topology:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._version = -1
        self._codes: dict[str, tuple[dict[str, int], np.ndarray, np.ndarray]] = {}

    def _cached(self, key: str) -> tuple[dict[str, int], np.ndarray, np.ndarray]:
        if self._version != self.cluster.labels_version:
            self._codes.clear()
            self._version = self.cluster.labels_version
        cached = self._codes.get(key)
        if cached is None or len(cached[1]) != len(self.cluster.columns):
            values: dict[str, int] = {}
            codes = np.array([values.setdefault(labels[key], len(values)) if key in labels else ABSENT
                              for labels in self.cluster.row_labels()], dtype=np.int64)
            slots = np.where(codes == ABSENT, len(values), codes)
            cached = self._codes[key] = (values, codes, slots)
        return cached

    def codes(self, key: str) -> tuple[dict[str, int], np.ndarray]:
        """(value -> code, code of each node row; ABSENT where the node has no label ``key``)."""
        values, codes, _ = self._cached(key)
        return values, codes

    def has(self, key: str) -> np.ndarray:
        """Nodes that have the label ``key``."""
        return self.codes(key)[1] != ABSENT

    def per_node(self, key: str, by_value: Mapping[str, int]) -> np.ndarray:
        """``by_value[node's value of key]`` for each node (0 where absent or not in ``by_value``)."""
        values, codes = self.codes(key)
        table = np.zeros(len(values) + 1, dtype=np.int64)
        for value, amount in by_value.items():
            code = values.get(value)
            if code is not None:
                table[code] = amount
        return table[codes]

    def empty(self, key: str) -> np.ndarray:
        """A zero table of ``key``: one slot per value, and the last for nodes without the key."""
        return np.zeros(len(self._cached(key)[0]) + 1, dtype=np.int64)

    def table(self, key: str, per_row: np.ndarray) -> np.ndarray:
        """The sum of ``per_row`` (one amount per node row) per value of ``key``; 0 in the last slot."""
        values, _, slots = self._cached(key)
        out = np.bincount(slots, weights=per_row[:len(slots)], minlength=len(values) + 1).astype(np.int64)
        out[-1] = 0
        return out

    def slots(self, key: str) -> np.ndarray:
        """Each node row's slot in ``key``'s tables (the last where the node has no label ``key``)."""
        return self._cached(key)[2]

    def column(self, key: str, table: np.ndarray) -> np.ndarray:
        """Each node row's slot of ``table`` (0 where the node has no label ``key``)."""
        return table[self._cached(key)[2]]

    def slot(self, key: str, value: str | None) -> int | None:
        """The slot of ``value`` in ``key``'s tables; None when no node holds it."""
        return None if value is None else self._cached(key)[0].get(value)

    def value_names(self, key: str) -> list[str]:
        """The values of ``key`` in slot order."""
        return list(self._cached(key)[0])
