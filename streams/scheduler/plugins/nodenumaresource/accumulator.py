"""CPU selection: Koordinator's ``takePreferredCPUs`` / ``takeCPUs`` (``cpu_accumulator.go``).

``take_cpus`` picks ``needed`` cpus out of ``available``; preferred cpus (e.g. held by a reservation) are
taken first by a separate pass over them alone. One pass, with S the NUMA allocate strategy ordering every
"by free amount" sort (MostAllocated: ascending free count; any other strategy: descending)::

    FullPCPUs, or 1 cpu per core:
      needed <= cpus_per_node:   NUMA nodes' fully free cores (without, then with NUMANodeLevel-exclusive
                                 nodes) ordered by (S node free, S socket free, node id); the first node
                                 with >= needed cpus gives its first `needed` cpus
      needed <= cpus_per_socket: the same over sockets, ordered by (S socket free, socket id)
      whole sockets' fully free cores, most free first, while a socket fits; then core by core from the
      sockets that did not fit, fewest free first
    not FullPCPUs (SpreadByPCPUs):
      needed <= cpus_per_node:   for filter_exclusive in (true, false): per NUMA node the free cpus (without
                                 exclusive-conflicting cpus and one cpu per core when filtering), ordered by
                                 (S node free, S socket free, node id); the first with >= needed listed cpus
                                 gives the first `needed` of its spread order
      needed <= cpus_per_socket: the same over sockets (filtering PCPULevel only)
    fallback, filter_exclusive in (true, false): all free cores ordered by (cpus of the result in the
      socket desc, S socket free, S node free, core free asc, socket id, core ref count, core id), their
      cpus in spread order, taken one by one

The spread order lists the first cpu of every core, then the second, and so on. With ``max_ref_count > 1``
cpus and cores with fewer references come first at each "lowest id" tie-break.

Two behaviours of the Go code are kept on purpose. Go's ``sort.Slice`` of the whole-socket step ties on
size; Go sorts up to 12 elements by insertion sort, which is stable, as Python's sort is. And the
core-by-core step breaks only its inner loop once fewer than a core's cpus are needed, so the next socket
still gives one whole core: the result can then hold up to ``cpus_per_core - 1`` cpus more than needed
(e.g. T(3,1,4,2), FullPCPUs, need 11 -> 12 cpus). Callers that require FullPCPUs only ask for whole cores.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Set
from functools import partial
from typing import NamedTuple

from streams.scheduler.plugins.nodenumaresource.topology import CPUInfo, CPUTopology

ERR_NOT_ENOUGH_CPUS = "not enough cpus available to satisfy request"
ERR_FAILED_TO_ALLOCATE = "failed to allocate cpus"

FULL_PCPUS = "FullPCPUs"
SPREAD_BY_PCPUS = "SpreadByPCPUs"
BIND_POLICIES = (FULL_PCPUS, SPREAD_BY_PCPUS)

EXCLUSIVE_NONE = "None"
EXCLUSIVE_PCPU_LEVEL = "PCPULevel"
EXCLUSIVE_NUMA_NODE_LEVEL = "NUMANodeLevel"
EXCLUSIVE_POLICIES = ("", EXCLUSIVE_NONE, EXCLUSIVE_PCPU_LEVEL, EXCLUSIVE_NUMA_NODE_LEVEL)

MOST_ALLOCATED = "MostAllocated"
LEAST_ALLOCATED = "LeastAllocated"
DISTRIBUTE_EVENLY = "DistributeEvenly"
STRATEGIES = (MOST_ALLOCATED, LEAST_ALLOCATED, DISTRIBUTE_EVENLY)


class NotEnoughCPUs(Exception):
    """The available cpus cannot satisfy the request."""


class CPUAllocation(NamedTuple):
    """How an allocated cpu is held: by how many pods, and the exclusive policy of the last of them
    (``addPodAllocation`` overwrites it)."""

    ref_count: int
    exclusive_policy: str = EXCLUSIVE_NONE


def take_cpus(
    topology: CPUTopology,
    max_ref_count: int,
    available: Set[int],
    allocated: Mapping[int, tuple[int, str]],
    needed: int,
    bind_policy: str,
    exclusive_policy: str,
    strategy: str,
    preferred: Set[int] = frozenset(),
) -> list[int]:
    """The cpus to bind, ascending (``takePreferredCPUs``).

    ``allocated`` maps each cpu already held to ``(ref_count, exclusive_policy)`` (a ``CPUAllocation``);
    ``available`` is what the caller left selectable (cpus below ``max_ref_count``, less reserved ones).
    The available preferred cpus are taken first, at most ``needed`` of them, then the rest from the
    other available cpus; the two passes do not see each other's picks. Raises ``NotEnoughCPUs`` when a
    pass has fewer available cpus than it needs. An exclusive policy of ``""`` means ``None``; the strategy
    ``DistributeEvenly`` orders as ``LeastAllocated`` does here (Go compares with MostAllocated only).
    """
    if bind_policy not in BIND_POLICIES:
        raise ValueError(f"bind policy {bind_policy!r} is not one of {BIND_POLICIES}")
    if exclusive_policy not in EXCLUSIVE_POLICIES:
        raise ValueError(f"exclusive policy {exclusive_policy!r} is not one of {EXCLUSIVE_POLICIES}")
    if strategy not in STRATEGIES:
        raise ValueError(f"NUMA allocate strategy {strategy!r} is not one of {STRATEGIES}")
    take = partial(_take, topology, max_ref_count, allocated, bind_policy, exclusive_policy, strategy)
    result: set[int] = set()
    available = frozenset(available)
    preferred_available = available & frozenset(preferred)
    if preferred_available:
        result = take(preferred_available, min(needed, len(preferred_available)))
        needed -= len(result)
        available -= preferred_available
    if needed > 0:
        result |= take(available, needed)
    return sorted(result)


def spread(topology: CPUTopology, cpus: Iterable[int]) -> list[int]:
    """``spreadCPUs``: the first listed cpu of every core in list order, then the second, and so on."""
    pending = list(cpus)
    if len(pending) <= topology.cpus_per_core:
        return pending
    ordered: list[int] = []
    while pending:
        seen: set[int] = set()
        later = []
        for cpu in pending:
            core = topology.details[cpu].core_id
            if core in seen:
                later.append(cpu)
            else:
                seen.add(core)
                ordered.append(cpu)
        pending = later
    return ordered


def _take(topology: CPUTopology, max_ref_count: int, allocated: Mapping[int, tuple[int, str]], bind_policy: str,
          exclusive_policy: str, strategy: str, available: frozenset[int], needed: int) -> set[int]:
    """``takeCPUs``: one pass of the selection in the module docstring."""
    acc = _Accumulator(topology, max_ref_count, available, allocated, needed, exclusive_policy, strategy)
    if acc.satisfied:
        return acc.result
    if acc.needed > len(acc.allocatable):
        raise NotEnoughCPUs(ERR_NOT_ENOUGH_CPUS)

    full_pcpus = bind_policy == FULL_PCPUS
    per_core = topology.cpus_per_core
    if full_pcpus or per_core == 1:
        if acc.needed <= topology.cpus_per_node:
            for filter_exclusive in (True, False):
                for cpus in acc.free_cores_in_node(filter_exclusive):
                    if len(cpus) >= acc.needed:
                        acc.take(cpus[:acc.needed])
                        return acc.result
        if acc.needed <= topology.cpus_per_socket:
            for cpus in acc.free_cores_in_socket():
                if len(cpus) >= acc.needed:
                    acc.take(cpus[:acc.needed])
                    return acc.result

        unsatisfied = []
        for cpus in sorted(acc.free_cores_in_socket(), key=lambda cpus: -len(cpus)):
            if not acc.needs(len(cpus)):
                unsatisfied.append(cpus)
                continue
            acc.take(cpus)
            if acc.satisfied:
                return acc.result
        if acc.needs(per_core):
            for cpus in sorted(unsatisfied, key=len):
                for i in range(0, len(cpus), per_core):
                    acc.take(cpus[i:i + per_core])
                    if acc.satisfied:
                        return acc.result
                    if not acc.needs(per_core):
                        break

    if not full_pcpus:
        if acc.needed <= topology.cpus_per_node:
            for filter_exclusive in (True, False):
                for cpus in acc.free_cpus_in_node(filter_exclusive):
                    if len(cpus) >= acc.needed:
                        acc.take(spread(topology, cpus)[:acc.needed])
                        return acc.result
        if acc.needed <= topology.cpus_per_socket:
            for filter_exclusive in (True, False):
                for cpus in acc.free_cpus_in_socket(filter_exclusive):
                    if len(cpus) >= acc.needed:
                        acc.take(spread(topology, cpus)[:acc.needed])
                        return acc.result

    for filter_exclusive in (True, False):
        for cpu in spread(topology, acc.free_cpus(filter_exclusive)):
            if acc.needs(1):
                acc.take([cpu])
            if acc.satisfied:
                return acc.result
    raise NotEnoughCPUs(ERR_FAILED_TO_ALLOCATE)


class _Accumulator:
    """``cpuAccumulator``: the cpus still selectable, the result so far, and the exclusive cores/nodes."""

    def __init__(self, topology: CPUTopology, max_ref_count: int, available: frozenset[int],
                 allocated: Mapping[int, tuple[int, str]], needed: int, exclusive_policy: str,
                 strategy: str) -> None:
        self.topology = topology
        self.details = topology.details
        self.max_ref_count = max_ref_count
        self.needed = needed
        self.exclusive_policy = exclusive_policy
        self.most_allocated = strategy == MOST_ALLOCATED
        self.result: set[int] = set()
        self.exclusive_cores: set[int] = set()
        self.exclusive_nodes: set[int] = set()
        for cpu in sorted(allocated):
            info = self.details.get(cpu)
            if info is None:
                continue
            if allocated[cpu][1] == EXCLUSIVE_PCPU_LEVEL:
                self.exclusive_cores.add(info.core_id)
            elif allocated[cpu][1] == EXCLUSIVE_NUMA_NODE_LEVEL:
                self.exclusive_nodes.add(info.node_id)
        # Reference counts only order cpus when sharing is allowed, as in Go.
        self.allocatable: dict[int, int] = {
            cpu: (allocated[cpu][0] if max_ref_count > 1 and cpu in allocated else 0)
            for cpu in sorted(available) if cpu in self.details}

    @property
    def satisfied(self) -> bool:
        return self.needed < 1

    def needs(self, n: int) -> bool:
        return self.needed >= n

    def take(self, cpus: Iterable[int]) -> None:
        for cpu in cpus:
            self.result.add(cpu)
            del self.allocatable[cpu]
            self.needed -= 1
            info = self.details[cpu]
            if self.exclusive_policy == EXCLUSIVE_PCPU_LEVEL:
                self.exclusive_cores.add(info.core_id)
            elif self.exclusive_policy == EXCLUSIVE_NUMA_NODE_LEVEL:
                self.exclusive_nodes.add(info.node_id)

    def by_free(self, count: int) -> int:
        """Sort key of a free count under the strategy: MostAllocated packs (ascending), others spread."""
        return count if self.most_allocated else -count

    def pcpu_excluded(self, info: CPUInfo) -> bool:
        return self.exclusive_policy == EXCLUSIVE_PCPU_LEVEL and info.core_id in self.exclusive_cores

    def numa_excluded(self, info: CPUInfo) -> bool:
        return self.exclusive_policy == EXCLUSIVE_NUMA_NODE_LEVEL and info.node_id in self.exclusive_nodes

    def core_ref_count(self, core: int) -> int:
        """``getCoreRefCount``: references of the core's still selectable cpus; 0 unless sharing is allowed."""
        if self.max_ref_count <= 1:
            return 0
        return sum(ref for cpu, ref in self.allocatable.items() if self.details[cpu].core_id == core)

    def by_ref_count(self, cpus: Iterable[int]) -> list[int]:
        """Ascending ids, fewer references first when sharing is allowed (``sortCPUsByRefCount``)."""
        if self.max_ref_count > 1:
            return sorted(cpus, key=lambda cpu: (self.allocatable[cpu], cpu))
        return sorted(cpus)

    def one_per_core(self, cpus: list[int]) -> list[int]:
        """``extractCPU``: the first listed cpu of each core."""
        seen: set[int] = set()
        kept = []
        for cpu in cpus:
            core = self.details[cpu].core_id
            if core not in seen:
                seen.add(core)
                kept.append(cpu)
        return kept

    def cores_by_free(self, cpus_in_cores: Mapping[int, list[int]], cores: Iterable[int]) -> list[int]:
        """``sortCores``: the cpus of the cores, most free cpus first, then fewer references, then core id."""
        ordered = sorted(cores, key=lambda core: (-len(cpus_in_cores[core]), self.core_ref_count(core), core))
        return [cpu for core in ordered for cpu in sorted(cpus_in_cores[core])]

    def free_cores_in_node(self, filter_exclusive: bool) -> list[list[int]]:
        """``freeCoresInNode(true, filter_exclusive)``: per NUMA node the cpus of its fully free cores."""
        cpus_in_cores: dict[int, list[int]] = defaultdict(list)
        socket_free: Counter[int] = Counter()
        for cpu in self.allocatable:
            info = self.details[cpu]
            if filter_exclusive and self.numa_excluded(info):
                continue
            cpus_in_cores[info.core_id].append(cpu)
            socket_free[info.socket_id] += 1
        cores_in_nodes: dict[int, list[int]] = defaultdict(list)
        for core, cpus in cpus_in_cores.items():
            if len(cpus) == self.topology.cpus_per_core:
                cores_in_nodes[self.details[cpus[0]].node_id].append(core)
        cpus_in_nodes = {node: self.cores_by_free(cpus_in_cores, cores) for node, cores in cores_in_nodes.items()}

        def order(node: int) -> tuple[int, int, int]:
            socket = self.details[cpus_in_nodes[node][0]].socket_id
            return self.by_free(len(cpus_in_nodes[node])), self.by_free(socket_free[socket]), node
        return [cpus_in_nodes[node] for node in sorted(cpus_in_nodes, key=order)]

    def free_cores_in_socket(self) -> list[list[int]]:
        """``freeCoresInSocket(true)``: per socket the cpus of its fully free cores."""
        cpus_in_cores: dict[int, list[int]] = defaultdict(list)
        for cpu in self.allocatable:
            cpus_in_cores[self.details[cpu].core_id].append(cpu)
        cores_in_sockets: dict[int, list[int]] = defaultdict(list)
        for core, cpus in cpus_in_cores.items():
            if len(cpus) == self.topology.cpus_per_core:
                cores_in_sockets[self.details[cpus[0]].socket_id].append(core)
        cpus_in_sockets = {
            socket: self.cores_by_free(cpus_in_cores, cores) for socket, cores in cores_in_sockets.items()}
        return [cpus_in_sockets[socket] for socket in sorted(
            cpus_in_sockets, key=lambda socket: (self.by_free(len(cpus_in_sockets[socket])), socket))]

    def free_cpus_in_node(self, filter_exclusive: bool) -> list[list[int]]:
        """``freeCPUsInNode``: per NUMA node its free cpus; when filtering, without exclusive conflicts and
        one cpu per core, while the node's rank still counts every non-conflicting cpu."""
        cpus_in_nodes: dict[int, list[int]] = defaultdict(list)
        socket_free: Counter[int] = Counter()
        for cpu in self.allocatable:
            info = self.details[cpu]
            if filter_exclusive and (self.pcpu_excluded(info) or self.numa_excluded(info)):
                continue
            cpus_in_nodes[info.node_id].append(cpu)
            socket_free[info.socket_id] += 1
        node_free = {node: len(cpus) for node, cpus in cpus_in_nodes.items()}
        listed = {}
        for node, cpus in cpus_in_nodes.items():
            cpus = self.by_ref_count(cpus)
            listed[node] = self.one_per_core(cpus) if filter_exclusive else cpus

        def order(node: int) -> tuple[int, int, int]:
            socket = self.details[listed[node][0]].socket_id
            return self.by_free(node_free[node]), self.by_free(socket_free[socket]), node
        return [listed[node] for node in sorted(listed, key=order)]

    def free_cpus_in_socket(self, filter_exclusive: bool) -> list[list[int]]:
        """``freeCPUsInSocket``: per socket its free cpus; when filtering, without PCPULevel conflicts and one
        cpu per core, the socket ranked by the listed count."""
        cpus_in_sockets: dict[int, list[int]] = defaultdict(list)
        for cpu in self.allocatable:
            info = self.details[cpu]
            if filter_exclusive and self.pcpu_excluded(info):
                continue
            cpus_in_sockets[info.socket_id].append(cpu)
        listed = {}
        for socket, cpus in cpus_in_sockets.items():
            cpus = self.by_ref_count(cpus)
            listed[socket] = self.one_per_core(cpus) if filter_exclusive else cpus
        return [listed[socket] for socket in sorted(
            listed, key=lambda socket: (self.by_free(len(listed[socket])), socket))]

    def free_cpus(self, filter_exclusive: bool) -> list[int]:
        """``freeCPUs``: the free cpus core by core, cores ordered as in the module docstring's fallback."""
        cpus_in_cores: dict[int, list[int]] = defaultdict(list)
        node_free: Counter[int] = Counter()
        socket_free: Counter[int] = Counter()
        for cpu in self.allocatable:
            info = self.details[cpu]
            if filter_exclusive and (self.pcpu_excluded(info) or self.numa_excluded(info)):
                continue
            cpus_in_cores[info.core_id].append(cpu)
            node_free[info.node_id] += 1
            socket_free[info.socket_id] += 1
        socket_colo = {socket: len(self.topology.cpus_in_socket(socket) & self.result) for socket in socket_free}

        def order(core: int) -> tuple[int, ...]:
            info = self.details[cpus_in_cores[core][0]]
            return (-socket_colo[info.socket_id], self.by_free(socket_free[info.socket_id]),
                    self.by_free(node_free[info.node_id]), len(cpus_in_cores[core]), info.socket_id,
                    self.core_ref_count(core), core)
        return [cpu for core in sorted(cpus_in_cores, key=order) for cpu in self.by_ref_count(cpus_in_cores[core])]
