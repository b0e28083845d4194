"""Tests of the explain queries: a pod's decisions with aggregated filter results, a node's batch/mid history."""

import json

import pytest

from state.queries import explain_node, explain_pod, filter_summary, get_decisions, get_pods

BATCH_CPU, MID_CPU = "kubernetes.io/batch-cpu", "kubernetes.io/mid-cpu"


@pytest.mark.parametrize(("results", "summary"), [
    pytest.param([], "", id="none"),
    pytest.param([{"plugin": "TaintToleration", "reason": "node(s) had untolerated taint", "count": 2},
                  {"plugin": "NodeResourcesFit", "reason": "Insufficient cpu", "count": 3}],
                 "2 node(s) had untolerated taint, 3 Insufficient cpu", id="sorted-like-kube-scheduler"),
    pytest.param([{"plugin": "NodeResourcesFit", "reason": "Insufficient cpu", "count": 1},
                  {"plugin": "NodeResourcesFitPlus", "reason": "Insufficient cpu", "count": 2}],
                 "3 Insufficient cpu", id="same-reason-of-two-plugins-adds-up"),
])
def test_filter_summary(results, summary):
    assert filter_summary(results) == summary


def test_explain_pod_gives_the_latest_decisions_first_with_scores_and_cause(projector, read_model, records):
    unschedulable = records.decision("d-1", "default/web", "Unschedulable", 3,
                                     message="0/3 nodes are available: 3 Insufficient cpu.")
    placed = records.decision("d-2", "default/web", "Scheduled", 7, node_name="node-a", source=("koord.nodes", 1, 7))
    placed.value["scores"] = [{"node": "node-b", "score": 40}, {"node": "node-a", "score": 87},
                              {"node": "node-c", "score": 40}]
    projector.apply([records.pod("web", 1), unschedulable, placed])

    explained = explain_pod(read_model, "default", "web")

    latest, earlier = explained["decisions"]
    assert (latest["result"], latest["nodeName"], latest["rejectedNodes"]) == ("Scheduled", "node-a", 0)
    assert [s["node"] for s in latest["topScores"]] == ["node-a", "node-b", "node-c"]
    assert (latest["causation"]["sourceTopic"], latest["causation"]["sourceOffset"]) == ("koord.nodes", 7)
    assert (earlier["filterSummary"], earlier["rejectedNodes"]) == ("3 Insufficient cpu", 3)
    assert explain_pod(read_model, "default", "web", history=1)["decisions"] == [latest]


def test_explain_pod_ignores_decisions_about_an_earlier_pod_of_the_same_name(projector, read_model, records):
    projector.apply([records.pod("web", 1, uid="new"),
                     records.decision("d-old", "default/web", "Scheduled", 3, node_name="node-a", uid="old")])
    assert explain_pod(read_model, "default", "web")["decisions"] == []


def test_explain_pod_says_why_the_pod_was_moved(projector, read_model, records):
    moved = records.eviction("e-1", "default/web", "node-a", 9, reason="Descheduled")
    moved.value["message"] = ("node is overutilized, node cpu usage(80.00%)>threshold(50.00%) "
                              "(PodMigrationJob default.web.1700000000000)")
    projector.apply([records.pod("web", 1), records.decision("d-1", "default/web", "Scheduled", 3,
                                                             node_name="node-a"), moved])
    [eviction] = explain_pod(read_model, "default", "web")["evictions"]
    assert (eviction["nodeName"], eviction["reason"]) == ("node-a", "Descheduled")
    assert "node cpu usage(80.00%)>threshold(50.00%)" in eviction["message"]


def test_explain_pod_names_the_job_the_hot_node_and_the_limit_that_delayed_the_move(projector, read_model, records):
    manifest = {"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "PodMigrationJob",
                "metadata": {"name": "default.web.1", "annotations": {
                    "koordinator.sh/evict-reason": "node is overutilized, node cpu usage(80.00%)>threshold(50.00%)"}},
                "spec": {"podRef": {"namespace": "default", "name": "web"}},
                "status": {"phase": "Running", "reason": "", "message": 'Creating Reservation "default.web.1"',
                           "conditions": [{"type": "Arbitration", "status": "True", "reason": "Passed",
                                           "message": 'maxMigratingPerNode: 2 pods migrating on node "node-a"'}]}}
    value = {"metadata": {"name": "default.web.1", "namespace": None, "uid": None, "labels": {}, "annotations": {},
                          "generation": 0},
             "manifest": json.dumps(manifest), "podRef": {"namespace": "default", "name": "web", "uid": None},
             "mode": None, "ttlMs": None, "paused": False, "reservationName": None, "deleteOptions": None,
             "phase": "Running"}
    other = dict(value, podRef={"namespace": "default", "name": "api", "uid": None})
    projector.apply([records.pod("web", 1), records.record("koord.podmigrationjobs", "default.web.1",
                                                           "PodMigrationJob", value, 2),
                     records.record("koord.podmigrationjobs", "default.api.1", "PodMigrationJob", other, 3)])

    [job] = explain_pod(read_model, "default", "web")["migrationJobs"]

    assert (job["name"], job["phase"]) == ("default.web.1", "Running")
    assert job["trigger"] == "node is overutilized, node cpu usage(80.00%)>threshold(50.00%)"
    assert job["heldBy"] == 'maxMigratingPerNode: 2 pods migrating on node "node-a"'


def test_explain_of_unknown_objects_is_none(read_model):
    assert explain_pod(read_model, "default", "nope") is None
    assert explain_node(read_model, "nope") is None


def test_explain_node_gives_the_latest_resource_the_batch_its_pods_request_and_the_batch_history(projector, read_model, records):
    resources = [records.node_resource(f"r-{i}", "node-a", 10 + i, allocatable={BATCH_CPU: cpu, MID_CPU: 500},
                                       source=("koord.nodemetrics", 2, 20 + i))
                 for i, cpu in enumerate((25000, 24000, 23000))]
    resources[-1].value["message"] = "batchAllocatable[CPU(Milli-Core)]:23000 = nodeCapacity:100000 - ..."
    be_pods = [records.pod(name, 2 + i) for i, name in enumerate(("be-1", "be-2"))]
    placed = [records.decision(f"d-{name}", f"default/{name}", "Scheduled", 30 + i, node_name="node-a",
                               requests={BATCH_CPU: 1500, "cpu": 0}) for i, name in enumerate(("be-1", "be-2"))]
    projector.apply([records.node("node-a", 1), *be_pods, *resources, *placed,
                     records.node_metric("node-a", 5, usage={"cpu": 5000})])

    explained = explain_node(read_model, "node-a", history=2)

    latest = explained["latest"]
    assert (latest["decisionId"], latest["extended"][BATCH_CPU], latest["extended"][MID_CPU]) == ("r-2", 23000, 500)
    assert latest["message"].startswith("batchAllocatable[CPU(Milli-Core)]:23000")
    assert (latest["causation"]["sourceTopic"], latest["causation"]["sourceOffset"]) == ("koord.nodemetrics", 22)
    assert [h[BATCH_CPU] for h in explained["history"]] == [23000, 24000]
    assert explained["latestNodeMetric"]["sourceOffset"] == 5
    assert (explained["requested"][BATCH_CPU], explained["requested"][MID_CPU]) == (3000, None), "the BE pods' batch"


def test_a_placed_pod_shows_what_its_decision_allocated_and_not_the_pod_annotations_it_copied(
        projector, read_model, records):
    """Issue 40, item 5: `koord get pods`, `koord get decisions` and `koord explain pod` show the cpuset, GPU and
    reservation a decision allocated, as the API server holds them on a pod the bridge bound; an annotation the
    decision only copied from the pod (cpuQOS) is the pod's own, so the pod's newer value is kept."""
    allocated = {"scheduling.koordinator.sh/resource-status": '{"cpuset":"0-3"}',
                 "scheduling.koordinator.sh/device-allocated": '{"gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-core":"50"}}]}',
                 "scheduling.koordinator.sh/reservation-allocated": '{"name":"r1","uid":"u-r1"}'}
    placed = records.decision("d-1", "default/web", "Scheduled", 3, node_name="node-a")
    placed.value["annotations"] = {**allocated, "koordinator.sh/cpuQOS": '{"groupIdentity":1}'}
    placed.value["labels"] = {"koordinator.sh/qosClass": "LSE"}
    pod = records.pod("web", 1)
    manifest = json.loads(pod.value["manifest"])
    manifest["metadata"]["annotations"] = {"koordinator.sh/cpuQOS": '{"groupIdentity":-1}'}
    pod.value["manifest"] = json.dumps(manifest)
    projector.apply([records.node("node-a", 1), pod, placed])

    [shown] = get_pods(read_model)
    assert shown["metadata"]["annotations"] == {**allocated, "koordinator.sh/cpuQOS": '{"groupIdentity":-1}'}
    [decision] = get_decisions(read_model)
    assert decision["annotations"] == placed.value["annotations"]
    assert decision["labels"] == {"koordinator.sh/qosClass": "LSE"}
    assert explain_pod(read_model, "default", "web")["decisions"][0]["allocated"] == allocated
