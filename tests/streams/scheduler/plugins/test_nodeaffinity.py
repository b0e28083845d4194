"""NodeAffinity: nodeSelector and required node affinity, with kube-scheduler's reason."""

import numpy as np
import pytest

from streams.scheduler.framework import Code, CycleState
from tests.streams.scheduler.support import decisions, k8s_pod, node, pod, plugin_of, pod_info, run


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
