"""Network QoS: terwayqos_test.go / types_test.go vectors (reference TV-3-35..TV-3-38), in bits per second."""

from __future__ import annotations

import pytest

from streams.nodeqos.plugins.netqos import NetQoS, bandwidth, pod_limits, priority
from tests.streams.nodeqos.support import G, metric, pod, pod_usage, qos_strategy, snapshot


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


ANNOTATED = {"koordinator.sh/networkQOS": '{"ingressLimit": "5M", "egressLimit": "6M"}'}
PODS = {"ns/be": pod("BE", "u-be", labels={"koordinator.sh/qosClass": "BE"}, annotations=ANNOTATED),
        "ns/ls": pod("LS", "u-ls", labels={"koordinator.sh/qosClass": "LS"}),
        "ns/sys": pod("", "u-sys", labels={"koordinator.sh/qosClass": "SYSTEM"}),
        "ns/bad": pod("BE", "u-bad", annotations={"koordinator.sh/networkQOS": "{not json"})}
TERWAY = {"policies": {"netQOSPolicy": "terway-qos"}}
RUNNING = metric(pods=[pod_usage(*key.split("/"), 100, G) for key in PODS])
"""The NodeMetric reporting every pod of PODS running: pods get a tc target once their node reports them."""
TOTAL_1G = {"clusterStrategy": {"totalNetworkBandwidth": "1G"}}


def test_terway_node_classes():
    """TestTerwayQoS (TV-3-37): total 100M, LS all 10M, BE all 20M (terway bytes: l1 1,250,000, l2 2,500,000);
    every pod listed with its priority, limits only from the annotation, a pod whose annotation does not parse
    left out (``update`` skips it)."""
    ls = {"enable": True, "ingressRequest": "10M", "ingressLimit": "10M", "egressRequest": "10M", "egressLimit": "10M"}
    be = {"enable": True, "ingressRequest": "20M", "ingressLimit": "20M", "egressRequest": "20M", "egressLimit": "20M"}
    strategy = qos_strategy(resource_qos_config={"clusterStrategy": {
        **TERWAY, "lsClass": {"networkQOS": ls}, "beClass": {"networkQOS": be}}},
        system_config={"clusterStrategy": {"totalNetworkBandwidth": "100M"}})
    settings = {s.key: s.values for s in NetQoS().plan(snapshot(strategy, pods=PODS, node_metric=RUNNING)).settings}
    assert settings == {
        ("node", "test-node1", "tc"): {"total_bps": "100000000", "L1.request_bps": "10000000",
                                       "L1.limit_bps": "10000000", "L2.request_bps": "20000000",
                                       "L2.limit_bps": "20000000"},
        ("pod", "u-be", "tc"): {"priority": "2", "ingress.limit_bps": "5000000", "egress.limit_bps": "6000000"},
        ("pod", "u-ls", "tc"): {"priority": "1"},
        ("pod", "u-sys", "tc"): {"priority": "0"},
    }


def test_tc_policy_plans_nothing_without_a_total_and_percents_of_the_total_with_one():
    assert NetQoS().plan(snapshot(qos_strategy())).settings == ()
    strategy = qos_strategy(resource_qos_config={"clusterStrategy": {
        "lsClass": {"networkQOS": {"enable": True, "egressRequest": 40, "egressLimit": 100}}}},
        system_config={"clusterStrategy": {"totalNetworkBandwidth": "1G"}})
    [setting] = NetQoS().plan(snapshot(strategy)).settings
    assert setting.values == {"total_bps": "1000000000", "L1.request_bps": "400000000", "L1.limit_bps": "1000000000",
                              "L2.request_bps": "0", "L2.limit_bps": "0"}


@pytest.mark.parametrize("resource_qos, system", [
    pytest.param({}, {}, id="tc-default-config"),
    pytest.param({}, TOTAL_1G, id="tc-total-but-no-class-enabled"),
    pytest.param({"lsClass": {"networkQOS": {"enable": True}}}, {}, id="tc-class-enabled-but-no-total"),
    pytest.param({**TERWAY, "beClass": {"networkQOS": {"enable": True, "egressLimit": "2G"}}}, TOTAL_1G,
                 id="terway-limit-above-total-fails-the-node-file"),
])
def test_pods_get_no_tc_while_the_node_classes_are_not_in_force(resource_qos, system):
    """Pods are sorted into classes only where the node's classes are written (terway's pod file is written
    only while the hook is enabled)."""
    strategy = qos_strategy(resource_qos_config={"clusterStrategy": resource_qos}, system_config=system)
    assert NetQoS().plan(snapshot(strategy, pods=PODS, node_metric=RUNNING)).settings == ()


def test_tc_policy_lists_every_pod_once_the_classes_are_in_force():
    strategy = qos_strategy(resource_qos_config={"clusterStrategy": {"beClass": {"networkQOS": {"enable": True}}}},
                            system_config=TOTAL_1G)
    pods = {s.target_id: s.values for s in NetQoS().plan(snapshot(strategy, pods=PODS, node_metric=RUNNING)).settings
            if s.target_kind == "pod"}
    assert pods == {"u-be": {"priority": "2", "ingress.limit_bps": "5000000", "egress.limit_bps": "6000000"},
                    "u-ls": {"priority": "1"}, "u-sys": {"priority": "0"}}


def test_a_pod_its_node_does_not_report_running_gets_no_target_yet():
    """A pod is planned once its node's NodeMetric reports it: before, the kubelet may not have given it the
    address the agent classifies it by."""
    strategy = qos_strategy(resource_qos_config={"clusterStrategy": {"beClass": {"networkQOS": {"enable": True}}}},
                            system_config=TOTAL_1G)
    only_ls = metric(pods=[pod_usage("ns", "ls", 100, G)])
    planned = {s.target_id for s in NetQoS().plan(snapshot(strategy, pods=PODS, node_metric=only_ls)).settings
               if s.target_kind == "pod"}
    assert planned == {"u-ls"}
