"""NodeNUMAResource (Koordinator ``pkg/scheduler/plugins/nodenumaresource``): cpusets and NUMA-aligned resources.

- **PreFilter** (``plugin.go``): a pod requesting nothing skips the plugin. A pod may bind cpus only when
  ``AllowUseCPUSet``: its ``koordinator.sh/qosClass`` label is LSE or LSR and its priority class (with default)
  is koord-prod. Its policy is the resource-spec's preferred one (``""``/``Default``: the args' default),
  replaced by a required one (``Default``: the args' default); FullPCPUs or SpreadByPCPUs with a non-integral
  cpu request is UnschedulableAndUnresolvable "the requested CPUs must be integer". The numa-topology-spec
  gives the pod's NUMA policy and exclusiveness.
- **Filter**: node NUMA policy (label ``numa-topology-policy``) merged with the pod's ("node(s) NUMA Topology
  policy not match"); the node cpu bind policy (label ``cpu-bind-policy``, or a static kubelet cpu manager
  with ``full-pcpus-only``) makes any pod requesting cpu bind cpus; a binding pod needs a valid topology
  ("node(s) invalid CPU Topology"), a required policy equal to the node's ("node(s) cpu bind policy conflicts
  with pod's required cpu bind policy") and, for FullPCPUs, a multiple of the cpus per core ("node(s) requested
  cpus not multiple cpus per core"); a required policy without NUMA policy tries the allocation now
  ("not enough cpus available to satisfy request"). Restricted and SingleNUMANode nodes run the topology
  manager (``topologymanager``) with this plugin's cpu and memory hints: "node(s) missing NUMA resources",
  "node(s) Insufficient NUMA Node resources", "Unsatisfied NUMA <resource>", "Unaligned NUMA Hint cause ...".
- **Score** (``scoring.go``): without NUMA policy, LeastAllocated / MostAllocated of the node's requested
  (plus the pod) over allocatable; with one, over the NUMA nodes of the allocation the node would give, and
  for a cpuset pod the node's bound cpus count as its requested cpu. Hints are scored the same way per NUMA
  mask with the NUMA scoring strategy's type and (as Koordinator does) the node scoring strategy's weights.
- **Reserve**: BestEffort runs the topology manager here; then the cpuset (``accumulator.take_cpus``) and
  the per-NUMA split (``tryBestToDistributeEvenly``) are allocated and held on the node.
- **PreBind** writes ``scheduling.koordinator.sh/resource-status`` ({"cpuset", "numaNodeResources"}, compact,
  keys sorted) and, for a binding pod that did not name its policy, ``resource-spec`` (``appendResourceSpecIfMissed``).

The per-node allocations follow the cluster: an assigned pod's resource-status (what PreBind wrote, else the
pod's own annotation) is applied on ``PodAssigned``, released on ``PodUnassigned``, and applied for every
assigned pod when the plugin is built, so a restored domain decides as the live one did. The node's topology
and NUMA zones come from its annotations (``numa.TopologyOptions``).

``tryBestToDistributeEvenly`` sorts the NUMA nodes by comparing the availability of the NUMA ids equal to the
slice positions; that quirk is kept by replaying Go's insertion sort (exact for up to 12 NUMA nodes, where Go
sorts by insertion).

Not implemented: NodeResourceTopology objects (kubelet topology-manager policy, zones, pod-cpu-allocs, system
QoS cpus), CPU amplification ("node(s) invalid CPU amplification ratio", "Insufficient amplified cpu"),
reservations (restore, nominated and pre-allocation), preemption state, designated allocations from scheduling
hints, ``maxRefCount`` other than 1.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

import numpy as np

from streams.koordinator.annotations import (
    ANNOTATION_NUMA_TOPOLOGY_SPEC, ANNOTATION_RESOURCE_SPEC, ANNOTATION_RESOURCE_STATUS)
from streams.koordinator.classes import PRIORITY_PROD, QOS_LSE, QOS_LSR, qos_class_by_name
from streams.koordinator.labels import (
    LABEL_NODE_CPU_BIND_POLICY, LABEL_NODE_NUMA_ALLOCATE_STRATEGY, LABEL_NUMA_TOPOLOGY_POLICY, LABEL_POD_QOS)
from streams.objects.args import ArgsError, ArgsReader
from streams.scheduler.framework import (
    ASSIGNED_POD_DELETE, NODE_ADD, NODE_UPDATE, SKIP, SUCCESS, Code, CycleState, FilterResult, Status, register)
from streams.scheduler.plugins.nodenumaresource.accumulator import (
    EXCLUSIVE_NONE, EXCLUSIVE_POLICIES, FULL_PCPUS, LEAST_ALLOCATED, MOST_ALLOCATED, SPREAD_BY_PCPUS,
    STRATEGIES, NotEnoughCPUs, take_cpus)
from streams.scheduler.plugins.nodenumaresource.numa import (
    NodeAllocation, PodAllocation, TopologyOptions, allocation_from_annotations, filter_by_required_policy,
    satisfies_required_policy)
from streams.scheduler.plugins.nodenumaresource.topologymanager import (
    EXCLUSIVE_REQUIRED, POLICY_BEST_EFFORT, POLICY_NONE, POLICY_RESTRICTED, Hint, bits, count, iterate_masks,
    merge)
from streams.objects.podinfo import PodInfo
from streams.scheduler.scoring import Capacity
from streams.scheduler.state import Cluster, NodeChanged, NodeObject, PodAssigned, PodUnassigned

NAME = "NodeNUMAResource"

ERR_NOT_MATCH_NUMA_TOPOLOGY = "node(s) NUMA Topology policy not match"
ERR_INVALID_REQUESTED_CPUS = "the requested CPUs must be integer"
ERR_INVALID_CPU_TOPOLOGY = "node(s) invalid CPU Topology"
ERR_SMT_ALIGNMENT = "node(s) requested cpus not multiple cpus per core"
ERR_CPU_BIND_POLICY_CONFLICT = "node(s) cpu bind policy conflicts with pod's required cpu bind policy"
ERR_NOT_ENOUGH_CPUS = "not enough cpus available to satisfy request"
ERR_MISSING_NUMA_RESOURCES = "node(s) missing NUMA resources"
ERR_INSUFFICIENT_NUMA_NODE_RESOURCES = "node(s) Insufficient NUMA Node resources"
ERR_NO_NUMA_RESOURCES = "insufficient resources on NUMA Node"
ERR_INSUFFICIENT_NUMA = "Insufficient NUMA {}"

CPU_BIND_POLICY_DEFAULT = "Default"
NODE_FULL_PCPUS_ONLY = "FullPCPUsOnly"
NODE_SPREAD_BY_PCPUS = "SpreadByPCPUs"
NODE_BIND_NONE = "None"
DEFAULT_WEIGHTS = (("cpu", 1), ("memory", 1))
NATIVE_SCORED = ("cpu", "memory", "ephemeral-storage")
"""Resources scored even when the pod does not request them (the others are skipped then, as scalars)."""
UNGROUPED = -1
"""A node's group before it is (re)computed: after it was added or changed."""
PASS, PER_NODE = "pass", "per node"


def _weights(reader: ArgsReader, strategy: Mapping | None, field: str, what: str) -> tuple[str, tuple]:
    """(type, weights) of one scoring strategy; Koordinator's defaults when the field is absent."""
    if strategy is None:
        return LEAST_ALLOCATED, DEFAULT_WEIGHTS
    sub = ArgsReader(NAME, strategy, {"type", "resources"})
    kind = sub.string("type", "")
    if kind not in (LEAST_ALLOCATED, MOST_ALLOCATED):
        raise ArgsError(f"{NAME}: {what} {kind} is not supported")
    pairs = []
    for index, item in enumerate(sub.sequence("resources") or ()):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise reader.fail(field, f"resources[{index}] needs a name, got {item!r}")
        weight = item.get("weight", 0)
        if isinstance(weight, bool) or not isinstance(weight, int) or not 0 < weight <= 100:
            raise ArgsError(f"{NAME}: resources[{index}].weight: Invalid value: {weight!r}: resource weight of "
                            f"{item['name']} not in valid range (0, 100]")
        pairs.append((item["name"], weight))
    return kind, tuple(pairs)


@dataclasses.dataclass(frozen=True)
class NodeNUMAResourceArgs:
    default_cpu_bind_policy: str = FULL_PCPUS
    """``defaultCPUBindPolicy``: "", FullPCPUs or SpreadByPCPUs ("" binds no cpus unless the pod asks)."""
    scoring_type: str = LEAST_ALLOCATED
    scoring_weights: tuple[tuple[str, int], ...] = DEFAULT_WEIGHTS
    numa_scoring_type: str = LEAST_ALLOCATED
    """``numaScoringStrategy.type``; its weights are read and validated but, as in Koordinator, unused."""

    @property
    def numa_allocate_strategy(self) -> str:
        """``GetDefaultNUMAAllocateStrategy``: MostAllocated only when the NUMA scoring strategy is."""
        return MOST_ALLOCATED if self.numa_scoring_type == MOST_ALLOCATED else LEAST_ALLOCATED

    @classmethod
    def from_config(cls, raw: Mapping | None) -> "NodeNUMAResourceArgs":
        reader = ArgsReader(NAME, raw, {"defaultCPUBindPolicy", "scoringStrategy", "numaScoringStrategy"})
        policy = reader.string("defaultCPUBindPolicy", FULL_PCPUS)
        if policy not in ("", FULL_PCPUS, SPREAD_BY_PCPUS):
            raise ArgsError(f'{NAME}: defaultCPUBindPolicy: Invalid value: "{policy}": must specified CPU bind '
                            f"policy FullPCPUs or SpreadByPCPUs")
        kind, weights = _weights(reader, reader.mapping("scoringStrategy"), "scoringStrategy", "scoring strategy")
        numa_kind, _ = _weights(reader, reader.mapping("numaScoringStrategy"), "numaScoringStrategy",
                                "numa scoring strategy")
        return cls(policy, kind, weights, numa_kind)


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


@dataclasses.dataclass
class _PodState:
    """``preFilterState`` plus the topology manager's per-node affinity store."""

    requests: dict[str, int]
    num_cpus: int
    numa_policy: str = ""
    numa_exclusive: str = ""
    request_bind: bool = False
    required: str = ""
    preferred: str = ""
    exclusive: str = ""
    affinity: dict[str, Hint] = dataclasses.field(default_factory=dict)
    allocation: PodAllocation | None = None


@dataclasses.dataclass(frozen=True)
class _Options:
    """``ResourceOptions``."""

    requests: Mapping[str, int]
    num_cpus: int
    request_bind: bool
    required: bool
    bind_policy: str
    exclusive: str
    hint: Hint | None
    topology: TopologyOptions


def _spec(annotations: Mapping[str, str], key: str) -> dict[str, str]:
    """A JSON annotation of string fields (resource-spec, numa-topology-spec); ValueError when unreadable."""
    text = annotations.get(key)
    if text is None:
        return {}
    value = json.loads(text)
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values() if v is not None):
        raise ValueError(f"{key}: cannot unmarshal {text}")
    return {k: v for k, v in value.items() if v is not None}


def allow_use_cpuset(pod: PodInfo) -> bool:
    """``AllowUseCPUSet``: QoS label LSE or LSR and priority class (with default) koord-prod."""
    qos = qos_class_by_name(pod.labels.get(LABEL_POD_QOS))
    return qos in (QOS_LSE, QOS_LSR) and pod.priority_class == PRIORITY_PROD


def merge_topology_policy(node_policy: str, pod_policy: str) -> str | None:
    """``mergeTopologyPolicy``: None when both are set and differ, else the pod's, else the node's."""
    if node_policy and pod_policy and node_policy != pod_policy:
        return None
    return pod_policy or node_policy


def _go_sorted(nodes: list[int], available: Mapping[int, Mapping[str, int]], resource: str) -> list[int]:
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


class _Failure(Exception):
    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status


def _fail(code: Code, *reasons: str) -> _Failure:
    return _Failure(Status(code, tuple(reasons), NAME))


class NodeNUMAResource:
    name = NAME
    Args = NodeNUMAResourceArgs
    events_to_register = register(NODE_ADD, NODE_UPDATE, ASSIGNED_POD_DELETE)

    def __init__(self, args: NodeNUMAResourceArgs, cluster: Cluster) -> None:
        self.args = args
        self.cluster = cluster
        self.nodes: dict[str, NodeAllocation] = {}
        self._where: dict[str, str] = {}
        self._options: dict[str, tuple[NodeObject, TopologyOptions]] = {}
        self.owner = f"{NAME}#{id(self)}"
        self._group_keys: list[tuple[str, str]] = []
        self._group_ids: dict[tuple[str, str], int] = {}
        self._capacities: tuple | None = None
        self._grouped: tuple[int, int] | None = None
        """(columns version, node count) when every node's group was last known."""
        cluster.columns.attach(self.owner, "group", None, np.int32, UNGROUPED)
        for key in sorted(cluster.assignment):
            self._apply(key, cluster.assignment[key])

    def close(self) -> None:
        self.cluster.columns.detach(self.owner)

    # -- cluster state -------------------------------------------------------------------------

    def observe(self, change: object) -> None:
        if isinstance(change, PodAssigned):
            self._apply(change.key, change.node)
        elif isinstance(change, PodUnassigned):
            self._release(change.key)
        elif isinstance(change, NodeChanged):
            self._options.pop(change.name, None)
            if change.new is None:
                self.nodes.pop(change.name, None)
            else:
                row = self.cluster.columns.row.get(change.name)
                if row is not None:
                    self.cluster.columns.attached(self.owner, "group")[row] = UNGROUPED
                    self._grouped = None

    def _apply(self, key: str, node: str) -> None:
        """Hold the allocation the assigned pod's resource-status describes; a pod without one keeps what
        Reserve held for it."""
        pod = self.cluster.pods.get(key)
        annotations = {**(pod.annotations if pod is not None else {}), **self.cluster.bind_annotations.get(key, {})}
        allocation = allocation_from_annotations(annotations)
        if allocation is None:
            return
        if self._where.get(key, node) != node:
            self._release(key)
        self.nodes.setdefault(node, NodeAllocation()).update(key, allocation)
        self._where[key] = node

    def _release(self, key: str) -> None:
        node = self._where.pop(key, None)
        if node is not None and node in self.nodes:
            self.nodes[node].release(key)

    def _node(self, name: str) -> NodeAllocation:
        return self.nodes.setdefault(name, NodeAllocation())

    def topology_options(self, name: str) -> TopologyOptions:
        node = self.cluster.nodes[name]
        cached = self._options.get(name)
        if cached is None or cached[0] is not node:
            cached = self._options[name] = (node, TopologyOptions.from_node(node.annotations, node.allocatable))
        return cached[1]

    # -- policies ------------------------------------------------------------------------------

    @staticmethod
    def node_cpu_bind_policy(node: NodeObject, options: TopologyOptions) -> str:
        """``GetNodeCPUBindPolicy``: FullPCPUsOnly by label or kubelet option, SpreadByPCPUs by label, else None."""
        label = node.labels.get(LABEL_NODE_CPU_BIND_POLICY, "")
        if label == NODE_FULL_PCPUS_ONLY or options.full_pcpus_only:
            return NODE_FULL_PCPUS_ONLY
        return NODE_SPREAD_BY_PCPUS if label == NODE_SPREAD_BY_PCPUS else NODE_BIND_NONE

    @staticmethod
    def _request_bind(st: _PodState, node_bind: str) -> bool:
        """``requestCPUBind``: the pod asked, or the node binds every pod requesting whole cpus."""
        if st.request_bind:
            return True
        cpu = st.requests.get("cpu", 0)
        if cpu == 0 or node_bind in ("", NODE_BIND_NONE):
            return False
        if cpu % 1000:
            raise _fail(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_INVALID_REQUESTED_CPUS)
        return True

    @staticmethod
    def _bind_policy(st: _PodState, node_bind: str) -> tuple[str, bool]:
        """``getCPUBindPolicy``: (policy, required)."""
        if st.required:
            return st.required, True
        if node_bind == NODE_SPREAD_BY_PCPUS:
            return SPREAD_BY_PCPUS, True
        if node_bind == NODE_FULL_PCPUS_ONLY:
            return FULL_PCPUS, True
        return st.preferred, False

    def _numa_policy(self, st: _PodState, node: NodeObject) -> str | None:
        return merge_topology_policy(node.labels.get(LABEL_NUMA_TOPOLOGY_POLICY, POLICY_NONE), st.numa_policy)

    def _node_groups(self, count: int) -> np.ndarray:
        """Each node's group: the index in ``_group_keys`` of its (NUMA policy label, node cpu bind policy), the
        only node facts Filter and Score read before they need the node's topology and allocations. Kept per
        row and recomputed only for nodes added or changed since, so a cycle classifies nodes in one vector."""
        columns = self.cluster.columns
        groups = columns.attached(self.owner, "group")[:count]
        if self._grouped == (columns.version, count):
            return groups
        names = columns.names
        for row in np.flatnonzero(groups == UNGROUPED):
            name = names[row]
            node = self.cluster.nodes[name]
            key = (node.labels.get(LABEL_NUMA_TOPOLOGY_POLICY, POLICY_NONE),
                   self.node_cpu_bind_policy(node, self.topology_options(name)))
            group = self._group_ids.get(key)
            if group is None:
                group = self._group_ids[key] = len(self._group_keys)
                self._group_keys.append(key)
            groups[row] = group
        self._grouped = (columns.version, count)
        return groups

    def _group_filter(self, st: _PodState, numa_label: str, node_bind: str) -> str | _Failure:
        """``filter_node``'s outcome for every node of a group when it does not depend on the node: PASS, the
        failure, or PER_NODE (the pod binds cpus here, or the merged NUMA policy runs the topology manager)."""
        policy = merge_topology_policy(numa_label, st.numa_policy)
        if policy is None:
            return _fail(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NOT_MATCH_NUMA_TOPOLOGY)
        try:
            request_bind = self._request_bind(st, node_bind)
        except _Failure as failure:
            return failure
        if request_bind or policy not in (POLICY_NONE, POLICY_BEST_EFFORT):
            return PER_NODE
        return PASS

    def _resource_options(self, st: _PodState, name: str, request_bind: bool, hint: Hint | None) -> _Options:
        node = self.cluster.nodes[name]
        options = self.topology_options(name)
        policy, required = self._bind_policy(st, self.node_cpu_bind_policy(node, options))
        return _Options(st.requests, st.num_cpus, request_bind, required, policy, st.exclusive, hint, options)

    # -- resource manager ----------------------------------------------------------------------

    def _available_cpus(self, name: str, options: TopologyOptions):
        if not options.topology.is_valid:
            raise _fail(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_INVALID_CPU_TOPOLOGY)
        return self._node(name).available_cpus(options)

    def _trim(self, name: str, available: dict[int, dict[str, int]], opts: _Options) -> None:
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

    def allocate(self, name: str, opts: _Options) -> PodAllocation:
        """``resourceManager.Allocate``; raises ``_Failure``."""
        numa: tuple = ()
        if opts.hint is not None and opts.hint.affinity is not None:
            numa = self._allocate_by_hint(name, opts)
        cpus: tuple[int, ...] = ()
        if opts.request_bind:
            try:
                cpus = tuple(self._allocate_cpuset(name, numa, opts))
            except (NotEnoughCPUs, ValueError) as error:
                raise _fail(Code.UNSCHEDULABLE, str(error)) from None
        return PodAllocation(cpus, opts.exclusive, numa)

    def _allocate_by_hint(self, name: str, opts: _Options) -> tuple:
        if not opts.topology.numa_resources:
            raise _fail(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NO_NUMA_RESOURCES)
        available, _ = self._node(name).available_numa(opts.topology)
        self._trim(name, available, opts)
        result, reasons = self.distribute(opts.requests, available, opts)
        if reasons:
            raise _fail(Code.UNSCHEDULABLE, *reasons)
        return result

    def distribute(self, requests: Mapping[str, int], available: Mapping[int, Mapping[str, int]],
                   opts: _Options) -> tuple[tuple, list[str]]:
        """``tryBestToDistributeEvenly``: per resource, the i-th of the mask's n NUMA nodes (in the quirk order
        of ``_go_sorted``) gives ``min(available, split(remaining, n - i))``; what is left is "Insufficient
        NUMA <resource>"."""
        names = sorted({resource for amounts in available.values() for resource in amounts})
        nodes = bits(opts.hint.affinity)
        order = {resource: _go_sorted(nodes, available, resource) for resource in names}
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
    def _split(resource: str, quantity: int, nodes: int, opts: _Options) -> int:
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

    def _allocate_cpuset(self, name: str, numa: tuple, opts: _Options) -> list[int]:
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

    def topology_hints(self, name: str, opts: _Options, policy: str) -> dict[str, list[Hint]]:
        """``GetTopologyHints`` / ``generateResourceHints``: every NUMA mask the pod can be allocated in, per
        requested resource the NUMA zones offer; preferred when of the smallest feasible size (Restricted:
        always). A mask using a NUMA node without any of a resource gives no hint for it."""
        zones = opts.topology.numa_resources
        if not zones:
            raise _fail(Code.UNSCHEDULABLE, ERR_INSUFFICIENT_NUMA_NODE_RESOURCES)
        try:
            available, _ = self._node(name).available_numa(opts.topology)
            self._trim(name, available, opts)
        except _Failure:
            raise _fail(Code.UNSCHEDULABLE, ERR_INSUFFICIENT_NUMA_NODE_RESOURCES) from None
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
            except _Failure:
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

    # -- the cycle -------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        try:
            spec = _spec(pod.annotations, ANNOTATION_RESOURCE_SPEC)
            numa_spec = _spec(pod.annotations, ANNOTATION_NUMA_TOPOLOGY_SPEC)
        except ValueError as error:
            return Status(Code.ERROR, (str(error),), NAME)
        requests = dict(pod.requests)
        if not any(requests.values()):
            return SKIP
        cpu = requests.get("cpu", 0)
        st = _PodState(requests, cpu // 1000, numa_spec.get("numaTopologyPolicy", ""),
                       numa_spec.get("singleNUMANodeExclusive", ""))
        if allow_use_cpuset(pod):
            policy = spec.get("preferredCPUBindPolicy", "")
            if policy in ("", CPU_BIND_POLICY_DEFAULT):
                policy = self.args.default_cpu_bind_policy
            required = spec.get("requiredCPUBindPolicy", "")
            if required == CPU_BIND_POLICY_DEFAULT:
                required = self.args.default_cpu_bind_policy
            if required:
                policy = required
            if policy in (FULL_PCPUS, SPREAD_BY_PCPUS):
                if cpu % 1000:
                    return Status.unschedulable(ERR_INVALID_REQUESTED_CPUS, NAME, resolvable=False)
                if cpu > 0:
                    st.request_bind = True
                    st.required = required
                    st.preferred = policy
                    st.exclusive = spec.get("preferredCPUExclusivePolicy", "")
        state[NAME] = st
        return SUCCESS

    def _numa_exclusive(self, st: _PodState) -> str:
        """A pod that set its own NUMA policy is exclusive (Required) unless it says otherwise."""
        return st.numa_exclusive or (EXCLUSIVE_REQUIRED if st.numa_policy else "")

    def filter_node(self, st: _PodState, name: str) -> None:
        """``Filter`` on one node; raises ``_Failure``."""
        node = self.cluster.nodes[name]
        options = self.topology_options(name)
        policy = self._numa_policy(st, node)
        if policy is None:
            raise _fail(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NOT_MATCH_NUMA_TOPOLOGY)
        node_bind = self.node_cpu_bind_policy(node, options)
        if self._request_bind(st, node_bind):
            if not options.topology.is_valid:
                raise _fail(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_INVALID_CPU_TOPOLOGY)
            required = {NODE_FULL_PCPUS_ONLY: FULL_PCPUS, NODE_SPREAD_BY_PCPUS: SPREAD_BY_PCPUS}.get(
                node_bind, st.required)
            if st.required and st.required != required:
                raise _fail(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_CPU_BIND_POLICY_CONFLICT)
            if required == FULL_PCPUS and st.num_cpus % options.topology.cpus_per_core:
                raise _fail(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_SMT_ALIGNMENT)
            if required and policy == POLICY_NONE:
                self.allocate(name, self._resource_options(st, name, True, None))
                return
        if policy not in (POLICY_NONE, POLICY_BEST_EFFORT):
            self.filter_by_numa_node(st, name, policy, self._numa_exclusive(st))

    def filter_by_numa_node(self, st: _PodState, name: str, policy: str, exclusive: str) -> None:
        """``FilterByNUMANode`` and the topology manager's ``Admit``: merge the hints, admit, try the
        allocation in the best hint, and remember it for Reserve and Score."""
        if policy == POLICY_NONE:
            return
        options = self.topology_options(name)
        numa_nodes = options.numa_nodes
        if not numa_nodes:
            raise _fail(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_MISSING_NUMA_RESOURCES)
        statuses = self._node(name).statuses(options.topology, len(numa_nodes))
        request_bind = self._request_bind(st, self.node_cpu_bind_policy(self.cluster.nodes[name], options))
        try:
            hints = self.topology_hints(name, self._resource_options(st, name, request_bind, None), policy)
        except _Failure as failure:
            raise _fail(Code.UNSCHEDULABLE, *failure.status.reasons) from None
        best, admit, reasons = merge(policy, numa_nodes, [hints], exclusive, statuses)
        if not admit and reasons:
            raise _fail(Code.UNSCHEDULABLE, *reasons)
        self.allocate(name, self._resource_options(st, name, request_bind, best))
        st.affinity[name] = best

    def filter(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> FilterResult:
        """``filter_node`` on every candidate: once per node group when the group decides it (``_group_filter``),
        else node by node. Reasons are listed in the order a node-by-node pass meets them (row, then position)."""
        st: _PodState | None = state.get(NAME)
        if st is None:
            return FilterResult(candidates)
        count = len(candidates)
        names = self.cluster.columns.names
        groups = self._node_groups(count)
        failures: dict[tuple[str, Code], np.ndarray] = {}
        first: dict[tuple[str, Code], tuple[int, int]] = {}

        def failed(failure: _Failure, rows: np.ndarray, row: int) -> None:
            for index, reason in enumerate(failure.status.reasons):
                key = (reason, failure.status.code)
                mask = failures.setdefault(key, np.zeros(count, bool))
                mask |= rows
                first[key] = min(first.get(key, (row, index)), (row, index))

        per_node = np.zeros(count, bool)
        for group, (numa_label, node_bind) in enumerate(self._group_keys):
            verdict = self._group_filter(st, numa_label, node_bind)
            if verdict == PASS:
                continue
            members = candidates & (groups == group)
            if not members.any():
                continue
            if verdict == PER_NODE:
                per_node |= members
            else:
                failed(verdict, members, int(np.argmax(members)))
        for row in np.flatnonzero(per_node):
            try:
                self.filter_node(st, names[row])
            except _Failure as failure:
                only = np.zeros(count, bool)
                only[row] = True
                failed(failure, only, int(row))
        if not failures:
            return FilterResult(candidates)
        passed = candidates.copy()
        for mask in failures.values():
            passed &= ~mask
        ordered = sorted(failures, key=first.__getitem__)
        resolvable = [(r, failures[(r, code)]) for r, code in ordered if code == Code.UNSCHEDULABLE]
        hard = [(r, failures[(r, code)]) for r, code in ordered if code != Code.UNSCHEDULABLE]
        if hard and not resolvable:
            return FilterResult(passed, tuple(hard), Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        return FilterResult(passed, tuple(resolvable + hard))

    def score(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> np.ndarray:
        st: _PodState | None = state.get(NAME)
        size = len(candidates)
        scores = np.zeros(size, dtype=np.int64)
        if st is None:
            return scores
        columns = self.cluster.columns
        total = np.zeros(size, dtype=np.float64)
        weight_sum = None
        most = self.args.scoring_type == MOST_ALLOCATED
        for resource, index, capacity, weighted in self._node_capacities(size):
            wanted = st.requests.get(resource, 0)
            if wanted == 0 and resource not in NATIVE_SCORED:
                continue
            used = columns.requested[index, :size] + wanted
            share = capacity.most_requested(used) if most else capacity.least_requested(used)
            share *= weighted
            total += share
            weight_sum = weighted if weight_sum is None else weight_sum + weighted
        if weight_sum is not None:
            total /= np.maximum(weight_sum, 1.0)
            scores = np.floor(total, out=total).astype(np.int64)
        groups = self._node_groups(size)
        numa_groups = [group for group, (numa_label, _) in enumerate(self._group_keys)
                       if (merge_topology_policy(numa_label, st.numa_policy) or POLICY_NONE) != POLICY_NONE]
        if numa_groups:
            for row in np.flatnonzero(candidates & np.isin(groups, numa_groups)):
                scores[row] = self._numa_score(st, columns.names[row], row)
        scores[~candidates] = 0
        return scores

    def _node_capacities(self, count: int) -> list[tuple[str, int, Capacity, np.ndarray]]:
        """Per scored resource (``pods`` never is): (name, row, prepared allocatable, weight where the node has
        it), per node change. ``resource_score`` over the nodes, exact in float64 (``scoring``)::

            score = floor(sum(weight * share) / sum(weight))   over the resources with allocatable != 0
        """
        columns = self.cluster.columns
        key = (columns.version, count, len(columns.resources))
        if self._capacities is None or self._capacities[0] != key:
            prepared = []
            for resource, weight in self.args.scoring_weights:
                index = columns.index.get(resource)
                if resource == "pods" or index is None:
                    continue
                capacity = Capacity(columns.allocatable[index, :count])
                prepared.append((resource, index, capacity, (capacity.values != 0) * float(weight)))
            self._capacities = (key, prepared)
        return self._capacities[1]

    def _numa_score(self, st: _PodState, name: str, row: int) -> int:
        """The score over the allocation the node would give: its NUMA nodes' zones and allocations, and for a
        cpuset the node's bound cpus as requested cpu (``calculateAllocatableAndRequested``)."""
        options = self.topology_options(name)
        try:
            request_bind = self._request_bind(st, self.node_cpu_bind_policy(self.cluster.nodes[name], options))
            if request_bind and not options.topology.is_valid:
                return 0
            allocation = self.allocate(name, self._resource_options(st, name, request_bind, st.affinity.get(name)))
        except _Failure:
            return 0
        columns = self.cluster.columns
        if allocation.numa_resources:
            zones = dict(options.numa_resources)
            _, used = self._node(name).available_numa(options)
            allocatable: dict[str, int] = {}
            requested: dict[str, int] = {}
            for numa, _ in allocation.numa_resources:
                for resource, value in used.get(numa, {}).items():
                    requested[resource] = requested.get(resource, 0) + value
                for resource, value in zones.get(numa, {}).items():
                    allocatable[resource] = allocatable.get(resource, 0) + value
        else:
            allocatable = {r: int(columns.allocatable[i, row]) for r, i in columns.index.items()}
            requested = {r: int(columns.requested[i, row]) for r, i in columns.index.items()}
        if allocation.cpuset:
            requested["cpu"] = 1000 * len(self._node(name).allocated_cpus(options.topology))
        return resource_score(self.args.scoring_type, self.args.scoring_weights, requested, allocatable, st.requests)

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        st: _PodState | None = state.get(NAME)
        if st is None:
            return SUCCESS
        if st.allocation is None:
            try:
                self._allocate_for(st, node)
            except _Failure as failure:
                return failure.status
        if st.allocation is not None:
            self._node(node).update(pod.key, st.allocation)
            self._where[pod.key] = node
        return SUCCESS

    def _allocate_for(self, st: _PodState, name: str) -> None:
        """Reserve's ``FilterByNUMANode`` for BestEffort, then ``allocate`` in the node's affinity."""
        node = self.cluster.nodes[name]
        options = self.topology_options(name)
        policy = self._numa_policy(st, node) or POLICY_NONE
        if policy == POLICY_BEST_EFFORT:
            self.filter_by_numa_node(st, name, policy, self._numa_exclusive(st))
        request_bind = self._request_bind(st, self.node_cpu_bind_policy(node, options))
        if not request_bind and policy == POLICY_NONE:
            return
        if request_bind and not options.topology.is_valid:
            raise _fail(Code.ERROR, ERR_INVALID_CPU_TOPOLOGY)
        st.allocation = self.allocate(name, self._resource_options(st, name, request_bind, st.affinity.get(name)))

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        st: _PodState | None = state.get(NAME)
        if st is not None and st.allocation is not None and self._where.get(pod.key) == node:
            self._release(pod.key)

    def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> dict[str, str]:
        st: _PodState | None = state.get(NAME)
        if st is None or st.allocation is None:
            return {}
        out: dict[str, str] = {}
        options = self.topology_options(node)
        node_bind = self.node_cpu_bind_policy(self.cluster.nodes[node], options)
        try:
            request_bind = self._request_bind(st, node_bind)
        except _Failure:
            return {}
        if request_bind:
            spec = resource_spec_write_back(pod.annotations, *self._bind_policy(st, node_bind))
            if spec is not None:
                out[ANNOTATION_RESOURCE_SPEC] = spec
        out[ANNOTATION_RESOURCE_STATUS] = st.allocation.status_annotation()
        return out


def resource_spec_write_back(annotations: Mapping[str, str], policy: str, required: bool) -> str | None:
    """``appendResourceSpecIfMissed``: the resource-spec to write (compact JSON, keys sorted, empty fields left
    out), or None when the pod's already names its policy::

        required by the node and no required policy (or Default) -> requiredCPUBindPolicy = policy
        preferredCPUBindPolicy Default                           -> preferredCPUBindPolicy = policy
        neither named                                            -> preferredCPUBindPolicy = policy
    """
    try:
        spec = _spec(annotations, ANNOTATION_RESOURCE_SPEC)
    except ValueError:
        spec = {}
    fields = {key: spec.get(key, "") for key in
              ("requiredCPUBindPolicy", "preferredCPUBindPolicy", "preferredCPUExclusivePolicy")}
    write = False
    if required and fields["requiredCPUBindPolicy"] in ("", CPU_BIND_POLICY_DEFAULT):
        fields["requiredCPUBindPolicy"] = policy
        write = True
    if fields["preferredCPUBindPolicy"] == CPU_BIND_POLICY_DEFAULT:
        fields["preferredCPUBindPolicy"] = policy
        write = True
    if not fields["requiredCPUBindPolicy"] and not fields["preferredCPUBindPolicy"] and policy:
        fields["preferredCPUBindPolicy"] = policy
        write = True
    if not write:
        return None
    return json.dumps({k: v for k, v in fields.items() if v}, sort_keys=True, separators=(",", ":"))
