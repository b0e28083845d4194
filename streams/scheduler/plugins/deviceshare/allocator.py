"""Which devices of one node a pod gets (Koordinator's ``AutopilotAllocator`` and ``GPUAllocator``).

Order, as ``device_allocator.go`` and ``allocator_gpu.go`` run it:

1. **GPU partitions** (whole-GPU pods only), when the pod has a ``gpu-partition-spec`` or the node honours
   partitions: the Device's ``gpu-partitions`` table, else the built-in Hopper table. Buckets of one
   allocationScore are tried in ascending order, stopping at the first with a partition whose minors are all
   present and free (Restricted: only the first bucket). Several feasible -> the one that leaves the most
   whole partitions free, weighted {8: 10000, 4: 100, 2: 1} x allocationScore. Failures count only when
   partitions are honoured ("node(s) missing GPU Partition Table", "node(s) Unsupported number of GPU
   requests", "Insufficient Partitioned GPU Devices").
2. **Topology tree** Node -> NUMA node -> PCIe switch (by id): the deepest scope that can hold every GPU wins,
   then the one whose ancestors already hold GPUs in use (bin-packing), then, for a shared GPU, the better
   device score; ``requiredTopologyScope`` (PCIe, NUMANode) forbids shallower scopes ("Insufficient Topology
   Scoped GPU Devices"). A whole-GPU pod takes the first free minors of its scope; a shared pod the best scored.
3. **Default**: every device scored (``Scorer.device``), best first, minor ascending on ties; devices whose
   free covers the per-device request are taken until the count is reached ("Insufficient <type> devices").

Several device types: with ``device-joint-allocate`` the first type is allocated first and the others prefer
its PCIe switches; ``SamePCIe`` raises their count to the number of those switches and requires the same set
("node(s) Device Joint-Allocate rules violation"). A ``vfSelector`` hint takes, per device, the free VF with
the lowest bus id from a group whose labels match.

Why this module is over 400 lines: the three allocation orders above fall through to one another on the
same node state; the requests, the devices and their use are already ``requests``, ``devices``, ``ledger``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

from streams.koordinator.annotations import (
    ANNOTATION_DEVICE_ALLOCATE_HINT, ANNOTATION_DEVICE_JOINT_ALLOCATE, ANNOTATION_GPU_PARTITION_SPEC)
from streams.koordinator.resources import DEVICE_GPU, DEVICE_RDMA, FPGA, RDMA
from streams.scheduler.plugins.deviceshare.devices import NodeDevices, Partition, Topology, complete_memory
from streams.scheduler.plugins.deviceshare.requests import (
    DeviceRequestError, GPURequirements, device_requests, gpu_requirements, instance_requirements)
from streams.sloconfig.selectors import LabelSelector, parse_selector

LEAST_ALLOCATED, MOST_ALLOCATED = "LeastAllocated", "MostAllocated"
SCOPE_LEVELS = {"Device": 4, "PCIe": 3, "NUMANode": 2, "Node": 1}
APPLY_FOR_ALL, REQUESTS_AS_COUNT = "ApplyForAll", "RequestsAsCount"
SAME_PCIE = "SamePCIe"
PREFERRED = "DeviceShare/preferred"
PREFERRED_BONUS = 1000
"""A preferred shared GPU outscores any other in the topology path (device scores are 0..100)."""
"""CycleState key: {node row: {device type: minors}} a score plugin prefers DeviceShare to take on that node."""
RESTRICTED = "Restricted"
BINPACK_WEIGHTS = ((8, 10000), (4, 100), (2, 1))

ERR_MISSING_TABLE = "node(s) missing GPU Partition Table"
ERR_UNSUPPORTED_COUNT = "node(s) Unsupported number of GPU requests"
ERR_PARTITIONED = "Insufficient Partitioned GPU Devices"
ERR_TOPOLOGY = "Insufficient Topology Scoped GPU Devices"
ERR_GPU_DEVICES = "Insufficient GPU Devices"
ERR_MISSING_TREE = "node(s) missing GPU Device Topology Tree"
ERR_MULTI_SHARED = "node(s) Unsupported Multi-Shared GPU"
ERR_JOINT = "node(s) Device Joint-Allocate rules violation"
ERR_PRIMARY = "node(s) Insufficient primary device"


class Unfit(Exception):
    """The pod's devices do not fit this node: ``reason``, and whether removing pods could help."""

    def __init__(self, reason: str, resolvable: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.resolvable = resolvable


@dataclasses.dataclass(frozen=True)
class Scorer:
    """``resourceAllocationScorer``: per resource with a non-zero total, requested = total - free + request;
    LeastAllocated (total - requested) x 100 // total (0 above total), MostAllocated min(requested, total) x 100
    // total; score = sum(weight x s) // sum(weight)."""

    type: str = LEAST_ALLOCATED
    weights: tuple[tuple[str, int], ...] = ()

    def _score(self, request: Mapping[str, int], total: Mapping[str, int], free: Mapping[str, int]) -> int:
        score = weights = 0
        for name, weight in self.weights:
            capacity = total.get(name, 0)
            if not capacity:
                continue
            available = free.get(name, 0)
            used = capacity - available + request.get(name, 0) if capacity >= available else capacity
            if self.type == MOST_ALLOCATED:
                part = min(used, capacity) * 100 // capacity
            else:
                part = 0 if used > capacity else (capacity - used) * 100 // capacity
            score += part * weight
            weights += weight
        return score // weights if weights else 0

    def device(self, request: Mapping[str, int], total: Mapping[str, int], free: Mapping[str, int]) -> int:
        return self._score(request, total, free)

    def node(self, request: Mapping[str, int], devices: NodeDevices, kind: str) -> int:
        """``scoreNode``: the same over the node's totals of ``kind``."""
        total: dict[str, int] = {}
        free: dict[str, int] = {}
        for minor, device in devices.devices.get(kind, {}).items():
            for name, value in device.total.items():
                total[name] = total.get(name, 0) + value
            for name, value in devices.free(kind, minor).items():
                free[name] = free.get(name, 0) + value
        return self._score(request, total, free)


@dataclasses.dataclass(frozen=True)
class Hint:
    selector: LabelSelector | None = None
    vf_selector: LabelSelector | None = None
    strategy: str = ""
    scope: str = ""
    exclusive: str = ""


@dataclasses.dataclass(frozen=True)
class PodDevices:
    """What ``preparePod`` reads of a pod: converted requests per type, GPU requirements and the hints."""

    requests: Mapping[str, Mapping[str, int]]
    gpu: GPURequirements | None
    hints: Mapping[str, Hint]
    joint_types: tuple[str, ...] = ()
    joint_scope: str = ""
    partition_spec: bool = False
    partition_restricted: bool = False

    @property
    def required_scope_level(self) -> int:
        hint = self.hints.get(DEVICE_GPU)
        return SCOPE_LEVELS.get(hint.scope, 0) if hint else 0


def _json(annotations: Mapping[str, str], key: str) -> object:
    raw = annotations.get(key)
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError as error:
        raise DeviceRequestError(f"invalid {key.rpartition('/')[2]} annotation, err: {error}") from None


def prepare(requests: Mapping[str, int], annotations: Mapping[str, str]) -> PodDevices | None:
    """The pod's device requests and hints; None when it asks for no device; DeviceRequestError when refused."""
    per_type = device_requests(requests)
    if not per_type:
        return None
    hints = {}
    for kind, raw in (_json(annotations, ANNOTATION_DEVICE_ALLOCATE_HINT) or {}).items():
        raw = raw or {}
        hints[kind] = Hint(
            parse_selector(raw["selector"], "selector") if raw.get("selector") else None,
            parse_selector(raw["vfSelector"], "vfSelector") if raw.get("vfSelector") is not None else None,
            str(raw.get("allocateStrategy") or ""), str(raw.get("requiredTopologyScope") or ""),
            str(raw.get("exclusivePolicy") or ""))
    joint = _json(annotations, ANNOTATION_DEVICE_JOINT_ALLOCATE) or {}
    joint_types = tuple(kind for kind in joint.get("deviceTypes") or ()
                        if kind in per_type and (hints.get(kind) or Hint()).strategy != APPLY_FOR_ALL)
    spec = _json(annotations, ANNOTATION_GPU_PARTITION_SPEC)
    return PodDevices(per_type, gpu_requirements(per_type[DEVICE_GPU]) if DEVICE_GPU in per_type else None, hints,
                      joint_types, str(joint.get("requiredScope") or ""), spec is not None,
                      isinstance(spec, dict) and spec.get("allocatePolicy") == RESTRICTED)


# -- counts per type ----------------------------------------------------------------------

def _count(pod: PodDevices, kind: str, node: NodeDevices) -> tuple[int, dict[str, int]]:
    """``calcRequestsAndCountByDeviceType``: (number of devices, request per device) for ``kind``."""
    if kind == DEVICE_GPU:
        return pod.gpu.count, dict(pod.gpu.per_gpu)
    resource = RDMA if kind == DEVICE_RDMA else FPGA
    requests = pod.requests[kind]
    hint = pod.hints.get(kind)
    devices = node.devices.get(kind, {})
    if hint is not None and hint.strategy == APPLY_FOR_ALL:
        matching = [d for d in devices.values() if hint.selector is None or hint.selector.matches(d.labels)]
        if not matching:
            raise Unfit(f"Insufficient {kind} devices", resolvable=False)
        return len(matching), {resource: requests[resource]}
    if hint is not None and hint.strategy == REQUESTS_AS_COUNT:
        return requests[resource], {resource: 100 if hint.exclusive == "DeviceLevel" else 1}
    return instance_requirements(requests, resource)


# -- default allocation ---------------------------------------------------------------------

def _fits(request: Mapping[str, int], free: Mapping[str, int]) -> bool:
    return all(free.get(name, 0) >= value for name, value in request.items())


def _free_vf(node: NodeDevices, kind: str, minor: int, selector: LabelSelector, taken: set[str]) -> dict | None:
    device = node.devices[kind][minor]
    used = node.used_vfs.get(kind, set()) | taken
    candidates = [vf for group in device.vf_groups if selector.empty or selector.matches(group.labels)
                  for vf in group.vfs if vf.bus not in used]
    if not candidates:
        return None
    vf = min(candidates, key=lambda v: v.bus)
    return {"minor": vf.minor, "busID": vf.bus}


def _default(pod: PodDevices, node: NodeDevices, kind: str, request: Mapping[str, int], count: int,
             scorer: Scorer, most: int, preferred_pcie: frozenset[str] = frozenset(),
             preferred: frozenset[int] = frozenset()) -> list[dict]:
    """``defaultAllocateDevices``: preferred devices first, else devices on preferred PCIe switches first; then
    best scored, minor ascending."""
    hint = pod.hints.get(kind)
    devices = node.devices.get(kind, {})
    ranked = []
    for minor in sorted(devices):
        device = devices[minor]
        if not device.total or (hint is not None and hint.selector is not None and not hint.selector.matches(device.labels)):
            continue
        free = node.free(kind, minor)
        on_preferred = minor in preferred if preferred else (
            bool(preferred_pcie) and device.topology is not None and device.topology.pcie in preferred_pcie)
        ranked.append((not on_preferred, -scorer.device(request, device.total, free), minor, free))
    ranked.sort(key=lambda item: item[:3])
    out: list[dict] = []
    taken_vfs: set[str] = set()
    for _, _, minor, free in ranked:
        if not _fits(request, free):
            continue
        entry = {"minor": minor, "resources": dict(request)}
        if hint is not None and hint.vf_selector is not None:
            vf = _free_vf(node, kind, minor, hint.vf_selector, taken_vfs)
            if vf is None:
                continue
            taken_vfs.add(vf["busID"])
            entry["extension"] = {"vfs": [vf]}
        out.append(entry)
        if len(out) == most:
            break
    if len(out) < count:
        raise Unfit(f"Insufficient {kind} devices")
    return out


# -- GPUs -----------------------------------------------------------------------------------

def _by_partition(gpu: GPURequirements, table, used_mask: int, present_mask: int, restricted: bool) -> list[int]:
    if table is None:
        raise Unfit(ERR_MISSING_TABLE, resolvable=False)
    buckets = table.get(gpu.count)
    if not buckets:
        raise Unfit(ERR_UNSUPPORTED_COUNT, resolvable=False)
    feasible: list[Partition] = []
    for bucket in buckets:
        feasible = [p for p in bucket if not p.mask & used_mask and present_mask & p.mask == p.mask]
        if feasible or restricted:
            break
    if not feasible:
        raise Unfit(ERR_PARTITIONED)
    if len(feasible) == 1:
        return list(feasible[0].minors)

    def binpack(partition: Partition) -> int:
        taken = used_mask | partition.mask
        return sum(weight * p.score for size, weight in BINPACK_WEIGHTS if size >= gpu.count and table.get(size)
                   for p in table[size][0] if not p.mask & taken)

    best = max(feasible, key=binpack)
    return list(best.minors)


@dataclasses.dataclass
class _Scope:
    level: int
    key: tuple
    minors: list[int]
    children: list["_Scope"]


def _tree(node: NodeDevices) -> _Scope | None:
    """``GetGPUTopologyScope``: None when a GPU lacks topology."""
    gpus = {m: d for m, d in node.devices.get(DEVICE_GPU, {}).items() if d.total}
    if not gpus or any(d.topology is None for d in gpus.values()):
        return None
    numa: dict[int, dict[str, list[int]]] = {}
    for minor in sorted(gpus):
        topology: Topology = gpus[minor].topology
        numa.setdefault(topology.numa, {}).setdefault(topology.pcie, []).append(minor)
    children = [_Scope(SCOPE_LEVELS["NUMANode"], (n,), sorted(m for ms in pcies.values() for m in ms),
                       [_Scope(SCOPE_LEVELS["PCIe"], (n, p), pcies[p], []) for p in sorted(pcies)])
                for n, pcies in sorted(numa.items())]
    return _Scope(SCOPE_LEVELS["Node"], (), sorted(gpus), children)


def _from_scope(gpu: GPURequirements, required_level: int, scope: _Scope, used: set[int], usable: dict[int, int],
                depth: int, not_empty: int) -> tuple[int, int, int, list[int]] | None:
    """``allocateFromScope``: (depth, used ancestors, score, minors) of the best allocation under ``scope``."""
    if len(scope.minors) < gpu.count:
        return None
    depth += 1
    if used & set(scope.minors):
        not_empty += 1
    best = None
    for child in scope.children:
        found = _from_scope(gpu, required_level, child, used, usable, depth, not_empty)
        if found is None:
            continue
        if best is None or best[0] < found[0] or (best[0] == found[0] and best[1] < found[1]):
            best = found
        elif gpu.shared and best[:2] == found[:2] and best[2] < found[2]:
            best = found
    if best is not None:
        return best
    if required_level > scope.level:
        return None
    candidates = [m for m in scope.minors if m in usable]
    if not candidates:
        return None
    if gpu.shared:
        chosen = max(candidates, key=lambda m: (usable[m], -m))
        return depth, not_empty, usable[chosen], [chosen]
    if len(candidates) < gpu.count:
        return None
    return depth, not_empty, -1, candidates[: gpu.count]


def _gpus(pod: PodDevices, node: NodeDevices, node_labels: Mapping[str, str], scorer: Scorer, count: int,
          most: int, preferred: frozenset[int]) -> list[dict]:
    gpu = pod.gpu
    request = gpu.per_gpu
    devices = node.devices.get(DEVICE_GPU, {})
    present = {m for m, d in devices.items() if d.total}
    used = node.used_minors(DEVICE_GPU)
    table, node_honor = node.with_node_labels(node_labels)
    honor = pod.partition_spec or node_honor
    if not gpu.shared:
        try:
            minors = _by_partition(gpu, table, sum(1 << m for m in used), sum(1 << m for m in present),
                                   pod.partition_restricted)
            return [{"minor": m, "resources": dict(request)} for m in minors]
        except Unfit:
            if honor:
                raise
    required = pod.required_scope_level
    tree = _tree(node)
    if tree is None or (gpu.shared and gpu.count > 1):
        if required:
            raise Unfit(ERR_MISSING_TREE if tree is None else ERR_MULTI_SHARED, resolvable=False)
    else:
        usable = {}
        for minor in sorted(present):
            free = node.free(DEVICE_GPU, minor)
            if _fits(request, free):
                score = scorer.device(request, devices[minor].total, free) if gpu.shared else 0
                usable[minor] = score + (PREFERRED_BONUS if minor in preferred else 0)
        found = _from_scope(gpu, required, tree, used, usable, 0, 0)
        if found is None:
            raise Unfit(ERR_TOPOLOGY if required else ERR_GPU_DEVICES)
        return [{"minor": m, "resources": dict(request)} for m in found[3]]
    return _default(pod, node, DEVICE_GPU, request, count, scorer, most, preferred=preferred)


def _allocate_type(pod: PodDevices, node: NodeDevices, node_labels: Mapping[str, str], kind: str, scorer: Scorer,
                   count: int, request: dict[str, int], preferred_pcie: frozenset[str] = frozenset(),
                   preferred: Mapping[str, frozenset[int]] | None = None) -> list[dict]:
    most = max(count, len(preferred_pcie), 1)
    chosen = (preferred or {}).get(kind, frozenset())
    if kind == DEVICE_GPU:
        return _gpus(pod, node, node_labels, scorer, count, most, chosen)
    return _default(pod, node, kind, request, count, scorer, most, preferred_pcie, chosen)


def _pcies(node: NodeDevices, kind: str, entries: list[dict]) -> frozenset[str]:
    devices = node.devices.get(kind, {})
    return frozenset(devices[e["minor"]].topology.pcie for e in entries
                     if e["minor"] in devices and devices[e["minor"]].topology is not None)


def allocate(pod: PodDevices, node: NodeDevices, node_labels: Mapping[str, str], scorer: Scorer,
             preferred: Mapping[str, frozenset[int]] | None = None) -> dict[str, list[dict]]:
    """The pod's ``device-allocated`` value on this node (integer quantities), or Unfit. ``preferred`` devices
    (per type) are taken first (Koordinator's reservation-preferred minors, which only reorder its default path;
    here a preferred shared GPU also wins within its topology scope); a score plugin may name them through
    ``PREFERRED``."""
    counts = {}
    for kind in sorted(pod.requests):
        if not node.devices.get(kind):
            raise Unfit(f"Insufficient {kind} devices", resolvable=False)
        counts[kind] = _count(pod, kind, node)
        hint = pod.hints.get(kind)
        if hint is not None and hint.vf_selector is not None and not any(
                d.vf_groups for d in node.devices[kind].values()):
            raise Unfit(f"Insufficient {kind} VirtualFunctions", resolvable=False)
    result: dict[str, list[dict]] = {}
    joint = [kind for kind in pod.joint_types if kind in counts]
    if len(pod.requests) > 1 and joint:
        primary, secondary = joint[0], joint[1:]
        count, request = counts[primary]
        result[primary] = _allocate_type(pod, node, node_labels, primary, scorer, count, request)
        if not result[primary]:
            raise Unfit(ERR_PRIMARY)
        pcies = _pcies(node, primary, result[primary])
        for kind in secondary:
            count, request = counts[kind]
            if pod.joint_scope == SAME_PCIE:
                count = max(count, len(pcies))
            result[kind] = _allocate_type(pod, node, node_labels, kind, scorer, count, request, pcies)
            if pod.joint_scope == SAME_PCIE and _pcies(node, kind, result[kind]) != pcies:
                raise Unfit(ERR_JOINT)
    for kind in sorted(counts):
        if kind not in result:
            count, request = counts[kind]
            result[kind] = _allocate_type(pod, node, node_labels, kind, scorer, count, request, preferred=preferred)
    for kind, entries in result.items():
        for entry in entries:
            device = node.devices[kind][entry["minor"]]
            entry["resources"] = complete_memory(kind, entry["resources"], device.total)
            if device.uuid:
                entry["id"] = device.uuid
    return result
