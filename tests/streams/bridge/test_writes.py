"""The bridge's idempotency: which write a decision asks for, given what the cluster shows."""

import pytest

from streams.bridge import writes
from streams.bridge.writes import Bind, Evict, MarkUnschedulable, PatchNodeStatus, PodView, Skip
from streams.koordinator.annotations import (
    ANNOTATION_DEVICE_ALLOCATED, ANNOTATION_HAMI_VGPU_NODE, ANNOTATION_RESERVATION_ALLOCATED,
    ANNOTATION_RESOURCE_STATUS)
from streams.koordinator.labels import LABEL_POD_QOS

OURS = "koord-scheduler"


def pod(node=None, scheduler=OURS, uid="u1", deleting=False, condition=None, annotations=None, labels=None) -> PodView:
    return PodView("default", "web", uid, scheduler, node, deleting, condition, annotations or {}, labels or {})


PREBIND = {ANNOTATION_RESOURCE_STATUS: '{"cpuset":"0-1"}', ANNOTATION_DEVICE_ALLOCATED: '{"gpu":[{"minor":0}]}',
           ANNOTATION_RESERVATION_ALLOCATED: '{"name":"r1","uid":"r-uid"}', ANNOTATION_HAMI_VGPU_NODE: "n1"}


def decision(result="Scheduled", node="n1", uid="u1", **extra) -> dict:
    return {"decisionId": "d1", "result": result, "nodeName": node, "pod": {"namespace": "default", "name": "web",
                                                                             "uid": uid}, **extra}


@pytest.mark.parametrize("case, record, view, expected", [
    ("binds a pending pod: the Binding alone", decision(), pod(), Bind("default", "web", "u1", "n1", "d1")),
    ("patches what PreBind decided first", decision(annotations=PREBIND, labels={"app": "web"}), pod(),
     Bind("default", "web", "u1", "n1", "d1", {**PREBIND, writes.DECISION_ANNOTATION: "d1"}, {"app": "web"})),
    ("patches only what the pod does not show",
     decision(annotations=PREBIND, labels={LABEL_POD_QOS: "LS"}),
     pod(annotations={ANNOTATION_RESOURCE_STATUS: '{"cpuset":"0-1"}', ANNOTATION_HAMI_VGPU_NODE: "n0"},
         labels={LABEL_POD_QOS: "LS"}),
     Bind("default", "web", "u1", "n1", "d1",
          {ANNOTATION_DEVICE_ALLOCATED: PREBIND[ANNOTATION_DEVICE_ALLOCATED],
           ANNOTATION_RESERVATION_ALLOCATED: PREBIND[ANNOTATION_RESERVATION_ALLOCATED],
           ANNOTATION_HAMI_VGPU_NODE: "n1", writes.DECISION_ANNOTATION: "d1"})),
    ("a re-read decision whose patch is there patches nothing", decision(annotations=PREBIND),
     pod(annotations={**PREBIND, writes.DECISION_ANNOTATION: "d1"}), Bind("default", "web", "u1", "n1", "d1")),
    ("a pod that shows the copied annotations needs no patch",
     decision(annotations={ANNOTATION_RESOURCE_STATUS: "{}"}, labels={LABEL_POD_QOS: "BE"}),
     pod(annotations={ANNOTATION_RESOURCE_STATUS: "{}"}, labels={LABEL_POD_QOS: "BE"}),
     Bind("default", "web", "u1", "n1", "d1")),
    ("already bound there", decision(), pod(node="n1"), Skip("already bound to n1")),
    ("bound elsewhere", decision(), pod(node="n2"), Skip("bound to n2 by another client; koordstream chose n1")),
    ("another scheduler's pod", decision(), pod(scheduler="default-scheduler"),
     Skip("the pod names scheduler default-scheduler, not koord-scheduler")),
    ("an earlier pod of that name", decision(uid="old"), pod(),
     Skip("the decision was for an earlier pod of that name (uid old, now u1)")),
    ("gone", decision(), None, Skip("the pod no longer exists")),
    ("Bound asks nothing", decision(result="Bound"), pod(), Skip("a Bound decision asks for no write")),
    ("marks unschedulable", decision("Unschedulable", None, reason="Unschedulable", message="0/1 nodes"), pod(),
     MarkUnschedulable("default", "web", "u1", "d1", "Unschedulable", "0/1 nodes")),
    ("condition already shown", decision("Unschedulable", None, reason="Unschedulable", message="0/1 nodes"),
     pod(condition=("False", "Unschedulable", "0/1 nodes")), Skip("the pod shows this condition already")),
])
def test_plan_scheduling(case, record, view, expected):
    assert writes.plan_scheduling(record, view, OURS) == expected


def test_the_view_shows_a_patch_once_made():
    write = writes.plan_scheduling(decision(annotations=PREBIND), pod(labels={"app": "web"}), OURS)
    shown = writes.patched(pod(labels={"app": "web"}), write)
    assert write.patches and shown.labels == {"app": "web"}
    assert writes.plan_scheduling(decision(annotations=PREBIND), shown, OURS) == Bind(
        "default", "web", "u1", "n1", "d1")


def test_a_binding_to_a_node_the_cluster_does_not_have_is_refused():
    nodes = {"n2": object()}
    assert writes.plan_scheduling(decision(), pod(), OURS, nodes) == Skip("node n1 does not exist in the cluster")
    assert isinstance(writes.plan_scheduling(decision(node="n2"), pod(), OURS, nodes), Bind)


def test_node_resources_as_koord_manager_writes_them():
    record = {"allocatable": {"cpu": 4000, "kubernetes.io/batch-cpu": 25000, "kubernetes.io/batch-memory": 33 * 10**9}}
    node = writes.NodeView("n1", {}, {})
    assert writes.plan_node_resources(record, node) == PatchNodeStatus(
        "n1", {"kubernetes.io/batch-cpu": "25000", "kubernetes.io/batch-memory": "33000000000"},
        {"kubernetes.io/batch-cpu": "25000", "kubernetes.io/batch-memory": "33000000000"})
    shown = writes.NodeView("n1", {"kubernetes.io/batch-cpu": "25000", "kubernetes.io/batch-memory": "33000000000"},
                            {"kubernetes.io/batch-cpu": "25000", "kubernetes.io/batch-memory": "33000000000"})
    assert writes.plan_node_resources(record, shown) == Skip("the node shows these values already")


GPU_RECORD = {"allocatable": {"cpu": 8000, "kubernetes.io/batch-cpu": 1000, "koordinator.sh/gpu-core": 200,
                              "koordinator.sh/gpu-memory": 160 * 2**30, "koordinator.sh/rdma": 100},
              "annotations": {"node.koordinator.sh/cpu-normalization-ratio": "1.20"},
              "labels": {"node.koordinator.sh/gpu-model": "A100"}}


def test_device_resources_annotations_and_labels_only_the_keys_the_node_lacks():
    shown = writes.NodeView("n1", {"cpu": "8", "kubernetes.io/batch-cpu": "1000", "kubernetes.io/mid-cpu": "500"},
                            {"cpu": "8", "kubernetes.io/batch-cpu": "1000", "kubernetes.io/mid-cpu": "500"},
                            {"kept": "x"}, {"kubernetes.io/hostname": "n1"})
    resources = {"kubernetes.io/mid-cpu": None, "koordinator.sh/gpu-core": "200",
                 "koordinator.sh/gpu-memory": str(160 * 2**30), "koordinator.sh/rdma": "100"}
    write = writes.plan_node_resources(GPU_RECORD, shown)
    assert write == PatchNodeStatus("n1", resources, resources,
                                    {"node.koordinator.sh/cpu-normalization-ratio": "1.20"},
                                    {"node.koordinator.sh/gpu-model": "A100"})
    after = writes.node_patched(shown, write)
    assert "kubernetes.io/mid-cpu" not in after.allocatable and after.annotations["kept"] == "x"
    assert writes.plan_node_resources(GPU_RECORD, after) == Skip("the node shows these values already")
    no_ratio = {**GPU_RECORD, "annotations": {}}
    assert writes.plan_node_resources(no_ratio, after) == PatchNodeStatus(
        "n1", {}, {}, {"node.koordinator.sh/cpu-normalization-ratio": None}, {})


@pytest.mark.parametrize("case, view, expected", [
    ("evicts", pod(node="n1"), Evict("default", "web", "u1", "e1", "EvictPodByNodeMemoryUsage", "")),
    ("being deleted already", pod(node="n1", deleting=True), Skip("the pod is being deleted")),
    ("another pod of that name", pod(node="n1", uid="u2"),
     Skip("the decision was for an earlier pod of that name (uid u1, now u2)")),
])
def test_plan_eviction(case, view, expected):
    eviction = {"decisionId": "e1", "reason": "EvictPodByNodeMemoryUsage", "pod": {"namespace": "default",
                                                                                  "name": "web", "uid": "u1"}}
    assert writes.plan_eviction(eviction, view) == expected
