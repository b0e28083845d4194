"""Group identity, cgroup idle and core scheduling: groupidentity/rule_test.go and coresched/helper_test.go
vectors (reference TV-3-30, TV-3-31)."""

from __future__ import annotations

import json

import pytest

from streams.actuation import CPU_BVT_WARP, CPU_IDLE
from streams.nodeaggregate import node as aggregate
from streams.nodeaggregate.settings import DEFAULT_SETTINGS
from streams.nodeqos.framework import CORE_SCHED_GROUP, CORE_SCHED_NONE
from streams.nodeqos.plugins.cgroupidle import CgroupIdle, bvt_with_annotation, core_sched_group, pod_bvt
from streams.sloconfig.configmap import DEFAULT_CONFIG, parse_slo_config
from tests.streams.noderesource.support import G, configmap, event, metric_record, node_record
from tests.streams.nodeqos.seedpods import bound, seed_pod
from tests.streams.nodeqos.support import pod, qos_strategy, snapshot


def _qos(policy="groupIdentity", lsr=True, ls=True, be=True, be_idle=0, ls_identity=2):
    return qos_strategy(resource_qos_config={"clusterStrategy": {
        "policies": {"cpuPolicy": policy},
        "lsrClass": {"cpuQOS": {"enable": lsr, "groupIdentity": 2}},
        "lsClass": {"cpuQOS": {"enable": ls, "groupIdentity": ls_identity}},
        "beClass": {"cpuQOS": {"enable": be, "groupIdentity": -1, "schedIdle": be_idle}}}}).qos


@pytest.mark.parametrize("strategy, expected", [
    pytest.param(_qos(), {"LSE": 2, "LSR": 2, "LS": 2, "BE": -1, "Guaranteed": 2, "Burstable": 2, "BestEffort": -1},
                 id="Test_bvtPlugin_parseRule/all-enabled"),
    pytest.param(_qos(lsr=False), {"LSE": 0, "LSR": 0, "LS": 2, "BE": -1, "Guaranteed": 2, "Burstable": 2,
                                   "BestEffort": -1}, id="Test_bvtPlugin_parseRule/lsr-disabled"),
    pytest.param(_qos(lsr=False, ls=False), {"LSE": 0, "LSR": 0, "LS": 0, "BE": -1, "Guaranteed": 0, "Burstable": 0,
                                             "BestEffort": -1}, id="Test_bvtPlugin_parseRule/lsr-ls-disabled"),
])
def test_pod_bvt(strategy, expected):
    """koordlet's rule, which is the kubelet ``static`` policy's (Guaranteed is LSR there)."""
    got = {qos: pod_bvt(strategy, qos, None, policy="static") for qos in ("LSE", "LSR", "LS", "BE")}
    got.update({kube: pod_bvt(strategy, "", kube, policy="static") for kube in ("Guaranteed", "Burstable",
                                                                                 "BestEffort")})
    assert got == expected


@pytest.mark.parametrize("strategy, policy, expected", [
    pytest.param(_qos(ls_identity=1), "static", 2, id="static-lsr"),
    pytest.param(_qos(ls_identity=1), "none", 1, id="none-ls"),
    pytest.param(_qos(ls_identity=1), "", 1, id="unknown-is-none"),
    pytest.param(_qos(ls=False), "static", 2, id="static-lsr-while-ls-disabled"),
    pytest.param(_qos(ls=False), "none", 0, id="none-ls-disabled"),
])
def test_guaranteed_pod_takes_lsr_only_under_the_static_cpu_manager_policy(strategy, policy, expected):
    """Koordinator 1.0's QoS table: Guaranteed is LSR with kubelet's static policy, LS with none."""
    assert pod_bvt(strategy, "", "Guaranteed", policy=policy) == expected


@pytest.mark.parametrize("annotation, qos, expected", [
    pytest.param('{"enable":true,"groupIdentity":-1}', "LS", -1, id="ls-override"),
    pytest.param('{"groupIdentity":-1}', "LS", 0, id="ls-override-without-enable-disables"),
    pytest.param('{"enable":true,"groupIdentity":-1}', "LSR", 2, id="lsr-not-overridden"),
    pytest.param('{"enable":true,"groupIdentity":5}', "LS", None, id="bad-value-fails"),
    pytest.param('not json', "LS", None, id="bad-json-fails"),
])
def test_cpu_qos_annotation(annotation, qos, expected):
    """TestBvtPlugin_SetPodBvtValue: annotation overrides only for LS pods."""
    assert bvt_with_annotation(2, qos, annotation) == expected


ENABLED_CORE = _qos(policy="coreSched", be=False)


@pytest.mark.parametrize("strategy, qos, kube, labels, expected", [
    pytest.param(ENABLED_CORE, "LS", None, {"koordinator.sh/core-sched-group-id": "group-xxx"},
                 (True, "group-xxx-expeller"), id="ls-with-group"),
    pytest.param(_qos(policy="coreSched"), "BE", None, {}, (True, ""), id="be-without-group"),
    pytest.param(ENABLED_CORE, "", "Burstable", {}, (True, "-expeller"), id="burstable-no-labels"),
    pytest.param(ENABLED_CORE, "LS", None, {"koordinator.sh/core-sched-policy": "exclusive"}, (True, "xxx-expeller"),
                 id="exclusive-uses-uid"),
    pytest.param(ENABLED_CORE, "", "Guaranteed", {"koordinator.sh/core-sched-policy": "none"}, (False, "-expeller"),
                 id="policy-none"),
    pytest.param(_qos(policy="groupIdentity"), "LS", None, {"koordinator.sh/core-sched-group-id": "group-xxx"},
                 (False, "group-xxx"), id="disabled-rule"),
    pytest.param(ENABLED_CORE, "LS", None, {"koordinator.sh/coreSchedulingGroup": "xxx-group"},
                 (True, "xxx-group-expeller"), id="v1.5-article-label"),
    pytest.param(ENABLED_CORE, "LS", None, {"koordinator.sh/coreSchedulingGroup": "article",
                                            "koordinator.sh/core-sched-group-id": "source"},
                 (True, "source-expeller"), id="source-label-wins"),
])
def test_core_sched_group(strategy, qos, kube, labels, expected):
    """Test_isPodEnabled (TV-3-31)."""
    assert core_sched_group(strategy, qos, kube, "xxx", tuple(labels.items()), policy="static") == expected


def test_plan_writes_be_dir_pods_and_cookies():
    strategy = qos_strategy(resource_qos_config={"clusterStrategy": {
        "policies": {"cpuPolicy": "coreSched"}, "lsClass": {"cpuQOS": {"enable": True, "coreExpeller": True}},
        "beClass": {"cpuQOS": {"enable": True, "schedIdle": 1}}}})
    pods = {"ns/ls": pod("LS", "u-ls", labels={"koordinator.sh/qosClass": "LS"}),
            "ns/be": pod("BE", "u-be", labels={"koordinator.sh/qosClass": "BE"})}
    settings = {s.target_id: s.values for s in CgroupIdle().plan(snapshot(strategy, pods=pods)).settings}
    assert settings == {"BE": {CPU_BVT_WARP: "0", CPU_IDLE: "1"},
                        "u-ls": {CPU_BVT_WARP: "0", CORE_SCHED_GROUP: "-expeller"},
                        "u-be": {CPU_BVT_WARP: "0", CORE_SCHED_GROUP: ""}}


def test_default_config_plans_only_kernel_defaults():
    pods = {"ns/ls": pod("LS", "u-ls")}
    settings = CgroupIdle().plan(snapshot(qos_strategy(), pods=pods)).settings
    assert {v for s in settings for v in s.values.values()} == {"0", CORE_SCHED_NONE}


GI_CONFIG = parse_slo_config(configmap(**{"resource-qos-config": json.dumps({"clusterStrategy": {
    "lsrClass": {"cpuQOS": {"enable": True, "groupIdentity": 2}},
    "lsClass": {"cpuQOS": {"enable": True, "groupIdentity": 2}},
    "beClass": {"cpuQOS": {"enable": True, "groupIdentity": -1}}}})}), DEFAULT_CONFIG)


def _pod_bvt_after_binding(labels):
    """The v1.6 article's ``koordinator.sh/cpuQOS: '{"groupIdentity": 1}'`` pod (with ``labels``) bound to a
    node beside an LS pod without the annotation: each pod's planned ``cpu.bvt_warp_ns`` (None: not emitted)."""
    article = seed_pod("001", 19, name="app", uid="u-article", labels=labels)
    plain = seed_pod("001", 19, name="plain", uid="u-plain", labels={"koordinator.sh/qosClass": "LS"},
                     annotations={})
    state, bvt = aggregate.initial_state(), {}
    for ev in (event("Node", "n1", node_record("n1")), bound(article, "n1"), bound(plain, "n1"),
               event("NodeMetric", "n1", metric_record("n1", node_usage={"cpu": 1000, "memory": G}))):
        state, out = aggregate.handle(state, ev, GI_CONFIG, DEFAULT_SETTINGS)
        bvt.update({r["targetId"]: r["values"].get(CPU_BVT_WARP) for s, r in out
                    if s == "Actuation" and r["targetKind"] == "pod" and r["mechanism"] == "cgroup"})
    return bvt.get("u-article"), bvt.get("u-plain")


@pytest.mark.parametrize("labels, expected", [
    pytest.param({}, "-1", id="as-in-the-article-besteffort-keeps-be"),
    pytest.param({"koordinator.sh/qosClass": "BE"}, "-1", id="be-is-never-raised"),
    pytest.param({"koordinator.sh/qosClass": "LSR"}, "2", id="lsr-is-not-overridden"),
    pytest.param({"koordinator.sh/qosClass": "LS"}, None, id="ls-without-enable-is-0"),
])
def test_the_v16_articles_cpu_qos_annotation(labels, expected):
    """SetPodBvtValue: the annotation overrides only a pod labelled LS, and without ``"enable": true`` it sets 0
    (the kernel default, so nothing is emitted); the article's pod has no QoS label and no resources, so it is
    BestEffort and keeps BE's -1."""
    assert _pod_bvt_after_binding(labels) == (expected, "2")
