import asyncio
import shlex
import subprocess

import pytest
from aiokafka.admin import NewTopic

from streams.broker import kraft, local
from streams.kafka import admin_client
from streams.topology import ExistingTopic, TopologyError, alter_command, describe, load_topology, plan
from tests.brokers import require_kafka


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


def test_config_drift_names_what_to_set_and_the_command_sets_only_that():
    topology = load_topology()
    changelog = topology.spec("changelog-node")
    only = type(topology)(topology.app_id, topology.environment, (changelog,))
    result = plan(only, {changelog.name: ExistingTopic(4, 1, {"cleanup.policy": "compact,delete",
                                                                "segment.bytes": "1073741824",
                                                                "segment.ms": "60000",
                                                                "retention.ms": "604800000"})})
    assert result.set_configs == ((changelog.name, {"cleanup.policy": "compact", "segment.bytes": "16777216"}),)
    assert alter_command("k:9092", changelog.name, {"cleanup.policy": "compact,delete", "segment.ms": "60000"}) == (
        "kafka-configs.sh --bootstrap-server k:9092 --alter --entity-type topics "
        "--entity-name koordstream-node-state-changelog --add-config cleanup.policy=[compact,delete],segment.ms=60000")


def test_the_printed_command_mends_config_drift_on_kafka(tmp_path):
    """A changelog created before the file set its segments: Kafka's own config tool, run as printed,
    sets what the plan names and keeps the operator's retention."""
    require_kafka()
    topology = load_topology()
    changelog = topology.spec("changelog-node")
    only = type(topology)(topology.app_id, topology.environment, (changelog,))

    async def create_and_plan(create: bool):
        async with admin_client(broker.bootstrap) as admin:
            if create:
                await admin.create_topics([NewTopic(changelog.name, changelog.partitions, 1, topic_configs={
                    "cleanup.policy": "compact", "retention.ms": "123456789"})])
            existing = await describe(admin, [changelog.name])
            return plan(only, existing), existing[changelog.name].configs

    with local.start("kafka", tmp_path) as broker:
        before, _ = asyncio.run(create_and_plan(True))
        assert before.set_configs == ((changelog.name, {"segment.bytes": "16777216", "segment.ms": "60000"}),)
        arguments = shlex.split(alter_command(broker.bootstrap, *before.set_configs[0]))[1:]
        java, _ = kraft.check_prerequisites()
        subprocess.run([java, "-cp", f"{kraft.kafka_libs()}/*", "kafka.admin.ConfigCommand", *arguments],
                       check=True, capture_output=True, timeout=120)
        after, configs = asyncio.run(create_and_plan(False))
    assert (after.drift, after.in_sync, after.set_configs) == ((), (changelog.name,), ())
    assert configs["retention.ms"] == "123456789"
