"""One node calculation through the framework stages (Koordinator's ``resource_calculator.go``).

1. Resolve the node's strategies (colocation-config and cpu-normalization-config
   for its labels and annotations).
2. Co-location disabled (cluster ``enable`` or the node's strategy off): every
   calculate plugin's Reset, message ``node colocation is disabled in Config,
   reason: DisableInConfig``. Otherwise Calculate, in registry order, with the
   node's NUMA zones in the snapshot.
3. PreUpdate, in registry order: the zone resources to publish. They need a
   sync (Koordinator updates the NodeResourceTopology) when a plugin saw a
   value move by more than ``resourceDiffThreshold``, or when zones were never
   published or last published more than ``updateTimeThresholdSeconds`` ago
   (Koordinator's ``nrtSyncContext``); never when nothing was calculated per
   zone.
4. Prepare, in registry order, on a draft of the node: the Node's capacity
   and allocatable without the batch/mid resources, plus the annotations
   published last. Then the CPU normalization ratio of the draft amplifies
   the cpu allocatable (``MultiplyMilliQuant(raw allocatable, ratio)`` for a
   ratio > 1), as Koordinator's resource-amplification webhook does, and the draft carries the ratio as
   ``node.koordinator.sh/resource-amplification-ratio`` (``{"cpu":1.20}``), as Koordinator's
   ResourceAmplification plugin writes it without a ``resource-amplification-config`` (the ratio is the CPU
   normalization ratio); the bridge writes it on the node, where ``koord webhook`` amplifies each kubelet
   status update with it.
5. Sync decision: the status needs a sync when the node was never published,
   when the last publication is older than ``updateTimeThresholdSeconds``, or
   when a NodeStatusCheck plugin sees a batch/mid value move by more than
   ``resourceDiffThreshold``; the metadata when the ratio changed
   (NodeMetaCheck).

Koordstream deviation: a metadata-only or zone-only sync publishes the whole
draft (batch and mid values included), where Koordinator patches the
annotation or the NodeResourceTopology and leaves the status to its next
status sync. A publication carries the zone resources last synced. The
caller can force a publication (every Node event publishes, see
``aggregate``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from types import MappingProxyType

from streams.koordinator.annotations import ANNOTATION_CPU_NORMALIZATION_RATIO, ANNOTATION_RESOURCE_AMPLIFICATION_RATIO
from streams.koordinator.resources import EXTENDED_RESOURCES
from streams.noderesource import registry
from streams.noderesource.framework import NodeResource, NodeStatus, PluginError, ZoneResources
from streams.noderesource.quantities import multiply_milli
from streams.noderesource.views import DeviceView, MetricView, NodeView, PodView, Snapshot, Zone
from streams.pluginstats import PluginStats
from streams.sloconfig.colocation import ColocationStrategy
from streams.sloconfig.configmap import SloConfig
from streams.sloconfig.cpunormalization import CPUNormalizationStrategy

DISABLED_MESSAGE = "node colocation is disabled in Config, reason: DisableInConfig"
COMPARED_ANNOTATIONS = (ANNOTATION_CPU_NORMALIZATION_RATIO,)
"""Annotations a later calculation reads back (the others, e.g. the origin allocatable, are recomputed)."""
EMPTY: Mapping = MappingProxyType({})


@dataclasses.dataclass(frozen=True)
class Published:
    """What the last NodeResource of the node said (Koordinator: the node object and its sync context)."""

    synced_ms: int | None = None
    """When it was published; None: never."""
    extended: Mapping[str, int] = dataclasses.field(default_factory=lambda: EMPTY)
    """The batch/mid resources in its allocatable."""
    annotations: Mapping[str, str] = dataclasses.field(default_factory=lambda: EMPTY)
    """The published annotations the sync checks compare (the CPU normalization ratio)."""
    zones: ZoneResources = dataclasses.field(default_factory=lambda: EMPTY)
    """The batch resources of the NUMA zones (Koordinator: the NodeResourceTopology's zone resources)."""
    zones_synced_ms: int | None = None
    """When the zones were last synced; None: never (Koordinator: its ``nrtSyncContext``)."""


@dataclasses.dataclass(frozen=True)
class Outcome:
    status: NodeStatus
    result: NodeResource
    status_sync: tuple[bool, str]
    meta_sync: tuple[bool, str]
    zones: ZoneResources | None
    """The zone resources PreUpdate calculated; None: nothing calculated per zone."""
    zone_sync: tuple[bool, str]
    errors: tuple[str, ...]
    """Plugins whose Calculate failed, with the reason."""

    def message(self) -> str:
        """Koordinator's calculation messages, batch then mid, joined with "; " (repeats dropped)."""
        messages = []
        for name in EXTENDED_RESOURCES:
            text = self.result.message(name)
            if text and text not in messages:
                messages.append(text)
        return "; ".join(messages)


def strategies(config: SloConfig, node: NodeView) -> tuple[ColocationStrategy, CPUNormalizationStrategy]:
    """The node's strategies, memoised on the NodeView per config object."""
    cache = node.cache
    if cache and cache[0] is config:
        return cache[1], cache[2]
    strategy = config.colocation.for_node(node.labels, node.annotations)
    cpu_normalization = config.cpu_normalization.for_node(node.labels)
    cache[:] = [config, strategy, cpu_normalization]
    return strategy, cpu_normalization


def ratio_of(annotations: Mapping[str, str]) -> float:
    text = annotations.get(ANNOTATION_CPU_NORMALIZATION_RATIO)
    if text is None:
        return -1.0
    try:
        return float(text)
    except ValueError:
        return -1.0


def _calculate(plugins: Mapping[str, object], snapshot: Snapshot, result: NodeResource, errors: list[str],
               stats: PluginStats | None) -> None:
    for name in registry.CALCULATE_ORDER:
        started = time.perf_counter() if stats else 0.0
        outcome = "success"
        try:
            result.set(plugins[name].calculate(snapshot))
        except PluginError as err:
            errors.append(f"{name}: {err}")
            outcome = "error"
        if stats:
            stats.record(name, "Calculate", outcome, started)


def reconcile(plugins: Mapping[str, object], config: SloConfig, node: NodeView, pods: Mapping[str, PodView],
              metric: MetricView | None, now_ms: int, published: Published,
              stats: PluginStats | None = None, zones: tuple[Zone, ...] = (),
              device: DeviceView | None = None) -> Outcome:
    """One calculation; ``stats``, when given, counts and times each Calculate/Reset and PreUpdate call
    (result ``success``, ``error``, ``reset`` or, for PreUpdate without zone values, ``skip``)."""
    strategy, cpu_normalization = strategies(config, node)
    result = NodeResource()
    errors: list[str] = []
    if not config.colocation.enabled(strategy):
        for name in registry.CALCULATE_ORDER:
            result.set(plugins[name].reset(DISABLED_MESSAGE))
            if stats:
                stats.add(name, "Calculate", "reset", 0.0)
    else:
        _calculate(plugins, Snapshot(strategy, cpu_normalization, node, pods, metric, now_ms, zones, device), result,
                   errors, stats)
    zone_resources, zone_sync = None, (False, "")
    for name in registry.PRE_UPDATE_ORDER:
        started = time.perf_counter() if stats else 0.0
        prepared = plugins[name].pre_update(strategy, zones, published.zones, result)
        if prepared is not None:
            zone_resources, zone_sync = prepared
        if stats:
            stats.record(name, "PreUpdate", "skip" if prepared is None else "success", started)
    if zone_resources is not None and not zone_sync[0]:
        if published.zones_synced_ms is None:
            zone_sync = (True, "zones never published")
        elif now_ms - published.zones_synced_ms > strategy.update_time_threshold_seconds * 1000:
            zone_sync = (True, "zone resources expired")
    status = NodeStatus(node, dict(node.base_capacity), dict(node.base_allocatable), dict(published.annotations))
    for name in registry.PREPARE_ORDER:
        plugins[name].prepare(strategy, status, result)
    ratio = ratio_of(status.annotations)
    if ratio > 1.0 and "cpu" in node.allocatable:
        status.allocatable["cpu"] = multiply_milli(node.raw_allocatable[0], ratio)
    if ratio > 1.0:
        status.annotations[ANNOTATION_RESOURCE_AMPLIFICATION_RATIO] = amplification_ratio(ratio)

    status_sync = (False, "")
    if published.synced_ms is None:
        status_sync = (True, "never published")
    elif now_ms - published.synced_ms > strategy.update_time_threshold_seconds * 1000:
        status_sync = (True, "node resource expired")
    else:
        for name in registry.STATUS_CHECK_ORDER:
            status_sync = plugins[name].need_sync(strategy, published.extended, status.allocatable)
            if status_sync[0]:
                break
    meta_sync = (False, "")
    for name in registry.META_CHECK_ORDER:
        meta_sync = plugins[name].need_sync_meta(strategy, published.annotations, status.annotations)
        if meta_sync[0]:
            break
    return Outcome(status, result, status_sync, meta_sync, zone_resources, zone_sync, tuple(errors))


def amplification_ratio(ratio: float) -> str:
    """The amplification-ratio annotation of a cpu ratio: JSON with two decimals (``extension.Ratio``)."""
    return f'{{"cpu":{ratio:.2f}}}'


def published_after(outcome: Outcome, now_ms: int, before: Published) -> Published:
    """What a publication of ``outcome`` at ``now_ms`` says; the zones change only when they were synced."""
    status = outcome.status
    zones, zones_synced_ms = before.zones, before.zones_synced_ms
    if outcome.zone_sync[0]:
        zones, zones_synced_ms = MappingProxyType(dict(outcome.zones)), now_ms
    return Published(
        synced_ms=now_ms,
        extended=MappingProxyType({k: status.allocatable[k] for k in EXTENDED_RESOURCES if k in status.allocatable}),
        annotations=MappingProxyType({k: v for k, v in status.annotations.items() if k in COMPARED_ANNOTATIONS}),
        zones=zones, zones_synced_ms=zones_synced_ms,
    )
