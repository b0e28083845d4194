"""The descheduler's orders: ``TestSortNodesByUsage*`` (LN-S1/S2), ``scorer_test.go``, ``TestSortPods``
(LN-P3), ``TestSortPodsOnOneOverloadedNode`` (LN-P1), ``TestSortPods2`` (LN-P2)."""

import pytest

from streams.descheduler.snapshot import PodView
from streams.descheduler.sorter import most_requested_score, node_usage_score, sort_pods

GI = 1 << 30
ALLOC = {"cpu": 32000, "memory": 32 * GI, "pods": 110}
WEIGHTS = {"cpu": 1, "memory": 1, "pods": 1}
NODES = {"node1": {"cpu": 1730, "memory": 3038982964, "pods": 25},
         "node2": {"cpu": 1220, "memory": 3038982964, "pods": 11},
         "node3": {"cpu": 1530, "memory": 5038982964, "pods": 20}}


def test_node_usage_scores_and_order():
    scores = {name: node_usage_score(usage, ALLOC, WEIGHTS) for name, usage in NODES.items()}
    assert scores == {"node1": 123, "node2": 75, "node3": 124}
    assert sorted(scores, key=lambda n: -scores[n]) == ["node3", "node1", "node2"]
    assert sorted(scores, key=lambda n: scores[n]) == ["node2", "node1", "node3"]


@pytest.mark.parametrize("requested, capacity, score", [(800, 1000, 800), (1200, 1000, 1000), (1200, 0, 0)])
def test_most_requested_score(requested, capacity, score):
    assert most_requested_score(requested, capacity) == score


def test_scorer_weights():
    assert node_usage_score({"cpu": 500, "memory": 1024}, {"cpu": 1000, "memory": 2048}, {"cpu": 1, "memory": 1}) == 500
    assert node_usage_score({"cpu": 500, "memory": 1024}, {"cpu": 1000, "memory": 2048}, {"cpu": 0, "memory": 0}) == 0


def pod(name, priority=0, koord_qos="", kube_qos="BestEffort", priority_class="", created=0, deletion=0, eviction=0):
    return PodView(f"default/{name}", "default", name, priority, priority_class, koord_qos, kube_qos, deletion,
                   eviction, created)


def test_ln_p1_usage_against_the_excess_orders_the_pods_of_an_overloaded_node():
    pods = [pod(f"pod{i}", kube_qos="Burstable", koord_qos="LS", priority_class="koord-prod") for i in (1, 2, 3, 4)]
    usage = {"default/pod1": {"cpu": 1000}, "default/pod2": {"cpu": 3000}, "default/pod3": {"cpu": 2000},
             "default/pod4": {"cpu": 4000}}
    ordered = sort_pods(pods, usage, {"cpu": 10000}, {"cpu": 1})
    assert [p.name for p in ordered] == ["pod4", "pod2", "pod3", "pod1"]


def test_ln_p2_the_piecewise_score_prefers_the_pod_that_removes_the_excess():
    pods = [pod(f"test-{i}", priority=5000, koord_qos="BE", priority_class="koord-batch") for i in (1, 2, 3, 4)]
    usage = {"default/test-1": {"cpu": 2000, "memory": 5 * GI}, "default/test-2": {"cpu": 3000, "memory": 4 * GI},
             "default/test-3": {"cpu": 4000, "memory": 3 * GI}, "default/test-4": {"cpu": 5000, "memory": 2 * GI}}
    ordered = sort_pods(pods, usage, {"cpu": 4000, "memory": 4 * GI}, {"cpu": 1, "memory": 2})
    assert [p.name for p in ordered] == ["test-2", "test-1", "test-3", "test-4"]


METRICS = {"test-16": {"cpu": 2000, "memory": 4 * GI}, "test-17": {"cpu": 3000, "memory": 4 * GI},
           "test-18": {"cpu": 3000, "memory": 5 * GI}, "test-19": {"cpu": 3000, "memory": 5 * GI}}


def test_ln_p3_priority_class_priority_qos_costs_usage_and_age():
    """No excess, so every usage score is 0: test-18/test-16 (a minute newer) and test-19/test-17 tie on every
    key, and Go's unstable sort orders each pair by chance; here ties keep the input order."""
    from streams.koordinator.classes import priority_class_raw, priority_class_with_default, qos_class_with_default
    minute = 60_000
    specs = [  # name, priority, koord-QoS label, k8s QoS, created, deletion cost, eviction cost, has metric
        ("test-1", 0, None, "BestEffort", 0, 0, 0, False), ("test-10", 0, None, "Guaranteed", 0, 0, 0, False),
        ("test-11", 0, None, "Burstable", 0, 0, 0, False), ("test-12", 8, None, "BestEffort", 0, 0, 0, False),
        ("test-13", 9, None, "Guaranteed", 0, 0, 0, False), ("test-14", 10, None, "Burstable", 0, 0, 0, False),
        ("test-5", 9999, "LSE", "Guaranteed", 0, 0, 0, False), ("test-6", 9998, "LSE", "Guaranteed", 0, 0, 0, False),
        ("test-3", 9899, "LS", "Burstable", 0, 0, 0, False), ("test-9", 5000, "BE", "Burstable", 0, 0, 0, False),
        ("test-2", 9000, "LS", "Burstable", 0, 0, 0, False), ("test-8", 5999, "BE", "Burstable", 0, 0, 0, False),
        ("test-15", 5000, "BE", "BestEffort", 0, 0, 0, False), ("test-16", 5000, "BE", "BestEffort", minute, 0, 0, True),
        ("test-17", 5000, "BE", "BestEffort", 0, 0, 0, True), ("test-18", 5000, "BE", "BestEffort", minute, 0, 0, True),
        ("test-19", 5000, "BE", "BestEffort", 0, 0, 0, True), ("test-20", 5000, "BE", "BestEffort", 0, 200, 0, False),
        ("test-21", 5000, "BE", "BestEffort", 0, 100, 0, False),
        ("test-22", 5000, "BE", "BestEffort", 0, 200, 200, False),
        ("test-23", 5000, "BE", "BestEffort", 0, 200, 100, False),
        ("test-4", 9919, "LSR", "Guaranteed", 0, 0, 0, False), ("test-7", 9899, "LS", "Guaranteed", 0, 0, 0, False),
    ]
    pods, usage = [], {}
    for name, priority, label, kube, created, deletion, eviction, metric in specs:
        koord = qos_class_with_default(label, kube)
        klass = priority_class_with_default(priority_class_raw(None, priority), koord)
        pods.append(pod(name, priority, koord, kube, klass, created, deletion, eviction))
        if metric:
            usage[f"default/{name}"] = METRICS[name]
    ordered = [p.name for p in sort_pods(pods, usage, {}, {"cpu": 1, "memory": 1, "pods": 1})]
    expected = ["test-1", "test-12", "test-18", "test-16", "test-19", "test-17", "test-15", "test-21", "test-20",
                "test-23", "test-22", "test-9", "test-8", "test-11", "test-10", "test-13", "test-14", "test-2",
                "test-3", "test-7", "test-4", "test-6", "test-5"]
    assert {frozenset(ordered[2:4]), frozenset(ordered[4:6])} == {frozenset(expected[2:4]), frozenset(expected[4:6])}
    assert ordered[:2] + ordered[6:] == expected[:2] + expected[6:]
