"""Resctrl: resctrl_reconcile_test.go vectors (reference TV-3-27) and the class/pod groups."""

from __future__ import annotations

import dataclasses
import json

import pytest

from streams.actuation import GROUP_REMOVE, L3_END, L3_START, MB_PERCENT, TASKS_PODS
from streams.nodeqos.plugins.resctrl import Resctrl, l3_mask, pod_schemata
from tests.streams.nodeqos.support import pod, qos_strategy, snapshot


@pytest.mark.parametrize("cbm, start, end, expected", [
    pytest.param(0xff, 0, 100, "ff", id="ff-0-100"),
    pytest.param(0x3ff, 10, 80, "fe", id="3ff-10-80"),
    pytest.param(0x7ff, 10, 50, "3c", id="7ff-10-50"),
    pytest.param(0x3ff, 0, 30, "7", id="3ff-0-30"),
    pytest.param(0x3ff, 10, 85, "1fe", id="3ff-10-85"),
])
def test_calculate_cat_l3_mask_value(cbm, start, end, expected):
    """Test_calculateCatL3MaskValue (TV-3-27)."""
    assert l3_mask(cbm, start, end) == expected


@pytest.mark.parametrize("cbm, start, end", [(0x101, 0, 100), (4, 0, 100), (0xff, -10, 50), (0xff, 30, 30)])
def test_calculate_cat_l3_mask_value_rejects(cbm, start, end):
    with pytest.raises(ValueError):
        l3_mask(cbm, start, end)


def test_default_schemata_limit_be_to_30_percent_of_the_llc():
    settings = {s.target_id: s.values for s in Resctrl().plan(snapshot(qos_strategy())).settings}
    assert settings == {
        "LSR": {L3_START: "0", L3_END: "100", MB_PERCENT: "100", TASKS_PODS: ""},
        "LS": {L3_START: "0", L3_END: "100", MB_PERCENT: "100", TASKS_PODS: ""},
        "BE": {L3_START: "0", L3_END: "30", MB_PERCENT: "100", TASKS_PODS: ""},
    }


def test_enabled_classes_take_their_pods_and_an_annotated_pod_gets_its_own_group():
    strategy = qos_strategy(resource_qos_config={"clusterStrategy": {
        "beClass": {"resctrlQOS": {"enable": True, "catRangeStartPercent": 10, "catRangeEndPercent": 50,
                                   "mbaPercent": 80}}}})
    pods = {"ns/b1": pod("BE", "u-b1"), "ns/b0": pod("BE", "u-b0"), "ns/ls": pod("LS", "u-ls"),
            "ns/own": pod("BE", "u-own", annotations={
                "node.koordinator.sh/resctrl": '{"llc": {"schemata": {"range": [20, 60]}}, "mb": {"schemata": {"percent": 40}}}'})}
    settings = {s.key: s.values for s in Resctrl().plan(snapshot(strategy, pods=pods)).settings}
    assert settings[("qos", "BE", "resctrl")] == {L3_START: "10", L3_END: "50", MB_PERCENT: "80",
                                                  TASKS_PODS: "u-b0,u-b1"}
    assert settings[("qos", "LS", "resctrl")][TASKS_PODS] == ""
    assert settings[("pod", "u-own", "resctrl")] == {L3_START: "20", L3_END: "60", MB_PERCENT: "40",
                                                     TASKS_PODS: "u-own"}


@pytest.mark.parametrize("annotation, expected", [
    ('{"mb": {"schemata": {"percent": 35}}}', (0, 100, 35)),
    ('{"llc": {"schemata": {"range": [30, 20]}}}', None),
    ("nope", None),
])
def test_pod_schemata(annotation, expected):
    """TestGetResctrlInfo: what a pod's annotation asks for."""
    assert pod_schemata(annotation) == expected


GONE = "u-gone"
ANNOTATED = {"node.koordinator.sh/resctrl": '{"llc": {"schemata": {"range": [0, 30]}}}'}
POD_GROUP = {L3_START: "0", L3_END: "30", MB_PERCENT: "100", TASKS_PODS: GONE}


@pytest.mark.parametrize("pods, previous, expected", [
    pytest.param({}, {("pod", GONE, "resctrl"): POD_GROUP}, [GONE], id="pod-left"),
    pytest.param({"ns/p": pod("LS", GONE)}, {("pod", GONE, "resctrl"): POD_GROUP}, [GONE], id="annotation-gone"),
    pytest.param({"ns/p": pod("LS", GONE, annotations={"node.koordinator.sh/resctrl": "nope"})},
                 {("pod", GONE, "resctrl"): POD_GROUP}, [GONE], id="annotation-broken"),
    pytest.param({"ns/p": pod("LS", GONE, annotations=ANNOTATED)}, {("pod", GONE, "resctrl"): POD_GROUP}, [],
                 id="still-annotated"),
    pytest.param({}, {("pod", GONE, "resctrl"): {GROUP_REMOVE: "1"}}, [], id="removed-already"),
    pytest.param({}, {("pod", GONE, "cgroup"): {"cpu.cfs_quota_us": "-1"}}, [], id="not-a-resctrl-target"),
])
def test_a_pod_group_no_longer_planned_is_removed_once(pods, previous, expected):
    """``RemoveUnusedResctrlPath`` / ``RemovePodResctrlResources``, as a planned ``group.remove``."""
    plan = Resctrl().plan(snapshot(qos_strategy(), pods=pods, previous=previous))
    assert [s.target_id for s in plan.settings if s.values == {GROUP_REMOVE: "1"}] == expected


def _on_node(shot, policy):
    annotations = {"kubelet.koordinator.sh/cpu-manager-policy": json.dumps({"policy": policy})} if policy else {}
    return dataclasses.replace(shot, node=dataclasses.replace(shot.node, annotations=annotations))


@pytest.mark.parametrize("policy, labels, group", [
    pytest.param("static", {}, "LSR", id="static-guaranteed-is-lsr"),
    pytest.param("none", {}, "LS", id="none-guaranteed-is-ls"),
    pytest.param(None, {}, "LS", id="unknown-policy-is-none"),
    pytest.param("none", {"koordinator.sh/qosClass": "LSR"}, "LSR", id="label-wins"),
])
def test_a_guaranteed_pod_joins_lsr_only_under_the_static_cpu_manager_policy(policy, labels, group):
    """Koordinator 1.0: Guaranteed is LSR when kubelet's CPU manager policy is static, LS when none."""
    enabled = {"resctrlQOS": {"enable": True}}
    strategy = qos_strategy(resource_qos_config={"clusterStrategy": {"lsrClass": enabled, "lsClass": enabled}})
    shot = _on_node(snapshot(strategy, pods={"ns/g": pod("LSR", "u-g", labels=labels)}), policy)
    tasks = {s.target_id: s.values[TASKS_PODS] for s in Resctrl().plan(shot).settings if s.target_kind == "qos"}
    assert tasks == {"LSR": "", "LS": "", "BE": "", group: "u-g"}


def test_the_rdt_resctrl_gate_is_on_by_default_and_off_plans_nothing():
    """The v1.6 article's "enable the Resctrl feature in the Koordlet's feature-gate": ``RdtResctrl``, on in
    Koordinator."""
    assert Resctrl().enabled is True
    assert Resctrl(enabled=False).plan(snapshot()).settings == ()
