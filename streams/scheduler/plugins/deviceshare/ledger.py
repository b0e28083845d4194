"""Which devices each node has and which are in use, kept in step with the cluster (shared by the plugins
that read devices: DeviceShare, GPUFragmentation).

Per node a ``NodeDevices`` from its Device object, with the ``device-allocated`` annotations of the pods
assigned to it applied (from the binding's annotations, else the pod's own, so a restored domain and pods
bound by another scheduler count too). For vectorized filters and scores the GPUs' free gpu-core,
gpu-memory-ratio and gpu-memory are also held per node row in ``NodeColumns`` (``SLOTS`` GPUs per node, in
minor order; an absent slot is -1).
"""

from __future__ import annotations

import numpy as np

from streams.koordinator.annotations import ANNOTATION_DEVICE_ALLOCATED
from streams.koordinator.resources import DEVICE_GPU, GPU_CORE, GPU_MEMORY, GPU_MEMORY_RATIO
from streams.scheduler.plugins.deviceshare.devices import KIND, NodeDevices, parse_allocated
from streams.scheduler.state import Cluster, NodeChanged, ObjectChanged, PodAssigned, PodUnassigned

SLOTS = 16
"""GPUs per node the vectorized arrays hold; nodes with more are marked ``slow``."""
FAST = (GPU_CORE, GPU_MEMORY_RATIO, GPU_MEMORY)


class DeviceLedger:
    def __init__(self, cluster: Cluster, owner: str) -> None:
        self.cluster = cluster
        self.owner = owner
        cluster.columns.attach(owner, "free", len(FAST) * SLOTS, np.int64, -1)
        cluster.columns.attach(owner, "total", len(FAST), np.int64, 0)
        cluster.columns.attach(owner, "slow", None, bool, False)
        cluster.columns.attach(owner, "present", None, bool, False)
        self.nodes: dict[str, NodeDevices] = {}
        self.version: dict[str, int] = {}
        """Bumped whenever a node's devices or their use change."""
        self._applied: dict[str, tuple[str, dict]] = {}
        for name in sorted(cluster.objects.get(KIND, {})):
            self._load(name)
        for key in sorted(cluster.assignment):
            self._apply(key, cluster.assignment[key], 1)

    def close(self) -> None:
        self.cluster.columns.detach(self.owner)

    def free(self, count: int) -> np.ndarray:
        """(len(FAST), SLOTS, count) free amounts per GPU slot."""
        return self.cluster.columns.attached(self.owner, "free").reshape(len(FAST), SLOTS, -1)[:, :, :count]

    def totals(self, count: int) -> np.ndarray:
        return self.cluster.columns.attached(self.owner, "total")[:, :count]

    def slow(self, count: int) -> np.ndarray:
        """Nodes the vectorized arrays do not describe exactly (more GPUs than slots, partitions honoured)."""
        return self.cluster.columns.attached(self.owner, "slow")[:count]

    def present(self, count: int) -> np.ndarray:
        """Nodes with a Device object."""
        return self.cluster.columns.attached(self.owner, "present")[:count]

    def _load(self, name: str) -> None:
        record = self.cluster.objects.get(KIND, {}).get(name)
        old = self.nodes.pop(name, None)
        if record is not None:
            node = self.nodes[name] = NodeDevices.from_record(record)
            if old is not None:
                node.used, node.used_vfs = old.used, old.used_vfs
        self._publish(name)

    def _publish(self, name: str) -> None:
        self.version[name] = self.version.get(name, 0) + 1
        columns = self.cluster.columns
        row = columns.row.get(name)
        if row is None:
            return
        free = columns.attached(self.owner, "free").reshape(len(FAST), SLOTS, -1)
        total = columns.attached(self.owner, "total")
        slow = columns.attached(self.owner, "slow")
        free[:, :, row] = -1
        total[:, row] = 0
        node = self.nodes.get(name)
        gpus = node.devices.get(DEVICE_GPU, {}) if node is not None else {}
        slow[row] = node is not None and (len(gpus) > SLOTS or node.honor_partitions)
        columns.attached(self.owner, "present")[row] = node is not None
        for slot, minor in enumerate(sorted(gpus)[:SLOTS]):
            device = gpus[minor]
            if not device.total:
                continue
            available = node.free(DEVICE_GPU, minor)
            for index, resource in enumerate(FAST):
                free[index, slot, row] = available.get(resource, 0)
                total[index, row] += device.total.get(resource, 0)

    def _allocations(self, key: str) -> dict:
        annotations = self.cluster.bind_annotations.get(key)
        if not annotations or ANNOTATION_DEVICE_ALLOCATED not in annotations:
            pod = self.cluster.pods.get(key)
            annotations = pod.annotations if pod is not None else {}
        return parse_allocated(annotations)

    def _apply(self, key: str, node: str, sign: int) -> None:
        if sign > 0:
            allocations = self._allocations(key)
            if not allocations:
                return
            self._applied[key] = (node, allocations)
        else:
            node, allocations = self._applied.pop(key, (node, None))
            if allocations is None:
                return
        devices = self.nodes.get(node)
        if devices is not None:
            devices.apply(allocations, sign)
            self._publish(node)

    def observe(self, change: object) -> None:
        if isinstance(change, ObjectChanged) and change.kind == KIND:
            self._load(change.name)
        elif isinstance(change, PodAssigned):
            self._apply(change.key, change.node, 1)
        elif isinstance(change, PodUnassigned):
            self._apply(change.key, change.node, -1)
        elif isinstance(change, NodeChanged) and change.new is not None and change.old is None:
            self._publish(change.name)
