"""LowNodeLoad rounds: ``TestLowNodeLoad`` (LN-E*), ``TestMaxEvictionTotal``, ``TestOverUtilizedEvictionReason``
(LN-R*) and ``TestResourceUsagePercentages``.

Setup of the LN-E vectors: n1 {cpu 4000m, memory 3000, pods 9}, n2 {4000m, 3000, pods 10}, n3 {4000m, 3000,
pods 10, unschedulable}; pods request cpu 400m and their metric is their request; p1-p5 ReplicaSet pods on
n1, p6 a DaemonSet pod, p7 a mirror pod with local storage, p8 system-critical in kube-system (never
evicted), p9 on n2. Anomaly condition {1, 1}: every source is acted on at once.
"""

import dataclasses

import pytest

from streams.descheduler.evictor import EvictorArgs, refusal
from streams.descheduler.limiter import EvictionLimiter
from streams.descheduler.lownodeload import LowNodeLoad, LowNodeLoadArgs
from streams.descheduler.lownodeload.balance import usage_percentages
from streams.descheduler.snapshot import NodeView, PodView

GI = 1 << 30


def pod(name, namespace="default", cpu=400, memory=0, owner=("ReplicaSet",), priority=0, priority_class="koord-prod",
        koord_qos="LS", kube_qos="Burstable", **extra) -> tuple[PodView, dict]:
    view = PodView(f"{namespace}/{name}", namespace, name, priority, priority_class, koord_qos, kube_qos,
                   owner_kinds=owner, **extra)
    return view, {"cpu": cpu, "memory": memory}


def standard_pods(**changes) -> dict[str, list]:
    pods = {"n1": [pod(f"p{i}", **changes.get(f"p{i}", {})) for i in range(1, 6)]
            + [pod("p6", owner=("DaemonSet",)), pod("p7", owner=(), mirror=True, local_storage=True),
               pod("p8", namespace="kube-system", critical=True)],
            "n2": [pod("p9", **changes.get("p9", {}))], "n3": []}
    return pods


def cluster(pods: dict[str, list], unschedulable=("n3",), labels=None, allocatable=None) -> list[NodeView]:
    nodes = []
    for name in ("n1", "n2", "n3"):
        alloc = (allocatable or {}).get(name) or {"cpu": 4000, "memory": 3000, "pods": 9 if name == "n1" else 10}
        views = tuple(sorted((v for v, _ in pods[name]), key=lambda p: p.key))
        nodes.append(NodeView(name, alloc, (labels or {}).get(name, {}), name in unschedulable, views, {},
                              {v.key: metric for v, metric in pods[name]}))
    return nodes


def fits_by_requests(nodes: list[NodeView], selectors: dict[str, dict] | None = None):
    """kube-scheduler's basic fit: schedulable, nodeSelector, requests within allocatable (the metric is the request)."""
    by_name = {n.name: n for n in nodes}

    def fits(pod: PodView, node: str) -> bool:
        target = by_name[node]
        if target.unschedulable:
            return False
        for key, value in (selectors or {}).get(pod.name, {}).items():
            if target.labels.get(key) != value:
                return False
        requested = {r: sum(m.get(r, 0) for m in target.pod_usage.values()) for r in ("cpu", "memory")}
        metric = next(m for n in nodes for k, m in n.pod_usage.items() if k == pod.key)
        return all(requested[r] + metric.get(r, 0) <= target.allocatable.get(r, 0) for r in ("cpu", "memory")) \
            and len(target.pods) + 1 <= target.allocatable.get("pods", 0)

    return fits


def evict(nodes, args: dict, limiter=None, selectors=None) -> list[str]:
    plugin = LowNodeLoad(LowNodeLoadArgs.from_config({"anomalyCondition": {"consecutiveAbnormalities": 1,
                                                                           "consecutiveNormalities": 1}, **args}))
    evictions = plugin.balance(nodes, 0, fits_by_requests(nodes, selectors),
                               lambda p: refusal(p, EvictorArgs()) is None, limiter or EvictionLimiter())
    return [e.pod for e in evictions]


THRESHOLDS = {"lowThresholds": {"cpu": 30, "pods": 30}, "highThresholds": {"cpu": 50, "pods": 50}}


def test_ln_e1_no_evictable_pods():
    pods = {"n1": [pod(f"p{i}", owner=("DaemonSet",)) for i in range(1, 5)]
            + [pod("p5", owner=(), mirror=True, local_storage=True), pod("p6", critical=True)],
            "n2": [pod("p9")], "n3": []}
    assert evict(cluster(pods), THRESHOLDS) == []


def test_ln_e2_four_pods_leave_the_hot_node_until_the_target_is_full():
    assert len(evict(cluster(standard_pods()), THRESHOLDS)) == 4


def test_ln_e3_excluded_namespace():
    pods = standard_pods(**{f"p{i}": {"namespace": "namespace1"} for i in range(1, 6)})
    assert evict(cluster(pods), {**THRESHOLDS, "evictableNamespaces": {"exclude": ["namespace1"]}}) == []


def test_ln_e4_included_namespace():
    pods = standard_pods(**{f"p{i}": {"namespace": f"namespace{i}"} for i in range(3, 6)})
    assert len(evict(cluster(pods), {**THRESHOLDS, "evictableNamespaces": {"include": ["default"]}})) == 2


def test_ln_e5_stops_when_the_targets_memory_is_used_up():
    pods = standard_pods(**{f"p{i}": {"memory": 300} for i in range(1, 6)}, p9={"memory": 2100})
    assert len(evict(cluster(pods), THRESHOLDS)) == 3


def test_ln_e6_with_priorities():
    pods = standard_pods(**{f"p{i}": {"priority": 10000} for i in range(1, 5)})
    assert len(evict(cluster(pods), THRESHOLDS)) == 4


def test_ln_e7_deviation_thresholds():
    args = {"useDeviationThresholds": True, "lowThresholds": {"cpu": 5, "pods": 5},
            "highThresholds": {"cpu": 5, "pods": 5}}
    assert len(evict(cluster(standard_pods()), args)) == 2


def test_ln_e8_prod_usage_over_prod_high_moves_prod_pods_only():
    batch = {"priority_class": "koord-batch"}
    pods = standard_pods(p3=batch, p4=batch, p5=batch)
    args = {"lowThresholds": {"cpu": 30, "pods": 30}, "highThresholds": {"cpu": 90, "pods": 90},
            "prodLowThresholds": {"cpu": 20, "pods": 20}, "prodHighThresholds": {"cpu": 40, "pods": 40}}
    assert evict(cluster(pods), args) == ["default/p1", "default/p2"]


def test_ln_e9_the_global_limit_caps_a_round():
    assert len(evict(cluster(standard_pods()), THRESHOLDS, EvictionLimiter(total=1))) == 1


def test_ln_e10_best_effort_pods_go_first_and_the_pod_count_limits_the_round():
    be = {"cpu": 0, "kube_qos": "BestEffort", "koord_qos": "BE", "priority_class": "koord-batch"}
    pods = standard_pods(p1=be, p2=be, p4=be, p5=be)
    assert sorted(evict(cluster(pods), THRESHOLDS)) == ["default/p1", "default/p2", "default/p4", "default/p5"]


def test_ln_e13_no_low_node_no_eviction():
    assert evict(cluster(standard_pods(), unschedulable=("n2", "n3")), THRESHOLDS) == []


def test_ln_e14_pods_that_fit_no_target_stay():
    west = {"p4": {"datacenter": "west"}, "p5": {"datacenter": "west"}}
    nodes = cluster(standard_pods(), labels={"n2": {"datacenter": "east"}})
    assert evict(nodes, THRESHOLDS, selectors=west) == ["default/p1", "default/p2", "default/p3"]


def test_ln_e15_node_level_source_stops_once_below_its_high_threshold():
    batch = {"priority_class": "koord-batch"}
    pods = standard_pods(p4=batch, p5=batch)
    args = {"lowThresholds": {"cpu": 30, "pods": 30}, "highThresholds": {"cpu": 70, "pods": 80},
            "prodLowThresholds": {"cpu": 20, "pods": 20}, "prodHighThresholds": {"cpu": 40, "pods": 40}}
    assert evict(cluster(pods), args) == ["default/p4"]


def test_ln_e16_prod_pods_only():
    args = {"lowThresholds": {"cpu": 0, "pods": 0}, "highThresholds": {"cpu": 100, "pods": 100},
            "prodLowThresholds": {"cpu": 30, "pods": 30}, "prodHighThresholds": {"cpu": 50, "pods": 50}}
    assert len(evict(cluster(standard_pods()), args)) == 4


def test_ln_e19_stop_when_the_node_recovers():
    args = {"lowThresholds": {"cpu": 0, "pods": 0}, "highThresholds": {"cpu": 100, "pods": 100},
            "prodLowThresholds": {"cpu": 60, "pods": 60}, "prodHighThresholds": {"cpu": 70, "pods": 70}}
    pods = standard_pods()
    nodes = [dataclasses.replace(n, allocatable={"cpu": 4000, "memory": 3000, "pods": 20})
             for n in cluster(pods) if n.name != "n3"]
    assert len(evict(nodes, args)) == 1


def test_a_source_needs_as_many_anomalous_rounds_as_the_condition_says():
    nodes = cluster(standard_pods())
    plugin = LowNodeLoad(LowNodeLoadArgs.from_config({**THRESHOLDS, "anomalyCondition": {
        "consecutiveAbnormalities": 2, "consecutiveNormalities": 1}}))
    rounds = [plugin.balance(nodes, t, fits_by_requests(nodes), lambda p: True, EvictionLimiter())
              for t in (0, 1000, 2000)]
    assert [len(r) for r in rounds] == [0, 0, 4]


@pytest.mark.parametrize("high, usage, prod, expected", [
    pytest.param({"highThresholds": {"cpu": 50, "memory": 50}}, {"cpu": 64000, "memory": 32 * GI}, False,
                 "node is overutilized, node cpu usage(66.67%)>threshold(50.00%)", id="LN-R1"),
    pytest.param({"highThresholds": {"cpu": 50, "memory": 50}}, {"cpu": 64000, "memory": 400 * GI}, False,
                 "node is overutilized, node cpu usage(66.67%)>threshold(50.00%), "
                 "node memory usage(78.12%)>threshold(50.00%)", id="LN-R2"),
])
def test_over_utilized_eviction_reason(high, usage, prod, expected):
    alloc = {"cpu": 96000, "memory": 512 * GI, "pods": 110}
    hot = PodView("default/hot", "default", "hot", 0, "koord-batch", "BE", "BestEffort", owner_kinds=("ReplicaSet",))
    cold = PodView("default/cold", "default", "cold", 0, "koord-batch", "BE", "BestEffort",
                   owner_kinds=("ReplicaSet",))
    nodes = [NodeView("hot", alloc, {}, False, (hot,), usage, {"default/hot": {"cpu": 0, "memory": 0}}),
             NodeView("cold", alloc, {}, False, (cold,), {}, {"default/cold": {}})]
    plugin = LowNodeLoad(LowNodeLoadArgs.from_config({
        **high, "lowThresholds": {"cpu": 10, "memory": 10},
        "anomalyCondition": {"consecutiveAbnormalities": 1, "consecutiveNormalities": 1}}))
    evictions = plugin.balance(nodes, 0, lambda p, n: True, lambda p: True, EvictionLimiter())
    assert [e.reason for e in evictions] == [expected]


def test_resource_usage_percentages():
    percentages = usage_percentages({"cpu": 1220, "memory": 3038982964, "pods": 11},
                                    {"cpu": 1930, "memory": 3287692 * 1024, "pods": 29})
    assert {name: int(value) for name, value in percentages.items()} == {"cpu": 63, "memory": 90, "pods": 37}
