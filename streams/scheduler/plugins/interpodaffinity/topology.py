"""Node topology values as columns: for a topology key, each node row's value of that label as a code.

Counts kept per topology pair (key, value), as kube-scheduler keeps them, become per-node vectors by indexing
a per-value array with the codes, so Filter and Score never loop over nodes in Python. Codes are cached per
key until node labels or rows change (``Cluster.labels_version``, bumped by both).
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
        self._codes: dict[str, tuple[dict[str, int], np.ndarray]] = {}

    def codes(self, key: str) -> tuple[dict[str, int], np.ndarray]:
        """(value -> code, code of each node row; ABSENT where the node has no label ``key``)."""
        if self._version != self.cluster.labels_version:
            self._codes.clear()
            self._version = self.cluster.labels_version
        cached = self._codes.get(key)
        if cached is None or len(cached[1]) != len(self.cluster.columns):
            values: dict[str, int] = {}
            codes = np.array([values.setdefault(labels[key], len(values)) if key in labels else ABSENT
                              for labels in self.cluster.row_labels()], dtype=np.int64)
            cached = self._codes[key] = (values, codes)
        return cached

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
