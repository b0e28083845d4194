"""A scheduling domain's nodes as columns.

Filters and scores run vectorized over all nodes, so node state is kept as
numpy arrays with one row per resource and one column per node (each
resource's values over all nodes are contiguous): ``allocatable``,
``requested`` (sum of the requests of the pods assigned to the node) and
``nonzero`` (cpu and memory requested, counting 100m / 200Mi for a container
that states no request — kube-scheduler's ``NonZeroRequested``). Resources are
``cpu`` (milli-cores), ``memory`` (bytes), ``pods`` (count), then extended
resources in order of first appearance.

Plugins keep their own per-node vectors here too (``attach``), so that they
grow and move with the nodes. Nodes are kept in arrival order; removing a node
moves the last node into its slot, which is deterministic for a given inbox.
Ties between equally scored nodes are broken by name (``name_rank``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

BASE_RESOURCES = ("cpu", "memory", "pods")
CPU, MEMORY, PODS = 0, 1, 2
NONZERO_RESOURCES = ("cpu", "memory")


class NodeColumns:
    def __init__(self, capacity: int = 64) -> None:
        self.resources: list[str] = list(BASE_RESOURCES)
        self.index: dict[str, int] = {name: i for i, name in enumerate(self.resources)}
        self.names: list[str] = []
        self.row: dict[str, int] = {}
        self.capacity = capacity
        self.allocatable = np.zeros((len(self.resources), capacity), dtype=np.int64)
        self.requested = np.zeros_like(self.allocatable)
        self.nonzero = np.zeros((len(NONZERO_RESOURCES), capacity), dtype=np.int64)
        self.unschedulable = np.zeros(capacity, dtype=bool)
        self._attached: dict[tuple[str, str], tuple[np.ndarray, object]] = {}
        self._rank: np.ndarray | None = None
        self.version = 0
        """Bumped whenever a node is added, removed or changes allocatable or schedulability."""

    def __len__(self) -> int:
        return len(self.names)

    # -- resources ---------------------------------------------------------

    def column(self, resource: str) -> int:
        """The row of ``resource``, added (zero everywhere) when new."""
        index = self.index.get(resource)
        if index is None:
            index = len(self.resources)
            self.resources.append(resource)
            self.index[resource] = index
            pad = np.zeros((1, self.capacity), dtype=np.int64)
            self.allocatable = np.vstack([self.allocatable, pad])
            self.requested = np.vstack([self.requested, pad])
        return index

    def get(self, matrix: np.ndarray, resource: str) -> np.ndarray:
        """``matrix``'s values of ``resource`` over the live nodes (zeros for an unknown resource)."""
        index = self.index.get(resource)
        if index is None:
            return np.zeros(len(self.names), dtype=np.int64)
        return matrix[index, : len(self.names)]

    # -- nodes -------------------------------------------------------------

    def upsert(self, name: str, allocatable: Mapping[str, int], unschedulable: bool = False) -> int:
        index = self.row.get(name)
        if index is None:
            index = len(self.names)
            if index == self.capacity:
                self._grow()
            self.names.append(name)
            self.row[name] = index
            self.requested[:, index] = 0
            self.nonzero[:, index] = 0
            for array, fill in self._attached.values():
                array[..., index] = fill
            self._rank = None
        for resource in allocatable:
            self.column(resource)
        self.allocatable[:, index] = 0
        for resource, value in allocatable.items():
            self.allocatable[self.index[resource], index] = value
        self.unschedulable[index] = unschedulable
        self.version += 1
        return index

    def remove(self, name: str) -> tuple[int, str | None]:
        """Drop ``name``; returns (its former row, the node moved into that row or None)."""
        index = self.row.pop(name)
        last = len(self.names) - 1
        moved = None
        if index != last:
            moved = self.names[last]
            self.names[index] = moved
            self.row[moved] = index
            for matrix in (self.allocatable, self.requested, self.nonzero):
                matrix[:, index] = matrix[:, last]
            self.unschedulable[index] = self.unschedulable[last]
            for array, _ in self._attached.values():
                array[..., index] = array[..., last]
        self.names.pop()
        self.allocatable[:, last] = 0
        self.requested[:, last] = 0
        self.nonzero[:, last] = 0
        self.unschedulable[last] = False
        for array, fill in self._attached.values():
            array[..., last] = fill
        self._rank = None
        self.version += 1
        return index, moved

    def add_pod(self, name: str, requests: Mapping[str, int], nonzero: Mapping[str, int], sign: int = 1) -> None:
        """Account (or with ``sign=-1`` release) one pod's requests on node ``name``."""
        index = self.row.get(name)
        if index is None:
            return
        for resource, value in requests.items():
            column = self.column(resource)
            self.requested[column, index] += sign * value
        self.requested[PODS, index] += sign
        self.nonzero[CPU, index] += sign * nonzero.get("cpu", 0)
        self.nonzero[MEMORY, index] += sign * nonzero.get("memory", 0)

    def vector(self, resources: Mapping[str, int]) -> np.ndarray:
        """``resources`` as a column aligned with the resource rows (unknown names added)."""
        for name in resources:
            self.column(name)
        out = np.zeros(len(self.resources), dtype=np.int64)
        for name, value in resources.items():
            out[self.index[name]] = value
        return out

    def name_rank(self) -> np.ndarray:
        """Tie-break weight of each node: n - (rank of its name in sorted order), so the name that sorts
        first weighs most; recomputed after membership changes."""
        if self._rank is None or len(self._rank) != len(self.names):
            count = len(self.names)
            order = sorted(range(count), key=self.names.__getitem__)
            rank = np.empty(count, dtype=np.int64)
            rank[order] = np.arange(count, 0, -1, dtype=np.int64)
            self._rank = rank
        return self._rank

    # -- per-node vectors owned by plugins -----------------------------------

    def attach(self, owner: str, name: str, rows: int | None, dtype, fill) -> np.ndarray:
        """A per-node array owned by ``owner`` (shape (rows, capacity), or (capacity,) when rows is None).

        Read it through ``attached(owner, name)`` after nodes were added: growing replaces the array."""
        shape = (self.capacity,) if rows is None else (rows, self.capacity)
        array = np.full(shape, fill, dtype=dtype)
        self._attached[(owner, name)] = (array, fill)
        return array

    def attached(self, owner: str, name: str) -> np.ndarray:
        return self._attached[(owner, name)][0]

    def detach(self, owner: str) -> None:
        for key in [key for key in self._attached if key[0] == owner]:
            del self._attached[key]

    def _grow(self) -> None:
        size = self.capacity * 2
        for attr in ("allocatable", "requested", "nonzero"):
            old = getattr(self, attr)
            new = np.zeros((old.shape[0], size), dtype=old.dtype)
            new[:, : self.capacity] = old
            setattr(self, attr, new)
        flags = np.zeros(size, dtype=bool)
        flags[: self.capacity] = self.unschedulable
        self.unschedulable = flags
        for key, (array, fill) in list(self._attached.items()):
            new = np.full(array.shape[:-1] + (size,), fill, dtype=array.dtype)
            new[..., : self.capacity] = array
            self._attached[key] = (new, fill)
        self.capacity = size
