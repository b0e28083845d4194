"""LoadAwareScheduling, ported from Koordinator's pkg/scheduler/plugins/loadaware tests with their numbers.

Case ids are the Go test function and case name. Go's time.Now() is the event time T0 here; pods the
Go tests create through the informer are bound pods with a PodScheduled condition at T0 - 10 s.
"""

import dataclasses
import json

import numpy as np
import pytest

from streams.koordinator.annotations import (
    ANNOTATION_CUSTOM_USAGE_THRESHOLDS, ANNOTATION_LOAD_ESTIMATED_SCALING_FACTORS, ANNOTATION_RAW_ALLOCATABLE)
from streams.scheduler.framework import NODE_USAGE, UPDATE, ClusterEvent, CycleState
from streams.scheduler.plugins.loadaware import NAME, LoadAwareSchedulingArgs
from streams.scheduler.plugins.loadaware.estimator import estimate
from streams.scheduler.plugins.loadaware.plugin import (
    REASON_AGGREGATED_USAGE, REASON_METRIC_EXPIRED, REASON_USAGE, max_load, usage_percent)
from tests.streams.scheduler.support import (
    T0, decisions, deleted, k8s_metric, k8s_node, k8s_pod, metric, node, plugin_of, pod, pod_info, profile_with, run)

NODE = "test-node-1"
ALLOC = {"cpu": "96", "memory": "512Gi"}
CPU_OVER = REASON_USAGE.format(resource="cpu")
MEM_OVER = REASON_USAGE.format(resource="memory")
CPU_AGG_OVER = REASON_AGGREGATED_USAGE.format(resource="cpu")
EXPIRED = REASON_METRIC_EXPIRED
GI = 1 << 30


def prod_pods(*names, requests=None, priority=9999):
    return [k8s_pod(n, priority=priority, requests=requests, node_name=NODE, scheduled_at=T0 - 10_000, ts=T0)
            for n in names]


def verdict(args, metric=None, pods=(), test_pod=None, annotations=None, allocatable=ALLOC):
    """The filter status on the one node: None for success, else the reason."""
    events = [profile_with(NAME, args, ts=T0), k8s_node(NODE, allocatable, annotations=annotations, ts=T0)]
    events += ([metric] if metric else []) + list(pods)
    domain, _ = run(*events)
    plugin = plugin_of(domain, NAME)
    pod = pod_info(test_pod or k8s_pod("test-pod", ts=T0))
    state = CycleState()
    plugin.pre_filter(state, pod)
    result = plugin.filter(state, pod, np.ones(1, dtype=bool))
    return None if result.passed[0] else [reason for reason, mask in result.reasons if mask[0]][0]


def usage(cpu, memory, pods=None, aggregated=None, update=T0):
    return k8s_metric(NODE, update, {"cpu": cpu, "memory": memory}, pods=pods, aggregated=aggregated, ts=T0)


PROD_METRIC_PODS = [("default", "prod-pod-1", "koord-prod", {"cpu": "30", "memory": "200Gi"}),
                    ("default", "prod-pod-2", "koord-prod", {"cpu": "33", "memory": "300Gi"})]
NEW_REQ_PODS = [("default", "prod-pod-1", "koord-prod", {"cpu": "30", "memory": "100Gi"}),
                ("default", "prod-pod-2", "koord-prod", {"cpu": "23", "memory": "200Gi"})]
NEW_REQ_MID_PODS = [NEW_REQ_PODS[0], ("default", "prod-pod-2", None, {"cpu": "23", "memory": "200Gi"})]
P95 = {"usageThresholds": {"cpu": 60}, "usageAggregationType": "p95", "usageAggregatedDuration": "5m"}
NO_EXPIRY = {"filterExpiredNodeMetrics": False}

@dataclasses.dataclass(frozen=True)
class FilterCase:
    """One filter case on the one node: args, NodeMetric, the bound prod pods, the pod to place (default
    ``test-pod``), the node's custom-thresholds annotation; ``want`` is the reason, None when the node passes."""

    args: dict
    metric: dict | None
    want: str | None = None
    bound: tuple[str, ...] = ()
    test_pod: dict | None = None
    annotation: dict | None = None


def filter_case(name: str, *args, **fields):
    return pytest.param(FilterCase(*args, **fields), id=f"TestFilterUsage/{name}")


def prod_pod_3(priority: int = 9999, requests: dict | None = None) -> dict:
    return k8s_pod("prod-pod-3", priority=priority, requests=requests, ts=T0)


PROD_ONLY = {**NO_EXPIRY, "usageThresholds": {"cpu": 100, "memory": 100}}
NEW_REQ_CPU = {**NO_EXPIRY, "usageThresholds": {"cpu": 65, "memory": 100}, "prodUsageThresholds": {"cpu": 60, "memory": 100}}
NEW_REQ_MEMORY = {**NO_EXPIRY, "usageThresholds": {"cpu": 65, "memory": 85}, "prodUsageThresholds": {"cpu": 60, "memory": 80}}
P95_METRIC = usage("30", "100Gi", aggregated=[("5m", {"p95": {"cpu": "70", "memory": "256Gi"}})])
BOUND = ("prod-pod-1", "prod-pod-2")

FILTER_USAGE = [
    filter_case("filter normal usage", NO_EXPIRY, usage("60", "256Gi")),
    filter_case("filter node missing NodeMetrics", NO_EXPIRY, None),
    filter_case("filter exceed cpu usage", NO_EXPIRY, usage("70", "256Gi"), CPU_OVER),
    filter_case("filter exceed p95 cpu usage", {**NO_EXPIRY, "aggregated": P95}, P95_METRIC, CPU_AGG_OVER),
    filter_case("filter exceed memory usage", NO_EXPIRY, usage("30", "500Gi"), MEM_OVER),
    filter_case("filter exceed memory usage by custom usage thresholds", NO_EXPIRY, usage("30", "316Gi"), MEM_OVER,
                annotation={"usageThresholds": {"memory": 60}}),
    filter_case("filter exceed p95 cpu usage by custom usage", NO_EXPIRY, P95_METRIC, CPU_AGG_OVER,
                annotation={"aggregatedUsage": P95}),
    filter_case("disable filter exceed memory usage", {**NO_EXPIRY, "usageThresholds": {"memory": 0}},
                usage("30", "500Gi")),
    filter_case("prod usage filter is not enabled by default", PROD_ONLY, usage("63", "500Gi", PROD_METRIC_PODS),
                bound=BOUND),
    filter_case("filter prod cpu usage", {**PROD_ONLY, "prodUsageThresholds": {"cpu": 50, "memory": 100}},
                usage("63", "500Gi", PROD_METRIC_PODS), CPU_OVER, bound=BOUND, test_pod=prod_pod_3()),
    filter_case("filter prod memory usage", {**PROD_ONLY, "prodUsageThresholds": {"cpu": 100, "memory": 50}},
                usage("63", "500Gi", PROD_METRIC_PODS), MEM_OVER, bound=BOUND, test_pod=prod_pod_3()),
    filter_case("filter prod memory usage with custom usage configuration",
                {**PROD_ONLY, "prodUsageThresholds": {"cpu": 100, "memory": 100}},
                usage("63", "500Gi", PROD_METRIC_PODS), MEM_OVER, bound=BOUND, test_pod=prod_pod_3(),
                annotation={"prodUsageThresholds": {"cpu": 100, "memory": 50}}),
    filter_case("filter daemonset pod exceed cpu usage", NO_EXPIRY, usage("70", "256Gi"),
                test_pod=k8s_pod("test-pod", priority=9999, owner_kind="DaemonSet", ts=T0)),
    filter_case("filter prod cpu usage with new pod request configuration", NEW_REQ_CPU,
                usage("53", "500Gi", NEW_REQ_PODS), CPU_OVER, bound=BOUND,
                test_pod=prod_pod_3(requests={"cpu": "20", "memory": "100Gi"})),
    filter_case("filter mid cpu usage with new pod request configuration", NEW_REQ_CPU,
                usage("53", "300Gi", NEW_REQ_MID_PODS), CPU_OVER, bound=BOUND,
                test_pod=prod_pod_3(7999, {"kubernetes.io/mid-cpu": "12k", "kubernetes.io/mid-memory": "100Gi"})),
    filter_case("filter memory usage with new pod request configuration", NEW_REQ_MEMORY,
                usage("53", "300Gi", NEW_REQ_PODS), MEM_OVER, bound=BOUND,
                test_pod=prod_pod_3(requests={"cpu": "1", "memory": "165Gi"})),
    filter_case("filter mid memory usage with new pod request configuration", NEW_REQ_MEMORY,
                usage("53", "300Gi", NEW_REQ_MID_PODS), MEM_OVER, bound=BOUND,
                test_pod=prod_pod_3(7999, {"kubernetes.io/mid-cpu": "1k", "kubernetes.io/mid-memory": "200Gi"})),
]


@pytest.mark.parametrize("case", FILTER_USAGE)
def test_filter_usage(case: FilterCase):
    annotations = {ANNOTATION_CUSTOM_USAGE_THRESHOLDS: json.dumps(case.annotation)} if case.annotation else None
    assert verdict(case.args, case.metric, prod_pods(*case.bound), case.test_pod, annotations) == case.want


def test_filter_usage_prod_memory_with_assigned_cache_pod():
    """TestFilterUsage/filter prod memory usage with assignedCache pod: prod-pod-2 is assigned, not reported,
    so its whole estimate (850m, 140Gi) joins the prod usage: (100 + 140 + 140) Gi / 512 Gi = 74 % > 70."""
    args = {**NO_EXPIRY, "usageThresholds": {"cpu": 65, "memory": 85}, "prodUsageThresholds": {"cpu": 60, "memory": 70}}
    metric = usage("53", "300Gi", [NEW_REQ_PODS[0]])
    pods = prod_pods("prod-pod-1") + prod_pods("prod-pod-2", requests={"cpu": "1", "memory": "200Gi"})
    test_pod = k8s_pod("prod-pod-3", priority=9999, requests={"cpu": "1", "memory": "200Gi"}, ts=T0)
    assert verdict(args, metric, pods, test_pod) == MEM_OVER


def test_filter_usage_mid_cpu_with_assigned_cache_pod():
    """TestFilterUsage/filter mid cpu usage with assignedCache pod: 33 + 17 + 17 cores of 96 = 70 % > 65."""
    args = {**NO_EXPIRY, "usageThresholds": {"cpu": 65, "memory": 85}, "prodUsageThresholds": {"cpu": 60, "memory": 70}}
    metric = usage("33", "110Gi", [NEW_REQ_PODS[0]])
    mid = {"kubernetes.io/mid-cpu": "20k", "kubernetes.io/mid-memory": "200Gi"}
    pods = prod_pods("prod-pod-1") + prod_pods("mid-pod-2", requests=mid, priority=7999)
    test_pod = k8s_pod("mid-pod-3", priority=7999, requests=mid, ts=T0)
    assert verdict(args, metric, pods, test_pod) == CPU_OVER


ENABLE = {"enableScheduleWhenNodeMetricsExpired": True}
DISABLE = {"enableScheduleWhenNodeMetricsExpired": False}


@pytest.mark.parametrize("args, update, want", [
    pytest.param({}, T0, None, id="TestFilterExpiredNodeMetric/filter healthy nodeMetrics"),
    pytest.param({}, None, EXPIRED, id="TestFilterExpiredNodeMetric/filter unhealthy nodeMetric with nil updateTime"),
    pytest.param({}, T0 - 180_000, EXPIRED,
                 id="TestFilterExpiredNodeMetric/filter unhealthy nodeMetric with expired updateTime"),
    pytest.param(ENABLE, None, None,
                 id="TestEnableScheduleWhenNodeMetricsExpired/enable scheduling when nodeMetric with nil updateTime"),
    pytest.param(ENABLE, T0 - 180_000, None,
                 id="TestEnableScheduleWhenNodeMetricsExpired/enable scheduling when nodeMetric with expired updateTime"),
    pytest.param(DISABLE, None, EXPIRED,
                 id="TestEnableScheduleWhenNodeMetricsExpired/disable scheduling when nodeMetric with nil updateTime"),
    pytest.param(DISABLE, T0 - 180_000, EXPIRED,
                 id="TestEnableScheduleWhenNodeMetricsExpired/disable scheduling when nodeMetric with expired "
                    "updateTime"),
])
def test_filter_expired_node_metric(args, update, want):
    metric = k8s_metric(NODE, update, None, ts=T0)
    assert verdict(args, metric, allocatable={}) == want


def test_metric_just_under_expiry_is_fresh():
    assert verdict({}, k8s_metric(NODE, T0 - 179_999, None, ts=T0), allocatable={}) is None


# -- Score --------------------------------------------------------------------------------------

GUARANTEED_16 = {"cpu": "16", "memory": "32Gi"}


def score(args, metric=None, test_pod=None, assigned=()):
    events = [profile_with(NAME, args, ts=T0), k8s_node(NODE, ALLOC, ts=T0)]
    events += ([metric] if metric else []) + list(assigned)
    domain, _ = run(*events)
    plugin = plugin_of(domain, NAME)
    pod = pod_info(test_pod or k8s_pod("test-pod-1", requests=GUARANTEED_16, limits=GUARANTEED_16, ts=T0))
    state = CycleState()
    plugin.pre_filter(state, pod)
    return int(plugin.score(state, pod, np.ones(1, dtype=bool))[0])


def assigned_pod(name, at, **kwargs):
    return k8s_pod(name, requests=GUARANTEED_16, limits=GUARANTEED_16, node_name=NODE, ts=at, **kwargs)


P95_SCORE = {"aggregated": {"scoreAggregationType": "p95", "scoreAggregatedDuration": "5m"}}
SCORE_CASES = [
    ("score node with expired nodeMetric", {}, k8s_metric(NODE, T0 - 180_000, None, ts=T0), None, (), 0),
    ("score empty node", {}, k8s_metric(NODE, T0, {}, ts=T0), None, (), 90),
    ("score node missing NodeMetrics", {}, None, None, (), 0),
    ("score load node", {}, usage("32", "10Gi"), None, (), 72),
    ("score load node with p95", P95_SCORE,
     usage("0", "0Gi", aggregated=[("5m", {"p95": {"cpu": "32", "memory": "10Gi"}, "p99": {"cpu": "50", "memory": "70Gi"}})]),
     None, (), 72),
    ("score load node with p95 but have not reported usage", P95_SCORE, usage("0", "0Gi"), None, (), 90),
    ("score load node with p95 but have not reported usage and have assigned pods", P95_SCORE,
     usage("0", "0Gi", pods=[("default", "assigned-pod-1", None, {"cpu": "1", "memory": "1Gi"})]), None,
     ("assigned-pod-1", T0 - 600_000, None), 81),
    ("score load node with just assigned pod", {}, usage("32", "10Gi"), None, ("assigned-pod-1", T0, None), 63),
    ("score load node with just assigned pod where after updateTime", {},
     k8s_metric(NODE, T0 - 10_000, {"cpu": "32", "memory": "10Gi"}, ts=T0), None, ("assigned-pod-1", T0, None), 63),
    ("score load node with just assigned pod where before updateTime", {}, usage("32", "10Gi"), None,
     ("assigned-pod-1", T0 - 10_000, None), 63),
    ("score batch Pod", {}, k8s_metric(NODE, T0, {}, ts=T0),
     ("test-pod-1", 5000, {"kubernetes.io/batch-cpu": "16000", "kubernetes.io/batch-memory": "32Gi"}), (), 90),
    ("score request less than limit", {}, k8s_metric(NODE, T0, {}, ts=T0), ("test-pod-1", None, "burstable"), (), 90),
    ("score with drf", {"dominantResourceWeight": 10}, k8s_metric(NODE, T0, {}, ts=T0), None, (), 85),
    ("score empty pod", {}, k8s_metric(NODE, T0, {}, ts=T0), ("test-pod-1", None, {}), (), 99),
]


@pytest.mark.parametrize("args, metric, test_pod, assigned, want", [c[1:] for c in SCORE_CASES],
                         ids=[f"TestScore/{c[0]}" for c in SCORE_CASES])
def test_score(args, metric, test_pod, assigned, want):
    pod = None
    if test_pod:
        name, priority, requests = test_pod
        if requests == "burstable":
            pod = k8s_pod(name, requests={"cpu": "8", "memory": "16Gi"}, limits=GUARANTEED_16, ts=T0)
        else:
            pod = k8s_pod(name, priority=priority, requests=requests or None, limits=requests or None, ts=T0)
    bound = [assigned_pod(assigned[0], assigned[1])] if assigned else []
    assert score(args, metric, pod, bound) == want


def test_score_prod_pod():
    """TestScore/score prod Pod: scored by prod usage; 16000 cores cannot fit (cpu 0), memory
    (100Gi + 22.4Gi) of 512Gi leaves 76: (0 + 76) / 2 = 38."""
    metric = usage("0", "0Gi", pods=[("default", "assign-prod-pod-1", "koord-prod", {"cpu": "30", "memory": "100Gi"})])
    assigned = [assigned_pod("assign-prod-pod-1", T0, priority=9999)]
    pod = k8s_pod("prod-pod-1", priority=9999, requests={"cpu": "16000", "memory": "32Gi"},
                  limits={"cpu": "16000", "memory": "32Gi"}, ts=T0)
    assert score({"scoreAccordingProdUsage": True}, metric, pod, assigned) == 38


# -- Estimator -------------------------------------------------------------------------------------

G4_8 = {"cpu": "4", "memory": "8Gi"}
ESTIMATE_CASES = [
    ("estimate empty pod", None, {}, None, {}, False, {"cpu": 250, "memory": 209715200}),
    ("estimate guaranteed pod", G4_8, G4_8, None, {}, False, {"cpu": 3400, "memory": 6012954214}),
    ("estimate burstable pod", G4_8, {"cpu": "8", "memory": "8Gi"}, None, {}, False, {"cpu": 6800, "memory": 6012954214}),
    ("estimate guaranteed pod and zoomed cpu factors", G4_8, G4_8, None, {"cpu": 110}, False,
     {"cpu": 4000, "memory": 6012954214}),
    ("estimate guaranteed pod and zoomed memory factors", G4_8, G4_8, None, {"memory": 110}, False,
     {"cpu": 3400, "memory": 8589934592}),
    ("estimate Batch pod", {"kubernetes.io/batch-cpu": "4000", "kubernetes.io/batch-memory": "8Gi"},
     {"kubernetes.io/batch-cpu": "4000", "kubernetes.io/batch-memory": "8Gi"}, ("BE", 5000, None), {}, False,
     {"cpu": 3400, "memory": 6012954214}),
    ("estimate pod only has request", G4_8, None, ("LS", 9999, None), {"cpu": 80, "memory": 80}, False,
     {"cpu": 3200, "memory": 6871947674}),
    ("estimate pod with customized factors", G4_8, None, ("LS", 9999, '{"cpu":100}'), {"cpu": 80, "memory": 80}, True,
     {"cpu": 4000, "memory": 6871947674}),
]


@pytest.mark.parametrize("requests, limits, labels, factors, customize, want", [c[1:] for c in ESTIMATE_CASES],
                         ids=[f"TestDefaultEstimatorEstimatePod/{c[0]}" for c in ESTIMATE_CASES])
def test_estimate_pod(requests, limits, labels, factors, customize, want):
    qos, priority, annotation = labels or (None, None, None)
    pod = pod_info(k8s_pod("p", priority=priority, requests=requests, limits=limits or None,
                           labels={"koordinator.sh/qosClass": qos} if qos else None,
                           annotations={ANNOTATION_LOAD_ESTIMATED_SCALING_FACTORS: annotation} if annotation else None))
    merged = {"cpu": 85, "memory": 70, **factors}
    if customize and annotation:
        merged = {**merged, **json.loads(annotation)}
    assert estimate(pod, merged) == want


NODE_CASES = [
    ("estimate empty node", {"cpu": "32"}, None, {"cpu": 32000, "memory": 0}),
    ("estimate node with original allocatable", {"cpu": "32", "memory": "42Gi"}, '{"cpu":28,"memory":"32Gi"}',
     {"cpu": 28000, "memory": 32 * GI}),
    ("estimate node with original allocatable and sames", {"cpu": "32", "memory": "42Gi"}, '{"cpu":32,"memory":"42Gi"}',
     {"cpu": 32000, "memory": 42 * GI}),
]


@pytest.mark.parametrize("allocatable, raw, want", [c[1:] for c in NODE_CASES],
                         ids=[f"TestDefaultEstimatorEstimateNode/{c[0]}" for c in NODE_CASES])
def test_estimate_node(allocatable, raw, want):
    annotations = {ANNOTATION_RAW_ALLOCATABLE: raw} if raw else None
    domain, _ = run(k8s_node(NODE, allocatable, annotations=annotations))
    plugin = plugin_of(domain, NAME)
    assert dict(zip(plugin.resources, plugin._allocatable(domain.cluster.nodes[NODE]))) == want


# -- args ----------------------------------------------------------------------------------------------

def test_defaults_are_koordinators():
    """SetDefaults_LoadAwareSchedulingArgs (pkg/scheduler/apis/config/v1/defaults.go)."""
    args = LoadAwareSchedulingArgs.from_config({})
    assert args == LoadAwareSchedulingArgs()
    assert (args.filter_expired_node_metrics, args.enable_schedule_when_node_metrics_expired,
            args.node_metric_expiration_seconds) == (True, False, 180)
    assert dict(args.resource_weights) == {"cpu": 1, "memory": 1}
    assert dict(args.usage_thresholds) == {"cpu": 65, "memory": 95}
    assert dict(args.estimated_scaling_factors) == {"cpu": 85, "memory": 70}
    assert (args.dominant_resource_weight, dict(args.prod_usage_thresholds), args.aggregated) == (0, {}, None)


@pytest.mark.parametrize("raw, weights, thresholds, factors", [
    ({"dominantResourceWeight": 10}, {}, {"cpu": 65, "memory": 95}, {"cpu": 85, "memory": 70}),
    ({"usageThresholds": {"memory": 0}}, {"cpu": 1, "memory": 1}, {"memory": 0}, {"cpu": 85, "memory": 70}),
    ({"estimatedScalingFactors": {"cpu": 50}}, {"cpu": 1, "memory": 1}, {"cpu": 65, "memory": 95},
     {"cpu": 50, "memory": 70}),
], ids=["weights not defaulted with a dominant weight", "a given threshold map replaces the default",
        "scaling factors merge with the defaults"])
def test_defaulting_follows_set_defaults(raw, weights, thresholds, factors):
    args = LoadAwareSchedulingArgs.from_config(raw)
    assert (dict(args.resource_weights), dict(args.usage_thresholds), dict(args.estimated_scaling_factors)) == (
        weights, thresholds, factors)


@pytest.mark.parametrize("raw, fragment", [
    ({"nodeMetricExpirationSeconds": 0}, "nodeMetricExpiredSeconds should be a positive value"),
    ({"resourceWeights": {"cpu": 0}}, "resource Weight of cpu"),
    ({"usageThresholds": {"cpu": 101}}, "resource Threshold of cpu"),
    ({"estimatedScalingFactors": {"cpu": 0}}, "ScalingFactor of cpu"),
    ({"resourceWeights": {"nvidia.com/gpu": 1}}, "estimatedScalingFactors: Not found"),
    ({"aggregated": {"usageAggregationType": "p42"}}, "Unsupported value"),
    ({"usageThreshold": {"cpu": 1}}, 'unknown field "usageThreshold"'),
], ids=["expiration", "weight", "threshold", "factor", "weight without factor", "aggregation type", "typo"])
def test_invalid_args_are_rejected(raw, fragment):
    with pytest.raises(ValueError, match=fragment):
        LoadAwareSchedulingArgs.from_config(raw)


@pytest.mark.parametrize("threshold, total", [(65, 96000), (95, 549755813888), (1, 3), (50, 7), (100, 1)])
def test_head_room_matches_go_rounding(threshold, total):
    limit = max_load(threshold, total)
    assert usage_percent(limit, total) <= threshold < usage_percent(limit + 1, total)


# -- queueing hint: a NodeUsage wakes a pod LoadAware rejected only when the node then passes its Filter ----------

def rejected_by_load(cpu_used):
    """Pod p rejected by LoadAware on one 4-core node that uses ``cpu_used`` milli-cores (65 % threshold: a
    load up to 2,619 m passes; the pod's estimate is 250 m)."""
    domain, out = run(node("n1", ts=T0), usage_on("n1", cpu_used, T0), pod("p", ts=T0))
    assert decisions(out)[-1]["filterResults"] == [{"plugin": NAME, "reason": CPU_OVER, "count": 1}]
    return domain


def usage_on(name, cpu_used, ts):
    return metric(name, ts, {"cpu": cpu_used, "memory": GI}, ts=ts)


@pytest.mark.parametrize("cpu_used, moved", [
    pytest.param(3500, False, id="usage-went-up"),
    pytest.param(2500, False, id="went-down-still-over"),
    pytest.param(500, True, id="went-under"),
])
def test_a_node_usage_wakes_the_pod_only_when_the_node_then_fits_it(cpu_used, moved):
    domain = rejected_by_load(3000)
    run(usage_on("n1", cpu_used, T0 + 100), domain=domain)
    assert domain.queue.pods["default/p"].moved is moved


def test_a_usage_of_a_node_the_domain_does_not_hold_or_a_deleted_usage_wakes_it():
    domain = rejected_by_load(3000)
    run(usage_on("n9", 3900, T0 + 100), domain=domain)
    assert domain.queue.pods["default/p"].moved
    domain = rejected_by_load(3000)
    run(deleted("NodeUsage", "n1", ts=T0 + 100), domain=domain)
    assert domain.queue.pods["default/p"].moved


def test_a_skipped_usage_changes_no_decision_once_a_relevant_one_comes():
    domain = rejected_by_load(3000)
    _, out = run(usage_on("n1", 3600, T0 + 2000), domain=domain)
    assert decisions(out) == [] and domain.queue.pods["default/p"].attempts == 1
    _, out = run(usage_on("n1", 400, T0 + 4000), domain=domain)
    assert [(d["result"], d["nodeName"]) for d in decisions(out)] == [("Scheduled", "n1")]


def test_the_hint_is_the_filter_on_the_events_node():
    domain = rejected_by_load(3000)
    plugin = plugin_of(domain, NAME)
    pod_p = domain.cluster.pods["default/p"]
    assert plugin.usage_may_fit(ClusterEvent(NODE_USAGE, UPDATE, "n1"), pod_p) is False
    run(usage_on("n1", 500, T0 + 100), domain=domain)
    assert plugin.usage_may_fit(ClusterEvent(NODE_USAGE, UPDATE, "n1"), pod_p) is True
