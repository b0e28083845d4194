"""CPUSet: koordlet's cpuset hook (``rule.go`` / ``cpuset.go``) and ``calCPUSharePools``, and the LSE/LSR
pools of CPUSuppress' cpuset pick (``adjustByCPUSet``, ``calcBECPUSet``)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from streams.actuation import CPU_QUOTA, CPUSET_CPUS, HOSTAPP_PATH, MECHANISM_CGROUP, TARGET_HOSTAPP, TARGET_POD
from streams.koordinator.annotations import ANNOTATION_NODE_RESERVATION, ANNOTATION_RESOURCE_STATUS
from streams.koordinator.classes import QOS_BE, QOS_LS, QOS_LSE, QOS_LSR, QOS_NONE, QOS_SYSTEM
from streams.nodeqos import podmeta
from streams.nodeqos.plugins import cpuset
from streams.nodeqos.plugins.cpuset import CPUSet, CPUSetArgs, pod_cpusets, share_pool
from streams.nodeqos.plugins.cpusuppress import BE_TARGET, CPUSuppress, be_cpuset, pinned_classes
from streams.noderesource.views import BAD_RESOURCE_STATUS, cpuset_of
from tests.streams.nodeqos.support import metric, pod, qos_strategy, replace, snapshot


def pinned(qos: str, uid: str | None, cpus: str) -> object:
    return dataclasses.replace(pod(qos, uid), cpuset=cpus)


def values(plan) -> dict[str, dict[str, str]]:
    assert all(s.target_kind == TARGET_POD and s.mechanism == MECHANISM_CGROUP for s in plan.settings)
    return {s.target_id: dict(s.values) for s in plan.settings}


MIXED = {
    "default/lse": pinned(QOS_LSE, "uid-lse", "0-3"),
    "default/lsr": pinned(QOS_LSR, "uid-lsr", "4,5"),
    "default/lsr-shared": pod(QOS_LSR, "uid-lsr-shared"),
    "default/lse-shared": pod(QOS_LSE, "uid-lse-shared"),
    "default/ls": pod(QOS_LS, "uid-ls"),
    "default/system": pod(QOS_SYSTEM, "uid-system"),
    "default/none": pod(QOS_NONE, "uid-none"),
    "default/be": pod(QOS_BE, "uid-be"),
}


def test_pinned_pods_get_their_cpuset_and_no_quota_the_others_the_ls_share_pool():
    plan = CPUSet().plan(snapshot(cpu=16_000, pods=MIXED))
    assert values(plan) == {
        "uid-lse": {CPUSET_CPUS: "0-3", CPU_QUOTA: "-1"},
        "uid-lsr": {CPUSET_CPUS: "4-5", CPU_QUOTA: "-1"},
        **{uid: {CPUSET_CPUS: "6-15"} for uid in ("uid-lsr-shared", "uid-lse-shared", "uid-ls", "uid-system",
                                                  "uid-none")},
    }
    assert [s.target_id for s in plan.settings] == [
        "uid-ls", "uid-lse", "uid-lse-shared", "uid-lsr", "uid-lsr-shared", "uid-none", "uid-system"]


def test_the_share_pool_leaves_out_reserved_cpus():
    reservation = json.dumps({"reservedCPUs": "0,15"})
    snap = snapshot(cpu=16_000, pods=MIXED, annotations={ANNOTATION_NODE_RESERVATION: reservation})
    assert values(CPUSet().plan(snap))["uid-ls"] == {CPUSET_CPUS: "6-14"}


def test_a_pool_of_every_cpu_is_sent_only_to_a_pod_that_had_a_cpuset():
    """The kubelet's pod cgroup holds every CPU already (as ``planner.BASELINE``): no pin, no actuation."""
    pods = {"default/ls": pod(QOS_LS, "uid-ls"), "default/ls2": pod(QOS_LS, "uid-ls2")}
    assert CPUSet().plan(snapshot(cpu=8000, pods=pods)).settings == ()
    previous = {(TARGET_POD, "uid-ls", MECHANISM_CGROUP): {CPUSET_CPUS: "2-7", CPU_QUOTA: "-1"}}
    assert values(CPUSet().plan(snapshot(cpu=8000, pods=pods, previous=previous))) == {
        "uid-ls": {CPUSET_CPUS: "0-7"}}


def test_an_unpinned_pod_gets_the_pool_back():
    pods = {"default/lse": pinned(QOS_LSE, "uid-lse", "0-1"), "default/ls": pod(QOS_LS, "uid-ls")}
    before = values(CPUSet().plan(snapshot(cpu=4000, pods=pods)))
    assert before == {"uid-lse": {CPUSET_CPUS: "0-1", CPU_QUOTA: "-1"}, "uid-ls": {CPUSET_CPUS: "2-3"}}
    previous = {(TARGET_POD, uid, MECHANISM_CGROUP): v for uid, v in before.items()}
    pods["default/lse"] = pod(QOS_LSE, "uid-lse")
    assert values(CPUSet().plan(snapshot(cpu=4000, pods=pods, previous=previous))) == {
        "uid-lse": {CPUSET_CPUS: "0-3"}, "uid-ls": {CPUSET_CPUS: "0-3"}}


def test_every_cpu_pinned_leaves_no_pool_to_write():
    pods = {"default/lse": pinned(QOS_LSE, "uid-lse", "0-3"), "default/ls": pod(QOS_LS, "uid-ls")}
    assert values(CPUSet().plan(snapshot(cpu=4000, pods=pods))) == {"uid-lse": {CPUSET_CPUS: "0-3", CPU_QUOTA: "-1"}}


HOST_APPS = {"applications": [{"name": "nginx", "qos": "LS"}, {"name": "agent", "qos": "LSR"},
                               {"name": "shipper", "qos": "BE"}]}


def test_ls_host_applications_get_the_share_pool_and_other_classes_nothing():
    """``getHostAppCpuset``: LS only (koordlet refuses the rest); the pool of every CPU is the baseline."""
    pods = {"default/lse": pinned(QOS_LSE, "uid-lse", "0-1")}
    plan = CPUSet().plan(snapshot(qos_strategy(host_application_config=HOST_APPS), cpu=4000, pods=pods))
    assert {(s.target_kind, s.target_id): dict(s.values) for s in plan.settings if s.target_kind == TARGET_HOSTAPP} \
        == {(TARGET_HOSTAPP, "nginx"): {HOSTAPP_PATH: "host-latency-sensitive/nginx", CPUSET_CPUS: "2-3"}}
    unpinned = snapshot(qos_strategy(host_application_config=HOST_APPS), cpu=4000)
    assert CPUSet().plan(unpinned).settings == ()
    previous = {(TARGET_HOSTAPP, "nginx", MECHANISM_CGROUP): {HOSTAPP_PATH: "host-latency-sensitive/nginx",
                                                              CPUSET_CPUS: "2-3"}}
    [back] = CPUSet().plan(dataclasses.replace(unpinned, previous=previous)).settings
    assert back.values == {HOSTAPP_PATH: "host-latency-sensitive/nginx", CPUSET_CPUS: "0-3"}


def test_any_non_be_pod_with_a_cpuset_is_pinned_and_every_cpuset_leaves_the_pool():
    """Koordinator applies the annotation's cpuset before its QoS rule and ``calCPUSharePools`` removes every
    pod's; a BE pod stays with CPUSuppress, a pod without UID has no cgroup to address."""
    pods = {"default/ls-pinned": pinned(QOS_LS, "uid-ls-pinned", "0"), "default/be": pinned(QOS_BE, "uid-be", "1"),
            "default/no-uid": pinned(QOS_LSE, None, "2"), "default/ls": pod(QOS_LS, "uid-ls")}
    assert values(CPUSet().plan(snapshot(cpu=8000, pods=pods))) == {
        "uid-ls-pinned": {CPUSET_CPUS: "0", CPU_QUOTA: "-1"}, "uid-ls": {CPUSET_CPUS: "3-7"}}
    assert CPUSet().ignored(snapshot(cpu=8000, pods=pods)) == {"default/no-uid": cpuset.REASON_NO_UID}


@pytest.mark.parametrize("text", ["0-", "-1", "a", "3-1", " 1", "1,,2", "1,", "0-3 ", "+1", "8192", "1-99999", "١"])
def test_a_cpuset_that_does_not_parse_is_ignored_with_a_reason_and_stays_in_the_pool(text):
    pods = {"default/lse": pinned(QOS_LSE, "uid-lse", text), "default/other": pinned(QOS_LSR, "uid-lsr", "0"),
            "default/ls": pod(QOS_LS, "uid-ls")}
    snap = snapshot(cpu=4000, pods=pods)
    assert values(CPUSet().plan(snap)) == {"uid-lsr": {CPUSET_CPUS: "0", CPU_QUOTA: "-1"},
                                           "uid-ls": {CPUSET_CPUS: "1-3"}}
    _, ignored = pod_cpusets(snap)
    assert list(ignored) == ["default/lse"] and ignored["default/lse"].startswith(podmeta.REASON_BAD_CPUSET)
    assert CPUSet().ignored(snap) == ignored


@pytest.mark.parametrize("annotation", ["{", "[]", '"0-3"', '{"cpuset": 3}', '{"cpuset": ["0"]}'])
def test_a_resource_status_that_does_not_parse_is_ignored_with_its_reason(annotation):
    status = cpuset_of({ANNOTATION_RESOURCE_STATUS: annotation})
    assert status == BAD_RESOURCE_STATUS
    pods = {"default/lse": pinned(QOS_LSE, "uid-lse", status), "default/ls": pod(QOS_LS, "uid-ls")}
    snap = snapshot(cpu=4000, pods=pods)
    assert CPUSet().plan(snap).settings == ()
    assert pod_cpusets(snap) == ({}, {"default/lse": podmeta.REASON_BAD_STATUS})


@pytest.mark.parametrize("annotations, expected", [
    pytest.param({}, "", id="absent"),
    pytest.param({ANNOTATION_RESOURCE_STATUS: ""}, "", id="empty"),
    pytest.param({ANNOTATION_RESOURCE_STATUS: "null"}, "", id="null"),
    pytest.param({ANNOTATION_RESOURCE_STATUS: '{"numaNodeResources": [{"node": 1}]}'}, "", id="numa-only"),
    pytest.param({ANNOTATION_RESOURCE_STATUS: '{"cpuset": null}'}, "", id="null-cpuset"),
    pytest.param({ANNOTATION_RESOURCE_STATUS: '{"cpuset": "0-3", "numaNodeResources": [{"node": 0}]}'}, "0-3",
                 id="cpuset"),
    pytest.param({ANNOTATION_RESOURCE_STATUS: '{"cpuset": "x"}'}, "x", id="kept-as-written"),
])
def test_cpuset_of_the_resource_status(annotations, expected):
    assert cpuset_of(annotations) == expected


@pytest.mark.parametrize("text, expected", [
    ("", frozenset()), ("0", {0}), ("0-3,8", {0, 1, 2, 3, 8}), ("3,1,1-2", {1, 2, 3}), ("8191", {8191}),
])
def test_parse_cpu_list(text, expected):
    assert podmeta.parse_cpu_list(text) == frozenset(expected)


def test_args_gates():
    pods = {"default/lse": pinned(QOS_LSE, "uid-lse", "0-1"), "default/ls": pod(QOS_LS, "uid-ls")}
    snap = snapshot(cpu=4000, pods=pods)
    assert CPUSet(enabled=False).plan(snap).settings == ()
    assert values(CPUSet(CPUSetArgs(unset_cpu_quota=False)).plan(snap))["uid-lse"] == {CPUSET_CPUS: "0-1"}
    with pytest.raises(ValueError):
        CPUSet(CPUSetArgs(unset_cpu_quota="yes"))


def test_share_pool_is_the_node_less_every_pin():
    pods = {"default/a": pinned(QOS_LSE, "a", "1"), "default/b": pinned(QOS_LSR, "b", "3-4")}
    snap = snapshot(cpu=6000, pods=pods)
    pins, _ = pod_cpusets(snap)
    assert share_pool(snap, pins) == frozenset({0, 2, 5})


# CPUSuppress with pinned pods: LSE CPUs never go to BE; LSR CPUs contribute in proportion.

PROCESSORS = [(cpu, cpu, 0, 0) for cpu in range(8)]


@pytest.mark.parametrize("cpus, pins, expected", [
    pytest.param(4, {}, [0, 1, 2, 3], id="no-pins"),
    pytest.param(4, {0: QOS_LSE, 1: QOS_LSE}, [2, 3, 4, 5], id="lse-left-out"),
    pytest.param(4, {0: QOS_LSE, 1: QOS_LSE, 2: QOS_LSR, 3: QOS_LSR}, [2, 4, 5, 6], id="lsr-in-proportion"),
    pytest.param(4, {c: QOS_LSE for c in range(8)}, [], id="everything-lse"),
    pytest.param(3, {0: QOS_LS}, [0, 1, 2], id="pinned-ls-is-shared"),
])
def test_be_cpuset_pools(cpus, pins, expected):
    """``adjustByCPUSet``: ``lsrNum = cpus * |LSR| / (|LSR| + |LS|)`` picked from LSR CPUs, the rest from LS."""
    assert be_cpuset(cpus, PROCESSORS, pins) == expected


def test_suppress_keeps_be_off_lse_cpus_and_recovers_without_them():
    """20 CPUs, threshold 70 %, node using 12 cores -> 2 BE CPUs: none of the LSE pod's 0-15, none of the
    LSR pod's 16 (2 * 1 // 4 = 0 from LSR); a cpuset that does not parse pins nothing."""
    pods = {"default/lse": pinned(QOS_LSE, "uid-lse", "0-15"), "default/lsr": pinned(QOS_LSR, "uid-lsr", "16"),
            "default/bad": pinned(QOS_LSE, "uid-bad", "17-")}
    strategy = replace(qos_strategy(), enable=True, cpu_suppress_threshold_percent=70)
    snap = snapshot(strategy, pods=pods, node_metric=metric(node_usage={"cpu": 12_000, "memory": 1}))
    assert pinned_classes(snap) == {**{c: QOS_LSE for c in range(16)}, 16: QOS_LSR}
    [setting] = CPUSuppress().plan(snap).settings
    assert setting.values == {CPUSET_CPUS: "17-18"}
    disabled = snapshot(pods=pods, previous={BE_TARGET: {CPUSET_CPUS: "16-17"}},
                        node_metric=metric(node_usage={"cpu": 1, "memory": 1}))
    assert [s.values for s in CPUSuppress().plan(disabled).settings] == [{CPUSET_CPUS: "16-19"}]
