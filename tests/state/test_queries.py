"""Tests of state.queries: Kubernetes-shaped reads and the `apply --wait` progress checks."""

import base64
import dataclasses
import hashlib
import json

import pytest

from streams.objects.quantity import format_quantity

from state.queries import (
    acknowledged,
    broken_reason,
    get_deadletters,
    get_elasticquotas,
    get_decisions,
    get_nodes,
    get_noderesourcetopologies,
    get_objects,
    get_pods,
    object_progress,
    top_nodes,
    top_pods,
)

SCHEDULED = {"type": "PodScheduled", "status": "True"}


@pytest.mark.parametrize(
    ("pod", "decisions", "node_name", "status"),
    [
        pytest.param({}, [], None, {"phase": "Pending"}, id="no-decision"),
        pytest.param(
            {}, [("Scheduled", 3, "node-a", "", None)], "node-a", {"phase": "Pending", "conditions": [SCHEDULED]},
            id="scheduled",
        ),
        pytest.param(
            {"node_name": "node-b", "phase": "Running"},
            [("Bound", 3, "node-b", "", None)],
            "node-b",
            {"phase": "Running", "conditions": [SCHEDULED]},
            id="bound",
        ),
        pytest.param(
            {},
            [("Unschedulable", 3, None, "0/3 nodes are available: 3 Insufficient cpu.", None)],
            None,
            {
                "phase": "Pending",
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/3 nodes are available: 3 Insufficient cpu.",
                    }
                ],
            },
            id="unschedulable",
        ),
        pytest.param(
            {},
            [("Unschedulable", 3, None, "no fit", None), ("Scheduled", 8, "node-a", "", None)],
            "node-a",
            {"phase": "Pending", "conditions": [SCHEDULED]},
            id="latest-decision-wins",
        ),
        pytest.param(
            {"uid": "uid-new"}, [("Scheduled", 3, "node-a", "", "uid-old")], None, {"phase": "Pending"},
            id="decision-for-earlier-pod-ignored",
        ),
        pytest.param(
            {"phase": "Succeeded"},
            [("Scheduled", 3, "node-a", "", None), ("Released", 9, "node-a", "", None)],
            "node-a",
            {"phase": "Succeeded", "conditions": [SCHEDULED]},
            id="released-keeps-node",
        ),
    ],
)
def test_get_pods_merges_latest_decision(projector, read_model, records, pod, decisions, node_name, status):
    applied = records.pod("web", 1, **pod)
    projector.apply(
        [records.node("node-a", 0), records.node("node-b", 0, partition=1), applied]
        + [
            records.decision(f"d-{offset}", "default/web", result, offset, node_name=node, message=message, uid=uid)
            for result, offset, node, message, uid in decisions
        ]
    )

    [got] = get_pods(read_model)

    manifest = json.loads(applied.value["manifest"])
    assert got["spec"].get("nodeName") == node_name
    assert got["status"] == status
    assert (got["metadata"], got["spec"]["containers"]) == (manifest["metadata"], manifest["spec"]["containers"])


def test_a_decision_naming_a_node_the_read_model_does_not_hold_places_no_pod(projector, read_model, records):
    """A forged decision (or one projected before its node) must not show a pod on a node that does not exist."""
    projector.apply([records.node("node-a", 1), records.tombstone("koord.nodes", "node-gone", 2),
                     records.pod("web", 3), records.pod("api", 4), records.pod("old", 5),
                     records.decision("d-1", "default/web", "Scheduled", 6, node_name="node-forged"),
                     records.decision("d-2", "default/api", "Scheduled", 7, node_name="node-a"),
                     records.decision("d-3", "default/old", "Scheduled", 8, node_name="node-gone")])

    pods = {pod["metadata"]["name"]: pod for pod in get_pods(read_model)}

    assert pods["api"]["spec"]["nodeName"] == "node-a"
    for name, node in (("web", "node-forged"), ("old", "node-gone")):
        assert "nodeName" not in pods[name]["spec"]
        [condition] = pods[name]["status"]["conditions"]
        assert (condition["status"], condition["reason"]) == ("False", "NodeNotFound")
        assert node in condition["message"]
    assert {row["name"]: row["node"] for row in top_pods(read_model)} == {"api": "node-a", "web": None, "old": None}
    assert len(get_decisions(read_model)) == 3, "the decisions themselves are kept"


@pytest.mark.parametrize("manifest", ["{not json", "[1, 2]", '{"kind": "Pod"}', '{"metadata": {}, "spec": "x"}'])
def test_a_row_whose_manifest_cannot_be_shown_is_marked_broken_and_the_others_shown(projector, read_model, records,
                                                                                      manifest):
    bad = records.pod("bad", 1)
    bad = dataclasses.replace(bad, value={**bad.value, "manifest": manifest})
    node = records.node("node-b", 2)
    node = dataclasses.replace(node, value={**node.value, "manifest": manifest})
    projector.apply([bad, records.pod("good", 3), node, records.node("node-a", 4)])

    pods = get_pods(read_model)
    nodes = get_nodes(read_model)

    assert [(pod["metadata"]["name"], broken_reason(pod) is not None) for pod in pods] == [
        ("bad", True), ("good", False)]
    assert pods[0]["metadata"]["namespace"] == "default" and pods[0]["kind"] == "Pod"
    assert [(n["metadata"]["name"], broken_reason(n) is not None) for n in nodes] == [("node-a", False), ("node-b", True)]
    assert [row["name"] for row in top_nodes(read_model)] == ["node-a", "node-b"]


def test_get_pods_filters_sorts_and_hides_deleted(projector, read_model, records):
    projector.apply(
        [
            records.pod("b", 1),
            records.pod("a", 2, namespace="kube-system"),
            records.pod("a", 3),
            records.pod("c", 4),
            records.tombstone("koord.pods", "default/c", 5),
        ]
    )

    def names(**filters):
        return [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in get_pods(read_model, **filters)]

    assert names() == [("default", "a"), ("default", "b"), ("kube-system", "a")]
    assert names(namespace="default") == [("default", "a"), ("default", "b")]
    assert names(name="a") == [("default", "a"), ("kube-system", "a")]
    assert names(name="c") == []


def test_get_nodes_overlays_latest_node_resource(projector, read_model, records):
    status = {
        "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True"}],
    }
    node = records.node("node-a", 1, status=status)
    projector.apply(
        [
            node,
            records.node("node-b", 2),
            records.node("node-gone", 3),
            records.tombstone("koord.nodes", "node-gone", 4),
            records.node_resource("nr-old", "node-a", 5, allocatable={"kubernetes.io/batch-cpu": 1}),
            records.node_resource(
                "nr-new",
                "node-a",
                6,
                capacity={"cpu": 4000, "memory": 8 * 2**30},
                allocatable={
                    "cpu": 3500,
                    "memory": 7 * 2**30 + 2**29,
                    "kubernetes.io/batch-cpu": 1500,
                    "kubernetes.io/batch-memory": 2**30 + 1,
                },
            ),
        ]
    )

    got_a, got_b = get_nodes(read_model)

    expected = json.loads(node.value["manifest"])
    expected["status"]["allocatable"] = {
        "cpu": "3500m",
        "memory": "7680Mi",
        "pods": "110",
        "kubernetes.io/batch-cpu": "1500",
        "kubernetes.io/batch-memory": "1073741825",
    }
    assert got_a == expected
    assert got_b == json.loads(records.node("node-b", 2).value["manifest"])
    assert [n["metadata"]["name"] for n in get_nodes(read_model, name="node-b")] == ["node-b"]


@pytest.mark.parametrize(
    ("resource", "value", "text"),
    [
        pytest.param("cpu", 1500, "1500m", id="milli-cpu"),
        pytest.param("cpu", 2000, "2", id="whole-cpu"),
        pytest.param("limits.cpu", 250, "250m", id="quota-cpu"),
        pytest.param("memory", 2**30, "1Gi", id="gibibyte"),
        pytest.param("memory", 1536 * 2**20, "1536Mi", id="mebibytes"),
        pytest.param("memory", 1000, "1k", id="decimal"),
        pytest.param("memory", 0, "0", id="zero"),
        pytest.param("kubernetes.io/mid-memory", 2**20, "1Mi", id="mid-memory"),
        pytest.param("ephemeral-storage", 10 * 2**30, "10Gi", id="storage"),
        pytest.param("hugepages-2Mi", 4 * 2**20, "4Mi", id="hugepages"),
        pytest.param("kubernetes.io/batch-cpu", 2000, "2000", id="batch-cpu-is-plain"),
        pytest.param("pods", 1024, "1024", id="count-is-plain"),
    ],
)
def test_format_quantity(resource, value, text):
    assert format_quantity(resource, value) == text


def test_get_decisions_filters_and_keeps_the_newest(projector, read_model, records):
    projector.apply(
        [
            records.decision("d-1", "default/web", "Unschedulable", 1, message="no fit"),
            records.decision("d-2", "default/api", "Scheduled", 2, node_name="node-a"),
            records.decision("d-3", "default/web", "Scheduled", 3, node_name="node-b"),
        ]
    )

    assert [d["decisionId"] for d in get_decisions(read_model)] == ["d-1", "d-2", "d-3"]
    assert [d["decisionId"] for d in get_decisions(read_model, pod_key="default/web")] == ["d-1", "d-3"]
    [newest] = get_decisions(read_model, limit=1)
    assert newest == {
        "decisionId": "d-3",
        "domain": "default",
        "pod": {"namespace": "default", "name": "web", "uid": None},
        "result": "Scheduled",
        "nodeName": "node-b",
        "reason": None,
        "message": "",
        "filterResults": [],
        "scores": [{"node": "node-b", "score": 87}],
        "labels": {},
        "annotations": {},
        "causation": {
            "inboxTopic": "koord.inbox.scheduling",
            "inboxPartition": 0,
            "inboxOffset": 3,
            "sourceTopic": "koord.pods",
            "sourcePartition": 0,
            "sourceOffset": 3,
        },
        "timestamp": 1_700_000_000_003,
        "topicPartition": 0,
        "topicOffset": 3,
    }


def test_get_deadletters_shows_payload_as_base64(projector, read_model, records):
    projector.apply([records.dead_letter(7, payload=b"\xc3\x01\xff"), records.dead_letter(8, payload=None, key=None)])

    assert get_deadletters(read_model) == [
        {
            "sourceTopic": "koord.pods",
            "sourcePartition": 0,
            "sourceOffset": offset,
            "key": key,
            "payload": payload,
            "reason": "CodecError: unknown fingerprint",
            "stage": "router",
            "timestamp": 1_700_000_000_000 + offset,
            "keySize": None, "keySha256": None, "payloadSize": None, "payloadSha256": None,
        }
        for offset, key, payload in [(7, "default/web", base64.b64encode(b"\xc3\x01\xff").decode()), (8, None, None)]
    ]


def test_object_progress(projector, read_model, records):
    projector.apply([records.pod("web", 4, partition=2), records.quota("team", 6)])

    assert object_progress(read_model, "pods", "default/web") == (2, 4, False)
    assert object_progress(read_model, "quotas", "default/team") == (0, 6, False)
    assert object_progress(read_model, "pods", "default/missing") is None
    with pytest.raises(ValueError, match="not a latest-state topic"):
        object_progress(read_model, "decisions", "default/web")


def test_get_nodes_merges_the_annotations_koordstream_sets(projector, read_model, records):
    ratio = {"node.koordinator.sh/cpu-normalization-ratio": "1.20"}
    projector.apply([records.node("node-a", 1), records.node_resource("nr", "node-a", 2, annotations=ratio)])
    (node,) = get_nodes(read_model, name="node-a")
    assert node["metadata"]["annotations"] == ratio


BATCH = {"node-0": {"kubernetes.io/batch-cpu": 10_000, "kubernetes.io/batch-memory": 15_300_000_000},
         "node-1": {"kubernetes.io/batch-cpu": 15_000, "kubernetes.io/batch-memory": 17_700_000_000}}


def test_get_nodes_shows_the_numa_zone_batch_resources_of_the_latest_node_resource(projector, read_model, records):
    projector.apply([records.node("node-a", 1), records.node_resource("nr-1", "node-a", 2),
                     records.node_resource("nr-2", "node-a", 3, zones=BATCH)])
    (node,) = get_nodes(read_model, name="node-a")
    assert json.loads(node["metadata"]["annotations"]["koordstream.io/numa-zone-resources"]) == [
        {"name": "node-0", "resources": {"kubernetes.io/batch-cpu": "10000", "kubernetes.io/batch-memory": "15300M"}},
        {"name": "node-1", "resources": {"kubernetes.io/batch-cpu": "15000", "kubernetes.io/batch-memory": "17700M"}}]


def test_get_noderesourcetopologies_writes_the_batch_resources_into_the_zones(projector, read_model, records):
    projector.apply([records.node("node-a", 1), records.node("node-b", 2),
                     records.topology("node-a", 3, zones={"node-0": (50_000, 62 * 10**9), "node-1": (50_000, 58 * 10**9)}),
                     records.topology("node-b", 4, zones={"node-0": (8_000, 2**34)}),
                     records.node_resource("nr-1", "node-a", 5, zones=BATCH)])
    got = {t["metadata"]["name"]: t for t in get_noderesourcetopologies(read_model)}
    assert list(got) == ["node-a", "node-b"]
    node_0 = got["node-a"]["zones"][0]
    assert (node_0["name"], [entry["name"] for entry in node_0["resources"]]) == (
        "node-0", ["cpu", "kubernetes.io/batch-cpu", "kubernetes.io/batch-memory", "memory"])
    assert node_0["resources"][1:3] == [
        {"name": "kubernetes.io/batch-cpu", "capacity": "10000", "allocatable": "10000", "available": "10000"},
        {"name": "kubernetes.io/batch-memory", "capacity": "15300M", "allocatable": "15300M", "available": "15300M"}]
    assert [entry["name"] for entry in got["node-b"]["zones"][0]["resources"]] == ["memory", "cpu"]
    projector.apply([records.tombstone("koord.noderesourcetopologies", "node-b", 6)])
    assert [t["metadata"]["name"] for t in get_noderesourcetopologies(read_model, name="node-b")] == []


def test_get_elasticquotas_shows_runtime_request_and_used_as_koordinator_does(projector, read_model, records):
    projector.apply([
        records.quota("team-a", 1, namespace="team"),
        records.quota_status("qs-old", "team-a", 2, runtime={"cpu": 1000}),
        records.quota_status("qs-new", "team-a", 3, runtime={"cpu": 4000, "memory": 2**30},
                             used={"cpu": 1500}, request={"cpu": 6000}),
        records.quota_status("qs-root", "koordinator-root-quota", 4, namespace=None, runtime={"cpu": 8000}),
    ])
    quotas = {q["metadata"]["name"]: q for q in get_elasticquotas(read_model)}
    team = quotas["team-a"]
    assert team["metadata"]["namespace"] == "team"
    assert json.loads(team["metadata"]["annotations"]["quota.scheduling.koordinator.sh/runtime"]) == \
        {"cpu": "4", "memory": "1Gi"}
    assert json.loads(team["metadata"]["annotations"]["quota.scheduling.koordinator.sh/request"]) == {"cpu": "6"}
    assert team["status"]["used"] == {"cpu": "1500m"}
    root = quotas["koordinator-root-quota"]
    assert "namespace" not in root["metadata"] and root["spec"]["max"] == {"cpu": "8"}
    assert [q["metadata"]["name"] for q in get_elasticquotas(read_model, namespace="team")] == ["team-a"]


def test_top_nodes_and_pods_combine_usage_requests_and_allocatable(projector, read_model, records):
    projector.apply([
        records.node("node-a", 1),
        records.pod("web", 2),
        records.pod("db", 3),
        records.pod("waiting", 4),
        records.decision("d-web", "default/web", "Scheduled", 5, node_name="node-a", requests={"cpu": 1500}),
        records.decision("d-db", "default/db", "Bound", 6, node_name="node-a", requests={"cpu": 500, "memory": 2**30}),
        records.decision("d-wait", "default/waiting", "Unschedulable", 7, requests={"cpu": 64000}),
        records.node_resource("nr", "node-a", 8, allocatable={"cpu": 4000, "kubernetes.io/batch-cpu": 1200}),
        records.node_metric("node-a", 9, usage={"cpu": 900}, pods=[("default", "web", {"cpu": 700})]),
    ])
    (node,) = top_nodes(read_model)
    assert node["usage"] == {"cpu": 900}
    assert node["requested"] == {"cpu": 2000, "memory": 2**30}
    assert node["allocatable"]["cpu"] == 4000 and node["allocatable"]["kubernetes.io/batch-cpu"] == 1200
    pods = {p["name"]: p for p in top_pods(read_model)}
    assert pods["web"] == {"namespace": "default", "name": "web", "node": "node-a", "requests": {"cpu": 1500},
                           "usage": {"cpu": 700}}
    assert pods["waiting"]["node"] is None and pods["waiting"]["usage"] == {}


def test_acknowledged_waits_for_the_scheduler_to_acknowledge_the_node_usage_a_node_metric_caused(
        projector, read_model, records):
    """A NodeMetric goes to the node aggregate only; the NodeUsage it sends on is not in the read model, so the
    NodeMetric is through once the scheduling domain's Ack names that NodeUsage (its ``eventId``)."""
    source = ("koord.nodemetrics", 1, 40)
    expected = {"inbox-node": 1}
    projector.apply([records.inbox_ack("inbox-node", source, 1, output_ids=["usage-7"])])
    assert not acknowledged(read_model, *source, expected)
    projector.apply([records.inbox_ack("inbox-scheduling", ("koord.nodeusages", 2, 9), 2, event_id="usage-7")])
    assert acknowledged(read_model, *source, expected)


def test_acknowledged_needs_every_aggregate_and_every_listed_output(projector, read_model, records):
    source = ("koord.nodes", 1, 40)
    expected = {"inbox-node": 1, "inbox-scheduling": 1}
    assert not acknowledged(read_model, *source, expected)
    projector.apply([records.inbox_ack("inbox-scheduling", source, 1)])
    assert not acknowledged(read_model, *source, expected)
    projector.apply([records.inbox_ack("inbox-node", source, 2, output_ids=["nr-7"])])
    assert not acknowledged(read_model, *source, expected), "the listed NodeResource is not projected yet"
    projector.apply([records.node("node-a", 3), records.node_resource("nr-7", "node-a", 4)])
    assert acknowledged(read_model, *source, expected)


def test_acknowledged_counts_one_ack_per_partition_of_a_broadcast(projector, read_model, records):
    source = ("koord.configs", 0, 5)
    projector.apply([records.inbox_ack("inbox-node", source, 1, inbox_partition=0),
                     records.inbox_ack("inbox-node", source, 2, inbox_partition=1)])
    assert acknowledged(read_model, *source, {"inbox-node": 2})
    assert not acknowledged(read_model, *source, {"inbox-node": 4})


def test_a_dead_letter_that_left_its_payload_out_shows_its_size_and_digest(projector, read_model, records):
    from streams.deadletter import dead_letter_record

    huge = b"x" * 2_000_000
    letter = dead_letter_record("router", "koord.pods", 0, 9, b"default/huge", huge, "too big", 1_700_000_000_009)
    record = records.dead_letter(9)
    projector.apply([dataclasses.replace(record, value=letter)])
    [shown] = get_deadletters(read_model)
    assert shown["payload"] is None and shown["payloadSize"] == 2_000_000
    assert shown["payloadSha256"] == hashlib.sha256(huge).hexdigest()
    assert shown["key"] == "default/huge" and shown["keySize"] is None


def test_dead_letters_of_one_record_list_the_projection_last(projector, read_model, records):
    """The router and the projection both reject an invalid source record: the router's comes first."""
    invalid = dataclasses.replace(records.pod("bad", 7), problem="metadata.name is empty")
    projector.apply([invalid, records.dead_letter(7, stage="router"), records.dead_letter(7, stage="inbox-node")])

    letters = get_deadletters(read_model)

    assert [(d["stage"], d["sourceTopic"], d["sourceOffset"]) for d in letters] == [
        ("inbox-node", "koord.pods", 7), ("router", "koord.pods", 7), ("projection", "koord.pods", 7)]


def test_get_objects_shows_migration_jobs_with_the_status_written_back(projector, read_model, records):
    def job(name, offset, phase=None):
        manifest = {"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "PodMigrationJob",
                    "metadata": {"name": name}, "spec": {"podRef": {"namespace": "default", "name": "p1"}},
                    **({"status": {"phase": phase}} if phase else {})}
        value = {"metadata": {"name": name, "namespace": None, "uid": None, "labels": {}, "annotations": {},
                              "generation": 0},
                 "manifest": json.dumps(manifest), "podRef": {"namespace": "default", "name": "p1", "uid": None},
                 "mode": None, "ttlMs": None, "paused": False, "reservationName": None, "deleteOptions": None,
                 "phase": phase}
        return records.record("koord.podmigrationjobs", name, "PodMigrationJob", value, offset)

    projector.apply([job("move-b", 1), job("move-a", 2), job("move-b", 3, phase="Succeeded")])
    got = get_objects(read_model, "podmigrationjobs", "PodMigrationJob")
    assert [(j["metadata"]["name"], (j.get("status") or {}).get("phase")) for j in got] == [
        ("move-a", None), ("move-b", "Succeeded")]
    projector.apply([records.tombstone("koord.podmigrationjobs", "move-a", 4)])
    assert [j["metadata"]["name"] for j in get_objects(read_model, "podmigrationjobs", "PodMigrationJob")] == [
        "move-b"]


def test_get_objects_shows_claims_with_the_columns_of_koord_get_pvc(projector, read_model, records):
    from streams.cli.get import CLAIM_COLUMNS, CLAIM_WIDE
    from streams.objects import load_and_validate

    text = ("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: team, annotations: "
            "{volume.kubernetes.io/selected-node: node-a}}\nspec: {storageClassName: local, volumeName: pv-1, "
            "accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\nstatus: {phase: Bound}\n")
    [claim] = load_and_validate("-", stdin_text=text)
    projector.apply([records.record("koord.persistentvolumeclaims", claim.key, "PersistentVolumeClaim",
                                    claim.record, 1)])
    [shown] = get_objects(read_model, "persistentvolumeclaims", "PersistentVolumeClaim", namespace="team")
    assert [f(shown) for _, f in (*CLAIM_COLUMNS, *CLAIM_WIDE)] == ["team", "data", "Bound", "pv-1", "local", "node-a"]


def test_get_objects_shows_pod_groups_with_the_status_the_scheduling_domain_wrote_back(projector, read_model,
                                                                                        records):
    """A PodGroup as ``koord apply`` writes it, then the status record the scheduling domain writes back to the
    same topic for the gang it placed: ``koord get podgroups`` shows the phase and counts."""
    from streams.cli.get import POD_GROUP_COLUMNS, POD_GROUP_WIDE
    from streams.objects import load_and_validate
    from tests.streams.scheduler.support import event, node, pod, run

    text = ("apiVersion: scheduling.sigs.k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: train, namespace: team}\n"
            "spec: {minMember: 2}\n")
    [group] = load_and_validate("-", stdin_text=text)
    members = [pod(f"w{i}", namespace="team", labels={"pod-group.scheduling.sigs.k8s.io": "train"}, ts=2000 + i)
               for i in range(2)]
    _, out = run(node("n1", cpu=8000), event("PodGroup", group.key, group.record), *members)
    written = [record for schema, record in out if schema == "PodGroup"]
    projector.apply([records.record("koord.podgroups", group.key, "PodGroup", group.record, 1),
                     *(records.record("koord.podgroups", group.key, "PodGroup", record, 2 + i)
                       for i, record in enumerate(written))])
    [shown] = get_objects(read_model, "podgroups", "PodGroup", namespace="team")
    assert [f(shown) for _, f in (*POD_GROUP_COLUMNS, *POD_GROUP_WIDE)] == [
        "team", "train", "Scheduled", "2", "2", "0", "0", "0", "", ""]
