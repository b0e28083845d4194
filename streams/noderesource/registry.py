"""The node-resource plugin registry: name -> factory (a name registered twice raises), and the order
of each stage.

Orders are Koordinator's (``pkg/slo-controller/noderesource/plugins_profile.go``):

- Calculate: CPUNormalization, MidResource, BatchResource (registration order).
- PreUpdate: BatchResource (the only plugin with NUMA-level results).
- Prepare: CPUNormalization first — BatchResource's Prepare amplifies
  batch-cpu with the ratio the same calculation produced — then MidResource,
  BatchResource.
- NodeStatusCheck: MidResource, BatchResource (the first that asks for a sync wins).
- NodeMetaCheck: CPUNormalization.
"""

from __future__ import annotations

from streams import registries
from streams.noderesource.plugins import batchresource, cpunormalization, midresource

REGISTRY = registries.make_registry([
    (cpunormalization.NAME, cpunormalization.CPUNormalization),
    (midresource.NAME, midresource.MidResource),
    (batchresource.NAME, batchresource.BatchResource),
], "node-resource plugin")

CALCULATE_ORDER = (cpunormalization.NAME, midresource.NAME, batchresource.NAME)
PRE_UPDATE_ORDER = (batchresource.NAME,)
PREPARE_ORDER = (cpunormalization.NAME, midresource.NAME, batchresource.NAME)
STATUS_CHECK_ORDER = (midresource.NAME, batchresource.NAME)
META_CHECK_ORDER = (cpunormalization.NAME,)


def build(names: tuple[str, ...] = CALCULATE_ORDER) -> dict[str, object]:
    """One instance of each named plugin (with default args); KeyError names unknown or repeated ones."""
    return registries.build(REGISTRY, names, "node-resource plugins")
