"""Resctrl: resctrl_reconcile_test.go vectors (reference TV-3-27) and the class/pod groups."""

from __future__ import annotations

import pytest

from streams.actuation import L3_END, L3_START, MB_PERCENT, TASKS_PODS
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
