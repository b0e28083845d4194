"""deploy/acls.yaml against the topology and the code that reads and writes each topic; the file's checks;
the apply plan. No broker (tests/streams/broker/test_acls.py applies them on a secured Kafka)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from node_agent.actuator.actuator import ACKS_TOPIC, ACTUATIONS_TOPIC
from streams import acls, roles
from streams.agents import projection
from streams.outputs import OUTPUT_TOPICS
from streams.bridge.config import BridgeConfig
from streams.bridge.resources import WATCHED
from streams.objects.kinds import KINDS
from streams.topology import load_topology

TOPOLOGY = load_topology()
ROLES = {role.name: role for role in acls.load_roles()}
BINDINGS = acls.bindings(tuple(ROLES.values()), TOPOLOGY)
INBOXES = ("inbox-node", "inbox-routing", "inbox-scheduling")


def writers(topic_id: str) -> set[str]:
    return acls.writers(BINDINGS, TOPOLOGY.name(topic_id))


@pytest.mark.parametrize("topic_id", [*INBOXES, *sorted(set(OUTPUT_TOPICS.values()) - {"deadletters", "podmigrationjobs", "reservations",
                                                                              "podgroups"}),
                                      "changelog-node", "changelog-routing", "changelog-scheduling", "ticks"])
def test_the_worker_alone_writes_inboxes_outputs_changelogs_and_ticks(topic_id):
    assert writers(topic_id) == {"User:worker"}


@pytest.mark.parametrize("topic_id", ["podmigrationjobs", "reservations", "podgroups"])
def test_jobs_and_reservations_are_applied_by_people_and_the_bridge_and_their_status_written_by_the_worker(topic_id):
    assert writers(topic_id) == {"User:worker", "User:operator", "User:bridge"}


def test_dead_letters_come_from_the_worker_the_node_agents_and_the_bridges():
    assert writers("deadletters") == {"User:worker", "User:node-agent", "User:bridge", "User:yarn-bridge"}


def test_node_agents_write_exactly_what_they_publish():
    """Node, NodeMetric, NodeResourceTopology and Device objects (``node_agent.run``), actuation acks and
    the dead letters of refused actuations (``node_agent.actuator``)."""
    published = {KINDS[kind].topic for kind in ("Node", "NodeMetric", "NodeResourceTopology", "Device")}
    assert set(ROLES["node-agent"].write) == published | {ACKS_TOPIC, "deadletters"}
    assert ACTUATIONS_TOPIC in ROLES["node-agent"].read
    assert not ROLES["node-agent"].groups and not ROLES["node-agent"].transactional_id_prefixes


def test_the_bridge_writes_what_it_watches_and_reads_with_its_group():
    assert set(ROLES["bridge"].write) == {KINDS[r.kind].topic for r in WATCHED} | {"deadletters"}
    group = next(f for f in dataclasses.fields(BridgeConfig) if f.name == "consumer_group").default
    assert ROLES["bridge"].groups == (group,)


def test_the_projection_reads_what_it_projects_and_writes_nothing():
    assert set(ROLES["projection"].read) == set(projection.PROJECTED)
    assert ROLES["projection"].groups == (projection.GROUP_ID,) and not ROLES["projection"].write


def test_operators_write_source_objects_only():
    assert set(ROLES["operator"].write) == {spec.topic for spec in KINDS.values()}


def test_the_worker_group_and_transactional_ids_follow_the_app_id():
    """Faust's consumer group is the app id; its transactional ids are "<app_id>-<group>-<partition>"."""
    other = dataclasses.replace(TOPOLOGY, app_id="elsewhere")
    worker = [b for b in acls.bindings((ROLES["worker"],), other) if b.resource_type != "TOPIC"]
    assert worker == [acls.Binding("User:worker", "GROUP", "elsewhere", "LITERAL", "READ"),
                      acls.Binding("User:worker", "TRANSACTIONAL_ID", "elsewhere-", "PREFIXED", "WRITE")]


def test_a_worker_role_is_granted_its_own_group_changelogs_and_transactional_ids():
    """``koord topics apply --role scheduling``: the role's worker reads with group ``<app_id>-scheduling``, writes
    its own scheduling changelog and no other role's, and its transactional ids start with ``<app_id>-scheduling-``
    (already covered by the worker's prefix)."""
    scheduling = roles.role("scheduling")
    granted = acls.bindings((ROLES["worker"],), TOPOLOGY, scheduling)
    app = TOPOLOGY.app_id
    assert acls.Binding("User:worker", "GROUP", f"{app}-scheduling", "LITERAL", "READ") in granted
    changelogs = {b.name for b in granted if b.resource_type == "TOPIC" and b.name.endswith("-changelog")}
    assert changelogs == {f"{app}-scheduling-scheduling-state-changelog"}
    assert set(scheduling.topology(TOPOLOGY).names().values()) >= changelogs


def test_every_principal_is_in_one_role_and_every_grant_is_a_real_name():
    names = set(TOPOLOGY.names().values())
    assert {b.name for b in BINDINGS if b.resource_type == "TOPIC"} <= names
    assert len({p for role in ROLES.values() for p in role.principals}) == sum(
        len(role.principals) for role in ROLES.values())


@pytest.mark.parametrize("text, message", [
    pytest.param("roles: {w: {principals: [User:w], write: [nope]}}", "topic id\\(s\\) nope not in the topology",
                 id="unknown-topic"),
    pytest.param("roles: {w: {principals: [worker]}}", "must be User:<name>", id="bare-principal"),
    pytest.param("roles: {w: {principals: [User:w]}, v: {principals: [User:w]}}", "already in role w",
                 id="principal-in-two-roles"),
    pytest.param("roles: {w: {principals: [User:w], writes: [nodes]}}", "unknown field\\(s\\) writes",
                 id="unknown-field"),
    pytest.param("roles: {w: {read: [nodes]}}", "principals is required", id="no-principals"),
    pytest.param("roles: {w: {principals: [User:w], read: nodes}}", "read must be a list", id="not-a-list"),
    pytest.param("roles: {}", "no roles", id="empty"),
])
def test_invalid_files_are_refused_with_the_reason(tmp_path: Path, text, message):
    path = tmp_path / "acls.yaml"
    path.write_text(text)
    with pytest.raises(acls.AclError, match=message):
        acls.bindings(acls.load_roles(path), TOPOLOGY)


def test_plan_creates_what_is_missing_and_reports_foreign_grants_of_known_principals():
    want = (acls.Binding("User:a", "TOPIC", "t1", "LITERAL", "WRITE"),
            acls.Binding("User:a", "TOPIC", "t2", "LITERAL", "READ"))
    stray = acls.Binding("User:a", "TOPIC", "t3", "LITERAL", "WRITE")
    unrelated = acls.Binding("User:someone-else", "TOPIC", "t1", "LITERAL", "WRITE")
    result = acls.plan(want, {want[1], stray, unrelated})
    assert (result.create, result.present, result.extra) == ((want[0],), (want[1],), (stray,))


def test_a_prefixed_write_grant_covers_the_names_it_starts():
    grant = (acls.Binding("User:a", "TOPIC", "koord.", "PREFIXED", "WRITE"),)
    assert acls.writers(grant, "koord.pods") == {"User:a"} and acls.writers(grant, "other.pods") == set()


def test_create_acls_sends_every_binding_in_one_request():
    from aiokafka.protocol.admin import CreateAclsRequest_v1

    request = acls.CreateAcls(BINDINGS[:2]).build(CreateAclsRequest_v1)
    assert [c[:3] + c[4:] for c in request.creations] == [
        (acls.RESOURCE_TYPES[b.resource_type], b.name, acls.PATTERN_TYPES[b.pattern], "*",
         acls.OPERATIONS[b.operation], acls.ALLOW) for b in BINDINGS[:2]]
    assert [c[3] for c in request.creations] == [b.principal for b in BINDINGS[:2]]


def test_koord_topics_apply_refuses_an_invalid_acl_file_before_it_connects(tmp_path: Path):
    from click.testing import CliRunner

    from streams.cli.topics import apply_cmd

    bad = tmp_path / "acls.yaml"
    bad.write_text("roles: {w: {principals: [User:w], write: [nope]}}")
    result = CliRunner().invoke(apply_cmd, ["--acls", str(bad)], env={"KOORD_BROKER": "127.0.0.1:1"})
    assert result.exit_code == 1
    assert "topic id(s) nope not in the topology" in result.output


def test_the_acl_file_goes_with_the_topology_file(tmp_path: Path):
    assert acls.beside(None) == Path(acls.__file__).resolve().parent.parent / "deploy" / "acls.yaml"
    assert acls.beside(tmp_path / "topics.yaml") == tmp_path / "acls.yaml"
