"""Memory eviction: memory_evict_test.go vectors (reference TV-3-14, TV-3-15)."""

from __future__ import annotations

import pytest

from streams.nodeqos.plugins.memoryevict import MemoryEvict, MemoryEvictArgs, release_bytes
from tests.streams.nodeqos.support import G, NOW, metric, pod, pod_usage, qos_strategy, replace, snapshot


@pytest.mark.parametrize("used, threshold, lower, expected", [
    pytest.param(115 * G, 80, None, 20_400_000_000, id="default-lower"),
    pytest.param(115 * G, 82, 80, 18_000_000_000, id="lower-80"),
    pytest.param(80 * G, 80, None, 0, id="below-threshold"),
])
def test_release(used, threshold, lower, expected):
    """Test_memoryEvict_calculateReleaseByUsedThresholdPercent (TV-3-14): capacity 120G."""
    assert release_bytes(used, 120 * G, threshold, lower) == expected


PODS = {"ns/lsr": pod("LSR", "u1", priority=1000), "ns/ls": pod("LS", "u2", priority=500),
        "ns/none": pod("", "u3", priority=100), "ns/p100_1": pod("BE", "u4", priority=100),
        "ns/p100_2": pod("BE", "u5", priority=100), "ns/p120": pod("BE", "u6", priority=120)}
USAGE = {"lsr": 40, "ls": 30, "none": 10, "p100_1": 5, "p100_2": 20, "p120": 10}


def _plan(threshold, lower=None, used=115 * G, last=None):
    strategy = replace(qos_strategy(), enable=True, memory_evict_threshold_percent=threshold,
                       memory_evict_lower_percent=lower)
    node_metric = metric(node_usage={"cpu": 1, "memory": used},
                         pods=[pod_usage("ns", name, 0, gb * G) for name, gb in USAGE.items()])
    snap = snapshot(strategy, memory=120 * G, pods=PODS, node_metric=node_metric,
                    last_eviction_ms={"MemoryEvict": last} if last is not None else None)
    return [e.pod_key for e in MemoryEvict(MemoryEvictArgs()).plan(snap).evictions]


@pytest.mark.parametrize("threshold, lower, used, expected", [
    pytest.param(82, None, 115 * G, ["ns/p100_2"], id="need-18G"),
    pytest.param(80, None, 115 * G, ["ns/p100_2", "ns/p100_1"], id="need-20.4G"),
    pytest.param(50, None, 115 * G, ["ns/p100_2", "ns/p100_1", "ns/p120"], id="need-56.4G-all-BE"),
    pytest.param(82, 78, 115 * G, ["ns/p100_2", "ns/p100_1"], id="lower-78"),
    pytest.param(82, 74, 115 * G, ["ns/p100_2", "ns/p100_1", "ns/p120"], id="lower-74"),
    pytest.param(80, None, 80 * G, [], id="below-threshold"),
])
def test_be_victims(threshold, lower, used, expected):
    """Test_memoryEvict_memoryEvict (TV-3-15): lowest priority first, then largest usage; only BE pods."""
    assert _plan(threshold, lower, used) == expected


def test_cool_down():
    assert _plan(82, last=NOW - 3000) == []
    assert _plan(82, last=NOW - 4000) == ["ns/p100_2"]
