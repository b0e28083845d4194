"""A node's devices as DeviceShare sees them: totals per minor, topology, VFs, partitions, what is used.

Built from the node's Device object (``spec.devices[]``: type, minor, health, resources, topology
{socketID, nodeID, pcieID, busID}, labels, vfGroups; the ``gpu-partitions`` annotation; labels
``gpu-partition-policy``, ``gpu-model``, ``gpu-vendor``) and the ``device-allocated`` annotations of the
pods assigned to the node. An unhealthy device has no resources (Koordinator empties them), so it is never
allocated. Allocations are completed with both gpu-memory and gpu-memory-ratio (``fillGPUTotalMem``):
ratio -> bytes = ratio x memory / 100, bytes -> ratio = floor(bytes / memory x 100).

``node_allocatable`` is what koord-manager's gpudeviceresource/rdmadeviceresource plugins sync to the node:
gpu-core, gpu-memory-ratio and gpu-memory summed over healthy GPUs, ``koordinator.sh/gpu`` = 100 x GPUs
(NVIDIA or no vendor), ``koordinator.sh/gpu.shared`` = 100 x GPUs (as with the EnableSyncGPUSharedResource
gate, which the v1.6 article's gpu-shared examples need), rdma summed over healthy RDMA devices.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

from streams.koordinator.annotations import ANNOTATION_DEVICE_ALLOCATED, ANNOTATION_GPU_PARTITIONS
from streams.koordinator.labels import LABEL_GPU_MODEL, LABEL_GPU_PARTITION_POLICY, LABEL_GPU_VENDOR
from streams.koordinator.resources import (
    DEVICE_GPU, DEVICE_RDMA, GPU_CORE, GPU_MEMORY, GPU_MEMORY_RATIO, GPU_SHARED, KOORD_GPU, RDMA)
from streams.objects.quantity import QuantityError, resource_list

PARTITION_HONOR = "Honor"
NVIDIA = "nvidia"
HOPPER_MODELS = ("H100", "H800", "H20")


@dataclasses.dataclass(frozen=True)
class Topology:
    socket: int = -1
    numa: int = -1
    pcie: str = ""
    bus: str = ""


@dataclasses.dataclass(frozen=True)
class VF:
    minor: int
    bus: str


@dataclasses.dataclass(frozen=True)
class VFGroup:
    labels: Mapping[str, str]
    vfs: tuple[VF, ...]


@dataclasses.dataclass(frozen=True)
class Device:
    type: str
    minor: int
    uuid: str
    total: Mapping[str, int]
    """Empty when unhealthy."""
    topology: Topology | None
    labels: Mapping[str, str]
    vf_groups: tuple[VFGroup, ...] = ()


@dataclasses.dataclass(frozen=True)
class Partition:
    minors: tuple[int, ...]
    score: int
    link: str = ""
    bandwidth: str = ""

    @property
    def mask(self) -> int:
        return sum(1 << minor for minor in self.minors)


HOPPER_TABLE = {
    1: [[Partition((m,), 1, "NVLink") for m in range(8)]],
    2: [[Partition((m, m + 1), 1, "NVLink") for m in range(0, 8, 2)]],
    4: [[Partition((0, 1, 2, 3), 1, "NVLink"), Partition((4, 5, 6, 7), 1, "NVLink")]],
    8: [[Partition(tuple(range(8)), 1, "NVLink")]],
}
"""The built-in partition table of NVIDIA Hopper nodes (``GPUPartitionIndexOfNVIDIAHopper``): number of GPUs ->
buckets of partitions by ascending allocationScore."""


def _int(value: object, default: int = -1) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _partition_table(raw: str | None) -> dict[int, list[list[Partition]]] | None:
    """The Device's ``gpu-partitions`` annotation, indexed as ``GetGPUPartitionIndexer``: buckets of one
    allocationScore, ascending. The v1.6 article writes each partition wrapped in a link-type key
    (``{"NVLINK": {...}}``) and the score as a string; both forms are read."""
    if not raw:
        return None
    table = json.loads(raw)
    out: dict[int, list[list[Partition]]] = {}
    for count, partitions in sorted(table.items(), key=lambda kv: int(kv[0])):
        buckets: dict[int, list[Partition]] = {}
        for item in partitions or ():
            if "minors" not in item and len(item) == 1 and isinstance(next(iter(item.values())), dict):
                item = next(iter(item.values()))
            score = item.get("allocationScore")
            part = Partition(tuple(int(m) for m in item.get("minors") or ()),
                             int(score) if isinstance(score, (int, str)) and str(score).isdigit() else 0,
                             str(item.get("gpuLinkType") or ""), str(item.get("ringBusBandwidth") or ""))
            buckets.setdefault(part.score, []).append(part)
        out[int(count)] = [buckets[score] for score in sorted(buckets)]
    return out


@dataclasses.dataclass
class NodeDevices:
    """One node's devices and what the pods assigned to it use."""

    devices: dict[str, dict[int, Device]]
    """type -> minor -> device."""
    labels: Mapping[str, str]
    partitions: dict[int, list[list[Partition]]] | None
    honor_partitions: bool
    used: dict[str, dict[int, dict[str, int]]] = dataclasses.field(default_factory=dict)
    used_vfs: dict[str, set[str]] = dataclasses.field(default_factory=dict)
    """type -> bus ids of VFs in use."""

    @classmethod
    def from_record(cls, record: Mapping) -> "NodeDevices":
        manifest = json.loads(record.get("manifest") or "{}")
        meta = manifest.get("metadata") or {}
        labels = dict(meta.get("labels") or {})
        annotations = meta.get("annotations") or {}
        devices: dict[str, dict[int, Device]] = {}
        for raw in (manifest.get("spec") or {}).get("devices") or ():
            kind, minor = raw.get("type"), _int(raw.get("minor"))
            if not kind or minor < 0:
                continue
            health = raw.get("health")
            try:
                total = resource_list(raw.get("resources") or {}) if health is not False else {}
            except QuantityError:
                total = {}
            topo = raw.get("topology")
            topology = None if not isinstance(topo, dict) else Topology(
                _int(topo.get("socketID")), _int(topo.get("nodeID")), str(topo.get("pcieID") or ""),
                str(topo.get("busID") or ""))
            groups = tuple(VFGroup(dict(g.get("labels") or {}),
                                   tuple(VF(_int(vf.get("minor")), str(vf.get("busID") or ""))
                                         for vf in g.get("vfs") or ()))
                           for g in raw.get("vfGroups") or ())
            devices.setdefault(kind, {})[minor] = Device(
                kind, minor, str(raw.get("id") or raw.get("uuid") or ""), {k: v for k, v in total.items() if v},
                topology, dict(raw.get("labels") or {}), groups)
        partitions = _partition_table(annotations.get(ANNOTATION_GPU_PARTITIONS))
        honor = labels.get(LABEL_GPU_PARTITION_POLICY) == PARTITION_HONOR
        return cls(devices, labels, partitions, honor)

    def with_node_labels(self, node_labels: Mapping[str, str]) -> tuple[dict[int, list[list[Partition]]] | None, bool]:
        """The partition table and whether it must be honoured: the Device's, else the built-in Hopper table
        by the node's model (``GetDesignatedGPUPartitionIndexer``); Honor from the Device or the node label."""
        honor = self.honor_partitions or node_labels.get(LABEL_GPU_PARTITION_POLICY) == PARTITION_HONOR
        if self.partitions is not None:
            return self.partitions, honor
        vendor = node_labels.get(LABEL_GPU_VENDOR) or self.labels.get(LABEL_GPU_VENDOR, "")
        model = node_labels.get(LABEL_GPU_MODEL) or self.labels.get(LABEL_GPU_MODEL, "")
        if vendor in ("", NVIDIA) and model in HOPPER_MODELS:
            return HOPPER_TABLE, honor
        return None, honor

    # -- accounting ------------------------------------------------------------------

    def total(self, kind: str, minor: int) -> Mapping[str, int]:
        device = self.devices.get(kind, {}).get(minor)
        return device.total if device is not None else {}

    def free(self, kind: str, minor: int) -> dict[str, int]:
        used = self.used.get(kind, {}).get(minor, {})
        return {name: value - used.get(name, 0) for name, value in self.total(kind, minor).items()}

    def used_minors(self, kind: str) -> set[int]:
        return {minor for minor, used in self.used.get(kind, {}).items() if any(used.values())}

    def apply(self, allocations: Mapping[str, list[Mapping]], sign: int) -> None:
        """Add (sign 1) or remove (-1) one pod's ``device-allocated`` entries."""
        for kind, entries in allocations.items():
            for entry in entries:
                minor = _int(entry.get("minor"))
                used = self.used.setdefault(kind, {}).setdefault(minor, {})
                for name, value in (entry.get("resources") or {}).items():
                    used[name] = used.get(name, 0) + sign * value
                    if not used[name]:
                        del used[name]
                if not used:
                    del self.used[kind][minor]
                vfs = self.used_vfs.setdefault(kind, set())
                for vf in (entry.get("extension") or {}).get("vfs") or ():
                    (vfs.add if sign > 0 else vfs.discard)(str(vf.get("busID") or ""))


def complete_memory(kind: str, resources: Mapping[str, int], total: Mapping[str, int]) -> dict[str, int]:
    """``fillGPUTotalMem``: a GPU allocation carries both gpu-memory and gpu-memory-ratio."""
    out = dict(resources)
    memory = total.get(GPU_MEMORY, 0)
    if kind != DEVICE_GPU or not memory:
        return out
    if GPU_MEMORY_RATIO in out and GPU_MEMORY not in out:
        out[GPU_MEMORY] = out[GPU_MEMORY_RATIO] * memory // 100
    elif GPU_MEMORY in out and GPU_MEMORY_RATIO not in out:
        out[GPU_MEMORY_RATIO] = out[GPU_MEMORY] * 100 // memory
    return out


def parse_allocated(annotations: Mapping[str, str] | None) -> dict[str, list[dict]]:
    """A pod's ``device-allocated`` annotation with canonical integer quantities ({} when absent or invalid)."""
    raw = (annotations or {}).get(ANNOTATION_DEVICE_ALLOCATED)
    if not raw:
        return {}
    try:
        parsed = json.loads(raw)
        return {kind: [{**entry, "resources": resource_list(entry.get("resources") or {})} for entry in entries]
                for kind, entries in parsed.items() if isinstance(entries, list)}
    except (ValueError, QuantityError, AttributeError, TypeError):
        return {}


def node_allocatable(devices: NodeDevices) -> dict[str, int]:
    """What koord-manager syncs to the node from its Device (gpudeviceresource, rdmadeviceresource)."""
    out: dict[str, int] = {}
    gpus = [d for d in devices.devices.get(DEVICE_GPU, {}).values() if d.total]
    if gpus:
        for name in (GPU_CORE, GPU_MEMORY_RATIO, GPU_MEMORY):
            out[name] = sum(d.total.get(name, 0) for d in gpus)
        if devices.labels.get(LABEL_GPU_VENDOR, "") in ("", NVIDIA):
            out[KOORD_GPU] = 100 * len(gpus)
        out[GPU_SHARED] = 100 * len(gpus)
    rdmas = [d for d in devices.devices.get(DEVICE_RDMA, {}).values() if d.total]
    if rdmas:
        out[RDMA] = sum(d.total.get(RDMA, 0) for d in rdmas)
    return out


NODE_LABELS = (LABEL_GPU_MODEL, LABEL_GPU_VENDOR)
"""Device labels koord-manager copies to the node."""
KIND = "Device"


@dataclasses.dataclass(frozen=True)
class Synced:
    allocatable: Mapping[str, int]
    labels: Mapping[str, str]


def device_sync(record: Mapping) -> Synced:
    """What koord-manager writes on the node from its Device: the device allocatable and the GPU model and
    vendor labels (the scheduler applies it where it reads the node)."""
    devices = NodeDevices.from_record(record)
    labels = {key: devices.labels[key] for key in NODE_LABELS if devices.labels.get(key)}
    return Synced(node_allocatable(devices), labels)
