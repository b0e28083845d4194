"""Who may write what, on a real Kafka with SASL/SCRAM and StandardAuthorizer.

``koord topics apply`` runs as the admin (the only super user) and creates the topics and the ACLs of
deploy/acls.yaml; then real producers with each principal's own credentials show what it may write, and
a Faust worker under exactly_once, with nothing but the worker's grants, turns an operator's objects into
a decision. A broker without an authorizer (a plaintext Kafka, the embedded Tansu) gets no ACLs and the
command says so.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import TopicAuthorizationFailedError

from streams import acls, supervision
from streams.broker import embedded, kraft, local
from streams.topology import DEFAULT_FILE as TOPOLOGY_FILE
from streams.topology import load_topology
from tests.brokers import require_kafka

USERS = (("worker", "worker-secret"), ("node-agent", "node-agent-secret"), ("operator", "operator-secret"))
TOPOLOGY = load_topology()
NODE = """apiVersion: v1
kind: Node
metadata: {name: acl-node}
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
"""
POD = """apiVersion: v1
kind: Pod
metadata: {name: acl-pod, namespace: acl}
spec:
  containers:
  - {name: main, image: nginx, resources: {requests: {cpu: "1", memory: 256Mi}}}
"""
WORKER_READY_S = 120


def clean_env(bootstrap: str, kind: str, home) -> dict[str, str]:
    """The environment of a koord child process for this broker, without the caller's KOORD_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KOORD_")}
    env.update(KOORD_BROKER=bootstrap, KOORD_BROKER_KIND=kind, KOORD_HOME=str(home))
    return env


def koord(env: dict[str, str], *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(supervision.koord_command(*args), input=input, capture_output=True, text=True, env=env,
                          timeout=120)


def koord_topics_apply(bootstrap: str, kind: str, home, auth: dict[str, str],
                       *flags: str) -> subprocess.CompletedProcess:
    return koord({**clean_env(bootstrap, kind, home), **auth}, "topics", "apply", *flags)


def user_env(scram: kraft.Scram, user: str | None = None) -> dict[str, str]:
    """The KOORD_KAFKA_* settings to connect as ``user`` (default: the admin)."""
    auth = scram.client_auth(user)
    return {"KOORD_KAFKA_SECURITY_PROTOCOL": auth["security_protocol"],
            "KOORD_KAFKA_SASL_MECHANISM": auth["sasl_mechanism"],
            "KOORD_KAFKA_SASL_USERNAME": auth["sasl_plain_username"],
            "KOORD_KAFKA_SASL_PASSWORD": auth["sasl_plain_password"]}


def test_a_secured_node_authenticates_everyone_and_authorizes_with_acls(tmp_path):
    """Without a JVM: the properties and format arguments a secured cluster adds."""
    scram = kraft.Scram(users=(("worker", "w"),))
    node = kraft.KafkaNode(1, 9001, 9101, tmp_path / "kafka-1")
    properties = dict(line.split("=", 1) for line in
                      kraft.KafkaCluster([node], tmp_path / "libs", scram=scram)._properties(node).splitlines())
    assert properties["listeners"] == "SASL_PLAINTEXT://127.0.0.1:9001,CONTROLLER://127.0.0.1:9101"
    assert properties["listener.security.protocol.map"] == "CONTROLLER:SASL_PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT"
    assert (properties["inter.broker.listener.name"], properties["sasl.mechanism.inter.broker.protocol"]) == (
        "SASL_PLAINTEXT", "SCRAM-SHA-256")
    assert properties["authorizer.class.name"] == kraft.AUTHORIZER
    assert (properties["super.users"], properties["allow.everyone.if.no.acl.found"]) == ("User:admin", "false")
    assert scram.format_arguments() == ["--add-scram", "SCRAM-SHA-256=[name=admin,password=admin-secret]",
                                        "--add-scram", "SCRAM-SHA-256=[name=worker,password=w]"]


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """A one-node SCRAM-secured Kafka on which ``koord topics apply`` has run once, after a dry run;
    (cluster, output of the dry run and the apply)."""
    require_kafka()
    scram = kraft.Scram(users=USERS)
    directory = tmp_path_factory.mktemp("secured")
    with kraft.cluster(directory, 1, scram=scram).start() as cluster:
        dry = koord_topics_apply(cluster.bootstrap, "kafka", directory / "home", user_env(scram), "--dry-run")
        assert dry.returncode == 0, dry.stderr
        result = koord_topics_apply(cluster.bootstrap, "kafka", directory / "home", user_env(scram))
        assert result.returncode == 0, result.stderr
        yield cluster, dry.stdout + result.stdout


def write(cluster: kraft.KafkaCluster, user: str, topic: str) -> str:
    """Produce one record to ``topic`` as ``user`` (idempotent, as every koordstream producer on Kafka):
    "written" or the name of the error that refused it."""

    async def send() -> str:
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, **cluster.scram.client_auth(user),
                                    acks="all", enable_idempotence=True, request_timeout_ms=10_000)
        await producer.start()
        try:
            await producer.send_and_wait(topic, key=b"k", value=b"v")
            return "written"
        except TopicAuthorizationFailedError:
            return "TopicAuthorizationFailed"
        finally:
            await producer.stop()

    return asyncio.run(send())


def test_a_dry_run_changes_nothing_then_apply_creates_topics_and_every_acl(secured):
    _, output = secured
    want = acls.bindings(acls.load_roles(), TOPOLOGY)
    assert f"ACLs: 0 present, {len(want)} would create, 0 not in acls.yaml" in output
    assert f"0 in sync, {len(TOPOLOGY.topics)} created, 0 drifted" in output
    assert f"ACLs: 0 present, {len(want)} created, 0 not in acls.yaml" in output
    assert "created ACL User:node-agent WRITE topic koord.nodemetrics" in output


def test_the_cluster_helpers_authenticate_as_the_admin(secured):
    cluster, _ = secured
    assert cluster.active_controller() == 1


def test_a_second_apply_finds_everything_present(secured, tmp_path):
    cluster, _ = secured
    result = koord_topics_apply(cluster.bootstrap, "kafka", tmp_path, user_env(cluster.scram))
    want = acls.bindings(acls.load_roles(), TOPOLOGY)
    assert result.returncode == 0, result.stderr
    assert f"ACLs: {len(want)} present, 0 created, 0 not in acls.yaml" in result.stdout


@pytest.mark.parametrize("topic_id", ["inbox-node", "inbox-scheduling", "decisions", "actuations"])
def test_a_node_agent_cannot_write_inboxes_or_outputs(secured, topic_id):
    """The inboxes it may not even see (Metadata refuses them); decisions and actuations it reads, so the
    refusal comes from Produce itself."""
    cluster, _ = secured
    assert write(cluster, "node-agent", TOPOLOGY.name(topic_id)) == "TopicAuthorizationFailed"


@pytest.mark.parametrize("topic_id", ["nodemetrics", "nodes", "actuation-acks", "deadletters"])
def test_a_node_agent_writes_its_own_topics(secured, topic_id):
    cluster, _ = secured
    assert write(cluster, "node-agent", TOPOLOGY.name(topic_id)) == "written"


@pytest.mark.parametrize("topic_id", ["inbox-node", "inbox-scheduling", "decisions", "actuations",
                                      "changelog-node"])
def test_the_worker_writes_inboxes_outputs_and_changelogs(secured, topic_id):
    cluster, _ = secured
    assert write(cluster, "worker", TOPOLOGY.name(topic_id)) == "written"


def test_the_worker_cannot_write_source_objects(secured):
    cluster, _ = secured
    assert write(cluster, "worker", TOPOLOGY.name("pods")) == "TopicAuthorizationFailed"


def test_a_worker_with_only_its_grants_decides_under_exactly_once(secured, tmp_path):
    """The worker's group, transactional ids, changelogs, inbox and output grants are all it needs: an
    operator applies a node and a pod, the worker (exactly_once) writes the pod's decision."""
    cluster, _ = secured
    base = clean_env(cluster.bootstrap, "kafka", tmp_path)
    worker_env = {**base, **user_env(cluster.scram, "worker"), "KOORD_PROCESSING_GUARANTEE": "exactly_once"}
    log_path = tmp_path / "worker.log"
    worker = supervision.spawn(supervision.koord_command("worker", "--metrics-port",
                                                         str(embedded.free_loopback_port())), log_path, worker_env)
    try:
        deadline = time.monotonic() + WORKER_READY_S
        while "Worker ready" not in log_path.read_text():
            assert worker.poll() is None, f"worker exited:\n{log_path.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"worker not ready:\n{log_path.read_text()[-3000:]}"
            time.sleep(0.5)
        applied = koord({**base, **user_env(cluster.scram, "operator")}, "apply", "-f", "-",
                        input=f"{NODE}---\n{POD}")
        assert applied.returncode == 0, applied.stderr
        keys = read_keys(cluster, "operator", TOPOLOGY.name("decisions"), until=lambda key: "acl-pod" in key)
        assert any("acl-pod" in key for key in keys), keys
    finally:
        supervision.stop([worker])
    assert "AuthorizationFailed" not in log_path.read_text()


def read_keys(cluster: kraft.KafkaCluster, user: str, topic: str, until, timeout: float = 90) -> list[str]:
    """The keys of ``topic`` read as ``user`` from the start, until one satisfies ``until`` or ``timeout``
    passes; only committed records (the worker writes in transactions)."""

    async def read() -> list[str]:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=cluster.bootstrap, **cluster.scram.client_auth(user),
                                    group_id=None, auto_offset_reset="earliest", isolation_level="read_committed")
        await consumer.start()
        keys: list[str] = []
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and not any(until(key) for key in keys):
                batches = await consumer.getmany(timeout_ms=1000)
                keys += [record.key.decode() for records in batches.values() for record in records]
        finally:
            await consumer.stop()
        return keys

    return asyncio.run(read())


@pytest.mark.parametrize("kind", local.KINDS)
def test_without_an_authorizer_acls_are_not_applied_and_apply_succeeds(kind, tmp_path):
    if kind == "kafka":
        require_kafka()
    with local.start(kind, tmp_path / "broker") as broker:
        result = koord_topics_apply(broker.bootstrap, kind, tmp_path / "home", {})
    assert result.returncode == 0, result.stderr
    assert "ACLs NOT applied" in result.stdout
    assert f"{len(TOPOLOGY.topics)} created" in result.stdout


def test_without_an_acl_file_beside_the_topology_apply_says_so(tmp_path):
    topology = tmp_path / "topics.yaml"
    topology.write_text(TOPOLOGY_FILE.read_text())
    with local.start("tansu", tmp_path / "broker") as broker:
        result = koord_topics_apply(broker.bootstrap, "tansu", tmp_path / "home", {"KOORD_TOPOLOGY": str(topology)})
    assert result.returncode == 0, result.stderr
    assert f"ACLs NOT applied: there is no {tmp_path / 'acls.yaml'}" in result.stdout
