"""NodeResourcesFit: requests against free allocatable, batch and mid extended resources, and the score."""

import pytest

from streams.scheduler.plugins.noderesourcesfit import NodeResourcesFitArgs
from tests.streams.scheduler.support import GI, decisions, k8s_node, k8s_pod, node, pod, profile_with, run

BATCH = {"cpu": "8", "memory": "16Gi", "pods": "20", "kubernetes.io/batch-cpu": "4000",
         "kubernetes.io/batch-memory": "8Gi", "kubernetes.io/mid-cpu": "2000", "kubernetes.io/mid-memory": "4Gi"}


@pytest.mark.parametrize("requests, priority, want", [
    ({"kubernetes.io/batch-cpu": "3000", "kubernetes.io/batch-memory": "4Gi"}, 5500, None),
    ({"kubernetes.io/batch-cpu": "5000", "kubernetes.io/batch-memory": "4Gi"}, 5500, "1 Insufficient kubernetes.io/batch-cpu"),
    ({"kubernetes.io/mid-cpu": "1000", "kubernetes.io/mid-memory": "8Gi"}, 7500, "1 Insufficient kubernetes.io/mid-memory"),
    ({"kubernetes.io/mid-cpu": "2000", "kubernetes.io/mid-memory": "4Gi"}, 7500, None),
], ids=["batch fits", "batch cpu short", "mid memory short", "mid fits"])
def test_batch_and_mid_resources(requests, priority, want):
    _, out = run(k8s_node("colo", BATCH), k8s_pod("p", priority=priority, requests=requests, limits=requests))
    decision = decisions(out)[-1]
    if want is None:
        assert decision["result"] == "Scheduled"
    else:
        assert decision["message"].startswith(f"0/1 nodes are available: {want}.")


def test_batch_allocatable_from_a_node_resource_event_is_used():
    from tests.streams.scheduler.support import event

    overlay = event("NodeResource", "colo", {"nodeName": "colo", "allocatable": {"kubernetes.io/batch-cpu": 6000}})
    requests = {"kubernetes.io/batch-cpu": "5000"}
    _, out = run(k8s_node("colo", BATCH), overlay, k8s_pod("p", priority=5500, requests=requests, limits=requests))
    assert decisions(out)[-1]["result"] == "Scheduled"


def test_every_short_resource_is_a_reason():
    _, out = run(node("n1", cpu=500, memory=GI), pod("p", cpu=1000, memory=2 * GI))
    assert decisions(out)[-1]["filterResults"] == [
        {"plugin": "NodeResourcesFit", "reason": "Insufficient cpu", "count": 1},
        {"plugin": "NodeResourcesFit", "reason": "Insufficient memory", "count": 1}]


def test_most_allocated_packs():
    config = profile_with("NodeResourcesFit", {"scoringStrategy": {"type": "MostAllocated", "resources": [
        {"name": "cpu", "weight": 1}]}})
    _, out = run(config, node("a", cpu=4000), node("b", cpu=4000), pod("x", node_name="b"), pod("y"))
    assert decisions(out)[-1]["nodeName"] == "b"


def test_default_args_are_kube_schedulers():
    assert NodeResourcesFitArgs.from_config({}) == NodeResourcesFitArgs(
        "LeastAllocated", (("cpu", 1), ("memory", 1)), (), ())


def test_requested_to_capacity_ratio_is_rejected():
    with pytest.raises(ValueError, match="RequestedToCapacityRatio is not supported"):
        NodeResourcesFitArgs.from_config({"scoringStrategy": {"type": "RequestedToCapacityRatio"}})
