"""The ``slo-controller-config`` ConfigMap: Koordinator's co-location configuration.

Data keys (``apis/configuration/slo_controller_config.go``):

- ``colocation-config``: a ``ColocationStrategy`` for the cluster plus
  ``nodeConfigs`` (``name``, ``nodeSelector`` and strategy fields inline);
- ``cpu-normalization-config``: ``enable``, ``defaultRatio``, ``ratioModel``
  per CPU model, plus ``nodeConfigs``;
- ``resource-threshold-config``, ``resource-qos-config``, ``system-config``
  (and ``cpu-burst-config``, ``host-application-config``,
  ``resource-amplification-config``): parsed JSON; only their syntax is
  checked here, ``streams.nodeqos.config`` decodes and validates the node-QoS
  ones (``NodePartition`` attaches them with ``with_qos``).

Merging follows Koordinator (``util.MergeCfg`` is a JSON overlay: a field
given in the newer document replaces the older one; a null or absent field
does not): the cluster strategy is overlaid on ``DefaultColocationStrategy()``,
every node config on the merged cluster strategy. For a node
(``GetNodeColocationStrategy``) the first node config whose selector matches
the node's labels wins, then the JSON in the node annotation
``node.koordinator.sh/colocation-strategy`` is overlaid (ignored when it does
not parse), then the labels ``node.koordinator.sh/cpu-reclaim-ratio``,
``memory-reclaim-ratio``, ``mid-static-cpu-reserved-ratio`` and
``mid-static-memory-reserved-ratio`` (a float ratio ``v >= 0`` becomes the
percent ``int(v * 100)``; negative or unparsable values are ignored) replace
single fields.

Validation: Koordinator's controller logs an invalid config and keeps the
previous one, its ConfigMap webhook rejects it. ``parse_slo_config`` does
what the webhook does and raises ``ConfigError`` with the reason, so the
caller keeps the previous ``SloConfig``: JSON that does not decode into the
Go types, strategy fields out of their ranges (``IsColocationStrategyValid``
plus the struct tags: reclaim percents >= 0, degradeTimeMinutes and
updateTimeThresholdSeconds >= 1, 0 < resourceDiffThreshold <= 1, mid
percents in [0, 100], batch threshold percents >= 0), a colocation node
config without a selector or with one that does not parse, and colocation
node configs whose selectors overlap (the webhook's ``NodeSelectorOverlap``).
The webhook checks no cpu-normalization-config beyond its JSON, so neither do
we: a node config there without a valid selector matches no node, and the
ratio range [1, 5] is checked per node when the ratio is calculated (the
v1.4 article's model, whose Hyper-Threading-only ratio is 0.82, loads).
Unknown fields are ignored, as Go's JSON decoder ignores them.
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
from streams.noderesource.selectors import LabelSelector, parse_selector

CONFIG_NAMESPACE = "koordinator-system"
CONFIG_NAME = "slo-controller-config"

COLOCATION_CONFIG_KEY = "colocation-config"
CPU_NORMALIZATION_CONFIG_KEY = "cpu-normalization-config"
RESOURCE_THRESHOLD_CONFIG_KEY = "resource-threshold-config"
RESOURCE_QOS_CONFIG_KEY = "resource-qos-config"
SYSTEM_CONFIG_KEY = "system-config"
OTHER_JSON_KEYS = ("cpu-burst-config", "host-application-config", "resource-amplification-config")
"""Further keys Koordinator reads; kept as parsed JSON."""

CALCULATE_BY_USAGE = "usage"
CALCULATE_BY_REQUEST = "request"
CALCULATE_BY_MAX_USAGE_REQUEST = "maxUsageRequest"
MID_RECLAIM_MODE_STATIC = "static"


class ConfigError(ValueError):
    """An slo-controller-config that Koordinator's webhook would reject; the reason is the message."""


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

    def merged(self, overlay: Mapping[str, object]) -> ColocationStrategy:
        """``util.MergeCfg``: the fields in ``overlay`` (attribute names) replace ours."""
        return dataclasses.replace(self, **overlay) if overlay else self


_STRATEGY_JSON = {
    "enable": ("enable", bool),
    "metricAggregateDurationSeconds": ("metric_aggregate_duration_seconds", int),
    "metricReportIntervalSeconds": ("metric_report_interval_seconds", int),
    "metricAggregatePolicy": ("metric_aggregate_durations", "durations"),
    "metricMemoryCollectPolicy": ("metric_memory_collect_policy", str),
    "cpuReclaimThresholdPercent": ("cpu_reclaim_threshold_percent", int),
    "cpuCalculatePolicy": ("cpu_calculate_policy", str),
    "memoryReclaimThresholdPercent": ("memory_reclaim_threshold_percent", int),
    "memoryCalculatePolicy": ("memory_calculate_policy", str),
    "degradeTimeMinutes": ("degrade_time_minutes", int),
    "updateTimeThresholdSeconds": ("update_time_threshold_seconds", int),
    "resourceDiffThreshold": ("resource_diff_threshold", float),
    "midReclaimMode": ("mid_reclaim_mode", str),
    "midCPUThresholdPercent": ("mid_cpu_threshold_percent", int),
    "midMemoryThresholdPercent": ("mid_memory_threshold_percent", int),
    "midUnallocatedPercent": ("mid_unallocated_percent", int),
    "midStaticCPUReservedPercent": ("mid_static_cpu_reserved_percent", int),
    "midStaticMemoryReservedPercent": ("mid_static_memory_reserved_percent", int),
    "batchCPUThresholdPercent": ("batch_cpu_threshold_percent", int),
    "batchMemoryThresholdPercent": ("batch_memory_threshold_percent", int),
}
"""JSON name -> (attribute, Go type) of the ``ColocationStrategy`` fields."""

_INT64 = (-(2**63), 2**63 - 1)
_DURATION = re.compile(r"^([0-9]*(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$|^0$")


def _decode_value(value: object, kind: object, where: str) -> object:
    """One JSON value decoded into a Go field type; ValueError when ``encoding/json`` would fail."""
    if kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{where}: expected a boolean, got {json.dumps(value)}")
        return value
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int) or not _INT64[0] <= value <= _INT64[1]:
            raise ValueError(f"{where}: expected an integer, got {json.dumps(value)}")
        return value
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{where}: expected a number, got {json.dumps(value)}")
        return float(value)
    if kind is str:
        if not isinstance(value, str):
            raise ValueError(f"{where}: expected a string, got {json.dumps(value)}")
        return value
    if kind == "durations":
        if not isinstance(value, dict):
            raise ValueError(f"{where}: expected an object")
        durations = value.get("durations")
        if durations is None:
            return ()
        if not isinstance(durations, list) or not all(isinstance(d, str) and _DURATION.match(d) for d in durations):
            raise ValueError(f"{where}.durations: expected a list of durations such as \"5m0s\"")
        return tuple(durations)
    raise AssertionError(kind)


def decode_strategy_overlay(raw: Mapping[str, object], where: str) -> dict[str, object]:
    """The strategy fields present (and not null) in a decoded JSON object, as attribute -> value."""
    overlay = {}
    for name, (attribute, kind) in _STRATEGY_JSON.items():
        value = raw.get(name)
        if value is not None:
            overlay[attribute] = _decode_value(value, kind, f"{where}.{name}")
    return overlay


@dataclasses.dataclass(frozen=True)
class NodeColocationConfig:
    name: str
    selector: LabelSelector
    strategy: ColocationStrategy
    """Already merged over the cluster strategy."""


@dataclasses.dataclass(frozen=True)
class ColocationConfig:
    strategy: ColocationStrategy = ColocationStrategy()
    node_configs: tuple[NodeColocationConfig, ...] = ()

    def for_node(self, labels: Mapping[str, str], annotations: Mapping[str, str]) -> ColocationStrategy:
        """``GetNodeColocationStrategy``: node config, then the node annotation, then the ratio labels."""
        strategy = self.strategy
        for node_config in self.node_configs:
            if node_config.selector.matches(labels):
                strategy = node_config.strategy
                break
        return strategy_for_node_metadata(strategy, labels, annotations)

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
                strategy = strategy.merged(decode_strategy_overlay(raw, ANNOTATION_COLOCATION_STRATEGY))
        except ValueError:
            pass
    overlay = {}
    for key, attribute in ((LABEL_CPU_RECLAIM_RATIO, "cpu_reclaim_threshold_percent"),
                           (LABEL_MEMORY_RECLAIM_RATIO, "memory_reclaim_threshold_percent"),
                           (LABEL_MID_STATIC_CPU_RESERVED_RATIO, "mid_static_cpu_reserved_percent"),
                           (LABEL_MID_STATIC_MEMORY_RESERVED_RATIO, "mid_static_memory_reserved_percent")):
        percent = _reclaim_percent(labels, key)
        if percent is not None:
            overlay[attribute] = percent
    return strategy.merged(overlay)


@dataclasses.dataclass(frozen=True)
class ModelRatio:
    """``ModelRatioCfg``: the ratio of one CPU model per Hyper-Threading / Turbo state."""

    base_ratio: float | None = None
    hyper_thread_enabled_ratio: float | None = None
    turbo_enabled_ratio: float | None = None
    hyper_thread_turbo_enabled_ratio: float | None = None


_MODEL_RATIO_JSON = {
    "baseRatio": "base_ratio",
    "hyperThreadEnabledRatio": "hyper_thread_enabled_ratio",
    "turboEnabledRatio": "turbo_enabled_ratio",
    "hyperThreadTurboEnabledRatio": "hyper_thread_turbo_enabled_ratio",
}


@dataclasses.dataclass(frozen=True)
class CPUNormalizationStrategy:
    """``CPUNormalizationStrategy``; defaults are ``DefaultCPUNormalizationCfg()`` (disabled, no model)."""

    enable: bool | None = False
    """Normalize cpu on the node; the node label ``node.koordinator.sh/cpu-normalization-enabled`` wins."""
    default_ratio: float | None = None
    """Ratio for CPU models (or HT/Turbo states) the model does not list; None: such nodes get no ratio."""
    ratio_model: Mapping[str, ModelRatio] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    """CPU model name (``cpuModel`` of the node's CPU basic info) -> ratios."""

    def merged(self, overlay: Mapping[str, object]) -> CPUNormalizationStrategy:
        """``util.MergeCfg``: set fields replace ours; ``ratioModel`` entries are merged per CPU model."""
        if not overlay:
            return self
        changes = dict(overlay)
        if "ratio_model" in changes:
            changes["ratio_model"] = MappingProxyType({**self.ratio_model, **changes["ratio_model"]})
        return dataclasses.replace(self, **changes)


def _decode_cpu_normalization_overlay(raw: Mapping[str, object], where: str) -> dict[str, object]:
    overlay: dict[str, object] = {}
    if raw.get("enable") is not None:
        overlay["enable"] = _decode_value(raw["enable"], bool, f"{where}.enable")
    if raw.get("defaultRatio") is not None:
        overlay["default_ratio"] = _decode_value(raw["defaultRatio"], float, f"{where}.defaultRatio")
    model = raw.get("ratioModel")
    if model is not None:
        if not isinstance(model, dict):
            raise ValueError(f"{where}.ratioModel: expected an object")
        ratios = {}
        for cpu_model, entry in model.items():
            if not isinstance(entry, dict):
                raise ValueError(f"{where}.ratioModel[{cpu_model!r}]: expected an object")
            fields = {attribute: _decode_value(entry[name], float, f"{where}.ratioModel[{cpu_model!r}].{name}")
                      for name, attribute in _MODEL_RATIO_JSON.items() if entry.get(name) is not None}
            ratios[cpu_model] = ModelRatio(**fields)
        overlay["ratio_model"] = ratios
    return overlay


@dataclasses.dataclass(frozen=True)
class NodeCPUNormalizationConfig:
    name: str
    selector: LabelSelector
    strategy: CPUNormalizationStrategy
    """Already merged over the cluster strategy."""


@dataclasses.dataclass(frozen=True)
class CPUNormalizationConfig:
    strategy: CPUNormalizationStrategy = CPUNormalizationStrategy()
    node_configs: tuple[NodeCPUNormalizationConfig, ...] = ()

    def for_node(self, labels: Mapping[str, str]) -> CPUNormalizationStrategy:
        """``configHandler.GetStrategyCopy``: the first matching node config, else the cluster strategy."""
        for node_config in self.node_configs:
            if node_config.selector.matches(labels):
                return node_config.strategy
        return self.strategy


@dataclasses.dataclass(frozen=True)
class SloConfig:
    colocation: ColocationConfig = ColocationConfig()
    cpu_normalization: CPUNormalizationConfig = CPUNormalizationConfig()
    resource_threshold: object = None
    """Parsed ``resource-threshold-config`` (None when absent); used by the node QoS plan."""
    resource_qos: object = None
    """Parsed ``resource-qos-config`` (None when absent)."""
    system: object = None
    """Parsed ``system-config`` (None when absent)."""
    extra: Mapping[str, object] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    """Parsed JSON of the other keys in ``OTHER_JSON_KEYS`` that are present."""
    qos: object = None
    """The node-QoS keys parsed (``streams.nodeqos.config.NodeQoSConfig``), attached by ``with_qos``; None: not yet."""


DEFAULT_CONFIG = SloConfig()
"""What Koordinator runs with when the ConfigMap is absent: co-location and CPU normalization disabled."""


def _json(text: str, key: str) -> object:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{key}: not valid JSON: {exc}") from None


def _node_profiles(raw: object, key: str, strict: bool) -> list[tuple[str, LabelSelector, dict]]:
    """``nodeConfigs`` entries as (name, selector, raw entry).

    ``strict`` applies the checks of Koordinator's ConfigMap webhook (it has them for colocation-config
    only): a selector must be present, non-empty and valid, and no two selectors may overlap. Otherwise a
    missing or invalid selector is kept and matches no node, as the controller treats it.
    """
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ConfigError(f"{key}: nodeConfigs must be a list")
    profiles = []
    for index, entry in enumerate(raw):
        where = f"{key}: nodeConfigs[{index}]"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where} must be an object")
        name = entry.get("name") or ""
        if not isinstance(name, str):
            raise ConfigError(f"{where}.name must be a string")
        raw_selector = entry.get("nodeSelector")
        if raw_selector is None:
            if strict:
                raise ConfigError(f"{where} ({name or 'unnamed'}): nodeSelector must not be empty")
            profiles.append((name, LabelSelector(error="no nodeSelector"), entry))
            continue
        try:
            selector = parse_selector(raw_selector, f"{where}.nodeSelector")
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        if strict and selector.empty:
            raise ConfigError(f"{where} ({name or 'unnamed'}): nodeSelector must not be empty")
        if strict and selector.error is not None:
            raise ConfigError(selector.error)
        profiles.append((name, selector, entry))
    if strict:
        for node in (node for _, selector, _ in profiles for node in selector.virtual_nodes()):
            matching = [name or f"nodeConfigs[{i}]" for i, (name, selector, _) in enumerate(profiles)
                        if selector.matches(node)]
            if len(matching) > 1:
                raise ConfigError(f"{key}: node selectors overlap: {', '.join(matching)} all match labels "
                                  f"{json.dumps(node, sort_keys=True)}")
    return profiles


def parse_colocation_config(text: str | None) -> ColocationConfig:
    if not text:
        return ColocationConfig()
    raw = _json(text, COLOCATION_CONFIG_KEY)
    if not isinstance(raw, dict):
        raise ConfigError(f"{COLOCATION_CONFIG_KEY}: must be a JSON object")
    try:
        cluster = ColocationStrategy().merged(decode_strategy_overlay(raw, COLOCATION_CONFIG_KEY))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    cluster.validate(COLOCATION_CONFIG_KEY)
    node_configs = []
    for index, (name, selector, entry) in enumerate(_node_profiles(raw.get("nodeConfigs"),
                                                                   COLOCATION_CONFIG_KEY, strict=True)):
        where = f"{COLOCATION_CONFIG_KEY}: nodeConfigs[{index}]"
        try:
            strategy = cluster.merged(decode_strategy_overlay(entry, where))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        strategy.validate(where)
        node_configs.append(NodeColocationConfig(name, selector, strategy))
    return ColocationConfig(cluster, tuple(node_configs))


def parse_cpu_normalization_config(text: str | None) -> CPUNormalizationConfig:
    if text is None:
        return CPUNormalizationConfig()
    raw = _json(text, CPU_NORMALIZATION_CONFIG_KEY)
    if not isinstance(raw, dict):
        raise ConfigError(f"{CPU_NORMALIZATION_CONFIG_KEY}: must be a JSON object")
    try:
        cluster = CPUNormalizationStrategy().merged(
            _decode_cpu_normalization_overlay(raw, CPU_NORMALIZATION_CONFIG_KEY))
        node_configs = []
        for index, (name, selector, entry) in enumerate(_node_profiles(raw.get("nodeConfigs"),
                                                                       CPU_NORMALIZATION_CONFIG_KEY, strict=False)):
            overlay = _decode_cpu_normalization_overlay(entry, f"{CPU_NORMALIZATION_CONFIG_KEY}: nodeConfigs[{index}]")
            node_configs.append(NodeCPUNormalizationConfig(name, selector, cluster.merged(overlay)))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return CPUNormalizationConfig(cluster, tuple(node_configs))


def parse_slo_config(configmap_record: dict | None, previous: SloConfig) -> SloConfig:
    """The SloConfig a ConfigMap record sets; ``previous`` when the record is another ConfigMap.

    A deleted slo-controller-config (``None``) gives ``DEFAULT_CONFIG``, as Koordinator falls back to its
    defaults. Raises ConfigError (the caller keeps ``previous``) for a config the webhook would reject.
    """
    if configmap_record is None:
        return DEFAULT_CONFIG
    metadata = configmap_record.get("metadata") or {}
    if metadata.get("name") != CONFIG_NAME or (metadata.get("namespace") or "") != CONFIG_NAMESPACE:
        return previous
    data = configmap_record.get("data") or {}
    extra = {key: _json(data[key], key) for key in OTHER_JSON_KEYS if key in data}
    return SloConfig(
        colocation=parse_colocation_config(data.get(COLOCATION_CONFIG_KEY)),
        cpu_normalization=parse_cpu_normalization_config(data.get(CPU_NORMALIZATION_CONFIG_KEY)),
        resource_threshold=_json(data[RESOURCE_THRESHOLD_CONFIG_KEY], RESOURCE_THRESHOLD_CONFIG_KEY)
        if RESOURCE_THRESHOLD_CONFIG_KEY in data else None,
        resource_qos=_json(data[RESOURCE_QOS_CONFIG_KEY], RESOURCE_QOS_CONFIG_KEY)
        if RESOURCE_QOS_CONFIG_KEY in data else None,
        system=_json(data[SYSTEM_CONFIG_KEY], SYSTEM_CONFIG_KEY) if SYSTEM_CONFIG_KEY in data else None,
        extra=MappingProxyType(extra),
    )
