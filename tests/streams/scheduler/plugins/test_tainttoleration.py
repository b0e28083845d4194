"""TaintToleration: NoSchedule/NoExecute taints against tolerations, with kube-scheduler's reason."""

import numpy as np
import pytest

from streams.scheduler.framework import CycleState
from streams.scheduler.plugins.tainttoleration import NAME, REASON_UNTOLERATED
from tests.streams.scheduler.support import decisions, k8s_node, k8s_pod, node, node_scores, plugin_of, pod_info, run

DEDICATED = REASON_UNTOLERATED.format(key="dedicated", value="gpu")
UNREACHABLE = REASON_UNTOLERATED.format(key="node.kubernetes.io/unreachable", value="")

TAINTS = {"gpu": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
          "gone": [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
                   {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
          "soft": [{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}]}


@pytest.mark.parametrize("tolerations, passing, reasons", [
    pytest.param([], ["soft"], {DEDICATED: ["gpu"], UNREACHABLE: ["gone"]},
                 id="nothing tolerated: PreferNoSchedule never filters"),
    pytest.param([{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}], ["gpu", "soft"],
                 {UNREACHABLE: ["gone"]}, id="Equal toleration"),
    pytest.param([{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}], ["soft"],
                 {DEDICATED: ["gpu", "gone"]}, id="the first untolerated taint is named"),
    pytest.param([{"operator": "Exists"}], ["gpu", "gone", "soft"], {}, id="Exists without a key tolerates everything"),
])
def test_taints_and_tolerations(tolerations, passing, reasons):
    domain, _ = run(*(node(name, taints=t) for name, t in TAINTS.items()))
    plugin = plugin_of(domain, NAME)
    result = plugin.filter(CycleState(), pod_info(k8s_pod("p", tolerations=tolerations)), np.ones(3, dtype=bool))
    names = list(TAINTS)
    assert [n for n, ok in zip(names, result.passed) if ok] == passing
    assert {r: [n for n, hit in zip(names, mask) if hit] for r, mask in result.reasons} == reasons


def test_untolerated_taints_are_reported_when_no_node_fits():
    nodes = [k8s_node("gpu", {"cpu": "4", "pods": "10"}, taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
             k8s_node("gone", {"cpu": "4", "pods": "10"}, taints=[{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}])]
    _, out = run(*nodes, k8s_pod("p", requests={"cpu": "1"}))
    assert decisions(out)[-1]["message"].startswith(f"0/2 nodes are available: 1 {DEDICATED}, 1 {UNREACHABLE}.")


def _prefer(key: str, value: str, effect: str = "PreferNoSchedule") -> dict:
    return {"key": key, "value": value, "effect": effect}


def _tolerate(key: str, value: str, effect: str = "PreferNoSchedule") -> dict:
    return {"key": key, "operator": "Equal", "value": value, "effect": effect}


ARM, SSD = _prefer("cpu-type", "arm64"), _prefer("disk-type", "ssd")


@pytest.mark.parametrize("tolerations, taints, expected", [
    pytest.param([_tolerate("foo", "bar")], {"nodeA": [_prefer("foo", "bar")], "nodeB": [_prefer("foo", "blah")]},
                 [100, 0], id="node with taints tolerated by the pod, gets a higher score than those node with "
                              "intolerable taints"),
    pytest.param([_tolerate("cpu-type", "arm64"), _tolerate("disk-type", "ssd")],
                 {"nodeA": [], "nodeB": [ARM], "nodeC": [ARM, SSD]}, [100, 100, 100],
                 id="the nodes that all of their taints are tolerated by the pod, get the same score, no matter how "
                    "many tolerable taints a node has"),
    pytest.param([_tolerate("foo", "bar")], {"nodeA": [], "nodeB": [ARM], "nodeC": [ARM, SSD]}, [100, 50, 0],
                 id="the more intolerable taints a node has, the lower score it gets."),
    pytest.param([_tolerate("cpu-type", "arm64", "NoSchedule"), _tolerate("disk-type", "ssd", "NoSchedule")],
                 {"nodeA": [], "nodeB": [_prefer("cpu-type", "arm64", "NoSchedule")], "nodeC": [ARM, SSD]},
                 [100, 100, 0], id="only taints and tolerations that have effect PreferNoSchedule are checked by "
                                   "taints-tolerations priority function"),
    pytest.param([], {"nodeA": [], "nodeB": [ARM]}, [100, 0],
                 id="Default behaviour No taints and tolerations, lands on node with no taints"),
])
def test_TestTaintTolerationScore(tolerations, taints, expected):
    """kube-scheduler v1.34 ``TestTaintTolerationScore`` (the cases without the comparison operators of a later
    release), through Score and NormalizeScore over every node."""
    domain, _ = run(*(node(name, taints=t) for name, t in taints.items()))
    plugin = plugin_of(domain, NAME)
    assert node_scores(plugin, CycleState(), pod_info(k8s_pod("pod1", tolerations=tolerations)),
                       np.ones(len(taints), dtype=bool)) == expected


def test_a_pod_lands_on_the_node_with_fewer_intolerable_prefer_no_schedule_taints():
    nodes = [k8s_node("spot", {"cpu": "16", "pods": "10"}, taints=[ARM, SSD]),
             k8s_node("plain", {"cpu": "8", "pods": "10"}, taints=[ARM])]
    _, out = run(*nodes, k8s_pod("p", requests={"cpu": "1"}))
    assert decisions(out)[-1]["nodeName"] == "plain"
