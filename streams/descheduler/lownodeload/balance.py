"""One LowNodeLoad round (``low_node_load.go``, ``utilization_util.go``): which pods to move off hot nodes.

Per node pool, in order (a pool with a nodeSelector skips nodes an earlier pool took as sources):

1. **Thresholds.** The tracked resources are those named in any of the four threshold maps, plus memory.
   A resource missing from ``lowThresholds`` gets low = high = 100 % (0 in deviation mode); missing from
   ``prodLowThresholds``, prodLow = prodHigh = 100 % (0). Quantity = int(pct * 0.01 * raw allocatable).
   Deviation mode: pct = average usage % over the pool's nodes -/+ the configured offset, clamped to
   [0, 100]; a configured low (prodLow) of 0 makes both thresholds the full capacity.
2. **Usage.** Nodes without a fresh NodeMetric are skipped. usage = systemUsage + sum of podsMetric;
   prod usage = the usage of pods whose priority class with default is koord-prod; ``pods`` = the count.
3. **Classify** ("under" = every tracked usage <= threshold; "over" = some usage > threshold):
   schedulable and under low -> prodHigh if prod over prodHigh, else bothLow if prod under prodLow, else
   low; else over high -> source; else prod over prodHigh -> prodHigh; else schedulable and prod under
   prodLow -> prodLow.
4. **Anomaly filter** (``anomaly.Detector``, one per node for node level and one for prod level): a source
   is acted on only once anomalous; low nodes are reset. Stop when nothing is anomalous, no node is low,
   the low nodes are not more than ``numberOfNodes``, or every node is low.
5. **Evict**, node phase then prod phase. available[r] = sum over targets of (high - usage); sources by
   usage score, highest first; on each source the removable pods (evictable, matching the selectors, and
   with nodeFit: having a metric and fitting a target without pushing it over its high threshold — the
   pod's metric is then added to that target) in ``sorter.sort_pods`` order with usage; before each
   eviction the source must still be over its high threshold and every available[r] > 0; an evicted pod's
   metric is taken from available and from the source's usage. Prod phase: prodHigh sources, prodLow and
   bothLow targets, prod usage; its bothLow availability is capped by what the node phase left.

Reason of an eviction: "node is overutilized, node cpu usage(66.67%)>threshold(50.00%)" (prod: "prod ...").

Where Koordinator iterates Go maps (targets, nodes of a class), this iterates node names in sorted order,
so a round is deterministic; Go's unstable sorts become stable ones over name order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from streams.descheduler.anomaly import ANOMALY, Detector
from streams.descheduler.limiter import EvictionLimiter
from streams.descheduler.lownodeload.args import LowNodeLoadArgs, NodePool
from streams.descheduler.snapshot import NodeView, PodView
from streams.descheduler.sorter import node_usage_score, sort_pods
from streams.koordinator.classes import PRIORITY_PROD

PODS = "pods"


@dataclasses.dataclass(frozen=True)
class Eviction:
    pod: str
    node: str
    reason: str
    prod: bool
    dry_run: bool = False


@dataclasses.dataclass
class _Node:
    view: NodeView
    usage: dict[str, int]
    prod_usage: dict[str, int]
    prod_pods: tuple[PodView, ...]
    low: dict[str, int] = dataclasses.field(default_factory=dict)
    high: dict[str, int] = dataclasses.field(default_factory=dict)
    prod_low: dict[str, int] = dataclasses.field(default_factory=dict)
    prod_high: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.view.name


def fill_thresholds(pool: NodePool) -> tuple[list[str], dict, dict, dict, dict]:
    """(tracked resources, low, high, prodLow, prodHigh) in percent, as ``newThresholds`` fills them."""
    low, high, prod_low, prod_high = dict(pool.low), dict(pool.high), dict(pool.prod_low), dict(pool.prod_high)
    names = sorted(set(low) | set(high) | set(prod_low) | set(prod_high) | {"memory"})
    unset = 0.0 if pool.use_deviation_thresholds else 100.0
    for name in names:
        if name not in low:
            low[name] = high[name] = unset
        if name not in prod_low:
            prod_low[name] = prod_high[name] = unset
    return sorted(low), low, high, prod_low, prod_high


def threshold_quantity(capacity: int, percent: float) -> int:
    return int(percent * 0.01 * capacity)


def usage_percentages(usage: Mapping[str, int], allocatable: Mapping[str, int]) -> dict[str, float]:
    return {name: 100 * used / allocatable[name] for name, used in usage.items() if allocatable.get(name)}


def over(usage: Mapping[str, int], thresholds: Mapping[str, int]) -> list[str]:
    """The resources whose usage is above their threshold (``isNodeOverutilized``)."""
    return [name for name in sorted(thresholds) if name in usage and usage[name] > thresholds[name]]


class LowNodeLoad:
    """The plugin with its detectors (persisted by the caller with ``entries``/``restore``)."""

    def __init__(self, args: LowNodeLoadArgs, detector_cache_ms: int = 300_000) -> None:
        self.args = args
        self.detector_cache_ms = detector_cache_ms
        self.detectors: dict[tuple[str, str], tuple[Detector, int]] = {}
        """(level "node" | "prod", node) -> (detector, event time it was last marked)."""

    def balance(self, nodes: list[NodeView], now_ms: int, fits: Callable[[PodView, str], bool],
                evictable: Callable[[PodView], bool], limiter: EvictionLimiter) -> list[Eviction]:
        if self.args.paused:
            return []
        evictions: list[Eviction] = []
        processed: set[str] = set()
        for pool in self.args.pools:
            members = [n for n in nodes if pool.node_selector is None
                       or (n.name not in processed and pool.node_selector.matches(n.labels))]
            if members:
                evictions += self._pool(pool, members, now_ms, fits, evictable, limiter, processed)
        return evictions

    def _pool(self, pool: NodePool, members: list[NodeView], now_ms: int, fits, evictable,
              limiter: EvictionLimiter, processed: set[str]) -> list[Eviction]:
        names, low_pct, high_pct, prod_low_pct, prod_high_pct = fill_thresholds(pool)
        usages = [node for view in members if (node := _usage(view, names)) is not None]
        _thresholds(usages, names, pool.use_deviation_thresholds, low_pct, high_pct, prod_low_pct, prod_high_pct)
        low, sources, prod_low, prod_high, both_low = [], [], [], [], []
        for node in usages:
            schedulable = not node.view.unschedulable
            if schedulable and not over(node.usage, node.low):
                if over(node.prod_usage, node.prod_high):
                    prod_high.append(node)
                elif not over(node.prod_usage, node.prod_low):
                    both_low.append(node)
                else:
                    low.append(node)
            elif over(node.usage, node.high):
                sources.append(node)
            elif over(node.prod_usage, node.prod_high):
                prod_high.append(node)
            elif schedulable and not over(node.prod_usage, node.prod_low):
                prod_low.append(node)
        if not sources and not prod_high:
            return []
        abnormal = self._abnormal("node", sources, pool, now_ms)
        abnormal_prod = self._abnormal("prod", prod_high, pool, now_ms)
        if not abnormal and not abnormal_prod:
            return []
        if not low and not prod_low and not both_low:
            return []
        self._reset("node", low + both_low, now_ms)
        self._reset("prod", prod_low, now_ms)
        all_low = len(low) + len(prod_low) + len(both_low)
        if all_low <= self.args.number_of_nodes or all_low == len(members):
            return []
        weights = pool.weights
        abnormal.sort(key=lambda n: -node_usage_score(n.usage, n.view.allocatable, weights))
        abnormal_prod.sort(key=lambda n: -node_usage_score(n.prod_usage, n.view.allocatable, weights))
        evictions: list[Eviction] = []

        def reason(node: _Node, prod: bool) -> str:
            usage, limits, percents, level = ((node.prod_usage, node.prod_high, prod_high_pct, "prod") if prod
                                              else (node.usage, node.high, high_pct, "node"))
            used = usage_percentages(usage, node.view.allocatable)
            hot = set(over(usage, limits))
            return "node is overutilized, " + ", ".join(
                f"{level} {name} usage({used.get(name, 0.0):.2f}%)>threshold({percents[name]:.2f}%)"
                for name in sorted(high_pct if not prod else prod_high_pct) if name in hot)

        node_available = _available(low, names, prod=False)
        both_available = _available(both_low, names, prod=False)
        prod_both_available = _available(both_low, names, prod=True)
        available = {name: node_available[name] + both_available[name] for name in names}
        self._balance(abnormal, low + both_low, available, names, False, fits, evictable, limiter, reason,
                      evictions, now_ms, weights)
        prod_available = _available(prod_low, names, prod=True)
        for name in names:
            both = min(both_available[name], available[name])
            prod_available[name] += both if prod_both_available[name] > both else prod_both_available[name]
        self._balance(abnormal_prod, prod_low + both_low, prod_available, names, True, fits, evictable, limiter,
                      reason, evictions, now_ms, weights)
        self._mark_normal("node", abnormal, now_ms)
        self._mark_normal("prod", abnormal_prod, now_ms)
        processed.update(node.name for node in sources)
        return evictions

    def _balance(self, sources: list[_Node], targets: list[_Node], available: dict[str, int], names: list[str],
                 prod: bool, fits, evictable, limiter: EvictionLimiter, reason, evictions: list[Eviction],
                 now_ms: int, weights: Mapping[str, int]) -> None:
        if not targets:
            return
        for source in sources:
            pods = source.prod_pods if prod else source.view.pods
            metrics = source.view.pod_usage
            removable = [pod for pod in pods if self._selected(pod) and evictable(pod) and (
                not self.args.node_fit or (pod.key in metrics and _fits_any(pod, metrics[pod.key], targets, prod,
                                                                               fits)))]
            if not removable:
                continue
            usage, limits = (source.prod_usage, source.prod_high) if prod else (source.usage, source.high)
            excess = {name: usage[name] - limits[name] for name in over(usage, limits)}
            ordered = sort_pods(removable, metrics, excess, {name: weights.get(name, 0) for name in excess})
            for pod in ordered:
                if not over(usage, limits):
                    self._reset("prod" if prod else "node", [source], now_ms)
                    break
                if any(available[name] <= 0 for name in names):
                    break
                if not limiter.allow(pod.namespace, source.name):
                    continue
                limiter.done(pod.namespace, source.name)
                evictions.append(Eviction(pod.key, source.name, reason(source, prod), prod, self.args.dry_run))
                metric = metrics.get(pod.key)
                if metric is None:
                    continue
                for name in names:
                    quantity = 1 if name == PODS else metric.get(name, 0)
                    available[name] -= quantity
                    if name in source.usage:
                        source.usage[name] -= quantity
                    if prod and name in source.prod_usage:
                        source.prod_usage[name] -= quantity

    def _selected(self, pod: PodView) -> bool:
        """evictableNamespaces and podSelectors."""
        args = self.args
        if args.include_namespaces and pod.namespace not in args.include_namespaces:
            return False
        if pod.namespace in args.exclude_namespaces:
            return False
        return not args.pod_selectors or any(selector.matches(pod.labels) for selector in args.pod_selectors)

    def _detector(self, level: str, node: str, pool: NodePool, now_ms: int) -> Detector:
        held = self.detectors.get((level, node))
        if held is None or now_ms - held[1] > self.detector_cache_ms:
            condition = pool.anomaly
            return Detector(condition.consecutive_abnormalities, condition.consecutive_normalities,
                            condition.timeout_ms)
        return held[0]

    def _abnormal(self, level: str, sources: list[_Node], pool: NodePool, now_ms: int) -> list[_Node]:
        """``filterRealAbnormalNodes``: with consecutiveAbnormalities 1 every source is acted on at once."""
        if pool.anomaly.consecutive_abnormalities == 1:
            return list(sources)
        found = []
        for node in sources:
            detector = self._detector(level, node.name, pool, now_ms)
            if detector.mark(False, now_ms) == ANOMALY:
                found.append(node)
            self.detectors[(level, node.name)] = (detector, now_ms)
        return found

    def _reset(self, level: str, nodes: list[_Node], now_ms: int) -> None:
        for node in nodes:
            held = self.detectors.get((level, node.name))
            if held is not None:
                held[0].reset(now_ms)

    def _mark_normal(self, level: str, nodes: list[_Node], now_ms: int) -> None:
        for node in nodes:
            held = self.detectors.get((level, node.name))
            if held is not None:
                held[0].mark(True, now_ms)

    def entries(self) -> dict[str, dict]:
        return {f"{level}/{node}": {**dataclasses.asdict(detector), "marked_ms": marked}
                for (level, node), (detector, marked) in sorted(self.detectors.items())}

    def restore(self, entries: Mapping[str, Mapping]) -> None:
        for key, value in entries.items():
            level, _, node = key.partition("/")
            fields = {k: v for k, v in value.items() if k != "marked_ms"}
            self.detectors[(level, node)] = (Detector(**fields), value["marked_ms"])


def _usage(view: NodeView, names: list[str]) -> _Node | None:
    if view.system_usage is None:
        return None
    prod_pods = tuple(pod for pod in view.pods if pod.priority_class == PRIORITY_PROD)
    prod_keys = {pod.key for pod in prod_pods}
    usage, prod_usage = {}, {}
    for name in names:
        pods_total = sum(metric.get(name, 0) for metric in view.pod_usage.values())
        usage[name] = view.system_usage.get(name, 0) + pods_total
        prod_usage[name] = sum(metric.get(name, 0) for key, metric in view.pod_usage.items() if key in prod_keys)
    usage[PODS] = len(view.pods)
    prod_usage[PODS] = len(prod_pods)
    return _Node(view, usage, prod_usage, prod_pods)


def _thresholds(nodes: list[_Node], names: list[str], deviation: bool, low: dict, high: dict, prod_low: dict,
                prod_high: dict) -> None:
    average, prod_average = ({}, {}) if not deviation else _averages(nodes)
    for node in nodes:
        allocatable = node.view.allocatable
        for name in names:
            capacity = allocatable.get(name, 0)
            if deviation:
                if low[name] == 0:
                    node.low[name] = node.high[name] = capacity
                else:
                    node.low[name] = threshold_quantity(capacity, _clamp(average.get(name, 0.0) - low[name]))
                    node.high[name] = threshold_quantity(capacity, _clamp(average.get(name, 0.0) + high.get(name, 0)))
                if prod_low[name] == 0:
                    node.prod_low[name] = node.prod_high[name] = capacity
                else:
                    node.prod_low[name] = threshold_quantity(capacity,
                                                             _clamp(prod_average.get(name, 0.0) - prod_low[name]))
                    node.prod_high[name] = threshold_quantity(
                        capacity, _clamp(prod_average.get(name, 0.0) + prod_high.get(name, 0)))
            else:
                node.low[name] = threshold_quantity(capacity, low[name])
                node.high[name] = threshold_quantity(capacity, high.get(name, 0))
                node.prod_low[name] = threshold_quantity(capacity, prod_low[name])
                node.prod_high[name] = threshold_quantity(capacity, prod_high.get(name, 0))


def _clamp(percent: float) -> float:
    return min(100.0, max(0.0, percent))


def _averages(nodes: list[_Node]) -> tuple[dict[str, float], dict[str, float]]:
    totals: dict[str, float] = {}
    prod_totals: dict[str, float] = {}
    for node in nodes:
        for usage, out in ((node.usage, totals), (node.prod_usage, prod_totals)):
            for name, used in usage.items():
                capacity = node.view.allocatable.get(name, 0)
                if capacity:
                    out[name] = out.get(name, 0.0) + used / capacity * 100.0
    count = len(nodes)
    return ({k: v / count for k, v in totals.items()}, {k: v / count for k, v in prod_totals.items()})


def _available(nodes: list[_Node], names: list[str], prod: bool) -> dict[str, int]:
    out = {name: 0 for name in names}
    for node in nodes:
        limits, usage = (node.prod_high, node.prod_usage) if prod else (node.high, node.usage)
        for name in names:
            out[name] += limits[name] - usage[name]
    return out


def _fits_any(pod: PodView, metric: Mapping[str, int], targets: list[_Node], prod: bool, fits) -> bool:
    """``podFitsAnyNodeWithThreshold``: the first target the pod fits and stays under its high threshold
    with the pod's metric added takes it (the metric stays added)."""
    for target in targets:
        if not fits(pod, target.name):
            continue
        usage, limits = (target.prod_usage, target.prod_high) if prod else (target.usage, target.high)
        if any(usage[name] + metric.get(name, 0) > limits[name] for name in limits if name in usage):
            continue
        for name in limits:
            if name in usage:
                usage[name] += metric.get(name, 0)
        return True
    return False
