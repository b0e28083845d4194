"""LoadAwareScheduling: keep pods off nodes whose real usage is high, prefer the least used
(Koordinator ``pkg/scheduler/plugins/loadaware/load_aware.go``).

Resources are vectorized over the sorted names {cpu, memory} + every name in
the thresholds, weights, scaling factors and ``supportedResources``.

A pod's estimate is ``estimator.estimate``; a node's existing load (``load`` below) is
``cache.NodeLoad``, both with their formulas.

Filter (Unschedulable): DaemonSet pods and nodes without a NodeMetric pass.
An expired metric (no updateTime, or now - updateTime >= 180 s; time is the
event time) fails with "node(s) nodeMetric expired" unless
``enableScheduleWhenNodeMetricsExpired``. Thresholds come from the args,
overridden per field by the node annotation
``scheduling.koordinator.sh/usage-thresholds``; prod pods use
``prodUsageThresholds`` when set, else the aggregated thresholds when
configured, else ``usageThresholds``. For each resource in name order with
threshold v != 0 and allocatable A != 0 (``node.koordinator.sh/raw-allocatable``
overrides allocatable)::

    usage = round((load + estimate) / A * 100)   (Go's math.Round)
    usage > v -> "node(s) <r> usage exceed threshold"
                 ("node(s) <r> aggregated usage exceed threshold" on aggregated thresholds)

Score: 0 without a metric or with an expired one; else, with
used = load + estimate, s_r = (A - used) * 100 // A (0 when used > A or A == 0)::

    score = (sum(w_r * s_r) + D * min_r(s_r)) // (sum(w_r) + D)

(D = dominantResourceWeight; the min runs over every vectorized resource.)

Vectorized: per node the plugin keeps, for each resource, the head room left
under the threshold (the largest estimate that still passes, found once per
node change with Go's rounding), so a cycle compares the pod's estimate with
one vector per resource.

Why this module is over 400 lines: Filter, Score and the queueing hint read the per-node columns the
bookkeeping (``observe``, ``_publish``) writes; the args, the estimator and the per-node load already
live beside it (``args``, ``estimator``, ``cache``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from streams.koordinator.annotations import (
    ANNOTATION_CUSTOM_USAGE_THRESHOLDS as ANNOTATION_CUSTOM_THRESHOLDS,
    ANNOTATION_LOAD_ESTIMATED_SCALING_FACTORS as ANNOTATION_SCALING_FACTORS,
    ANNOTATION_LOAD_ESTIMATED_SECONDS_AFTER_INITIALIZED as ANNOTATION_AFTER_INITIALIZED,
    ANNOTATION_LOAD_ESTIMATED_SECONDS_AFTER_SCHEDULED as ANNOTATION_AFTER_SCHEDULED, ANNOTATION_RAW_ALLOCATABLE)
from streams.koordinator.classes import PRIORITY_PROD
from streams.objects.duration import parse_duration
from streams.objects.podinfo import PodInfo
from streams.objects.quantity import QuantityError, resource_list
from streams.scheduler.framework import (
    ADD, ASSIGNED_POD_DELETE, DELETE, NODE_USAGE, SUCCESS, UPDATE, ClusterEvent, Code, CycleState, FilterResult, Status,
    register, scored_rows)
from streams.scheduler.plugins.loadaware.args import NAME, LoadAwareSchedulingArgs
from streams.scheduler.plugins.loadaware.cache import AssignedPod, NodeLoad, json_object
from streams.scheduler.plugins.loadaware.estimator import estimate, go_round
from streams.scheduler.scoring import Capacity
from streams.scheduler.state import Cluster, MetricChanged, NodeChanged, PodAssigned, PodUnassigned

REASON_METRIC_EXPIRED = "node(s) nodeMetric expired"
REASON_USAGE = "node(s) {resource} usage exceed threshold"
REASON_AGGREGATED_USAGE = "node(s) {resource} aggregated usage exceed threshold"

NO_METRIC, WITH_USAGE, WITHOUT_USAGE = 0, 1, 2
NO_TIME = np.iinfo(np.int64).min
UNLIMITED = np.iinfo(np.int64).max // 4


def usage_percent(estimated: int, total: int) -> int:
    """``int64(math.Round(float64(estimated) / float64(total) * 100))``."""
    return go_round(float(estimated) / float(total) * 100)


def max_load(threshold: int, total: int) -> int:
    """The largest load whose usage percent does not exceed ``threshold``."""
    value = ((2 * threshold + 1) * total) // 200
    while usage_percent(value + 1, total) <= threshold:
        value += 1
    while value >= 0 and usage_percent(value, total) > threshold:
        value -= 1
    return value


@dataclasses.dataclass
class _Profile:
    usage: list[int]
    prod: list[int]
    aggregated: tuple[list[int], str, int] | None


class LoadAwareScheduling:
    name = NAME
    Args = LoadAwareSchedulingArgs

    def usage_may_fit(self, event: ClusterEvent, pod: PodInfo) -> bool:
        """Queueing hint for a NodeUsage added or updated: Queue when the node, with the usage now stored, passes
        Filter for ``pod``. A usage that leaves the node over a threshold for the pod (it went up, or stays
        over) or already expired cannot make the pod fit there, and no other node changed. A node the domain
        does not hold yet: Queue."""
        row = self.cluster.columns.row.get(event.name)
        if row is None:
            return True
        candidates = np.zeros(len(self.cluster.columns), dtype=bool)
        candidates[row] = True
        return bool(self.filter(CycleState(), pod, candidates).passed[row])

    events_to_register = (
        *register(ClusterEvent(NODE_USAGE, ADD), ClusterEvent(NODE_USAGE, UPDATE), hint=usage_may_fit),
        *register(ClusterEvent(NODE_USAGE, DELETE), ASSIGNED_POD_DELETE))

    def __init__(self, args: LoadAwareSchedulingArgs, cluster: Cluster) -> None:
        args.validate()
        self.args = args
        self.cluster = cluster
        self.resources = args.vectorizer()
        self.size = len(self.resources)
        self.factors = dict(args.estimated_scaling_factors)
        weights = [args.resource_weights.get(r, 0) for r in self.resources]
        self.weights = None if args.dominant_resource_weight == 0 and not any(weights) else weights
        self.owner = f"{NAME}#{id(self)}"
        columns = cluster.columns
        for name, rows, dtype, fill in (
                ("state", None, np.int8, NO_METRIC), ("update", None, np.int64, NO_TIME),
                ("head", self.size, np.int64, UNLIMITED), ("prod_head", self.size, np.int64, UNLIMITED),
                ("has_prod", None, bool, False), ("agg", None, bool, False),
                ("load", self.size, np.int64, 0), ("prod_load", self.size, np.int64, 0),
                ("alloc", self.size, np.int64, 0)):
            columns.attach(self.owner, name, rows, dtype, fill)
        self.nodes: dict[str, NodeLoad] = {}
        self._static: dict[str, tuple] = {}
        self._expired: tuple | None = None
        self._capacities: tuple | None = None
        self._metric_version = 0
        self._node_version = 0
        for name in cluster.columns.names:
            self._publish(name, static=True, metric=True)
        for name in sorted(cluster.metrics):
            self._on_metric(name, cluster.metrics[name])
        counted = set()
        for key in sorted(cluster.assignment):
            node = cluster.assignment[key]
            if self._count(key, cluster.pods[key], node, cluster.assigned_at.get(key, 0)):
                counted.add(node)
        for name in sorted(counted):
            self._publish(name)

    def close(self) -> None:
        self.cluster.columns.detach(self.owner)

    def _array(self, name: str) -> np.ndarray:
        return self.cluster.columns.attached(self.owner, name)

    # -- cluster bookkeeping ---------------------------------------------------

    def observe(self, change: object) -> None:
        if isinstance(change, PodAssigned):
            if self._count(change.key, change.pod, change.node, change.at_ms):
                self._publish(change.node)
        elif isinstance(change, PodUnassigned):
            load = self.nodes.get(change.node)
            if load is not None and change.key in load.pods:
                pod = load.pods.pop(change.key)
                if load.metric:
                    load.apply(pod, -1)
                self._publish(change.node)
        elif isinstance(change, MetricChanged):
            self._on_metric(change.node, change.record)
        elif isinstance(change, NodeChanged):
            self._metric_version += 1
            self._node_version += 1
            if change.new is None:
                self.nodes.pop(change.name, None)
                self._static.pop(change.name, None)
            else:
                self._publish(change.name, static=True, metric=True)

    def _vec(self, resources: Mapping[str, int] | None) -> list[int]:
        resources = resources or {}
        return [int(resources.get(r, 0)) for r in self.resources]

    def _load(self, node: str) -> NodeLoad:
        load = self.nodes.get(node)
        if load is None:
            load = self.nodes[node] = NodeLoad(self.size)
        return load

    def _estimate(self, pod: PodInfo) -> dict[str, int]:
        factors = self.factors
        if self.args.allow_customize_estimation:
            custom = json_object(pod.annotations.get(ANNOTATION_SCALING_FACTORS))
            if custom:
                factors = {**factors, **{k: int(v) for k, v in custom.items() if isinstance(v, (int, float))}}
        return estimate(pod, factors)

    def _deadline(self, pod: PodInfo, timestamp: int) -> int | None:
        """``shouldEstimatePodDeadline``."""
        after_scheduled = after_initialized = -1
        if self.args.allow_customize_estimation:
            after_scheduled = _int(pod.annotations.get(ANNOTATION_AFTER_SCHEDULED), -1)
            after_initialized = _int(pod.annotations.get(ANNOTATION_AFTER_INITIALIZED), -1)
        if self.args.estimated_seconds_after_pod_scheduled is not None and after_scheduled < 0:
            after_scheduled = self.args.estimated_seconds_after_pod_scheduled
        if self.args.estimated_seconds_after_initialized is not None and after_initialized < 0:
            after_initialized = self.args.estimated_seconds_after_initialized
        if after_initialized > 0 and pod.initialized_at is not None:
            return pod.initialized_at + after_initialized * 1000
        if after_scheduled > 0:
            return timestamp + after_scheduled * 1000
        return None

    def _count(self, key: str, pod: PodInfo, node: str, at_ms: int) -> bool:
        """Count the pod's estimate on the node, unless it has finished; whether it did. The caller writes the
        node's columns (``_publish``): a restore writes each node's once, after all its pods."""
        if pod.phase in ("Succeeded", "Failed"):
            return False
        vector = self._vec(self._estimate(pod))
        timestamp = pod.scheduled_at if pod.scheduled_at is not None else at_ms
        assigned = AssignedPod((pod.namespace, pod.name), pod.priority_class == PRIORITY_PROD, timestamp,
                             self._deadline(pod, timestamp), vector if any(vector) else None)
        load = self._load(node)
        old = load.pods.get(key)
        if load.metric and old is not None:
            load.apply(old, -1)
        load.pods[key] = assigned
        if load.metric:
            load.apply(assigned, 1)
        return True

    def _on_metric(self, node: str, record: Mapping | None) -> None:
        self._load(node).set_metric(record, self._vec, self.args.prod_usage_include_sys)
        self._publish(node, metric=True)

    def _profile(self, node) -> _Profile:
        """The node's thresholds: the args, overridden per field by the custom-usage-thresholds annotation."""
        args = self.args
        usage = self._vec(args.usage_thresholds)
        prod = self._vec(args.prod_usage_thresholds)
        agg = None
        if args.aggregated and args.aggregated.usage_thresholds and args.aggregated.usage_aggregation_type:
            agg = (self._vec(args.aggregated.usage_thresholds), args.aggregated.usage_aggregation_type,
                   args.aggregated.usage_aggregated_duration_ms)
        custom = json_object(node.annotations.get(ANNOTATION_CUSTOM_THRESHOLDS)) if node else None
        if custom is None:
            return _Profile(usage, prod, agg)
        try:
            return self._custom_profile(custom, _Profile(usage, prod, agg))
        except (ValueError, TypeError):
            return _Profile(usage, prod, agg)

    def _custom_profile(self, custom: dict, profile: _Profile) -> _Profile:
        usage, prod, agg = profile.usage, profile.prod, profile.aggregated
        custom_agg = custom.get("aggregatedUsage") if isinstance(custom.get("aggregatedUsage"), dict) else None
        complete = custom_agg is not None and custom_agg.get("usageThresholds") and custom_agg.get("usageAggregationType")
        if not complete:
            custom_agg = None
        custom_usage = custom.get("usageThresholds") if isinstance(custom.get("usageThresholds"), dict) else {}
        custom_prod = custom.get("prodUsageThresholds") if isinstance(custom.get("prodUsageThresholds"), dict) else {}
        if not custom_usage and not custom_prod and custom_agg is None:
            return _Profile(usage, prod, agg)
        if custom_usage:
            usage = self._vec(custom_usage)
        if custom_prod:
            prod = self._vec(custom_prod)
        if custom_agg is not None:
            try:
                duration = parse_duration(custom_agg.get("usageAggregatedDuration") or "0")
            except ValueError:
                duration = 0
            agg = (self._vec(custom_agg["usageThresholds"]), str(custom_agg["usageAggregationType"]), duration)
        return _Profile(usage, prod, agg)

    def _allocatable(self, node) -> list[int]:
        """``EstimateNode``: allocatable, with the raw-allocatable annotation's entries when they differ."""
        allocatable = dict(node.allocatable)
        raw = json_object(node.annotations.get(ANNOTATION_RAW_ALLOCATABLE))
        if raw:
            try:
                allocatable.update(resource_list(raw))
            except QuantityError:
                pass
        return self._vec(allocatable)

    def _publish(self, name: str, static: bool = False, metric: bool = False) -> None:
        """Write node ``name``'s vectors into the columns: with ``static`` what follows from the Node
        (allocatable, thresholds, and the largest load each threshold allows), with ``metric`` the
        metric's presence and time, and always the head room under the thresholds and the loads."""
        row = self.cluster.columns.row.get(name)
        if row is None:
            return
        if static or name not in self._static:
            node = self.cluster.nodes.get(name)
            allocatable = self._allocatable(node) if node else [0] * self.size
            profile = self._profile(node)
            thresholds, kind, duration = profile.aggregated or (profile.usage, "", 0)
            self._static[name] = (
                [max_load(t, a) if t and a else None for t, a in zip(thresholds, allocatable)],
                [max_load(t, a) if t and a else None for t, a in zip(profile.prod, allocatable)],
                kind, duration)
            self._array("alloc")[:, row] = allocatable
            self._array("has_prod")[row] = any(profile.prod)
            self._array("agg")[row] = profile.aggregated is not None
            self._node_version += 1
        load = self.nodes.get(name)
        if metric:
            self._metric_version += 1
            self._array("state")[row] = (NO_METRIC if load is None or not load.metric
                                         else WITH_USAGE if load.has_node_metric else WITHOUT_USAGE)
            update = load.update_time if load is not None and load.metric else None
            self._array("update")[row] = update if update is not None else NO_TIME
        if load is None or not load.metric:
            return
        limits, prod_limits, kind, duration = self._static[name]
        base = load.base(kind, duration)
        prod_load = load.prod_load()
        self._array("head")[:, row] = [UNLIMITED if m is None else m - b for m, b in zip(limits, base)]
        self._array("prod_head")[:, row] = [UNLIMITED if m is None else m - b for m, b in zip(prod_limits, prod_load)]
        agg = self.args.aggregated
        score_kind = agg.score_aggregation_type if agg else ""
        score_duration = agg.score_aggregated_duration_ms if agg and score_kind else 0
        self._array("load")[:, row] = base if (score_kind, score_duration) == (kind, duration) else load.base(
            score_kind, score_duration)
        self._array("prod_load")[:, row] = prod_load

    # -- the cycle ---------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """The assignment is recorded when the cluster reports it (PodAssigned), for every profile."""
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        pass

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        state[NAME] = np.array(self._vec(self._estimate(pod)), dtype=np.int64)
        return SUCCESS

    def _pod_estimate(self, state: CycleState, pod: PodInfo) -> np.ndarray:
        if NAME not in state:
            self.pre_filter(state, pod)
        return state[NAME]

    def _masks(self, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(has a metric, metric expired, metric has usage) per node, cached per event time and node change."""
        now = self.cluster.now_ms
        cached = self._expired
        if cached is None or cached[:3] != (now, self._metric_version, count):
            update = self._array("update")[:count]
            state = self._array("state")[:count]
            expiry = self.args.node_metric_expiration_seconds * 1000
            expired = (update == NO_TIME) | ((now - np.maximum(update, now - 2 * expiry - 1)) >= expiry)
            self._expired = (now, self._metric_version, count, (state != NO_METRIC, expired, state == WITH_USAGE))
        return self._expired[3]

    def filter(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> FilterResult:
        if pod.is_daemonset:
            return FilterResult(candidates)
        count = len(candidates)
        has_metric, expired, with_usage = self._masks(count)
        eligible = candidates & has_metric
        reasons: list[tuple[str, np.ndarray]] = []
        failed = None
        if self.args.filter_expired_node_metrics:
            if not self.args.enable_schedule_when_node_metrics_expired:
                failed = eligible & expired
                reasons.append((REASON_METRIC_EXPIRED, failed))
            eligible &= ~expired
        eligible &= with_usage
        estimated = self._pod_estimate(state, pod)
        head = self._array("head")
        aggregated = self._array("agg")[:count]
        prod_nodes = None
        if pod.priority_class == PRIORITY_PROD:
            has_prod = self._array("has_prod")[:count]
            if has_prod.any():
                prod_nodes = has_prod
                aggregated = aggregated & ~has_prod
        for i, resource in enumerate(self.resources):
            over = head[i, :count] < estimated[i]
            if prod_nodes is not None:
                over = np.where(prod_nodes, self._array("prod_head")[i, :count] < estimated[i], over)
            over &= eligible
            if failed is not None:
                over &= ~failed
            if not over.any():
                continue
            failed = over if failed is None else failed | over
            plain = over & ~aggregated
            if plain.any():
                reasons.append((REASON_USAGE.format(resource=resource), plain))
            both = over & aggregated
            if both.any():
                reasons.append((REASON_AGGREGATED_USAGE.format(resource=resource), both))
        if failed is None:
            return FilterResult(candidates)
        return FilterResult(candidates & ~failed, tuple(reasons), Code.UNSCHEDULABLE)

    def _prepared(self, count: int) -> list[Capacity]:
        key = (self._node_version, count)
        if self._capacities is None or self._capacities[0] != key:
            allocatable = self._array("alloc")
            self._capacities = (key, [Capacity(allocatable[i, :count]) for i in range(self.size)])
        return self._capacities[1]

    def score(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> np.ndarray:
        count = len(candidates)
        if self.weights is None:
            return np.zeros(count, dtype=np.int64)
        estimated = self._pod_estimate(state, pod)
        _, expired, with_usage = self._masks(count)
        prod = self.args.score_according_prod_usage and pod.priority_class == PRIORITY_PROD
        loads = self._array("prod_load" if prod else "load")
        dominant = self.args.dominant_resource_weight
        weight_sum = sum(self.weights) + dominant
        if weight_sum <= 0:
            return np.zeros(count, dtype=np.int64)
        rows = scored_rows(state, candidates)
        total = np.zeros(rows.stop - rows.start, dtype=np.float64)
        least = None
        for i, capacity in enumerate(self._prepared(count)):
            share = capacity.least_requested(loads[i, rows] + estimated[i], rows)
            if dominant:
                least = share.copy() if least is None else np.minimum(least, share, out=least)
            if self.weights[i]:
                share *= float(self.weights[i])
                total += share
        if least is not None:
            least *= float(dominant)
            total += least
        total /= weight_sum
        score = np.zeros(count, dtype=np.int64)
        score[rows] = np.floor(total, out=total)
        score[~with_usage | expired] = 0
        return score


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


