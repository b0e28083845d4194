"""The node-resource plugin registry: name -> factory (a name registered twice raises), and the order
of each stage.

Orders are Koordinator's (``pkg/slo-controller/noderesource/plugins_profile.go``):

- Calculate: CPUNormalization, MidResource, BatchResource, GPUDeviceResource, RDMADeviceResource
  (registration order).
- PreUpdate: BatchResource (the only plugin with NUMA-level results).
- Prepare: CPUNormalization first — BatchResource's Prepare amplifies
  batch-cpu with the ratio the same calculation produced — then MidResource,
  BatchResource, GPUDeviceResource, RDMADeviceResource.
- NodeStatusCheck: MidResource, BatchResource (the first that asks for a sync wins). Koordinator lists the
  device plugins too; here every Device event publishes the node (``nodeaggregate.node``), and the
  published state keeps only the batch/mid values a check compares, so theirs are not registered.
- NodeMetaCheck: CPUNormalization.
"""

from __future__ import annotations

from streams import registries
from streams.noderesource.plugins import (
    batchresource, cpunormalization, gpudeviceresource, midresource, rdmadeviceresource)

REGISTRY = registries.make_registry([
    (cpunormalization.NAME, cpunormalization.CPUNormalization),
    (midresource.NAME, midresource.MidResource),
    (batchresource.NAME, batchresource.BatchResource),
    (gpudeviceresource.NAME, gpudeviceresource.GPUDeviceResource),
    (rdmadeviceresource.NAME, rdmadeviceresource.RDMADeviceResource),
], "node-resource plugin")

CALCULATE_ORDER = (cpunormalization.NAME, midresource.NAME, batchresource.NAME, gpudeviceresource.NAME,
                   rdmadeviceresource.NAME)
PRE_UPDATE_ORDER = (batchresource.NAME,)
PREPARE_ORDER = (cpunormalization.NAME, midresource.NAME, batchresource.NAME, gpudeviceresource.NAME,
                 rdmadeviceresource.NAME)
STATUS_CHECK_ORDER = (midresource.NAME, batchresource.NAME)
META_CHECK_ORDER = (cpunormalization.NAME,)


def build(names: tuple[str, ...] = CALCULATE_ORDER) -> dict[str, object]:
    """One instance of each named plugin (with default args); KeyError names unknown or repeated ones."""
    return registries.build(REGISTRY, names, "node-resource plugins")
