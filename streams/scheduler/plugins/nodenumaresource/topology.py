"""A node's CPU topology (Koordinator ``cpu_topology.go``) and the Linux cpu list format (``pkg/util/cpuset``).

Counts follow ``CPUTopologyBuilder``: a NUMA node is a distinct (socket, node) pair, a core a distinct
(socket, node, core) triple, and the per-unit sizes are integer quotients::

    cpus_per_core = num_cpus // num_cores      (0 when there is no core)
    cpus_per_node = num_cpus // num_nodes
    cpus_per_socket = num_cpus // num_sockets
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType

MAX_CPU_ID = 4096
"""Highest cpu id a range may end at, as ``cpuset.Parse``'s ``maxAvailableCPUCount``."""

_CPU_LIST_PART = re.compile(r"([0-9]+)(?:-([0-9]+))?")


@dataclass(frozen=True)
class CPUInfo:
    """One logical CPU and where it sits."""

    cpu_id: int
    core_id: int
    socket_id: int
    node_id: int


@dataclass(frozen=True)
class CPUTopology:
    """The logical CPUs of a node, ordered by cpu id."""

    cpus: tuple[CPUInfo, ...] = ()

    def __post_init__(self) -> None:
        ids = [info.cpu_id for info in self.cpus]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate cpu ids in topology: {sorted(i for i in set(ids) if ids.count(i) > 1)}")
        object.__setattr__(self, "cpus", tuple(sorted(self.cpus, key=lambda info: info.cpu_id)))

    @classmethod
    def from_details(cls, details: Iterable[Mapping[str, int]]) -> CPUTopology:
        """From the ``detail`` list of the node annotation ``node.koordinator.sh/cpu-topology``.

        As ``convertCPUTopology``, the reported core id (numbered per socket by Linux) becomes
        ``socket << 16 | core`` so that cores of different sockets never share an id. Duplicate
        cpu ids raise ``ValueError`` rather than silently keeping the last entry.
        """
        return cls(tuple(
            CPUInfo(cpu_id=int(d["id"]), core_id=int(d["socket"]) << 16 | int(d["core"]),
                    socket_id=int(d["socket"]), node_id=int(d["node"]))
            for d in details))

    @classmethod
    def build(cls, sockets: int, nodes_per_socket: int, cores_per_node: int, cpus_per_core: int) -> CPUTopology:
        """The test topology T(S, N, C, P) of ``buildCPUTopologyForTest``: cpu, core and node ids run sequentially."""
        cpus = []
        node_id = core_id = cpu_id = 0
        for socket_id in range(sockets):
            for _ in range(nodes_per_socket):
                for _ in range(cores_per_node):
                    for _ in range(cpus_per_core):
                        cpus.append(CPUInfo(cpu_id, core_id, socket_id, node_id))
                        cpu_id += 1
                    core_id += 1
                node_id += 1
        return cls(tuple(cpus))

    @cached_property
    def details(self) -> Mapping[int, CPUInfo]:
        """cpu id -> CPUInfo (``CPUDetails``)."""
        return MappingProxyType({info.cpu_id: info for info in self.cpus})

    @property
    def num_cpus(self) -> int:
        return len(self.cpus)

    @cached_property
    def num_cores(self) -> int:
        return len({(info.socket_id, info.node_id, info.core_id) for info in self.cpus})

    @cached_property
    def num_nodes(self) -> int:
        return len({(info.socket_id, info.node_id) for info in self.cpus})

    @cached_property
    def num_sockets(self) -> int:
        return len({info.socket_id for info in self.cpus})

    @property
    def cpus_per_core(self) -> int:
        return self.num_cpus // self.num_cores if self.num_cores else 0

    @property
    def cpus_per_node(self) -> int:
        return self.num_cpus // self.num_nodes if self.num_nodes else 0

    @property
    def cpus_per_socket(self) -> int:
        return self.num_cpus // self.num_sockets if self.num_sockets else 0

    @property
    def is_valid(self) -> bool:
        """``IsValid``: at least one cpu (and so one core, node and socket)."""
        return self.num_cpus > 0

    def cpus_in_socket(self, socket_id: int) -> frozenset[int]:
        return frozenset(info.cpu_id for info in self.cpus if info.socket_id == socket_id)


def format_cpuset(ids: Iterable[int]) -> str:
    """The Linux cpu list of ``ids``: ascending, adjacent ids joined as ranges (``{0,1,2,3,8}`` -> ``"0-3,8"``)."""
    ordered = sorted(set(ids))
    parts = []
    start = 0
    for i in range(1, len(ordered) + 1):
        if i == len(ordered) or ordered[i] != ordered[i - 1] + 1:
            low, high = ordered[start], ordered[i - 1]
            parts.append(str(low) if low == high else f"{low}-{high}")
            start = i
    return ",".join(parts)


def parse_cpuset(text: str) -> list[int]:
    """The sorted, distinct cpu ids of a Linux cpu list (``"0-3,8"`` -> ``[0, 1, 2, 3, 8]``; ``""`` -> ``[]``).

    Stricter than ``cpuset.Parse``: a part must be ``N`` or ``N-M`` with decimal digits only, no blanks,
    ``N <= M <= MAX_CPU_ID``; anything else raises ``ValueError`` naming the part (Go silently yields
    nothing for a reversed range).
    """
    cpus: set[int] = set()
    if text == "":
        return []
    for part in text.split(","):
        match = _CPU_LIST_PART.fullmatch(part)
        if match is None:
            raise ValueError(f"invalid cpu list {text!r}: bad part {part!r}")
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) is not None else low
        if high < low:
            raise ValueError(f"invalid cpu list {text!r}: range {part!r} ends before it starts")
        if high > MAX_CPU_ID:
            raise ValueError(f"invalid cpu list {text!r}: {high} exceeds the maximum cpu id {MAX_CPU_ID}")
        cpus.update(range(low, high + 1))
    return sorted(cpus)
