"""``LoadAwareSchedulingArgs``: every default defined once, in the dataclass (Koordinator's
``SetDefaults_LoadAwareSchedulingArgs``), and validation (``ValidateLoadAwareSchedulingArgs``).

``NAME`` lives here because the args' errors carry it; the plugin module imports it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType

from streams.objects.args import ArgsError, ArgsReader
from streams.objects.duration import parse_duration

NAME = "LoadAwareScheduling"
AGGREGATION_TYPES = ("avg", "p50", "p90", "p95", "p99")
DEFAULT_RESOURCE_WEIGHTS = MappingProxyType({"cpu": 1, "memory": 1})
DEFAULT_USAGE_THRESHOLDS = MappingProxyType({"cpu": 65, "memory": 95})
DEFAULT_SCALING_FACTORS = MappingProxyType({"cpu": 85, "memory": 70})


@dataclasses.dataclass(frozen=True)
class AggregatedArgs:
    usage_thresholds: Mapping[str, int] = dataclasses.field(default_factory=dict)
    usage_aggregation_type: str = ""
    usage_aggregated_duration_ms: int = 0
    score_aggregation_type: str = ""
    score_aggregated_duration_ms: int = 0


@dataclasses.dataclass(frozen=True)
class LoadAwareSchedulingArgs:
    """Defaults are Koordinator's (``SetDefaults_LoadAwareSchedulingArgs``)."""

    filter_expired_node_metrics: bool = True
    """``filterExpiredNodeMetrics``: check metric expiry in Filter (deprecated in Koordinator, still honoured)."""
    enable_schedule_when_node_metrics_expired: bool = False
    """``enableScheduleWhenNodeMetricsExpired``: let expired nodes pass the filter."""
    node_metric_expiration_seconds: int = 180
    """``nodeMetricExpirationSeconds``: a metric at least this old (event time) is expired."""
    resource_weights: Mapping[str, int] = dataclasses.field(default_factory=lambda: dict(DEFAULT_RESOURCE_WEIGHTS))
    """``resourceWeights`` of the score; the default applies only when empty and dominantResourceWeight is 0."""
    dominant_resource_weight: int = 0
    """``dominantResourceWeight``: weight of the least-scored resource (DRF-like); 0 disables."""
    usage_thresholds: Mapping[str, int] = dataclasses.field(default_factory=lambda: dict(DEFAULT_USAGE_THRESHOLDS))
    """``usageThresholds`` in percent; the default applies only when empty."""
    prod_usage_thresholds: Mapping[str, int] = dataclasses.field(default_factory=dict)
    """``prodUsageThresholds`` in percent for prod pods, against prod usage; off by default."""
    prod_usage_include_sys: bool = False
    """``prodUsageIncludeSys``: count the node's system usage into prod usage."""
    score_according_prod_usage: bool = False
    """``scoreAccordingProdUsage``: score prod pods by prod usage."""
    estimated_scaling_factors: Mapping[str, int] = dataclasses.field(
        default_factory=lambda: dict(DEFAULT_SCALING_FACTORS))
    """``estimatedScalingFactors`` in percent; a given map keeps the defaults for cpu/memory it omits."""
    estimated_seconds_after_pod_scheduled: int | None = None
    """``estimatedSecondsAfterPodScheduled``: keep estimating a pod this long after it was scheduled."""
    estimated_seconds_after_initialized: int | None = None
    """``estimatedSecondsAfterInitialized``: keep estimating this long after the pod initialized."""
    allow_customize_estimation: bool = False
    """``allowCustomizeEstimation``: honour the pod's load-estimated-* annotations."""
    aggregated: AggregatedArgs | None = None
    """``aggregated``: usageThresholds/usageAggregationType/usageAggregatedDuration and
    scoreAggregationType/scoreAggregatedDuration (percentiles of the NodeMetric)."""
    supported_resources: tuple[str, ...] = ()
    """``supportedResources``: more resource names to vectorize."""

    @classmethod
    def from_config(cls, raw) -> LoadAwareSchedulingArgs:
        """The args of a profile's ``pluginConfig`` entry; what it leaves out is ``cls()``'s."""
        default = cls()
        reader = ArgsReader(NAME, raw, {
            "filterExpiredNodeMetrics", "enableScheduleWhenNodeMetricsExpired", "nodeMetricExpirationSeconds",
            "resourceWeights", "dominantResourceWeight", "usageThresholds", "prodUsageThresholds",
            "prodUsageIncludeSys", "scoreAccordingProdUsage", "estimator", "estimatedScalingFactors",
            "estimatedSecondsAfterPodScheduled", "estimatedSecondsAfterInitialized", "allowCustomizeEstimation",
            "aggregated", "supportedResources"})
        estimator = reader.string("estimator", "")
        if estimator not in ("", "defaultEstimator"):
            raise ArgsError(f"{NAME}: estimator {estimator!r} is not supported (only defaultEstimator)")
        dominant = reader.integer("dominantResourceWeight", default.dominant_resource_weight)
        weights = reader.int_map("resourceWeights") or {}
        if not weights and dominant == 0:
            weights = dict(default.resource_weights)
        aggregated = None
        raw_agg = reader.mapping("aggregated")
        if raw_agg is not None:
            sub = ArgsReader(NAME, raw_agg, {"usageThresholds", "usageAggregationType", "usageAggregatedDuration",
                                             "scoreAggregationType", "scoreAggregatedDuration"})
            try:
                aggregated = AggregatedArgs(
                    sub.int_map("usageThresholds") or {},
                    sub.string("usageAggregationType", "") or "",
                    parse_duration(sub.raw.get("usageAggregatedDuration") or "0"),
                    sub.string("scoreAggregationType", "") or "",
                    parse_duration(sub.raw.get("scoreAggregatedDuration") or "0"),
                )
            except ValueError as err:
                raise ArgsError(f"{NAME}: aggregated: {err}") from None
        args = cls(
            filter_expired_node_metrics=reader.boolean("filterExpiredNodeMetrics", default.filter_expired_node_metrics),
            enable_schedule_when_node_metrics_expired=reader.boolean(
                "enableScheduleWhenNodeMetricsExpired", default.enable_schedule_when_node_metrics_expired),
            node_metric_expiration_seconds=reader.integer("nodeMetricExpirationSeconds",
                                                          default.node_metric_expiration_seconds),
            resource_weights=weights,
            dominant_resource_weight=dominant,
            usage_thresholds=reader.int_map("usageThresholds") or dict(default.usage_thresholds),
            prod_usage_thresholds=reader.int_map("prodUsageThresholds") or dict(default.prod_usage_thresholds),
            prod_usage_include_sys=reader.boolean("prodUsageIncludeSys", default.prod_usage_include_sys),
            score_according_prod_usage=reader.boolean("scoreAccordingProdUsage", default.score_according_prod_usage),
            estimated_scaling_factors={**default.estimated_scaling_factors,
                                       **(reader.int_map("estimatedScalingFactors") or {})},
            estimated_seconds_after_pod_scheduled=reader.integer("estimatedSecondsAfterPodScheduled",
                                                                 default.estimated_seconds_after_pod_scheduled),
            estimated_seconds_after_initialized=reader.integer("estimatedSecondsAfterInitialized",
                                                               default.estimated_seconds_after_initialized),
            allow_customize_estimation=reader.boolean("allowCustomizeEstimation", default.allow_customize_estimation),
            aggregated=aggregated,
            supported_resources=tuple(map(str, reader.sequence("supportedResources") or ())),
        )
        args.validate()
        return args

    def validate(self) -> None:
        """``ValidateLoadAwareSchedulingArgs``."""
        problems = []
        if self.node_metric_expiration_seconds <= 0:
            problems.append("nodeMetricExpiredSeconds should be a positive value")
        for name, weight in self.resource_weights.items():
            if not 0 < weight <= 100:
                problems.append(f"resourceWeights: resource Weight of {name} should be in (0, 100], got {weight}")
        if not 0 <= self.dominant_resource_weight <= 100:
            problems.append(f"dominantResourceWeight should be in [0, 100], got {self.dominant_resource_weight}")
        aggregated_thresholds = self.aggregated.usage_thresholds if self.aggregated else {}
        for field, values in (("usageThresholds", self.usage_thresholds),
                              ("aggregated.usageThresholds", aggregated_thresholds)):
            for name, value in values.items():
                if not 0 <= value <= 100:
                    problems.append(f"{field}: resource Threshold of {name} should be in [0, 100], got {value}")
        for name, value in self.estimated_scaling_factors.items():
            if not 0 < value <= 100:
                problems.append(f"estimatedScalingFactors: estimated resource ScalingFactor of {name} "
                                f"should be in (0, 100], got {value}")
        for name in sorted(self.resource_weights):
            if name not in self.estimated_scaling_factors:
                problems.append(f"estimatedScalingFactors: Not found: {name!r}")
                break
        if self.aggregated:
            for field, kind in (("usageAggregationType", self.aggregated.usage_aggregation_type),
                                ("scoreAggregationType", self.aggregated.score_aggregation_type)):
                if kind and kind not in AGGREGATION_TYPES:
                    problems.append(f"aggregated.{field}: Unsupported value: {kind!r}: supported values: "
                                    + ", ".join(f'"{t}"' for t in AGGREGATION_TYPES))
            for field, value in (("usageAggregatedDuration", self.aggregated.usage_aggregated_duration_ms),
                                 ("scoreAggregatedDuration", self.aggregated.score_aggregated_duration_ms)):
                if value < 0:
                    problems.append(f"aggregated.{field}: duration must be >= 0")
        if problems:
            raise ArgsError(f"{NAME}: " + "; ".join(problems))

    def vectorizer(self) -> tuple[str, ...]:
        names = {"cpu", "memory", *self.usage_thresholds, *self.prod_usage_thresholds, *self.resource_weights,
                 *self.estimated_scaling_factors, *self.supported_resources}
        if self.aggregated:
            names.update(self.aggregated.usage_thresholds)
        return tuple(sorted(names))
