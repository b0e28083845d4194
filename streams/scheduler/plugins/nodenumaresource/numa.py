"""Per-node CPU topology options and NUMA allocations (Koordinator ``topology_options.go``, ``node_allocation.go``).

``TopologyOptions.from_node`` reads what Koordinator reads from the node's NodeResourceTopology, here from the
Node itself:

- the CPU topology from the annotation ``node.koordinator.sh/cpu-topology`` (an unreadable one gives the empty,
  invalid topology, as Go logs and carries on);
- reserved cpus: the ``reservedCPUs`` of ``kubelet.koordinator.sh/cpu-manager-policy`` and of the node
  reservation annotation ``node.koordinator.sh/reservation``;
- the NUMA zones. Koordinator takes them from the NodeResourceTopology's zones; here every NUMA node of the
  topology is a zone whose cpu is its cpu count, and the node's allocatable memory is split evenly (the first
  ``memory mod n`` zones get one byte more)::

      zone cpu (milli)  = 1000 * (cpus of the NUMA node - reserved cpus of the NUMA node)
      zone memory       = allocatable memory // NUMA nodes (+1 for the first allocatable memory % NUMA nodes)

``NodeAllocation`` holds the pods' allocations on one node (cpuset with its exclusive policy, and per-NUMA
resources) and derives what ``NodeAllocation`` in Go keeps: per cpu the reference count and the exclusive
policy of the last pod added, per NUMA node the allocated resources and the status idle / single / shared
(only cpusets count: a pod whose cpuset lies in one NUMA node makes it ``single``, one spanning several makes
each of them ``shared``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence

from streams.koordinator.annotations import (
    ANNOTATION_CPU_TOPOLOGY, ANNOTATION_KUBELET_CPU_MANAGER_POLICY, ANNOTATION_NODE_RESERVATION,
    ANNOTATION_RESOURCE_SPEC, ANNOTATION_RESOURCE_STATUS)
from streams.objects.quantity import QuantityError, format_quantity, resource_list
from streams.scheduler.plugins.nodenumaresource.accumulator import (
    EXCLUSIVE_NONE, FULL_PCPUS, SPREAD_BY_PCPUS, CPUAllocation)
from streams.scheduler.plugins.nodenumaresource.topology import CPUTopology, format_cpuset, parse_cpuset
from streams.scheduler.plugins.nodenumaresource.topologymanager import STATUS_IDLE, STATUS_SHARED, STATUS_SINGLE

KUBELET_STATIC = "static"
KUBELET_FULL_PCPUS_ONLY = "full-pcpus-only"
NUMA_RESOURCES = ("cpu", "memory")


@dataclasses.dataclass(frozen=True)
class TopologyOptions:
    topology: CPUTopology = CPUTopology()
    reserved_cpus: frozenset[int] = frozenset()
    max_ref_count: int = 1
    kubelet_policy: str = ""
    kubelet_options: Mapping[str, str] = dataclasses.field(default_factory=dict)
    numa_resources: tuple[tuple[int, Mapping[str, int]], ...] = ()
    """(NUMA node id, {cpu, memory}) ascending by id."""

    @property
    def numa_nodes(self) -> list[int]:
        return [node for node, _ in self.numa_resources]

    @property
    def full_pcpus_only(self) -> bool:
        """The kubelet's static cpu manager with ``full-pcpus-only=true``."""
        return self.kubelet_policy == KUBELET_STATIC and self.kubelet_options.get(KUBELET_FULL_PCPUS_ONLY) == "true"

    def cpus_in_numa(self, node: int) -> frozenset[int]:
        return frozenset(info.cpu_id for info in self.topology.cpus if info.node_id == node)

    @classmethod
    def from_node(cls, annotations: Mapping[str, str], allocatable: Mapping[str, int]) -> TopologyOptions:
        topology = _topology(annotations.get(ANNOTATION_CPU_TOPOLOGY))
        kubelet = _json_object(annotations.get(ANNOTATION_KUBELET_CPU_MANAGER_POLICY))
        reserved = set(_cpus(kubelet.get("reservedCPUs")))
        reserved |= set(_cpus(_json_object(annotations.get(ANNOTATION_NODE_RESERVATION)).get("reservedCPUs")))
        options = kubelet.get("options") if isinstance(kubelet.get("options"), dict) else {}
        nodes = sorted({info.node_id for info in topology.cpus})
        memory = allocatable.get("memory", 0)
        zones = []
        for index, node in enumerate(nodes):
            cpus = {info.cpu_id for info in topology.cpus if info.node_id == node}
            share = memory // len(nodes) + (1 if index < memory % len(nodes) else 0)
            zones.append((node, {"cpu": 1000 * len(cpus - reserved), "memory": share}))
        policy = kubelet.get("policy")
        return cls(topology, frozenset(reserved), 1, policy if isinstance(policy, str) else "",
                   {str(k): str(v) for k, v in options.items()}, tuple(zones))


def _json_object(text: str | None) -> dict:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _cpus(text) -> list[int]:
    try:
        return parse_cpuset(text) if isinstance(text, str) else []
    except ValueError:
        return []


def _topology(text: str | None) -> CPUTopology:
    detail = _json_object(text).get("detail")
    try:
        return CPUTopology.from_details(detail) if isinstance(detail, list) else CPUTopology()
    except (KeyError, TypeError, ValueError):
        return CPUTopology()


@dataclasses.dataclass(frozen=True)
class PodAllocation:
    """``PodAllocation``: the cpuset (ascending) and the per-NUMA resources, ascending by NUMA id."""

    cpuset: tuple[int, ...] = ()
    exclusive_policy: str = ""
    numa_resources: tuple[tuple[int, Mapping[str, int]], ...] = ()

    def status_annotation(self) -> str:
        """``scheduling.koordinator.sh/resource-status``: compact JSON, keys sorted, an empty cpuset left out
        (``omitempty``), quantities as Kubernetes writes them."""
        status: dict = {}
        if self.cpuset:
            status["cpuset"] = format_cpuset(self.cpuset)
        if self.numa_resources:
            status["numaNodeResources"] = [
                {"node": node, **({"resources": {name: format_quantity(name, value)
                                                  for name, value in sorted(resources.items())}}
                                  if resources else {})}
                for node, resources in self.numa_resources]
        return json.dumps(status, sort_keys=True, separators=(",", ":"))


def allocation_from_annotations(annotations: Mapping[str, str]) -> PodAllocation | None:
    """The allocation a pod's ``resource-status`` (and ``resource-spec`` exclusive policy) describe, as
    Koordinator's pod event handler reads them; None when absent, malformed or empty."""
    text = annotations.get(ANNOTATION_RESOURCE_STATUS)
    if not text:
        return None
    try:
        status = json.loads(text)
        cpus = parse_cpuset(status.get("cpuset") or "")
        numa = []
        for entry in status.get("numaNodeResources") or ():
            node = entry.get("node", 0)
            if isinstance(node, bool) or not isinstance(node, int):
                return None
            numa.append((node, resource_list(entry.get("resources") or {})))
    except (ValueError, AttributeError, TypeError, QuantityError):
        return None
    if not cpus and not numa:
        return None
    spec = _json_object(annotations.get(ANNOTATION_RESOURCE_SPEC))
    exclusive = spec.get("preferredCPUExclusivePolicy")
    return PodAllocation(tuple(cpus), exclusive if isinstance(exclusive, str) else "", tuple(numa))


class NodeAllocation:
    """The allocations of the pods on one node, and what Koordinator derives from them."""

    def __init__(self) -> None:
        self.pods: dict[str, PodAllocation] = {}
        self._derived: tuple[CPUTopology, dict, dict, dict] | None = None

    def update(self, key: str, allocation: PodAllocation) -> None:
        """``update``: release the pod's allocation, then add this one (it becomes the last added)."""
        self.pods.pop(key, None)
        self.pods[key] = allocation
        self._derived = None

    def release(self, key: str) -> None:
        if self.pods.pop(key, None) is not None:
            self._derived = None

    def _derive(self, topology: CPUTopology) -> tuple[dict, dict, dict]:
        """(cpu -> CPUAllocation, NUMA node -> allocated resources, NUMA node -> status)."""
        if self._derived is not None and self._derived[0] is topology:
            return self._derived[1:]
        cpus: dict[int, CPUAllocation] = {}
        resources: dict[int, dict[str, int]] = {}
        single: dict[int, int] = {}
        shared: dict[int, int] = {}
        details = topology.details
        for allocation in self.pods.values():
            used = set()
            for cpu in allocation.cpuset:
                held = cpus.get(cpu)
                cpus[cpu] = CPUAllocation((held.ref_count if held else 0) + 1,
                                          allocation.exclusive_policy or EXCLUSIVE_NONE)
                if cpu in details:
                    used.add(details[cpu].node_id)
            for node in used:
                target = shared if len(used) > 1 else single
                target[node] = target.get(node, 0) + 1
            for node, amounts in allocation.numa_resources:
                total = resources.setdefault(node, {})
                for name, value in amounts.items():
                    total[name] = total.get(name, 0) + value
        status = {node: STATUS_SHARED if shared.get(node) else STATUS_SINGLE
                  for node in set(single) | set(shared)}
        self._derived = (topology, cpus, resources, status)
        return cpus, resources, status

    def allocated_cpus(self, topology: CPUTopology) -> dict[int, CPUAllocation]:
        return self._derive(topology)[0]

    def statuses(self, topology: CPUTopology, count: int) -> list[str]:
        """``GetAllNUMANodeStatus``: the status of NUMA nodes 0..count-1."""
        status = self._derive(topology)[2]
        return [status.get(node, STATUS_IDLE) for node in range(count)]

    def available_cpus(self, options: TopologyOptions) -> tuple[frozenset[int], dict[int, CPUAllocation]]:
        """``getAvailableCPUs``: the topology's cpus less those held ``max_ref_count`` times and the reserved
        ones, and the allocated cpus."""
        allocated = self.allocated_cpus(options.topology)
        full = {cpu for cpu, held in allocated.items() if held.ref_count >= options.max_ref_count}
        return frozenset(options.topology.details) - full - options.reserved_cpus, allocated

    def available_numa(self, options: TopologyOptions) -> tuple[dict[int, dict[str, int]], dict[int, dict[str, int]]]:
        """``getAvailableNUMANodeResources``: per NUMA zone (zone - allocated, not below 0) and the allocated."""
        allocated = self._derive(options.topology)[1]
        available: dict[int, dict[str, int]] = {}
        used: dict[int, dict[str, int]] = {}
        for node, zone in options.numa_resources:
            taken = allocated.get(node)
            if taken is not None:
                used[node] = dict(taken)
            available[node] = {name: max(0, value - (taken or {}).get(name, 0)) for name, value in zone.items()}
        return available, used


def filter_by_required_policy(policy: str, cpus: frozenset[int], topology: CPUTopology) -> frozenset[int]:
    """``filterCPUsByRequiredCPUBindPolicy``: FullPCPUs keeps the cores whose cpus are all in ``cpus``;
    SpreadByPCPUs keeps the lowest cpu of each core."""
    by_core: dict[int, list[int]] = {}
    for cpu in sorted(cpus):
        if cpu in topology.details:
            by_core.setdefault(topology.details[cpu].core_id, []).append(cpu)
    if policy == FULL_PCPUS:
        return frozenset(c for group in by_core.values() if len(group) == topology.cpus_per_core for c in group)
    if policy == SPREAD_BY_PCPUS:
        return frozenset(group[0] for group in by_core.values())
    return cpus


def satisfies_required_policy(policy: str, cpus: Sequence[int], topology: CPUTopology) -> bool:
    """``satisfiedRequiredCPUBindPolicy``: FullPCPUs needs whole cores, SpreadByPCPUs one cpu per core."""
    cores = {topology.details[cpu].core_id for cpu in cpus if cpu in topology.details}
    if policy == FULL_PCPUS:
        return len(cores) * topology.cpus_per_core == len(cpus)
    if policy == SPREAD_BY_PCPUS:
        return len(cores) == len(cpus)
    return True
