"""Tests of state.projection: idempotent, offset-ordered projection of decoded records."""

import dataclasses

import pytest
from sqlalchemy import select

from state.models import Base, Decision, Eviction, LatestObject, Node, Pod
from state.projection import _EVENTS, _LATEST_STATE, Projector
from state.queries import get_deadletters, get_decisions, get_pods, object_progress
from state.topics import DEFAULT_TOPICS, LATEST_STATE_TOPICS


def snapshot(engine) -> dict[str, list]:
    with engine.connect() as connection:
        return {
            name: sorted((tuple(row) for row in connection.execute(select(table))), key=repr)
            for name, table in Base.metadata.tables.items()
        }


def stored_manifest(engine, logical: str, key: str) -> str:
    if logical == "pods":
        statement = select(Pod.manifest).where(Pod.key == key)
    elif logical == "nodes":
        statement = select(Node.manifest).where(Node.name == key)
    else:
        statement = select(LatestObject.manifest).where(LatestObject.topic == logical, LatestObject.key == key)
    with engine.connect() as connection:
        return connection.execute(statement).scalar_one()


def test_every_topic_has_one_projection():
    assert set(_LATEST_STATE) == LATEST_STATE_TOPICS
    assert set(_LATEST_STATE) | set(_EVENTS) == set(DEFAULT_TOPICS)


def test_projecting_a_batch_twice_leaves_the_same_rows(projector, read_model, records):
    batch = [
        records.node("node-a", 1),
        records.pod("web", 2),
        records.pod("web", 3, phase="Pending"),
        records.tombstone("koord.pods", "default/gone", 4),
        records.quota("team-a", 5),
        records.config("slo-controller-config", 6, data={"colocation-config": "{}"}),
        records.decision("d-1", "default/web", "Scheduled", 7, node_name="node-a"),
        records.node_resource("nr-1", "node-a", 8, allocatable={"kubernetes.io/batch-cpu": 1500}),
        records.actuation("a-1", "node-a", 9),
        records.ack("a-1", "node-a", 10),
        records.dead_letter(11),
        records.quota_status("qs-1", "team-a", 12, runtime={"cpu": 4000}),
        records.inbox_ack("inbox-scheduling", ("koord.pods", 0, 2), 13, output_ids=["d-1"]),
        records.eviction("e-1", "default/batch", "node-a", 14, uid="uid-b"),
    ]

    assert projector.apply(batch).projected == len(batch)
    once = snapshot(read_model)
    assert projector.apply(batch).projected == len(batch)

    assert snapshot(read_model) == once
    assert all(once[name] for name in Base.metadata.tables if name not in ("source_cluster",))


@pytest.mark.parametrize(
    ("logical", "key", "build"),
    [
        pytest.param("pods", "default/web", lambda r, offset, v: r.pod("web", offset, phase=v), id="pods"),
        pytest.param("nodes", "node-a", lambda r, offset, v: r.node("node-a", offset, status={"v": v}), id="nodes"),
        pytest.param(
            "configs",
            "koordinator-system/slo",
            lambda r, offset, v: r.config("slo", offset, data={"v": v}),
            id="configs",
        ),
    ],
)
@pytest.mark.parametrize("same_batch", [pytest.param(False, id="later-batch"), pytest.param(True, id="same-batch")])
def test_older_object_record_is_ignored(projector, read_model, records, logical, key, build, same_batch):
    newer, older = build(records, 10, "newer"), build(records, 5, "older")

    if same_batch:
        projector.apply([newer, older])
    else:
        projector.apply([newer])
        projector.apply([older])

    assert object_progress(read_model, logical, key) == (0, 10, False)
    assert stored_manifest(read_model, logical, key) == newer.value["manifest"]


@pytest.mark.parametrize(
    ("sequence", "expected"),
    [
        pytest.param([("record", 3), ("tombstone", 4)], (0, 4, True), id="record-then-tombstone"),
        pytest.param([("tombstone", 4)], (0, 4, True), id="tombstone-first"),
        pytest.param([("record", 3), ("tombstone", 4), ("record", 5)], (0, 5, False), id="recreated"),
        pytest.param([("record", 5), ("tombstone", 4)], (0, 5, False), id="stale-tombstone"),
    ],
)
@pytest.mark.parametrize(
    ("logical", "topic", "key", "build"),
    [
        pytest.param("pods", "koord.pods", "default/web", lambda r, offset: r.pod("web", offset), id="pods"),
        pytest.param("nodes", "koord.nodes", "node-a", lambda r, offset: r.node("node-a", offset), id="nodes"),
        pytest.param("quotas", "koord.quotas", "default/q", lambda r, offset: r.quota("q", offset), id="quotas"),
    ],
)
def test_tombstone_marks_deleted(projector, read_model, records, sequence, expected, logical, topic, key, build):
    for kind, offset in sequence:
        projector.apply([build(records, offset) if kind == "record" else records.tombstone(topic, key, offset)])

    assert object_progress(read_model, logical, key) == expected


def test_tombstone_keeps_the_last_manifest(projector, read_model, records):
    pod = records.pod("web", 3)
    projector.apply([pod])
    projector.apply([records.tombstone("koord.pods", "default/web", 4)])

    assert stored_manifest(read_model, "pods", "default/web") == pod.value["manifest"]


def test_quota_profile_replaces_quota_under_the_same_key(projector, read_model, records):
    projector.apply([records.quota("team", 1), records.quota("team", 2, schema="ElasticQuotaProfile")])

    with read_model.connect() as connection:
        rows = connection.execute(select(LatestObject.kind, LatestObject.record)).all()
    assert [(kind, sorted(record)) for kind, record in rows] == [
        ("ElasticQuotaProfile", ["metadata", "nodeSelector", "quotaTreeId"])
    ]


def test_redelivered_decision_id_keeps_the_first_row(projector, read_model, records):
    projector.apply([records.decision("d-1", "default/web", "Scheduled", 3, node_name="node-a")])
    projector.apply([records.decision("d-1", "default/web", "Scheduled", 9, node_name="node-b")])

    assert [(d["nodeName"], d["topicOffset"]) for d in get_decisions(read_model)] == [("node-a", 3)]


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda r: r.record("koord.other", "k", "Pod", r.pod("web", 1).value, 1), id="unknown-topic"),
        pytest.param(lambda r: r.record("koord.pods", "a", "Node", r.node("a", 1).value, 1), id="wrong-schema"),
        pytest.param(lambda r: r.record("koord.pods", "default/web", None, None, 1), id="undecoded"),
        pytest.param(lambda r: r.tombstone("koord.decisions", "default/web", 1), id="tombstone-on-event-topic"),
        pytest.param(lambda r: r.tombstone("koord.pods", None, 1), id="tombstone-without-key"),
    ],
)
def test_unrepresentable_records_are_dead_lettered(projector, read_model, records, build):
    empty = snapshot(read_model)
    record = build(records)

    applied = projector.apply([record])

    assert applied.projected == 0
    assert [(letter["stage"], letter["sourceTopic"], letter["sourceOffset"]) for letter in applied.dead_letters] == [
        ("projection", record.topic, record.offset)]
    assert {name: rows for name, rows in snapshot(read_model).items() if name != "dead_letters"} == {
        name: rows for name, rows in empty.items() if name != "dead_letters"}
    assert [(d["stage"], d["sourceTopic"], d["sourceOffset"]) for d in get_deadletters(read_model)] == [
        ("projection", record.topic, record.offset)]


def test_topic_mapping_selects_the_projected_topics(read_model, records):
    projector = Projector(read_model, topics={"pods": "prod.pods"})
    default_topic = records.pod("web", 1)
    renamed = records.record("prod.pods", "default/api", "Pod", records.pod("api", 2).value, 2)

    assert projector.apply([default_topic, renamed]).projected == 1
    assert object_progress(read_model, "pods", "default/web") is None
    assert object_progress(read_model, "pods", "default/api") == (0, 2, False)


def test_evictions_share_the_decisions_topic_and_are_kept_once_per_decision_id(projector, read_model, records):
    eviction = records.eviction("e-1", "default/batch", "node-a", 3, uid="uid-b")
    batch = [records.decision("d-1", "default/batch", "Bound", 2, node_name="node-a"), eviction, eviction]

    assert projector.apply(batch).projected == 3
    assert projector.apply([eviction]).projected == 1

    with read_model.connect() as connection:
        evictions = connection.execute(select(Eviction.decision_id, Eviction.node_name, Eviction.pod_key,
                                              Eviction.pod_uid, Eviction.reason, Eviction.topic_offset)).all()
        decisions = connection.execute(select(Decision.decision_id)).scalars().all()
    assert evictions == [("e-1", "node-a", "default/batch", "uid-b", "EvictPodByNodeMemoryUsage", 3)]
    assert decisions == ["d-1"]


def test_every_kind_of_the_configs_topic_is_projected(projector, read_model, records):
    """``koord apply --wait`` waits for the object row, so a kind the projection skipped would never finish."""
    scheduler_config = records.config("koord-scheduler", 3)
    scheduler_config = dataclasses.replace(scheduler_config, schema="KubeSchedulerConfiguration")

    projector.apply([records.config("slo-controller-config", 2), scheduler_config])

    assert object_progress(read_model, "configs", "koordinator-system/slo-controller-config") == (0, 2, False)
    assert object_progress(read_model, "configs", "koordinator-system/koord-scheduler") == (0, 3, False)


def test_node_resource_topologies_are_latest_state_and_zones_are_projected(projector, read_model, records):
    from state.models import NodeResource

    zones = {"node-0": {"kubernetes.io/batch-cpu": 10_000, "kubernetes.io/batch-memory": 15 * 10**9}}
    projector.apply([records.topology("node-a", 1, zones={"node-0": (50_000, 62 * 10**9)}),
                     records.topology("node-a", 2, zones={"node-0": (48_000, 62 * 10**9)}),
                     records.node_resource("nr-1", "node-a", 3, zones=zones)])
    with read_model.connect() as connection:
        row = connection.execute(select(LatestObject).where(LatestObject.topic == "noderesourcetopologies")).one()
        projected = connection.execute(select(NodeResource.zones)).scalar_one()
    assert (row.key, row.kind, row.source_offset) == ("node-a", "NodeResourceTopology", 2)
    assert row.record["zones"][0]["resources"][1]["allocatable"] == 48_000
    assert projected == [{"name": "node-0", "resources": zones["node-0"]}]


def test_a_key_that_is_not_utf8_is_dead_lettered_and_the_rest_of_the_batch_projected(projector, read_model, records):
    bad = dataclasses.replace(records.pod("web", 1), key=None, raw_key=b"default/\xff\xfe")

    applied = projector.apply([bad, records.pod("api", 2)])

    assert applied.projected == 1
    assert [pod["metadata"]["name"] for pod in get_pods(read_model)] == ["api"]
    [letter] = get_deadletters(read_model)
    assert (letter["stage"], letter["sourceTopic"], letter["sourcePartition"], letter["sourceOffset"]) == (
        "projection", "koord.pods", 0, 1)
    assert letter["reason"] == "key is not UTF-8"
    assert letter["key"] == "default/\\xff\\xfe"


def test_a_record_the_consumer_found_invalid_never_appears_as_an_object(projector, read_model, records):
    invalid = dataclasses.replace(records.pod("web", 1), problem="requests.cpu: quantity must not be negative: -1")

    applied = projector.apply([invalid])

    assert applied.projected == 0 and get_pods(read_model) == []
    assert object_progress(read_model, "pods", "default/web") is None
    assert [letter["reason"] for letter in get_deadletters(read_model)] == [
        "requests.cpu: quantity must not be negative: -1"]


def test_a_record_whose_row_cannot_be_built_is_dead_lettered(projector, read_model, records):
    pod = records.pod("web", 1)
    without_metadata = dataclasses.replace(pod, value={k: v for k, v in pod.value.items() if k != "metadata"})

    applied = projector.apply([without_metadata, records.pod("api", 2)])

    assert applied.projected == 1
    assert [pod["metadata"]["name"] for pod in get_pods(read_model)] == ["api"]
    assert "its row cannot be built: KeyError" in get_deadletters(read_model)[0]["reason"]


def test_a_record_the_database_refuses_is_dead_lettered_and_the_rest_of_its_batch_kept(projector, read_model,
                                                                                        records):
    """A write failing inside a batch's transaction makes the projector write record by record."""
    refused = records.decision("d-2", "default/api", "Scheduled", 3, node_name="node-a", requests={"cpu": b"x"})
    batch = [records.node("node-a", 1), records.decision("d-1", "default/web", "Scheduled", 2, node_name="node-a"),
             refused, records.pod("web", 4), records.pod("web", 5, phase="Running")]

    applied = projector.apply(batch)

    assert applied.projected == 4
    assert [(letter["sourceTopic"], letter["sourceOffset"]) for letter in applied.dead_letters] == [
        ("koord.decisions", 3)]
    assert "the read model cannot store it" in get_deadletters(read_model)[0]["reason"]
    assert [d["decisionId"] for d in get_decisions(read_model)] == ["d-1"]
    assert object_progress(read_model, "pods", "default/web") == (0, 5, False)
    assert projector.apply(batch).projected == 4, "applying it again dead-letters the same record again"
    assert len(get_deadletters(read_model)) == 1


def test_a_manifest_with_a_nul_character_never_costs_the_rest_of_its_batch(projector, read_model, records):
    """PostgreSQL text refuses NUL (SQLite stores it): on either, the other records of the batch are projected."""
    nul = records.pod("nul", 1)
    nul = dataclasses.replace(nul, value={**nul.value, "manifest": nul.value["manifest"].replace("nginx", "ngi\x00nx")})

    applied = projector.apply([nul, records.pod("api", 2)])

    names = [pod["metadata"]["name"] for pod in get_pods(read_model)]
    if read_model.dialect.name == "postgresql":
        assert (applied.projected, names) == (1, ["api"])
        assert [d["sourceOffset"] for d in get_deadletters(read_model)] == [1]
    else:
        assert (applied.projected, names) == (2, ["api", "nul"])
