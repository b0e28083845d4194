"""Network QoS: terwayqos_test.go / types_test.go vectors (reference TV-3-35..TV-3-38), in bits per second."""

from __future__ import annotations

import pytest

from streams.nodeqos.plugins.netqos import NetQoS, bandwidth, pod_limits, priority
from tests.streams.nodeqos.support import pod, qos_strategy, snapshot


@pytest.mark.parametrize("value, total, expected", [
    pytest.param(None, 100, 0, id="nil"),
    pytest.param("40", 100, 40, id="quantity-40-bits (terway: 5 bytes)"),
    pytest.param(50, 100, 50, id="percent"),
])
def test_parse_quantity(value, total, expected):
    """Test_parseQuantity (TV-3-35)."""
    assert bandwidth(value, total) == expected


def test_parse_quantity_above_total_fails():
    with pytest.raises(ValueError):
        bandwidth("808", 100)


def test_pod_annotation_keys_match_case_insensitively():
    """TestParseNetQoS (TV-3-36): 1000 / 2000 bits (terway's file: 125 / 250 bytes)."""
    assert pod_limits('{"IngressLimit":"1000","EgressLimit":"2000"}') == (1000, 2000)


@pytest.mark.parametrize("qos_label, kube, expected", [
    ("BE", None, 2), ("", "Guaranteed", 1), ("", "Burstable", 1), ("", "BestEffort", 2), ("", None, 0), ("SYSTEM", None, 0),
])
def test_priority(qos_label, kube, expected):
    """Test_getPodPrio (TV-3-38)."""
    assert priority(qos_label, kube) == expected


def test_terway_node_classes():
    """TestTerwayQoS (TV-3-37): total 100M, LS all 10M, BE all 20M (terway bytes: l1 1,250,000, l2 2,500,000)."""
    ls = {"enable": True, "ingressRequest": "10M", "ingressLimit": "10M", "egressRequest": "10M", "egressLimit": "10M"}
    be = {"enable": True, "ingressRequest": "20M", "ingressLimit": "20M", "egressRequest": "20M", "egressLimit": "20M"}
    strategy = qos_strategy(resource_qos_config={"clusterStrategy": {
        "policies": {"netQOSPolicy": "terway-qos"}, "lsClass": {"networkQOS": ls}, "beClass": {"networkQOS": be}}},
        system_config={"clusterStrategy": {"totalNetworkBandwidth": "100M"}})
    pods = {"ns/p": pod("BE", "u", labels={"koordinator.sh/qosClass": "BE"},
                        annotations={"koordinator.sh/networkQOS": '{"ingressLimit": "5M", "egressLimit": "6M"}'})}
    settings = {s.key: s.values for s in NetQoS().plan(snapshot(strategy, pods=pods)).settings}
    assert settings == {
        ("node", "test-node1", "tc"): {"total_bps": "100000000", "L1.request_bps": "10000000",
                                       "L1.limit_bps": "10000000", "L2.request_bps": "20000000",
                                       "L2.limit_bps": "20000000"},
        ("pod", "u", "tc"): {"priority": "2", "ingress.limit_bps": "5000000", "egress.limit_bps": "6000000"},
    }


def test_tc_policy_plans_nothing_without_a_total_and_percents_of_the_total_with_one():
    assert NetQoS().plan(snapshot(qos_strategy())).settings == ()
    strategy = qos_strategy(resource_qos_config={"clusterStrategy": {
        "lsClass": {"networkQOS": {"enable": True, "egressRequest": 40, "egressLimit": 100}}}},
        system_config={"clusterStrategy": {"totalNetworkBandwidth": "1G"}})
    [setting] = NetQoS().plan(snapshot(strategy)).settings
    assert setting.values == {"total_bps": "1000000000", "L1.request_bps": "400000000", "L1.limit_bps": "1000000000",
                              "L2.request_bps": "0", "L2.limit_bps": "0"}
