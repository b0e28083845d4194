"""CPU eviction by BE satisfaction: cpu_evict_test.go vectors (reference TV-3-18..TV-3-23, TV-3-26)."""

from __future__ import annotations

import pytest

from streams.nodeqos.plugins.cpuevict import CPUEvict, CPUEvictArgs, be_release, sort_victims
from tests.streams.nodeqos.support import NOW, metric, pod, pod_usage, qos_strategy, replace, snapshot


@pytest.mark.parametrize("average, current, usage_threshold, expected", [
    pytest.param((20000, 19000, 40000), (20000, 19000, 40000), 90, 0, id="satisfied-TV-3-18"),
    pytest.param((10000, 9500, 50000), (14000, 13000, 50000), 90, 6000, id="current-smaller-TV-3-19"),
    pytest.param((13000, 12000, 50000), (11000, 10000, 50000), 90, 7000, id="average-smaller-TV-3-20"),
    pytest.param((10000, 9500, 50000), (10000, 5000, 50000), 90, 10000, id="same-limit-uses-average"),
    pytest.param((10000, 6000, 50000), (14000, 8000, 50000), 50, 6000, id="usage-threshold-50-TV-3-22"),
    pytest.param((20000, 9000, 50000), (20000, 9000, 50000), 50, 0, id="usage-45%-TV-3-22"),
    pytest.param((8000, 6000, 50000), (8000, 4000, 50000), 50, 12000, id="by-allocatable-TV-3-23"),
    pytest.param((1, 6000, 50000), (1, 4000, 50000), 50, 19999, id="allocatable-zero-TV-3-23"),
])
def test_be_release(average, current, usage_threshold, expected):
    """Test_CPUEvict_calculateMilliRelease: lower 30, upper 40."""
    assert be_release(average, current, 30, 40, usage_threshold) == expected


def test_be_sort():
    """Test_CPUEvict_getPodEvictInfoAndSort (TV-3-26): all request 16000 batch-cpu."""
    candidates = [("p100-1", 100, 3000 / 16000), ("p100-2", 100, 4000 / 16000), ("p10", 10, 4000 / 16000)]
    assert [c[0] for c in sort_victims(candidates)] == ["p10", "p100-2", "p100-1"]


def test_plan_evicts_be_pods_after_the_start_cool_down():
    """BE limited to 8 cores by suppress, using 6, requesting 50: satisfaction 0.16 -> release 12000."""
    strategy = replace(qos_strategy(), enable=True, cpu_evict_be_satisfaction_lower_percent=30,
                       cpu_evict_be_satisfaction_upper_percent=40, cpu_evict_be_usage_threshold_percent=50)
    pods = {"ns/a": pod("BE", "ua", batch_cpu=25000, priority=5000), "ns/b": pod("BE", "ub", batch_cpu=25000, priority=5100)}
    node_metric = metric(node_usage={"cpu": 1, "memory": 1},
                         pods=[pod_usage("ns", "a", 3000, 0), pod_usage("ns", "b", 3000, 0)])
    evictor = CPUEvict(CPUEvictArgs())

    def plan(last):
        return evictor.plan(snapshot(strategy, pods=pods, node_metric=node_metric, last_eviction_ms=last,
                                     previous={("qos", "BE", "cgroup"): {"cpu.cfs_quota_us": "800000"}}))

    assert plan({}).start_cool_down and plan({}).evictions == ()
    assert plan({"CPUEvict": NOW - 10_000}).evictions == ()
    assert [e.pod_key for e in plan({"CPUEvict": NOW - 20_000}).evictions] == ["ns/a"]
