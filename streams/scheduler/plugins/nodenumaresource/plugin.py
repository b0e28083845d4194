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

Where on a node the pod's cpus and NUMA resources go (the allocation, the topology hints) is the resource
manager (``resourcemanager``, Koordinator's ``resource_manager.go``); the args are ``args``.

Why this module is over 400 lines: PreFilter, Filter, Score, Reserve and PreBind of one Koordinator plugin
share its per-pod state (``_PodState``) and per-node caches; split further, each stage would reach into the
others' private state.

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
from streams.koordinator.labels import LABEL_NODE_CPU_BIND_POLICY, LABEL_NUMA_TOPOLOGY_POLICY, LABEL_POD_QOS
from streams.objects.podinfo import PodInfo
from streams.scheduler.framework import (
    ASSIGNED_POD_DELETE, NODE_ADD, NODE_UPDATE, SKIP, SUCCESS, Code, CycleState, FilterResult, Status, register,
    scored_rows)
from streams.scheduler.plugins.nodenumaresource.accumulator import FULL_PCPUS, MOST_ALLOCATED, SPREAD_BY_PCPUS
from streams.scheduler.plugins.nodenumaresource.args import NAME, NodeNUMAResourceArgs
from streams.scheduler.plugins.nodenumaresource.numa import (
    NodeAllocation, PodAllocation, TopologyOptions, allocation_from_annotations)
from streams.scheduler.plugins.nodenumaresource.resourcemanager import (
    ERR_INVALID_CPU_TOPOLOGY, NATIVE_SCORED, NodeUnfit, ResourceManager, ResourceOptions, resource_score, unfit)
from streams.scheduler.plugins.nodenumaresource.topologymanager import (
    EXCLUSIVE_REQUIRED, POLICY_BEST_EFFORT, POLICY_NONE, Hint, merge)
from streams.scheduler.scoring import Capacity
from streams.scheduler.state import Cluster, NodeChanged, NodeObject, PodAssigned, PodUnassigned

ERR_NOT_MATCH_NUMA_TOPOLOGY = "node(s) NUMA Topology policy not match"
ERR_INVALID_REQUESTED_CPUS = "the requested CPUs must be integer"
ERR_SMT_ALIGNMENT = "node(s) requested cpus not multiple cpus per core"
ERR_CPU_BIND_POLICY_CONFLICT = "node(s) cpu bind policy conflicts with pod's required cpu bind policy"
ERR_MISSING_NUMA_RESOURCES = "node(s) missing NUMA resources"

CPU_BIND_POLICY_DEFAULT = "Default"
NODE_FULL_PCPUS_ONLY = "FullPCPUsOnly"
NODE_SPREAD_BY_PCPUS = "SpreadByPCPUs"
NODE_BIND_NONE = "None"
UNGROUPED = -1
"""A node's group before it is (re)computed: after it was added or changed."""
PASS, PER_NODE = "pass", "per node"


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


class NodeNUMAResource(ResourceManager):
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
            raise unfit(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_INVALID_REQUESTED_CPUS)
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

    def _group_filter(self, st: _PodState, numa_label: str, node_bind: str) -> str | NodeUnfit:
        """``filter_node``'s outcome for every node of a group when it does not depend on the node: PASS, the
        failure, or PER_NODE (the pod binds cpus here, or the merged NUMA policy runs the topology manager)."""
        policy = merge_topology_policy(numa_label, st.numa_policy)
        if policy is None:
            return unfit(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NOT_MATCH_NUMA_TOPOLOGY)
        try:
            request_bind = self._request_bind(st, node_bind)
        except NodeUnfit as failure:
            return failure
        if request_bind or policy not in (POLICY_NONE, POLICY_BEST_EFFORT):
            return PER_NODE
        return PASS

    def _resource_options(self, st: _PodState, name: str, request_bind: bool, hint: Hint | None) -> ResourceOptions:
        node = self.cluster.nodes[name]
        options = self.topology_options(name)
        policy, required = self._bind_policy(st, self.node_cpu_bind_policy(node, options))
        return ResourceOptions(st.requests, st.num_cpus, request_bind, required, policy, st.exclusive, hint, options)

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
        """``Filter`` on one node; raises ``NodeUnfit``."""
        node = self.cluster.nodes[name]
        options = self.topology_options(name)
        policy = self._numa_policy(st, node)
        if policy is None:
            raise unfit(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NOT_MATCH_NUMA_TOPOLOGY)
        node_bind = self.node_cpu_bind_policy(node, options)
        if self._request_bind(st, node_bind):
            if not options.topology.is_valid:
                raise unfit(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_INVALID_CPU_TOPOLOGY)
            required = {NODE_FULL_PCPUS_ONLY: FULL_PCPUS, NODE_SPREAD_BY_PCPUS: SPREAD_BY_PCPUS}.get(
                node_bind, st.required)
            if st.required and st.required != required:
                raise unfit(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_CPU_BIND_POLICY_CONFLICT)
            if required == FULL_PCPUS and st.num_cpus % options.topology.cpus_per_core:
                raise unfit(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_SMT_ALIGNMENT)
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
            raise unfit(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_MISSING_NUMA_RESOURCES)
        statuses = self._node(name).statuses(options.topology, len(numa_nodes))
        request_bind = self._request_bind(st, self.node_cpu_bind_policy(self.cluster.nodes[name], options))
        try:
            hints = self.topology_hints(name, self._resource_options(st, name, request_bind, None), policy)
        except NodeUnfit as failure:
            raise unfit(Code.UNSCHEDULABLE, *failure.status.reasons) from None
        best, admit, reasons = merge(policy, numa_nodes, [hints], exclusive, statuses)
        if not admit and reasons:
            raise unfit(Code.UNSCHEDULABLE, *reasons)
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

        def failed(failure: NodeUnfit, rows: np.ndarray, row: int) -> None:
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
            except NodeUnfit as failure:
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
        rows = scored_rows(state, candidates)
        total = np.zeros(rows.stop - rows.start, dtype=np.float64)
        weight_sum = None
        most = self.args.scoring_type == MOST_ALLOCATED
        for resource, index, capacity, weighted in self._node_capacities(size):
            wanted = st.requests.get(resource, 0)
            if wanted == 0 and resource not in NATIVE_SCORED:
                continue
            used = columns.requested[index, rows] + wanted
            share = capacity.most_requested(used, rows) if most else capacity.least_requested(used, rows)
            share *= weighted[rows]
            total += share
            weight_sum = weighted[rows] if weight_sum is None else weight_sum + weighted[rows]
        if weight_sum is not None:
            total /= np.maximum(weight_sum, 1.0)
            scores[rows] = np.floor(total, out=total)
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
        except NodeUnfit:
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
            except NodeUnfit as failure:
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
            raise unfit(Code.ERROR, ERR_INVALID_CPU_TOPOLOGY)
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
        except NodeUnfit:
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
