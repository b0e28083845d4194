import pytest

from streams.topology import ExistingTopic, TopologyError, load_topology, plan


def test_shipped_topology_loads_for_every_environment():
    for env in ("embedded", "compose", "production"):
        topology = load_topology(environment=env)
        assert topology.name("pods") == "koord.pods"
    assert load_topology(environment="production").spec("decisions").replication_factor == 3
    assert load_topology(environment="production").spec("decisions").configs["min.insync.replicas"] == "2"


def test_changelogs_are_co_partitioned_with_their_inboxes():
    topology = load_topology()
    assert topology.spec("changelog-scheduling").partitions == topology.spec("inbox-scheduling").partitions
    assert topology.spec("changelog-node").partitions == topology.spec("inbox-node").partitions


def test_unknown_environment_is_named(tmp_path):
    with pytest.raises(TopologyError, match="environment 'staging' is not defined"):
        load_topology(environment="staging")


def test_duplicate_id_is_rejected(tmp_path):
    path = tmp_path / "topics.yaml"
    path.write_text("app_id: x\nenvironments: {embedded: {}}\ntopics:\n"
                    "  - {id: a, name: t1, partitions: 1}\n  - {id: a, name: t2, partitions: 1}\n")
    with pytest.raises(TopologyError, match=r"topics\[1\].id 'a' is duplicated"):
        load_topology(path)


@pytest.mark.parametrize("existing, create, drift", [
    pytest.param({}, 1, [], id="missing-is-created"),
    pytest.param({"koord.pods": ExistingTopic(4, 1, {"cleanup.policy": "compact"})}, 0, [], id="in-sync"),
    pytest.param({"koord.pods": ExistingTopic(2, 1, {"cleanup.policy": "compact"})}, 0,
                 ["koord.pods: partitions 2 (want 4)"], id="partitions-drift"),
    pytest.param({"koord.pods": ExistingTopic(4, 1, {"cleanup.policy": "delete"})}, 0,
                 ["koord.pods: cleanup.policy='delete' (want 'compact')"], id="config-drift"),
])
def test_plan(existing, create, drift):
    topology = load_topology()
    only_pods = type(topology)(topology.app_id, topology.environment, (topology.spec("pods"),))
    result = plan(only_pods, existing)
    assert len(result.create) == create
    assert list(result.drift) == drift
