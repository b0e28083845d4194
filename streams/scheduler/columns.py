"""A scheduling domain's nodes as columns.

Filters and scores run vectorized over all nodes, so node state is kept as
numpy matrices: one row per node, one column per resource name (``cpu`` in
milli-cores, ``memory`` in bytes, ``pods`` as a count, then extended
resources in order of first appearance). Rows are kept in arrival order;
removing a node moves the last row into its place, which is deterministic
for a given inbox.
"""

from __future__ import annotations

import dataclasses

import numpy as np

BASE_RESOURCES = ("cpu", "memory", "pods")


@dataclasses.dataclass(frozen=True)
class PodRequest:
    """What a cycle needs of a pod: its key and requests (canonical units)."""

    key: str
    requests: dict[str, int]
    priority: int = 0


class NodeColumns:
    def __init__(self, capacity: int = 64) -> None:
        self.resources: list[str] = list(BASE_RESOURCES)
        self._column = {name: i for i, name in enumerate(self.resources)}
        self.names: list[str] = []
        self.row: dict[str, int] = {}
        self.allocatable = np.zeros((capacity, len(self.resources)), dtype=np.int64)
        self.requested = np.zeros_like(self.allocatable)
        self.unschedulable = np.zeros(capacity, dtype=bool)

    def __len__(self) -> int:
        return len(self.names)

    def column(self, resource: str) -> int:
        """The column of ``resource``, added (zero everywhere) when new."""
        index = self._column.get(resource)
        if index is None:
            index = len(self.resources)
            self.resources.append(resource)
            self._column[resource] = index
            pad = np.zeros((self.allocatable.shape[0], 1), dtype=np.int64)
            self.allocatable = np.hstack([self.allocatable, pad])
            self.requested = np.hstack([self.requested, pad])
        return index

    def vector(self, resources: dict[str, int]) -> np.ndarray:
        """``resources`` as a row aligned with the columns (unknown names added)."""
        for name in resources:
            self.column(name)
        row = np.zeros(len(self.resources), dtype=np.int64)
        for name, value in resources.items():
            row[self._column[name]] = value
        return row

    def upsert(self, name: str, allocatable: dict[str, int], unschedulable: bool = False) -> int:
        index = self.row.get(name)
        if index is None:
            index = len(self.names)
            if index == self.allocatable.shape[0]:
                self._grow()
            self.names.append(name)
            self.row[name] = index
            self.requested[index] = 0
        self.allocatable[index] = self.vector(allocatable)
        self.unschedulable[index] = unschedulable
        return index

    def remove(self, name: str) -> None:
        index = self.row.pop(name)
        last = len(self.names) - 1
        if index != last:
            moved = self.names[last]
            self.names[index] = moved
            self.row[moved] = index
            self.allocatable[index] = self.allocatable[last]
            self.requested[index] = self.requested[last]
            self.unschedulable[index] = self.unschedulable[last]
        self.names.pop()
        self.allocatable[last] = 0
        self.requested[last] = 0
        self.unschedulable[last] = False

    def add_requested(self, name: str, requests: dict[str, int], sign: int = 1) -> None:
        index = self.row.get(name)
        if index is not None:
            self.requested[index] += sign * self.vector(requests)

    def _grow(self) -> None:
        size = self.allocatable.shape[0] * 2
        for attr in ("allocatable", "requested"):
            old = getattr(self, attr)
            new = np.zeros((size, old.shape[1]), dtype=np.int64)
            new[: old.shape[0]] = old
            setattr(self, attr, new)
        flags = np.zeros(size, dtype=bool)
        flags[: self.unschedulable.shape[0]] = self.unschedulable
        self.unschedulable = flags
