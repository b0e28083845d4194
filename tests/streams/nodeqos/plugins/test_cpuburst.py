"""CPU burst: Koordinator's cpu_burst_test.go vectors (reference TV-3-10..TV-3-12)."""

from __future__ import annotations

import pytest

from streams.actuation import CPU_BURST, CPU_QUOTA
from streams.nodeqos.plugins.cpuburst import (
    COOLING, DOWN, IDLE, OVERLOAD, REMAIN, RESET, UNKNOWN, UP, CPUBurst, burst_quota, quota_operation,
    share_pool_state, static_burst,
)
from tests.streams.nodeqos.support import metric, pod, pod_usage, qos_strategy, snapshot


@pytest.mark.parametrize("limit, policy, percent, expected", [
    pytest.param(5000, "auto", 1000, 5_000_000, id="auto-1000%-5-cores"),
    pytest.param(3000, "auto", 1000, 3_000_000, id="auto-1000%-3-cores"),
    pytest.param(8000, "auto", 1000, 8_000_000, id="auto-1000%-pod"),
    pytest.param(5000, "auto", 500, 2_500_000, id="auto-500%"),
    pytest.param(8000, "cpuBurstOnly", 500, 4_000_000, id="cpuBurstOnly-500%-pod"),
    pytest.param(5000, "cfsQuotaBurstOnly", 1000, 0, id="cfsQuotaBurstOnly"),
    pytest.param(0, "auto", 1000, 0, id="no-limit"),
])
def test_static_burst(limit, policy, percent, expected):
    """TestCPUBurst_applyCPUBurst (TV-3-10)."""
    assert static_burst(limit, policy, percent) == expected


@pytest.mark.parametrize("node_usage, lsr_used, expected", [
    pytest.param(10_000, 7000, IDLE, id="pool-0.375-idle"),
    pytest.param(10_000, 5000, OVERLOAD, id="pool-0.625-overload"),
    pytest.param(10_000, 6250, COOLING, id="pool-0.469-cooling"),
    pytest.param(None, 7000, UNKNOWN, id="no-node-metric"),
])
def test_share_pool_state(node_usage, lsr_used, expected):
    """TestCPUBurst_getNodeStateForBurst (TV-3-11): 16 processors, LSR requests 8 cores, threshold 50."""
    assert share_pool_state(16, node_usage, 8000, lsr_used, 50) == expected


@pytest.mark.parametrize("policy, throttled, state, current, percent, expected", [
    pytest.param("cpuBurstOnly", True, IDLE, 400_000, 300, 200_000, id="reset-without-quota-burst"),
    pytest.param("auto", True, COOLING, 400_000, 300, 400_000, id="cooling-remains"),
    pytest.param("auto", True, OVERLOAD, 202_000, 300, 200_000, id="overload-down-clamped-to-base"),
    pytest.param("auto", True, OVERLOAD, 400_000, 300, 320_000, id="overload-down"),
    pytest.param("auto", True, IDLE, 400_000, 90, 200_000, id="burst-percent-below-100-caps-at-base"),
    pytest.param("auto", False, IDLE, 580_000, 300, 580_000, id="not-throttled-remains"),
    pytest.param("auto", True, IDLE, 580_000, 300, 600_000, id="throttled-up-capped"),
    pytest.param("auto", True, IDLE, 200_000, 300, 240_000, id="throttled-up"),
])
def test_quota_burst(policy, throttled, state, current, percent, expected):
    """TestCPUBurst_applyCFSQuotaBurst (TV-3-12): container limit 2 cores, base 200000."""
    assert burst_quota(2000, current, quota_operation(policy, throttled, state), percent) == expected


@pytest.mark.parametrize("policy, throttled, state, expected", [
    ("cfsQuotaBurstOnly", None, IDLE, REMAIN), ("auto", True, UNKNOWN, REMAIN), ("auto", None, OVERLOAD, DOWN),
    ("none", True, IDLE, RESET), ("auto", True, IDLE, UP),
])
def test_quota_operation(policy, throttled, state, expected):
    assert quota_operation(policy, throttled, state) == expected


def test_plan_sets_burst_for_ls_pods_with_a_limit_and_scales_quota_down_on_overload():
    strategy = qos_strategy(cpu_burst_config={"clusterStrategy": {"policy": "auto"}})
    pods = {"ns/ls": pod("LS", "u-ls", limit_cpu=2000), "ns/lsr": pod("LSR", "u-lsr", cpu=8000, limit_cpu=8000),
            "ns/be": pod("BE", "u-be", limit_cpu=2000), "ns/annotated": pod(
                "LS", "u-a", limit_cpu=1000, annotations={"koordinator.sh/cpuBurst": '{"policy": "cpuBurstOnly"}'})}
    node_metric = metric(node_usage={"cpu": 10_000, "memory": 1}, pods=[pod_usage("ns", "lsr", 5000, 0)])
    snap = snapshot(strategy, cpu=16_000, pods=pods, node_metric=node_metric,
                    previous={("pod", "u-ls", "cgroup"): {CPU_QUOTA: "400000"}})
    settings = {s.target_id: s.values for s in CPUBurst().plan(snap).settings}
    # koordlet's static burst (limit x 1000 %: 2,000,000 and 1,000,000 us) capped at the quota in force,
    # the scaled one for u-ls and the limit's for u-a: Linux refuses a burst above the quota
    assert settings == {"u-ls": {CPU_BURST: "320000", CPU_QUOTA: "320000"}, "u-a": {CPU_BURST: "100000"}}


def test_default_policy_none_plans_zero_burst_which_the_planner_leaves_out():
    snap = snapshot(qos_strategy(), pods={"ns/ls": pod("LS", "u", limit_cpu=2000)})
    assert [s.values for s in CPUBurst().plan(snap).settings] == [{CPU_BURST: "0"}]
