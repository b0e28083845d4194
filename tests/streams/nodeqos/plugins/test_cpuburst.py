"""CPU burst: Koordinator's cpu_burst_test.go vectors (reference TV-3-10..TV-3-12), and quota burst driven by the
NodeMetric's throttled ratios through the planner."""

from __future__ import annotations

import dataclasses

import pytest

from streams.actuation import CPU_BURST, CPU_QUOTA
from streams.events import Causation
from streams.nodeqos.planner import QoSMemory, plan_node
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
    snap = dataclasses.replace(snapshot(strategy, cpu=16_000, pods=pods, node_metric=node_metric,
                                        previous={("pod", "u-ls", "cgroup"): {CPU_QUOTA: "400000"}}),
                               metric_is_new=True)
    settings = {s.target_id: s.values for s in CPUBurst().plan(snap).settings}
    # koordlet's static burst (limit x 1000 %: 2,000,000 and 1,000,000 us) capped at the quota in force,
    # the scaled one for u-ls and the limit's for u-a: Linux refuses a burst above the quota
    assert settings == {"u-ls": {CPU_BURST: "320000", CPU_QUOTA: "320000"}, "u-a": {CPU_BURST: "100000"}}


def test_default_policy_none_plans_zero_burst_which_the_planner_leaves_out():
    snap = snapshot(qos_strategy(), pods={"ns/ls": pod("LS", "u", limit_cpu=2000)})
    assert [s.values for s in CPUBurst().plan(snap).settings] == [{CPU_BURST: "0"}]


AUTO = {"clusterStrategy": {"policy": "auto"}}
LS_POD = {"ns/ls": pod("LS", "u-ls", limit_cpu=2000), "ns/lsr": pod("LSR", "u-lsr", cpu=8000, limit_cpu=8000)}
TARGET = ("pod", "u-ls", "cgroup")
LSR_USED = {IDLE: 7000, COOLING: 6250, OVERLOAD: 5000}
"""LSR usage giving each share-pool state on 16 CPUs with node usage 10 cores (TV-3-11)."""


def _metric(state: str, throttled_ratio: float | None, update_time: int = 0):
    ls = pod_usage("ns", "ls", 500, 0)
    if throttled_ratio is not None:
        ls["throttledRatio"] = throttled_ratio
    node_usage = None if state == UNKNOWN else {"cpu": 10_000, "memory": 1}
    return metric(node_usage=node_usage, pods=[ls, pod_usage("ns", "lsr", LSR_USED.get(state, 7000), 0)],
                  **({"update_time": update_time} if update_time else {}))


def _quota(state: str, ratio: float | None, current: int | None, new: bool = True, config=AUTO) -> str | None:
    previous = {} if current is None else {TARGET: {CPU_QUOTA: str(current)}}
    snap = dataclasses.replace(snapshot(qos_strategy(cpu_burst_config=config), cpu=16_000, pods=LS_POD,
                                        node_metric=_metric(state, ratio), previous=previous), metric_is_new=new)
    settings = {s.target_id: s.values for s in CPUBurst().plan(snap).settings}
    return settings.get("u-ls", {}).get(CPU_QUOTA)


@pytest.mark.parametrize("config, state, ratio, current, expected", [
    pytest.param({"clusterStrategy": {"policy": "cpuBurstOnly"}}, IDLE, 0.5, 400_000, "200000",
                 id="TestCPUBurst_applyCFSQuotaBurst/cpuBurstOnly-resets"),
    pytest.param(AUTO, COOLING, 0.5, 400_000, "400000", id="TestCPUBurst_applyCFSQuotaBurst/cooling-remains"),
    pytest.param(AUTO, OVERLOAD, 0.5, 202_000, "200000",
                 id="TestCPUBurst_applyCFSQuotaBurst/overload-down-clamped-to-base"),
    pytest.param(AUTO, OVERLOAD, 0.5, 400_000, "320000", id="TestCPUBurst_applyCFSQuotaBurst/overload-down"),
    pytest.param(AUTO, IDLE, 0.0, 580_000, "580000", id="TestCPUBurst_applyCFSQuotaBurst/not-throttled-remains"),
    pytest.param(AUTO, IDLE, 0.5, 580_000, "600000", id="TestCPUBurst_applyCFSQuotaBurst/throttled-up-capped-300%"),
    pytest.param(AUTO, IDLE, 0.5, 200_000, "240000", id="TestCPUBurst_applyCFSQuotaBurst/throttled-up"),
    pytest.param(AUTO, IDLE, 0.5, None, "240000", id="first-throttled-report-scales-the-base"),
    pytest.param(AUTO, IDLE, None, 400_000, "400000", id="ratio-not-reported-remains"),
    pytest.param(AUTO, UNKNOWN, 0.5, 400_000, "400000", id="no-node-usage-remains"),
    pytest.param(AUTO, OVERLOAD, 0.0, 400_000, "320000", id="overload-down-without-throttling"),
])
def test_quota_burst_from_the_node_metric(config, state, ratio, current, expected):
    """TV-3-12 through the plan: container limit 2 cores (base 200000), throttled ratio 0.5 unless stated; the node
    state from TV-3-11's share pool (16 CPUs, node usage 10 cores, an LSR pod requesting 8)."""
    assert _quota(state, ratio, current, config=config) == expected


@pytest.mark.parametrize("state", [IDLE, OVERLOAD])
def test_a_plan_for_anything_but_a_new_node_metric_keeps_the_quota(state):
    """A config change re-plans on the same NodeMetric: its sample was acted on already."""
    assert _quota(state, 0.5, 400_000, new=False) == "400000"


def test_a_plan_for_anything_but_a_new_node_metric_still_resets_without_quota_burst():
    assert _quota(IDLE, 0.5, 400_000, new=False, config={"clusterStrategy": {"policy": "cpuBurstOnly"}}) == "200000"


def _replay(reports):
    """The quotas the planner emits for ``reports`` (share-pool state, throttled ratio), one NodeMetric each."""
    strategy = qos_strategy(cpu_burst_config=AUTO)
    node = snapshot(cpu=16_000).node
    memory, quotas = QoSMemory(), []
    for offset, (state, ratio) in enumerate(reports, start=1):
        cause = Causation("koord.inbox.node", 0, offset, "koord.nodemetrics", 0, offset)
        memory, outputs = plan_node((CPUBurst(),), node, LS_POD, _metric(state, ratio, offset * 60_000), strategy,
                                    offset * 60_000, memory, cause, metric_is_new=True)
        quotas.append(memory.last[TARGET][CPU_QUOTA])
    return quotas, memory


def test_quota_follows_the_node_metric_stream_and_replays_alike():
    """Throttled: x1.2 per report up to 300 % of the base; overloaded: x0.8 down to the base; the current quota is
    the one last emitted, so replaying the same NodeMetrics gives the same quotas and the same memory."""
    reports = [(IDLE, 0.4)] * 7 + [(IDLE, 0.0), (COOLING, 0.4), (OVERLOAD, 0.4)] + [(OVERLOAD, 0.0)] * 6
    quotas, memory = _replay(reports)
    assert quotas == ["240000", "288000", "345600", "414720", "497664", "597196", "600000", "600000", "600000",
                      "480000", "384000", "307200", "245760", "200000", "200000", "200000"]
    assert _replay(reports) == (quotas, memory)
