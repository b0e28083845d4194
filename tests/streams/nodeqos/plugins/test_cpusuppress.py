"""CPU suppress: Koordinator's cpu_suppress_test.go vectors (reference TV-3-1..TV-3-9)."""

from __future__ import annotations

import dataclasses

import pytest

from streams.actuation import CPU_QUOTA, CPUSET_CPUS
from streams.nodeqos.plugins.cpusuppress import BE_TARGET, CPUSuppress, cfs_quota, suppress_cpuset, suppress_milli
from streams.sloconfig.nodeqos import HostApplication
from tests.streams.nodeqos.support import G, metric, pod, pod_usage, qos_strategy, replace, snapshot

LS_APP = {"name": "test-ls-app", "priority": "koord-prod", "qos": "LS", "usage": {"cpu": 1000, "memory": 0}}
BE_APP = {"name": "test-be-app", "priority": "koord-batch", "qos": "BE", "usage": {"cpu": 1000, "memory": 0}}
PODS = {"default/podA": pod("LS", "a"), "default/podB": pod("BE", "b")}


def _snapshot(node_used, usages, host_apps=(), pods=PODS, cpu=20_000, threshold=70, min_percent=None,
              apps=()):
    strategy = replace(qos_strategy(), enable=True, cpu_suppress_threshold_percent=threshold,
                       cpu_suppress_min_percent=min_percent)
    strategy = type(strategy)(strategy.threshold, strategy.qos, strategy.burst, strategy.system, tuple(apps))
    node_metric = metric(node_usage={"cpu": node_used, "memory": 10 * G},
                         pods=[pod_usage("default", name, used, 0) for name, used in usages], host_apps=list(host_apps))
    return snapshot(strategy, cpu=cpu, pods=pods, node_metric=node_metric)


@pytest.mark.parametrize("snap, expected", [
    pytest.param(_snapshot(12_000, [("podA", 8000), ("podB", 2000)]), 4000, id="TestCPUSuppress_calculateBESuppressCPU/TV-3-1"),
    pytest.param(_snapshot(11_000, [("abc", 8000), ("def", 4000)], pods={"default/def": pod("BE", "d")}), 6000,
                 id="TestCPUSuppress_calculateBESuppressCPU/missing-podmeta/TV-3-2"),
    pytest.param(_snapshot(12_000, [("podA", 8000), ("podB", 2000)], [LS_APP]), 4000,
                 id="TestCPUSuppress_calculateBESuppressCPU/ls-host-app/TV-3-3"),
    pytest.param(_snapshot(12_000, [("podA", 8000), ("podB", 2000)], [BE_APP],
                           apps=[HostApplication("test-be-app", "koord-batch", "BE", "kubepods/besteffort/test-be-app",
                                                 "KubepodsBesteffort")]), 5000,
                 id="TestCPUSuppress_calculateBESuppressCPU/be-host-app/TV-3-4"),
    pytest.param(_snapshot(12_000, [("podA", 8000), ("podB", 2000)], min_percent=60), 12_000,
                 id="TestCPUSuppress_calculateBESuppressCPU/min-percent/TV-3-5"),
    pytest.param(_snapshot(0, [], pods={}, cpu=0), 0, id="TestCPUSuppress_calculateBESuppressCPU/empty-node/TV-3-6"),
])
def test_suppress_amount(snap, expected):
    assert suppress_milli(snap) == expected


@pytest.mark.parametrize("target, current, expected", [
    pytest.param(20_000, 1_000_000, 1_800_000, id="step-up-capped"),
    pytest.param(20_000, 1_900_000, 2_000_000, id="small-increase"),
    pytest.param(20_000, 2_400_000, 2_000_000, id="decrease-immediate"),
    pytest.param(20_000, 1_980_000, 1_980_000, id="delta-below-1-percent"),
    pytest.param(1, 80_000, 2000, id="floor-not-bypassed"),
    pytest.param(20_000, -1, 2_000_000, id="from-unlimited"),
])
def test_adjust_by_cfs_quota(target, current, expected):
    """TestCPUSuppress_adjustByCfsQuota (TV-3-7): node of 80 cores, period 100000."""
    assert cfs_quota(target, 80_000, current) == expected


@pytest.mark.parametrize("usages, pods, previous, expected", [
    pytest.param([("ls-pod", 8000), ("be-pod", 2000)], {"default/ls-pod": pod("LS", "l"), "default/be-pod": pod("BE", "b")},
                 "1500000", "120000", id="Test_cpuSuppress_suppressBECPU/cfsQuota/TV-3-8"),
    pytest.param([("ls-pod", 8000), ("be-pod", 4000)], {"default/be-pod": pod("BE", "b")},
                 "1000000", "320000", id="Test_cpuSuppress_suppressBECPU/cfsQuota-missing-podmeta/TV-3-8"),
])
def test_cfs_quota_policy_end_to_end(usages, pods, previous, expected):
    strategy = replace(qos_strategy(), enable=True, cpu_suppress_threshold_percent=70, cpu_suppress_policy="cfsQuota")
    node_metric = metric(node_usage={"cpu": 12_000, "memory": G},
                         pods=[pod_usage("default", name, used, 0) for name, used in usages])
    snap = snapshot(strategy, cpu=16_000, pods=pods, node_metric=node_metric,
                    previous={BE_TARGET: {CPU_QUOTA: previous, CPUSET_CPUS: "0-3"}})
    [setting] = CPUSuppress().plan(snap).settings
    assert setting.key == BE_TARGET
    assert setting.values == {CPU_QUOTA: expected, CPUSET_CPUS: "0-15"}


def _processors(*tuples):
    return [tuple(t) for t in tuples]


@pytest.mark.parametrize("cpus, processors, expected", [
    pytest.param(3, _processors((0, 0, 0, 0), (1, 1, 0, 0), (2, 2, 1, 1), (3, 3, 1, 1), (4, 0, 0, 0), (5, 1, 0, 0),
                                (6, 2, 1, 1), (7, 3, 1, 1)), [0, 4, 2], id="ht-pairs-across-sockets"),
    pytest.param(3, _processors((0, 0, 0, 0), (1, 0, 0, 0), (2, 1, 0, 0), (3, 1, 0, 0), (4, 2, 1, 1), (5, 2, 1, 1),
                                (6, 3, 1, 1), (7, 3, 1, 1)), [0, 1, 4], id="pairs-per-numa-node"),
    pytest.param(5, _processors(*[(c, c // 2, c // 4, c // 8) for c in range(16)]), [0, 1, 4, 5, 8],
                 id="sixteen-cpus-four-sockets"),
    pytest.param(5, _processors(*reversed([(c, c // 2, c // 4, c // 8) for c in range(16)])), [0, 1, 4, 5, 8],
                 id="sixteen-cpus-shuffled"),
    pytest.param(0, [], [], id="empty"),
])
def test_calculate_be_suppress_cpuset_policy(cpus, processors, expected):
    """Test_calculateBESuppressCPUSetPolicy (TV-3-9)."""
    assert suppress_cpuset(cpus, processors) == expected


def test_cpuset_policy_shrinks_be_to_the_suppressed_cpus_and_resets_a_quota():
    strategy = replace(qos_strategy(), enable=True, cpu_suppress_threshold_percent=70)
    node_metric = metric(node_usage={"cpu": 12_000, "memory": G},
                         pods=[pod_usage("default", "podA", 8000, 0), pod_usage("default", "podB", 2000, 0)])
    snap = snapshot(strategy, pods=PODS, node_metric=node_metric, previous={BE_TARGET: {CPU_QUOTA: "400000"}})
    [setting] = CPUSuppress().plan(snap).settings
    assert setting.values == {CPUSET_CPUS: "0-3", CPU_QUOTA: "-1"}


@pytest.mark.parametrize("previous, expected", [
    pytest.param({}, (), id="nothing-written-nothing-to-recover"),
    pytest.param({BE_TARGET: {CPU_QUOTA: "120000"}}, ({CPU_QUOTA: "-1"},), id="recover-quota"),
    pytest.param({BE_TARGET: {CPUSET_CPUS: "0-1"}}, ({CPUSET_CPUS: "0-19"},), id="recover-cpuset"),
])
def test_disabled_recovers_only_what_was_suppressed(previous, expected):
    snap = snapshot(qos_strategy(), node_metric=metric(node_usage={"cpu": 1, "memory": 1}), previous=previous)
    assert tuple(s.values for s in CPUSuppress().plan(snap).settings) == expected


def test_the_gate_off_recovers_what_was_suppressed_even_under_an_enabled_config():
    snap = _snapshot(12_000, [("podA", 8000), ("podB", 2000)])
    recovered = CPUSuppress(enabled=False).plan(dataclasses.replace(snap, previous={BE_TARGET: {CPU_QUOTA: "120000"}}))
    assert tuple(s.values for s in recovered.settings) == ({CPU_QUOTA: "-1"},)
