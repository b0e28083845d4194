"""NodeAffinity: nodeSelector and required node affinity, with kube-scheduler's reason."""

import numpy as np
import pytest

from streams.scheduler.framework import Code, CycleState
from tests.streams.scheduler.support import decisions, k8s_pod, node, node_scores, plugin_of, pod, pod_info, run


AFFINITY = "node(s) didn't match Pod's node affinity/selector"


def required(*terms):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def expr(key, operator, *values):
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


NODES = [("n-a", {"zone": "a", "gpu": "true", "cores": "8"}), ("n-b", {"zone": "b", "cores": "32"}),
         ("n-c", {"zone": "c"})]


def placements(**pod_kwargs):
    """Which nodes pass NodeAffinity for the pod (in NODES order)."""
    domain, _ = run(*(node(name, labels=labels) for name, labels in NODES))
    plugin = plugin_of(domain, "NodeAffinity")
    info = pod_info(k8s_pod("p", **pod_kwargs))
    result = plugin.filter(CycleState(), info, np.ones(len(NODES), dtype=bool))
    assert result.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    return [name for (name, _), ok in zip(NODES, result.passed) if ok]


@pytest.mark.parametrize("kwargs, want", [
    ({"node_selector": {"zone": "a"}}, ["n-a"]),
    ({"affinity": required({"matchExpressions": [expr("zone", "In", "a", "b")]})}, ["n-a", "n-b"]),
    ({"affinity": required({"matchExpressions": [expr("zone", "NotIn", "a")]})}, ["n-b", "n-c"]),
    ({"affinity": required({"matchExpressions": [expr("gpu", "Exists")]})}, ["n-a"]),
    ({"affinity": required({"matchExpressions": [expr("gpu", "DoesNotExist")]})}, ["n-b", "n-c"]),
    ({"affinity": required({"matchExpressions": [expr("cores", "Gt", "8")]})}, ["n-b"]),
    ({"affinity": required({"matchExpressions": [expr("cores", "Lt", "16")]})}, ["n-a"]),
    ({"affinity": required({"matchExpressions": [expr("zone", "In", "a")]},
                           {"matchExpressions": [expr("zone", "In", "c")]})}, ["n-a", "n-c"]),
    ({"affinity": required({"matchExpressions": [expr("zone", "In", "a", "b"), expr("gpu", "DoesNotExist")]})},
     ["n-b"]),
    ({"affinity": required({"matchFields": [expr("metadata.name", "In", "n-c")]})}, ["n-c"]),
    ({"affinity": required({})}, []),
    ({"node_selector": {"zone": "b"}, "affinity": required({"matchExpressions": [expr("zone", "In", "a")]})}, []),
], ids=["nodeSelector", "In", "NotIn matches absent labels", "Exists", "DoesNotExist", "Gt", "Lt", "terms are ORed",
        "requirements are ANDed", "matchFields metadata.name", "an empty term matches nothing",
        "nodeSelector and affinity both apply"])
def test_node_affinity(kwargs, want):
    assert placements(**kwargs) == want


def test_affinity_message_is_kube_schedulers():
    _, out = run(node("n1", labels={"zone": "a"}), pod("p", node_selector={"zone": "b"}))
    assert decisions(out)[-1]["message"].startswith(f"0/1 nodes are available: 1 {AFFINITY}.")


# -- Score: kube-scheduler v1.34 TestNodeAffinityPriority ---------------------------------------------

LABEL1, LABEL2, LABEL3 = {"foo": "bar"}, {"key": "value"}, {"az": "az1"}
LABEL4, LABEL5 = {"abc": "az11", "def": "az22"}, {"foo": "bar", "key": "value", "az": "az1"}


def preferred(*weighted):
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": weight, "preference": {"matchExpressions": list(exprs)}} for weight, exprs in weighted]}}


AFFINITY1 = preferred((2, [expr("foo", "In", "bar")]))
AFFINITY2 = preferred((2, [expr("foo", "In", "bar")]), (4, [expr("key", "In", "value")]),
                      (5, [expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1")]))


@pytest.mark.parametrize("affinity, nodes, expected", [
    pytest.param(None, [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)], [0, 0, 0],
                 id="all nodes are same priority as NodeAffinity is nil"),
    pytest.param(AFFINITY1, [("node1", LABEL4), ("node2", LABEL2), ("node3", LABEL3)], [0, 0, 0],
                 id="no node matches preferred scheduling requirements in NodeAffinity of pod so all nodes' priority "
                    "is zero"),
    pytest.param(AFFINITY1, [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)], [100, 0, 0],
                 id="only node1 matches the preferred scheduling requirements of pod"),
    pytest.param(AFFINITY2, [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)], [18, 100, 36],
                 id="all nodes matches the preferred scheduling requirements of pod but with different priorities "),
    pytest.param(preferred((0, [expr("foo", "In", "bar")]), (3, [])), [("node1", LABEL1)], [0],
                 id="terms of weight 0 or without requirements are dropped"),
])
def test_TestNodeAffinityPriority(affinity, nodes, expected):
    domain, _ = run(*(node(name, labels=labels) for name, labels in nodes))
    plugin = plugin_of(domain, "NodeAffinity")
    assert node_scores(plugin, CycleState(), pod_info(k8s_pod("p", affinity=affinity)),
                       np.ones(len(nodes), dtype=bool)) == expected


def test_a_pod_lands_on_the_node_its_preferred_terms_weigh_most():
    _, out = run(node("busy-a", cpu=4000, labels={"zone": "a"}), node("roomy-b", cpu=64000, labels={"zone": "b"}),
                 k8s_pod("p", requests={"cpu": "1"}, affinity=preferred((10, [expr("zone", "In", "a")]))))
    assert decisions(out)[-1]["nodeName"] == "busy-a"
