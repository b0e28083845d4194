"""LowNodeLoad's args (``LowNodeLoadArgs``, descheduler/v1alpha2), with Koordinator's defaults.

Defaults (``SetDefaults_LowNodeLoadArgs``): nodeFit true, nodeMetricExpirationSeconds 180,
anomalyCondition {timeout 1m, consecutiveAbnormalities 5, consecutiveNormalities 3} (when the condition
is given, only its first zero count is defaulted: Koordinator's else-if chain), detectorCacheTimeout 5m,
resourceWeights cpu 1 and memory 1 plus 1 for every resource named in low/high thresholds (a weight
<= 0 becomes 1). The top-level thresholds, weights, selector and condition become a first node pool
named ``__default_node_pool__`` (``Convert_v1alpha2_LowNodeLoadArgs_To_config_LowNodeLoadArgs``); the
other pools inherit what they leave unset. Validation (``validation_loadaware.go``): thresholds in
[0, 100], low <= high, prodLow <= prodHigh, prodHigh <= high, evictableNamespaces include and exclude
not both set.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from streams.objects.duration import parse_duration
from streams.objects.args import ArgsError, ArgsReader
from streams.sloconfig.selectors import LabelSelector, parse_selector

NAME = "LowNodeLoad"
DEFAULT_POOL = "__default_node_pool__"
FIELDS = {"paused", "dryRun", "numberOfNodes", "nodeMetricExpirationSeconds", "evictableNamespaces", "nodeSelector",
          "podSelectors", "nodeFit", "useDeviationThresholds", "highThresholds", "lowThresholds",
          "prodHighThresholds", "prodLowThresholds", "resourceWeights", "anomalyCondition", "detectorCacheTimeout",
          "nodePools"}
POOL_FIELDS = {"name", "nodeSelector", "useDeviationThresholds", "highThresholds", "lowThresholds",
               "prodHighThresholds", "prodLowThresholds", "resourceWeights", "anomalyCondition"}


DEFAULT_DETECTOR_TIMEOUT_MS = 60_000
"""How long an anomaly lasts at most; also the detector's own default when a condition gives no timeout."""


@dataclasses.dataclass(frozen=True)
class AnomalyCondition:
    timeout_ms: int = 60_000
    consecutive_abnormalities: int = 5
    consecutive_normalities: int = 3


@dataclasses.dataclass(frozen=True)
class NodePool:
    name: str
    node_selector: LabelSelector | None
    """None selects every node, including those an earlier pool took as a source."""
    use_deviation_thresholds: bool
    low: Mapping[str, float]
    high: Mapping[str, float]
    prod_low: Mapping[str, float]
    prod_high: Mapping[str, float]
    weights: Mapping[str, int]
    anomaly: AnomalyCondition


@dataclasses.dataclass(frozen=True)
class LowNodeLoadArgs:
    paused: bool = False
    dry_run: bool = False
    number_of_nodes: int = 0
    """Act only when more than this many nodes are under-utilised."""
    node_metric_expiration_ms: int = 180_000
    """A node whose NodeMetric is older is skipped."""
    include_namespaces: tuple[str, ...] = ()
    exclude_namespaces: tuple[str, ...] = ()
    pod_selectors: tuple[LabelSelector, ...] = ()
    """A pod must match one of them, when any is given."""
    node_fit: bool = True
    """Evict a pod only if it fits some target node and keeps it under its high threshold."""
    pools: tuple[NodePool, ...] = ()

    @classmethod
    def from_config(cls, raw: Mapping | None) -> "LowNodeLoadArgs":
        reader = ArgsReader(NAME, raw, FIELDS)
        data = reader.raw
        thresholds = {field: _thresholds(reader, field, data.get(field))
                      for field in ("lowThresholds", "highThresholds", "prodLowThresholds", "prodHighThresholds")}
        weights = {"cpu": 1, "memory": 1}
        for field in ("lowThresholds", "highThresholds"):
            weights.update({name: 1 for name in thresholds[field] or {}})
        configured = reader.int_map("resourceWeights")
        if configured is not None:
            weights = {**configured, **{name: w for name, w in weights.items() if configured.get(name, 0) <= 0}}
        anomaly = _anomaly(reader, data.get("anomalyCondition"), AnomalyCondition(), top_level=True)
        namespaces = data.get("evictableNamespaces") or {}
        if not isinstance(namespaces, dict):
            raise reader.fail("evictableNamespaces", "must be an object with include or exclude")
        include, exclude = tuple(namespaces.get("include") or ()), tuple(namespaces.get("exclude") or ())
        if include and exclude:
            raise reader.fail("evictableNamespaces", "only one of Include/Exclude namespaces can be set")
        selectors = []
        for index, item in enumerate(data.get("podSelectors") or []):
            if isinstance(item, dict) and item.get("selector") is not None:
                selectors.append(_selector(reader, f"podSelectors[{index}].selector", item["selector"]))
        default_pool = NodePool(
            DEFAULT_POOL, _selector(reader, "nodeSelector", data.get("nodeSelector")),
            reader.boolean("useDeviationThresholds", False),
            thresholds["lowThresholds"] or {}, thresholds["highThresholds"] or {},
            thresholds["prodLowThresholds"] or {}, thresholds["prodHighThresholds"] or {}, weights, anomaly)
        pools = [default_pool]
        for index, item in enumerate(data.get("nodePools") or []):
            pools.append(_pool(reader, index, item, default_pool))
        for pool in pools:
            _validate(reader, pool)
        return cls(reader.boolean("paused", False), reader.boolean("dryRun", False),
                   reader.integer("numberOfNodes", 0), reader.integer("nodeMetricExpirationSeconds", 180) * 1000,
                   include, exclude, tuple(selectors), reader.boolean("nodeFit", True), tuple(pools))


def _thresholds(reader: ArgsReader, field: str, value) -> dict[str, float] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                              for v in value.values()):
        raise reader.fail(field, f"must map resource names to percentages, got {value!r}")
    return {str(k): float(v) for k, v in value.items()}


def _selector(reader: ArgsReader, field: str, value) -> LabelSelector | None:
    if value is None:
        return None
    try:
        selector = parse_selector(value, field)
    except ValueError as error:
        raise ArgsError(f"{NAME}: {error}") from None
    if selector.error:
        raise ArgsError(f"{NAME}: {selector.error}")
    return selector


def _anomaly(reader: ArgsReader, value, inherited: AnomalyCondition, top_level: bool) -> AnomalyCondition:
    if value is None:
        return inherited
    if not isinstance(value, dict):
        raise reader.fail("anomalyCondition", f"must be an object, got {value!r}")
    timeout = value.get("timeout")
    abnormal = int(value.get("consecutiveAbnormalities") or 0)
    normal = int(value.get("consecutiveNormalities") or 0)
    if top_level:
        if abnormal == 0:
            abnormal = inherited.consecutive_abnormalities
        elif normal == 0:
            normal = inherited.consecutive_normalities
    else:
        abnormal = abnormal or inherited.consecutive_abnormalities
        normal = normal or inherited.consecutive_normalities
    timeout_ms = parse_duration(timeout) if timeout else DEFAULT_DETECTOR_TIMEOUT_MS
    return AnomalyCondition(timeout_ms or DEFAULT_DETECTOR_TIMEOUT_MS, abnormal, normal)


def _pool(reader: ArgsReader, index: int, raw, base: NodePool) -> NodePool:
    where = f"nodePools[{index}]"
    if not isinstance(raw, dict):
        raise reader.fail(where, "must be an object")
    unknown = sorted(set(raw) - POOL_FIELDS)
    if unknown:
        raise ArgsError(f'{NAME}: {where}: strict decoding error: unknown field "{unknown[0]}"')

    def thresholds(field: str, inherited: Mapping[str, float]) -> Mapping[str, float]:
        value = _thresholds(reader, f"{where}.{field}", raw.get(field))
        return inherited if value is None else value

    weights = raw.get("resourceWeights")
    return NodePool(
        str(raw.get("name") or ""), _selector(reader, f"{where}.nodeSelector", raw.get("nodeSelector")),
        bool(raw.get("useDeviationThresholds", False)),
        thresholds("lowThresholds", base.low), thresholds("highThresholds", base.high),
        thresholds("prodLowThresholds", base.prod_low), thresholds("prodHighThresholds", base.prod_high),
        base.weights if weights is None else {str(k): int(v) for k, v in weights.items()},
        _anomaly(reader, raw.get("anomalyCondition"), base.anomaly, top_level=False))


def _validate(reader: ArgsReader, pool: NodePool) -> None:
    where = "" if pool.name == DEFAULT_POOL else f"nodePool {pool.name}: "
    for field, values in (("lowThresholds", pool.low), ("highThresholds", pool.high),
                          ("prodLowThresholds", pool.prod_low), ("prodHighThresholds", pool.prod_high)):
        for name, value in sorted(values.items()):
            if not 0 <= value <= 100:
                raise ArgsError(f"{NAME}: {where}{field}: {name} percentage not in [0, 100] range")
    for low, high, field in ((pool.low, pool.high, "lowThresholds"), (pool.prod_low, pool.prod_high,
                                                                         "prodLowThresholds"),
                             (pool.prod_high, pool.high, "prodHighThresholds")):
        for name, value in sorted(low.items()):
            if name in high and value > high[name]:
                raise ArgsError(f"{NAME}: {where}{field}: {name} threshold not valid. It should be less than "
                                f"or equal to the high threshold")
    if pool.anomaly.consecutive_abnormalities <= 0 or pool.anomaly.consecutive_normalities <= 0:
        raise ArgsError(f"{NAME}: {where}anomalyCondition: consecutive counts must be greater than 0")
