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

from typing import Callable

from streams.noderesource.plugins import batchresource, cpunormalization, midresource


def _registry(entries: list[tuple[str, Callable[[], object]]]) -> dict[str, Callable[[], object]]:
    registry: dict[str, Callable[[], object]] = {}
    for name, factory in entries:
        if name in registry:
            raise ValueError(f"node-resource plugin {name!r} registered twice")
        registry[name] = factory
    return registry


REGISTRY = _registry([
    (cpunormalization.NAME, cpunormalization.CPUNormalization),
    (midresource.NAME, midresource.MidResource),
    (batchresource.NAME, batchresource.BatchResource),
])

CALCULATE_ORDER = (cpunormalization.NAME, midresource.NAME, batchresource.NAME)
PRE_UPDATE_ORDER = (batchresource.NAME,)
PREPARE_ORDER = (cpunormalization.NAME, midresource.NAME, batchresource.NAME)
STATUS_CHECK_ORDER = (midresource.NAME, batchresource.NAME)
META_CHECK_ORDER = (cpunormalization.NAME,)


def build(names: tuple[str, ...] = CALCULATE_ORDER) -> dict[str, object]:
    """One instance of each named plugin (with default args); KeyError names unknown or repeated ones."""
    unknown = [name for name in names if name not in REGISTRY]
    if unknown:
        raise KeyError(f"unknown node-resource plugins: {', '.join(unknown)} (have: {', '.join(sorted(REGISTRY))})")
    if len(set(names)) != len(names):
        twice = sorted(name for name in set(names) if names.count(name) > 1)
        raise KeyError(f"node-resource plugins listed twice: {', '.join(twice)}")
    return {name: REGISTRY[name]() for name in names}
