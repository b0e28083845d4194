"""GPUDeviceResource: the node's GPU resources and labels, synced from its Device (Koordinator's
``pkg/slo-controller/noderesource/plugins/gpudeviceresource``).

Over the healthy devices of type ``gpu`` of the node's Device::

    <resource>                 = sum of the devices' resources (gpu-core, gpu-memory, gpu-memory-ratio,
                                 huawei.com/npu-*, ...)
    koordinator.sh/gpu         = sum of gpu-core            (vendor nvidia, or no vendor label)
    koordinator.sh/gpu.shared  = healthy GPUs * 100         (feature gate EnableSyncGPUSharedResource)

Prepare writes the names of ``RESOURCE_NAMES`` into capacity and allocatable (both the same); the other
resources a device lists are calculated but not written, as in Koordinator. No Device, or no healthy GPU
in it: every name of ``RESOURCE_NAMES`` is reset (removed from the node). The Device's
``node.koordinator.sh/gpu-vendor``, ``gpu-model`` and ``gpu-driver-version`` labels are set on the node.
Co-location disabled does not remove them (Reset returns nothing). A Device event publishes the node (the
node aggregate forces it), so no status check is registered for them.
"""

from __future__ import annotations

import dataclasses

from streams.koordinator.labels import LABEL_GPU_VENDOR
from streams.koordinator.resources import (
    GPU_CORE, GPU_MEMORY, GPU_MEMORY_RATIO, GPU_SHARED, KOORD_GPU, NPU_CORE, NPU_CPU, NPU_DVPP)
from streams.noderesource.framework import NodeResource, NodeStatus, ResourceItem
from streams.noderesource.resources import prepare_synced
from streams.noderesource.views import DEVICE_LABELS, Snapshot
from streams.sloconfig.colocation import ColocationStrategy

NAME = "GPUDeviceResource"
RESET_MESSAGE = "reset node gpu resources"
UPDATE_RESOURCES_MESSAGE = "node gpu resources from device"
UPDATE_LABELS_MESSAGE = "node gpu labels from device"
GPU = "gpu"
VENDOR_NVIDIA = "nvidia"
RESOURCE_NAMES = (KOORD_GPU, GPU_CORE, NPU_CORE, NPU_CPU, NPU_DVPP, GPU_MEMORY, GPU_MEMORY_RATIO, GPU_SHARED)
"""The resources the plugin reconciles from the Device to the node (``utils.go``'s ``ResourceNames``)."""
LABELS = DEVICE_LABELS
"""The Device labels set on the node (``utils.go``'s ``Labels``)."""


@dataclasses.dataclass(frozen=True)
class GPUDeviceResourceArgs:
    sync_shared_resource: bool = False
    """Publish ``koordinator.sh/gpu.shared`` (healthy GPUs * 100): Koordinator's feature gate
    ``EnableSyncGPUSharedResource``, alpha and off by default."""

    def validate(self) -> None:
        if not isinstance(self.sync_shared_resource, bool):
            raise ValueError(f"{NAME}: sync_shared_resource must be a boolean")


class GPUDeviceResource:
    name = NAME

    def __init__(self, args: GPUDeviceResourceArgs = GPUDeviceResourceArgs()) -> None:
        args.validate()
        self.args = args

    def calculate(self, snapshot: Snapshot) -> list[ResourceItem]:
        device = snapshot.device
        healthy = [resources for kind, health, resources in (device.devices if device else ())
                   if kind == GPU and health]
        if not healthy:
            return self._reset()
        totals: dict[str, int] = {}
        for resources in healthy:
            for name, amount in resources:
                totals[name] = totals.get(name, 0) + amount
        labels = dict(device.labels)
        if labels.get(LABEL_GPU_VENDOR, "") in ("", VENDOR_NVIDIA):
            totals[KOORD_GPU] = totals.get(GPU_CORE, 0)
        if self.args.sync_shared_resource:
            totals[GPU_SHARED] = len(healthy) * 100
        items = [ResourceItem(name, totals[name], message_source=UPDATE_RESOURCES_MESSAGE) for name in sorted(totals)]
        synced = {label: labels[label] for label in LABELS if label in labels}
        if synced:
            items.append(ResourceItem(NAME, labels=synced, message_source=UPDATE_LABELS_MESSAGE))
        return items

    def _reset(self) -> list[ResourceItem]:
        return [ResourceItem(name, reset=True, message_source=RESET_MESSAGE) for name in RESOURCE_NAMES]

    def reset(self, message: str) -> list[ResourceItem]:
        return []

    def prepare(self, strategy: ColocationStrategy, status: NodeStatus, result: NodeResource) -> None:
        prepare_synced(status, result, RESOURCE_NAMES)
        for label in LABELS:
            if label in result.labels:
                status.labels[label] = result.labels[label]
