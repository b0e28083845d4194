"""NodeNUMAResource's resource manager (Koordinator ``resource_manager.go``): where on a node a pod's resources go.

- ``allocate``: the NUMA split of the hint's mask (``tryBestToDistributeEvenly``, ``distribute``) and the
  cpuset (``allocateCPUSet``: ``accumulator.take_cpus`` within the NUMA nodes allocated, else the whole node;
  a required bind policy limits the selectable cpus and must hold for the result);
- ``topology_hints``: every NUMA mask the pod can be allocated in, per resource, for the topology manager.

``tryBestToDistributeEvenly`` sorts the NUMA nodes by comparing the availability of the NUMA ids equal to the
slice positions; that quirk is kept by replaying Go's insertion sort (``go_sorted``; exact for up to 12 NUMA
nodes, where Go sorts by insertion).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from streams.koordinator.labels import LABEL_NODE_NUMA_ALLOCATE_STRATEGY
from streams.scheduler.framework import Code, Status
from streams.scheduler.plugins.nodenumaresource.accumulator import (
    EXCLUSIVE_NONE, EXCLUSIVE_POLICIES, FULL_PCPUS, LEAST_ALLOCATED, MOST_ALLOCATED, STRATEGIES, NotEnoughCPUs,
    take_cpus)
from streams.scheduler.plugins.nodenumaresource.args import NAME
from streams.scheduler.plugins.nodenumaresource.numa import (
    PodAllocation, TopologyOptions, filter_by_required_policy, satisfies_required_policy)
from streams.scheduler.plugins.nodenumaresource.topologymanager import (
    POLICY_RESTRICTED, Hint, bits, count, iterate_masks)

ERR_INVALID_CPU_TOPOLOGY = "node(s) invalid CPU Topology"
ERR_NOT_ENOUGH_CPUS = "not enough cpus available to satisfy request"
ERR_INSUFFICIENT_NUMA_NODE_RESOURCES = "node(s) Insufficient NUMA Node resources"
ERR_NO_NUMA_RESOURCES = "insufficient resources on NUMA Node"
ERR_INSUFFICIENT_NUMA = "Insufficient NUMA {}"
NATIVE_SCORED = ("cpu", "memory", "ephemeral-storage")
"""Resources scored even when the pod does not request them (the others are skipped then, as scalars)."""


def resource_score(kind: str, weights, requested: Mapping[str, int], allocatable: Mapping[str, int],
                   pod: Mapping[str, int]) -> int:
    """``resourceAllocationScorer.score``; over the weighted resources with non-zero allocatable::

        least = (alloc - req) * 100 // alloc   (0 when req > alloc)
        most  = min(req, alloc) * 100 // alloc
        score = sum(weight * s) // sum(weight)      with req = requested + pod request
    """
    total = weight_sum = 0
    for name, weight in weights:
        wanted = pod.get(name, 0)
        if name == "pods" or (wanted == 0 and name not in NATIVE_SCORED):
            continue
        alloc = allocatable.get(name, 0)
        if alloc == 0:
            continue
        req = requested.get(name, 0) + wanted
        if kind == MOST_ALLOCATED:
            part = min(req, alloc) * 100 // alloc
        else:
            part = 0 if req > alloc else (alloc - req) * 100 // alloc
        total += part * weight
        weight_sum += weight
    return total // weight_sum if weight_sum else 0


@dataclasses.dataclass(frozen=True)
class ResourceOptions:
    """``ResourceOptions``."""

    requests: Mapping[str, int]
    num_cpus: int
    request_bind: bool
    required: bool
    bind_policy: str
    exclusive: str
    hint: Hint | None
    topology: TopologyOptions


def go_sorted(nodes: list[int], available: Mapping[int, Mapping[str, int]], resource: str) -> list[int]:
    """Go's ``sort.Slice`` of ``tryBestToDistributeEvenly``: its comparator reads the availability of the NUMA
    ids equal to the slice positions, so the swaps of the insertion sort are replayed with those values."""
    def at(position: int) -> int:
        return available.get(position, {}).get(resource, 0)
    order = list(nodes)
    for i in range(1, len(order)):
        j = i
        while j > 0 and at(j) < at(j - 1):
            order[j], order[j - 1] = order[j - 1], order[j]
            j -= 1
    return order


class NodeUnfit(Exception):
    """A node that cannot take the pod, with the Status saying why."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status


def unfit(code: Code, *reasons: str) -> NodeUnfit:
    return NodeUnfit(Status(code, tuple(reasons), NAME))


class ResourceManager:
    """The resource-manager part of ``NodeNUMAResource`` (it reads the plugin's ``_node``, ``topology_options``,
    ``args`` and ``cluster``)."""

    def _available_cpus(self, name: str, options: TopologyOptions):
        if not options.topology.is_valid:
            raise unfit(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_INVALID_CPU_TOPOLOGY)
        return self._node(name).available_cpus(options)

    def _trim(self, name: str, available: dict[int, dict[str, int]], opts: ResourceOptions) -> None:
        """``trimNUMANodeResources``: with a required policy a NUMA node offers no more cpus than it has
        selectable under that policy."""
        if not opts.required:
            return
        cpus, _ = self._available_cpus(name, opts.topology)
        for numa, amounts in sorted(available.items()):
            cpu = amounts.get("cpu", 0)
            if cpu == 0:
                continue
            usable = filter_by_required_policy(opts.bind_policy, cpus & opts.topology.cpus_in_numa(numa),
                                               opts.topology.topology)
            if len(usable) * 1000 < cpu:
                amounts["cpu"] = len(usable) * 1000

    def allocate(self, name: str, opts: ResourceOptions) -> PodAllocation:
        """``resourceManager.Allocate``; raises ``NodeUnfit``."""
        numa: tuple = ()
        if opts.hint is not None and opts.hint.affinity is not None:
            numa = self._allocate_by_hint(name, opts)
        cpus: tuple[int, ...] = ()
        if opts.request_bind:
            try:
                cpus = tuple(self._allocate_cpuset(name, numa, opts))
            except (NotEnoughCPUs, ValueError) as error:
                raise unfit(Code.UNSCHEDULABLE, str(error)) from None
        return PodAllocation(cpus, opts.exclusive, numa)

    def _allocate_by_hint(self, name: str, opts: ResourceOptions) -> tuple:
        if not opts.topology.numa_resources:
            raise unfit(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NO_NUMA_RESOURCES)
        available, _ = self._node(name).available_numa(opts.topology)
        self._trim(name, available, opts)
        result, reasons = self.distribute(opts.requests, available, opts)
        if reasons:
            raise unfit(Code.UNSCHEDULABLE, *reasons)
        return result

    def distribute(self, requests: Mapping[str, int], available: Mapping[int, Mapping[str, int]],
                   opts: ResourceOptions) -> tuple[tuple, list[str]]:
        """``tryBestToDistributeEvenly``: per resource, the i-th of the mask's n NUMA nodes (in the quirk order
        of ``go_sorted``) gives ``min(available, split(remaining, n - i))``; what is left is "Insufficient
        NUMA <resource>"."""
        names = sorted({resource for amounts in available.values() for resource in amounts})
        nodes = bits(opts.hint.affinity)
        order = {resource: go_sorted(nodes, available, resource) for resource in names}
        allocated: dict[int, dict[str, int]] = {}
        remaining: dict[str, int] = {}
        for resource in sorted(requests):
            quantity = requests[resource]
            for i, numa in enumerate(order.get(resource, ())):
                share = self._split(resource, quantity, len(nodes) - i, opts)
                got = min(available.get(numa, {}).get(resource, 0), share)
                if got != 0:
                    allocated.setdefault(numa, {})[resource] = got
                    quantity -= got
            remaining[resource] = quantity
        reasons = [ERR_INSUFFICIENT_NUMA.format(r) for r in sorted(remaining) if r in names and remaining[r] != 0]
        return tuple((numa, allocated[numa]) for numa in sorted(allocated)), reasons

    @staticmethod
    def _split(resource: str, quantity: int, nodes: int, opts: ResourceOptions) -> int:
        """``splitQuantity``: an even share; bound cpus in whole cpus, with required FullPCPUs in whole cores::

            cores = ceil(cpu / 1000) // cpus_per_core;  share = cores // nodes * cpus_per_core * 1000
        """
        if resource != "cpu" or not opts.request_bind:
            return quantity // nodes
        whole = -(-quantity // 1000)
        if opts.required and opts.bind_policy == FULL_PCPUS:
            per_core = opts.topology.topology.cpus_per_core
            return whole // per_core // nodes * per_core * 1000
        return whole // nodes * 1000

    def _allocate_cpuset(self, name: str, numa: tuple, opts: ResourceOptions) -> list[int]:
        """``allocateCPUSet``: the cpus of the NUMA nodes allocated (each at most its cpu share), else from the
        whole node; a required policy limits the selectable cpus and must hold for the result."""
        topology = opts.topology.topology
        available, allocated = self._available_cpus(name, opts.topology)
        if opts.required:
            available = filter_by_required_policy(opts.bind_policy, available, topology)
        if len(available) < opts.num_cpus:
            raise NotEnoughCPUs(ERR_NOT_ENOUGH_CPUS)
        strategy = self.cluster.nodes[name].labels.get(LABEL_NODE_NUMA_ALLOCATE_STRATEGY) or \
            self.args.numa_allocate_strategy
        strategy = strategy if strategy in STRATEGIES else LEAST_ALLOCATED
        exclusive = opts.exclusive if opts.exclusive in EXCLUSIVE_POLICIES else EXCLUSIVE_NONE

        def take(cpus: frozenset[int], needed: int) -> list[int]:
            return take_cpus(topology, opts.topology.max_ref_count, cpus, allocated, needed, opts.bind_policy,
                             exclusive, strategy)
        result: set[int] = set()
        needed = opts.num_cpus
        if numa:
            for node, amounts in numa:
                in_node = available & opts.topology.cpus_in_numa(node)
                result.update(take(in_node, min(len(in_node), amounts.get("cpu", 0) // 1000)))
            needed -= len(result)
            if needed != 0:
                raise NotEnoughCPUs(ERR_NOT_ENOUGH_CPUS)
        if needed > 0:
            result.update(take(available - result, needed))
        if opts.required and not satisfies_required_policy(opts.bind_policy, sorted(result), topology):
            raise NotEnoughCPUs(f"insufficient CPUs to satisfy required cpu bind policy {opts.bind_policy}")
        return sorted(result)

    def topology_hints(self, name: str, opts: ResourceOptions, policy: str) -> dict[str, list[Hint]]:
        """``GetTopologyHints`` / ``generateResourceHints``: every NUMA mask the pod can be allocated in, per
        requested resource the NUMA zones offer; preferred when of the smallest feasible size (Restricted:
        always). A mask using a NUMA node without any of a resource gives no hint for it."""
        zones = opts.topology.numa_resources
        if not zones:
            raise unfit(Code.UNSCHEDULABLE, ERR_INSUFFICIENT_NUMA_NODE_RESOURCES)
        try:
            available, _ = self._node(name).available_numa(opts.topology)
            self._trim(name, available, opts)
        except NodeUnfit:
            raise unfit(Code.UNSCHEDULABLE, ERR_INSUFFICIENT_NUMA_NODE_RESOURCES) from None
        zone = dict(zones)
        names = sorted({resource for _, amounts in zones for resource in amounts})
        lack = {resource: {numa for numa, amounts in available.items() if amounts.get(resource, 0) == 0}
                for resource in names}
        smallest = {resource: len(zones) for resource in opts.requests}
        seen: set[str] = set()
        hints: dict[str, list[Hint]] = {}
        for mask in iterate_masks([numa for numa, _ in zones]):
            free: dict[str, int] = {}
            total: dict[str, int] = {}
            for numa in bits(mask):
                for resource, value in available.get(numa, {}).items():
                    free[resource] = free.get(resource, 0) + value
                for resource, value in zone[numa].items():
                    total[resource] = total.get(resource, 0) + value
            seen.update(resource for resource in opts.requests if resource in total)
            used = {resource: max(0, value - free.get(resource, 0)) for resource, value in total.items()}
            score = resource_score(self.args.numa_scoring_type, self.args.scoring_weights, used, total, opts.requests)
            try:
                self.allocate(name, dataclasses.replace(opts, hint=Hint(mask)))
            except NodeUnfit:
                continue
            for resource in sorted(seen):
                if any(numa in lack.get(resource, ()) for numa in bits(mask)):
                    continue
                smallest[resource] = min(smallest[resource], count(mask))
                hints.setdefault(resource, []).append(Hint(mask, False, score=score))
        for resource in sorted(hints):
            hints[resource] = [dataclasses.replace(h, preferred=count(h.affinity) == smallest[resource]
                                                   or policy == POLICY_RESTRICTED) for h in hints[resource]]
        for resource in sorted(seen):
            hints.setdefault(resource, [])
        return hints
