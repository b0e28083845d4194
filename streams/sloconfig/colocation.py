"""``colocation-config``: a ``ColocationStrategy`` for the cluster plus ``nodeConfigs`` (``name``,
``nodeSelector`` and strategy fields inline).

The cluster strategy is overlaid on ``DefaultColocationStrategy()``, every node config on the
merged cluster strategy. For a node (``GetNodeColocationStrategy``) the first node config whose
selector matches the node's labels wins, then the JSON in the node annotation
``node.koordinator.sh/colocation-strategy`` is overlaid (ignored when it does not parse), then the
labels ``node.koordinator.sh/cpu-reclaim-ratio``, ``memory-reclaim-ratio``,
``mid-static-cpu-reserved-ratio`` and ``mid-static-memory-reserved-ratio`` (a float ratio
``v >= 0`` becomes the percent ``int(v * 100)``; negative or unparsable values are ignored)
replace single fields.

Validation (the webhook's): JSON that does not decode into the Go types, strategy fields out of
their ranges (``IsColocationStrategyValid`` plus the struct tags: reclaim percents >= 0,
degradeTimeMinutes and updateTimeThresholdSeconds >= 1, 0 < resourceDiffThreshold <= 1, mid
percents in [0, 100], batch threshold percents >= 0), a node config without a selector or with
one that does not parse, and node configs whose selectors overlap (``NodeSelectorOverlap``).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from types import MappingProxyType

from streams.koordinator.annotations import ANNOTATION_COLOCATION_STRATEGY
from streams.koordinator.labels import (
    LABEL_CPU_RECLAIM_RATIO, LABEL_MEMORY_RECLAIM_RATIO, LABEL_MID_STATIC_CPU_RESERVED_RATIO,
    LABEL_MID_STATIC_MEMORY_RESERVED_RATIO)
from streams.sloconfig.document import (
    COLOCATION_CONFIG_KEY, ConfigError, Section, decode_bool, decode_durations, decode_float, decode_int,
    decode_string, overlay, parse_json, parse_section, strategy_decoder)

CALCULATE_BY_USAGE = "usage"
CALCULATE_BY_REQUEST = "request"
CALCULATE_BY_MAX_USAGE_REQUEST = "maxUsageRequest"
MID_RECLAIM_MODE_STATIC = "static"


@dataclasses.dataclass(frozen=True)
class ColocationStrategy:
    """Koordinator's ``ColocationStrategy``; every default is ``DefaultColocationStrategy()``."""

    enable: bool = False
    """Co-location on the node. Off: batch and mid resources are removed from the node."""
    metric_aggregate_duration_seconds: int = 300
    """NodeMetric averaging window (read by the node agent)."""
    metric_report_interval_seconds: int = 60
    """NodeMetric report interval (read by the node agent)."""
    metric_aggregate_durations: tuple[str, ...] = ("5m0s", "10m0s", "30m0s")
    """``metricAggregatePolicy.durations``: windows of the aggregated node usages."""
    metric_memory_collect_policy: str = "usageWithoutPageCache"
    """How the node agent counts memory usage."""
    cpu_reclaim_threshold_percent: int = 60
    """Safety margin: ``capacity * (100 - p) / 100`` of cpu is never lent to batch. Above 100 the margin is
    negative (Koordinator allows it)."""
    cpu_calculate_policy: str = CALCULATE_BY_USAGE
    """``usage`` or ``maxUsageRequest``; any other value (``request`` included) behaves as ``usage``."""
    memory_reclaim_threshold_percent: int = 65
    """Memory safety margin percent, as for cpu."""
    memory_calculate_policy: str = CALCULATE_BY_USAGE
    """``usage``, ``request`` or ``maxUsageRequest``; any other value behaves as ``usage``."""
    degrade_time_minutes: int = 15
    """A NodeMetric older than this resets batch and mid resources."""
    update_time_threshold_seconds: int = 300
    """The node is re-published at least this often even when nothing changed."""
    resource_diff_threshold: float = 0.1
    """Relative change of batch/mid allocatable needed to publish before the update time threshold."""
    mid_reclaim_mode: str | None = None
    """``static`` selects the static mid mode; unset: mid from ProdReclaimable."""
    mid_cpu_threshold_percent: int = 100
    """Cap of mid-cpu as a percent of node capacity."""
    mid_memory_threshold_percent: int = 100
    """Cap of mid-memory as a percent of node capacity."""
    mid_unallocated_percent: int = 0
    """Share of the prod-unallocated resources added to mid."""
    mid_static_cpu_reserved_percent: int = 0
    """Static mode: mid-cpu as a percent of node capacity."""
    mid_static_memory_reserved_percent: int = 0
    """Static mode: mid-memory as a percent of node capacity."""
    batch_cpu_threshold_percent: int | None = None
    """Optional cap of batch-cpu as a percent of node capacity."""
    batch_memory_threshold_percent: int | None = None
    """Optional cap of batch-memory as a percent of node capacity."""

    def validate(self, where: str = COLOCATION_CONFIG_KEY) -> None:
        """Raise ConfigError for values Koordinator refuses (``IsColocationStrategyValid`` and struct tags)."""
        checks = (
            ("metricAggregateDurationSeconds", self.metric_aggregate_duration_seconds, 1, None),
            ("metricReportIntervalSeconds", self.metric_report_interval_seconds, 1, None),
            ("cpuReclaimThresholdPercent", self.cpu_reclaim_threshold_percent, 0, None),
            ("memoryReclaimThresholdPercent", self.memory_reclaim_threshold_percent, 0, None),
            ("degradeTimeMinutes", self.degrade_time_minutes, 1, None),
            ("updateTimeThresholdSeconds", self.update_time_threshold_seconds, 1, None),
            ("midCPUThresholdPercent", self.mid_cpu_threshold_percent, 0, 100),
            ("midMemoryThresholdPercent", self.mid_memory_threshold_percent, 0, 100),
            ("midUnallocatedPercent", self.mid_unallocated_percent, 0, 100),
            ("midStaticCPUReservedPercent", self.mid_static_cpu_reserved_percent, 0, 100),
            ("midStaticMemoryReservedPercent", self.mid_static_memory_reserved_percent, 0, 100),
            ("batchCPUThresholdPercent", self.batch_cpu_threshold_percent, 0, None),
            ("batchMemoryThresholdPercent", self.batch_memory_threshold_percent, 0, None),
        )
        for name, value, low, high in checks:
            if value is None:
                continue
            if value < low:
                raise ConfigError(f"{where}: {name} must be {low} or greater, got {value}")
            if high is not None and value > high:
                raise ConfigError(f"{where}: {name} must be {high} or less, got {value}")
        if not 0 < self.resource_diff_threshold <= 1:
            raise ConfigError(f"{where}: resourceDiffThreshold must be greater than 0 and at most 1, "
                              f"got {self.resource_diff_threshold}")
        if not self.metric_memory_collect_policy:
            raise ConfigError(f"{where}: metricMemoryCollectPolicy must not be empty")

    def merged(self, changes: Mapping[str, object]) -> ColocationStrategy:
        """The fields named in ``changes`` (attribute names) replaced."""
        return dataclasses.replace(self, **changes) if changes else self


_STRATEGY_FIELDS = {
    "enable": ("enable", decode_bool),
    "metricAggregateDurationSeconds": ("metric_aggregate_duration_seconds", decode_int),
    "metricReportIntervalSeconds": ("metric_report_interval_seconds", decode_int),
    "metricAggregatePolicy": ("metric_aggregate_durations", decode_durations),
    "metricMemoryCollectPolicy": ("metric_memory_collect_policy", decode_string),
    "cpuReclaimThresholdPercent": ("cpu_reclaim_threshold_percent", decode_int),
    "cpuCalculatePolicy": ("cpu_calculate_policy", decode_string),
    "memoryReclaimThresholdPercent": ("memory_reclaim_threshold_percent", decode_int),
    "memoryCalculatePolicy": ("memory_calculate_policy", decode_string),
    "degradeTimeMinutes": ("degrade_time_minutes", decode_int),
    "updateTimeThresholdSeconds": ("update_time_threshold_seconds", decode_int),
    "resourceDiffThreshold": ("resource_diff_threshold", decode_float),
    "midReclaimMode": ("mid_reclaim_mode", decode_string),
    "midCPUThresholdPercent": ("mid_cpu_threshold_percent", decode_int),
    "midMemoryThresholdPercent": ("mid_memory_threshold_percent", decode_int),
    "midUnallocatedPercent": ("mid_unallocated_percent", decode_int),
    "midStaticCPUReservedPercent": ("mid_static_cpu_reserved_percent", decode_int),
    "midStaticMemoryReservedPercent": ("mid_static_memory_reserved_percent", decode_int),
    "batchCPUThresholdPercent": ("batch_cpu_threshold_percent", decode_int),
    "batchMemoryThresholdPercent": ("batch_memory_threshold_percent", decode_int),
}
"""The JSON fields of ``ColocationStrategy`` (every one a pointer)."""


@dataclasses.dataclass(frozen=True)
class ColocationConfig(Section[ColocationStrategy]):
    strategy: ColocationStrategy = ColocationStrategy()

    def for_node(self, labels: Mapping[str, str],
                 annotations: Mapping[str, str] = MappingProxyType({})) -> ColocationStrategy:
        """``GetNodeColocationStrategy``: node config, then the node annotation, then the ratio labels."""
        return strategy_for_node_metadata(super().for_node(labels), labels, annotations)

    def enabled(self, node_strategy: ColocationStrategy) -> bool:
        """``isColocationCfgDisabled`` negated: the cluster switch and the node's strategy must both be on."""
        return self.strategy.enable and node_strategy.enable


_FLOAT = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def _reclaim_percent(labels: Mapping[str, str], key: str) -> int | None:
    """``getNodeReclaimPercent``: ``int64(v * 100)`` for a parsable ratio ``v >= 0``."""
    text = labels.get(key)
    if text is None or not _FLOAT.match(text):
        return None
    value = float(text)
    return None if value < 0 else int(value * 100)


def strategy_for_node_metadata(strategy: ColocationStrategy, labels: Mapping[str, str],
                               annotations: Mapping[str, str]) -> ColocationStrategy:
    """``UpdateColocationStrategyForNode``: the annotation's JSON, then the four ratio labels."""
    text = annotations.get(ANNOTATION_COLOCATION_STRATEGY)
    if text is not None:
        try:
            raw = json.loads(text)
            if isinstance(raw, dict):
                strategy = overlay(strategy, raw, _STRATEGY_FIELDS, ANNOTATION_COLOCATION_STRATEGY)
        except ValueError:
            pass
    percents = {}
    for key, attribute in ((LABEL_CPU_RECLAIM_RATIO, "cpu_reclaim_threshold_percent"),
                           (LABEL_MEMORY_RECLAIM_RATIO, "memory_reclaim_threshold_percent"),
                           (LABEL_MID_STATIC_CPU_RESERVED_RATIO, "mid_static_cpu_reserved_percent"),
                           (LABEL_MID_STATIC_MEMORY_RESERVED_RATIO, "mid_static_memory_reserved_percent")):
        percent = _reclaim_percent(labels, key)
        if percent is not None:
            percents[attribute] = percent
    return strategy.merged(percents)


def parse_colocation_config(text: str | None) -> ColocationConfig:
    if not text:
        return ColocationConfig()
    section = parse_section(parse_json(text, COLOCATION_CONFIG_KEY), COLOCATION_CONFIG_KEY, ColocationStrategy(),
                            strategy_decoder(_STRATEGY_FIELDS), cluster=None, nodes="nodeConfigs", strict=True)
    return ColocationConfig(section.strategy, section.node_configs)
