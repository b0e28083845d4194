"""NodeResourcesFit: requests against free allocatable, batch and mid extended resources, and the score."""

import pytest

from streams.koordinator.resources import BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY
from streams.scheduler.plugins.noderesourcesfit import NAME, REASON_INSUFFICIENT, NodeResourcesFitArgs
from tests.streams.scheduler.support import GI, decisions, k8s_node, k8s_pod, node, pod, profile_with, run

BATCH = {"cpu": "8", "memory": "16Gi", "pods": "20", "kubernetes.io/batch-cpu": "4000",
         "kubernetes.io/batch-memory": "8Gi", "kubernetes.io/mid-cpu": "2000", "kubernetes.io/mid-memory": "4Gi"}


@pytest.mark.parametrize("requests, priority, want", [
    pytest.param({BATCH_CPU: "3000", BATCH_MEMORY: "4Gi"}, 5500, None, id="batch fits"),
    pytest.param({BATCH_CPU: "5000", BATCH_MEMORY: "4Gi"}, 5500, REASON_INSUFFICIENT.format(resource=BATCH_CPU),
                 id="batch cpu short"),
    pytest.param({MID_CPU: "1000", MID_MEMORY: "8Gi"}, 7500, REASON_INSUFFICIENT.format(resource=MID_MEMORY),
                 id="mid memory short"),
    pytest.param({MID_CPU: "2000", MID_MEMORY: "4Gi"}, 7500, None, id="mid fits"),
])
def test_batch_and_mid_resources(requests, priority, want):
    _, out = run(k8s_node("colo", BATCH), k8s_pod("p", priority=priority, requests=requests, limits=requests))
    decision = decisions(out)[-1]
    if want is None:
        assert decision["result"] == "Scheduled"
    else:
        assert decision["message"].startswith(f"0/1 nodes are available: 1 {want}.")


def test_batch_allocatable_from_a_node_resource_event_is_used():
    from tests.streams.scheduler.support import event

    overlay = event("NodeResource", "colo", {"nodeName": "colo", "allocatable": {"kubernetes.io/batch-cpu": 6000}})
    requests = {"kubernetes.io/batch-cpu": "5000"}
    _, out = run(k8s_node("colo", BATCH), overlay, k8s_pod("p", priority=5500, requests=requests, limits=requests))
    assert decisions(out)[-1]["result"] == "Scheduled"


def test_every_short_resource_is_a_reason():
    _, out = run(node("n1", cpu=500, memory=GI), pod("p", cpu=1000, memory=2 * GI))
    assert decisions(out)[-1]["filterResults"] == [
        {"plugin": NAME, "reason": REASON_INSUFFICIENT.format(resource="cpu"), "count": 1},
        {"plugin": NAME, "reason": REASON_INSUFFICIENT.format(resource="memory"), "count": 1}]


def test_most_allocated_packs():
    """Packing as kube-scheduler's docs configure it: MostAllocated, without the balanced-allocation score that
    would spread the pod to the node whose cpu and memory it leaves more even."""
    config = profile_with("NodeResourcesFit", {"scoringStrategy": {"type": "MostAllocated", "resources": [
        {"name": "cpu", "weight": 1}]}}, score={"disabled": [{"name": "NodeResourcesBalancedAllocation"}]})
    _, out = run(config, node("a", cpu=4000), node("b", cpu=4000), pod("x", node_name="b"), pod("y"))
    assert decisions(out)[-1]["nodeName"] == "b"


def test_default_args_are_kube_schedulers():
    assert NodeResourcesFitArgs.from_config({}) == NodeResourcesFitArgs(
        "LeastAllocated", (("cpu", 1), ("memory", 1)), (), ())


def test_requested_to_capacity_ratio_is_rejected():
    with pytest.raises(ValueError, match="RequestedToCapacityRatio is not supported"):
        NodeResourcesFitArgs.from_config({"scoringStrategy": {"type": "RequestedToCapacityRatio"}})
