"""Shadow mode's comparison of the cluster's placements with koordstream's."""

import pytest

from streams.bridge import shadow


def cluster_pod(name, node=None, unschedulable=None, uid="u"):
    status = {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                              "message": unschedulable}]} if unschedulable else {}
    return {"metadata": {"name": name, "namespace": "default", "uid": uid},
            "spec": {"nodeName": node} if node else {}, "status": status}


def scheduled(node):
    return {"result": "Scheduled", "nodeName": node, "reason": None, "message": "", "uid": "u"}


UNSCHEDULABLE = {"result": "Unschedulable", "nodeName": None, "reason": "Unschedulable",
                 "message": "0/2 nodes are available: 2 Insufficient cpu.", "uid": "u"}


@pytest.mark.parametrize("case, pod, decisions, outcome", [
    ("same node", cluster_pod("a", "n1"), [scheduled("n1"), {**scheduled("n1"), "result": "Bound"}], shadow.SAME_NODE),
    ("other node", cluster_pod("a", "n2"), [scheduled("n1")], shadow.OTHER_NODE),
    ("the latest opinion counts", cluster_pod("a", "n2"), [UNSCHEDULABLE, scheduled("n2")], shadow.SAME_NODE),
    ("only koordstream could not", cluster_pod("a", "n1"), [UNSCHEDULABLE], shadow.ONLY_KOORDSTREAM_UNSCHEDULABLE),
    ("only the cluster could not", cluster_pod("a", unschedulable="0/2 nodes"), [scheduled("n1")],
     shadow.ONLY_CLUSTER_UNSCHEDULABLE),
    ("neither could", cluster_pod("a", unschedulable="0/2 nodes"), [UNSCHEDULABLE], shadow.BOTH_UNSCHEDULABLE),
    ("the cluster has not decided", cluster_pod("a"), [scheduled("n1")], shadow.CLUSTER_PENDING),
    ("koordstream saw it bound only", cluster_pod("a", "n1"), [{**scheduled("n1"), "result": "Bound"}],
     shadow.NOT_SEEN_PENDING),
    ("decisions about an earlier pod", cluster_pod("a", "n1", uid="new"), [scheduled("n2")], shadow.NOT_SEEN_PENDING),
])
def test_outcome(case, pod, decisions, outcome):
    assert shadow.compare([pod], {"default/a": decisions}).pods[0].outcome == outcome


def test_report_gives_reasons_and_totals():
    report = shadow.compare([cluster_pod("b", "n1"), cluster_pod("a", "n1")],
                            {"default/a": [UNSCHEDULABLE], "default/b": [scheduled("n1")]})
    assert [pod.name for pod in report.pods] == ["a", "b"]
    assert report.pods[0].koordstream == shadow.Placement(None, "Unschedulable", UNSCHEDULABLE["message"])
    assert report.totals[shadow.SAME_NODE] == 1 and report.totals[shadow.ONLY_KOORDSTREAM_UNSCHEDULABLE] == 1
    assert report.to_dict()["totals"] == report.totals
