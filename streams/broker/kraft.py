"""A local Apache Kafka in KRaft mode, from Kafka's published jars: the real-Kafka tier.

The jars of one pinned release come from Maven Central through ``mvn`` into a cache outside the
checkout (``~/.cache/koordstream/kafka-<version>/libs``, or ``KOORD_CACHE_DIR``) on first use and are
reused afterwards. Each node is a combined broker and controller (``process.roles=broker,controller``)
with a static quorum, on free loopback ports, with its data and log under the directory the caller
gives. A cluster of N nodes has replication factor N and ``min.insync.replicas`` min(2, N) for its
internal topics; the topology's environment decides the factor of koordstream's own topics.

Kafka's published POM lacks only the SLF4J binding (its build ships it in the release tarball alone),
so the runtime POM below adds ``log4j-slf4j-impl``; without it Kafka logs nothing, not even the
"Kafka Server started" line that readiness waits for.

For failover tests a cluster moves a partition's leadership (:meth:`KafkaCluster.move_leader`) and
answers who leads a partition (:meth:`KafkaCluster.leader_of`), who
coordinates a consumer group (:meth:`KafkaCluster.group_coordinator`) and which node is the active
controller (:meth:`KafkaCluster.active_controller`). The last asks the KRaft quorum (DescribeQuorum,
which aiokafka does not ship, so its v0 is defined below): in KRaft mode the controller id of a
Metadata or DescribeCluster answer is a random live broker (clients cannot reach controllers), so
aiokafka's ``describe_cluster()["controller_id"]`` changes from one connection to the next and names
the active controller only by chance.

A cluster may instead be started secured (:class:`Scram`, off by default): clients and brokers
authenticate with SASL/SCRAM on the broker listener, with credentials written into the metadata log at
format time (``--add-scram``, KIP-900: SCRAM credentials live in that log, so the first ones cannot be
created through a broker that does not yet accept anyone), and ``StandardAuthorizer`` enforces ACLs with
the admin as the only super user. The controller listener uses SASL/PLAIN, whose users are the JAAS
config's own: Kafka has no SCRAM on the controller listener, since the credentials live in the very
metadata log the controllers serve.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import shutil
import signal
import subprocess
import time
from pathlib import Path

from aiokafka.conn import create_conn
from aiokafka.errors import CoordinatorLoadInProgressError, CoordinatorNotAvailableError
from aiokafka.protocol.admin import AlterPartitionReassignmentsRequest
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.coordination import FindCoordinatorRequest
from aiokafka.protocol.metadata import MetadataRequest
from aiokafka.protocol.types import (
    Array, CompactArray, CompactString, Int8, Int16, Int32, Int64, Schema, String, TaggedFields)

from streams.maven import java_and_maven, runtime_jars
from streams.supervision import child_preexec

KAFKA_VERSION = "4.1.1"
LOG4J_VERSION = "2.24.3"
"""log4j2 of that Kafka release (``gradle/dependencies.gradle``), for the SLF4J binding."""
CLUSTER_ID = "4L6g3nShT-eMCtK--X86sw"
"""A fixed 22-character base64url cluster id (any valid one works; a fresh data directory is formatted)."""

METADATA_LOG = "__cluster_metadata"
"""The KRaft metadata log: its single partition's leader is the active controller."""
NO_LEADER = -1
"""Kafka's leader id for a partition that has none at the moment (an election is under way)."""
PREFERRED_ELECTION = 0
ELECTION_NOT_NEEDED = 84
"""ElectLeaders' answer for a partition already led by its preferred replica."""

STARTED = "Kafka Server started"
START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 30.0
HEAP = "-Xmx512m"

RUNTIME_POM = f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.koordstream</groupId><artifactId>kafka-runtime</artifactId><version>0</version>
  <packaging>pom</packaging>
  <dependencyManagement><dependencies>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-bom</artifactId>
      <version>{LOG4J_VERSION}</version><type>pom</type><scope>import</scope></dependency>
  </dependencies></dependencyManagement>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId>
      <version>{KAFKA_VERSION}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId></dependency>
  </dependencies>
</project>
"""

LOG4J2_PROPERTIES = """status = warn
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = STDOUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""

NODE_PROPERTIES = {
    "process.roles": "broker,controller",
    "inter.broker.listener.name": "PLAINTEXT",
    "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
    "auto.create.topics.enable": "false",
    "num.partitions": "1",
    # Test-harness settings, as Kafka's own TestUtils and testcontainers use them.
    "group.initial.rebalance.delay.ms": "0",
    "log.cleaner.dedupe.buffer.size": "2097152",
    "log.cleaner.backoff.ms": "500",
    "log.initial.task.delay.ms": "100",
    "log.segment.delete.delay.ms": "1000",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "background.threads": "2",
    "num.recovery.threads.per.data.dir": "1",
    "replica.socket.timeout.ms": "1500",
    "controller.socket.timeout.ms": "1500",
    # A SIGKILLed node is fenced after 3 s instead of 9 s (heartbeat * 2 <= session, as KafkaConfig requires).
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "3000",
}


def check_prerequisites() -> tuple[str, str]:
    """Paths of ``java`` (17 or newer) and ``mvn``, or ``MissingPrerequisite`` naming what is missing."""
    return java_and_maven("the real Kafka broker", ", or use the embedded broker")


def kafka_libs() -> Path:
    """The folder of Kafka's runtime jars, fetched with Maven on first use (``streams.cache``)."""
    _, mvn = check_prerequisites()
    return runtime_jars(mvn, f"kafka-{KAFKA_VERSION}", RUNTIME_POM, f"Kafka {KAFKA_VERSION}",
                        lambda home: (home / "log4j2.properties").write_text(LOG4J2_PROPERTIES))


def free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports (held open together, so they differ)."""
    import socket

    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]


AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SCRAM_LISTENER = "SASL_PLAINTEXT"


@dataclasses.dataclass(frozen=True)
class Scram:
    """A secured cluster: SASL/SCRAM users, the admin among them as the only super user, and
    ``StandardAuthorizer``, under which a principal without an ACL may do nothing."""

    admin: str = "admin"
    admin_password: str = "admin-secret"
    users: tuple[tuple[str, str], ...] = ()
    """(name, password) of the other users; principals ``User:<name>``."""
    mechanism: str = "SCRAM-SHA-256"

    def client_auth(self, user: str | None = None) -> dict:
        """aiokafka keyword arguments to connect as ``user`` (default: the admin)."""
        user = user or self.admin
        passwords = {self.admin: self.admin_password, **dict(self.users)}
        return {"security_protocol": SCRAM_LISTENER, "sasl_mechanism": self.mechanism,
                "sasl_plain_username": user, "sasl_plain_password": passwords[user]}

    def properties(self, node: "KafkaNode") -> dict:
        """The node properties that differ from a plaintext cluster's."""
        scram_login = "org.apache.kafka.common.security.scram.ScramLoginModule"
        plain_login = "org.apache.kafka.common.security.plain.PlainLoginModule"
        admin, password = self.admin, self.admin_password
        return {
            "inter.broker.listener.name": SCRAM_LISTENER,
            "listener.security.protocol.map": f"CONTROLLER:SASL_PLAINTEXT,{SCRAM_LISTENER}:SASL_PLAINTEXT",
            "listeners": f"{SCRAM_LISTENER}://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}",
            "advertised.listeners": f"{SCRAM_LISTENER}://127.0.0.1:{node.port}",
            "sasl.mechanism.inter.broker.protocol": self.mechanism,
            f"listener.name.{SCRAM_LISTENER.lower()}.sasl.enabled.mechanisms": self.mechanism,
            f"listener.name.{SCRAM_LISTENER.lower()}.{self.mechanism.lower()}.sasl.jaas.config":
                f'{scram_login} required username="{admin}" password="{password}";',
            "sasl.mechanism.controller.protocol": "PLAIN",
            "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.controller.plain.sasl.jaas.config":
                f'{plain_login} required username="{admin}" password="{password}" user_{admin}="{password}";',
            "authorizer.class.name": AUTHORIZER,
            "super.users": f"User:{admin}",
            "allow.everyone.if.no.acl.found": "false",
        }

    def format_arguments(self) -> list[str]:
        """``kafka-storage format`` arguments that write every user's SCRAM credential into the metadata log."""
        users = ((self.admin, self.admin_password), *self.users)
        return [arg for name, password in users
                for arg in ("--add-scram", f"{self.mechanism}=[name={name},password={password}]")]


@dataclasses.dataclass
class KafkaNode:
    node_id: int
    port: int
    controller_port: int
    directory: Path
    process: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.directory / "kafka.log"

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclasses.dataclass
class KafkaCluster:
    """N combined broker+controller nodes on loopback; the caller stops it (or uses ``with``)."""

    nodes: list[KafkaNode]
    libs: Path
    kind: str = "kafka"
    scram: Scram | None = None
    """Set: the cluster is secured (:class:`Scram`); unset: plaintext and no authorizer."""

    @property
    def bootstrap(self) -> str:
        return ",".join(node.address for node in self.nodes)

    @property
    def processes(self) -> list[subprocess.Popen]:
        return [node.process for node in self.nodes if node.process is not None]

    def node(self, node_id: int) -> KafkaNode:
        return next(node for node in self.nodes if node.node_id == node_id)

    def _java(self, *args: str, heap: str = HEAP) -> list[str]:
        return [shutil.which("java") or "java", heap, "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                f"-Dlog4j2.configurationFile={self.libs.parent / 'log4j2.properties'}",
                "-cp", f"{self.libs}/*", *args]

    def _properties(self, node: KafkaNode) -> str:
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes)
        replication = len(self.nodes)
        isr = min(2, replication)
        values = {
            **NODE_PROPERTIES,
            "node.id": node.node_id,
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
            "log.dirs": node.directory / "data",
            "default.replication.factor": replication,
            "min.insync.replicas": isr,
            "offsets.topic.replication.factor": replication,
            "offsets.topic.num.partitions": replication,
            "transaction.state.log.replication.factor": replication,
            "transaction.state.log.min.isr": isr,
            "transaction.state.log.num.partitions": replication,
            "share.coordinator.state.topic.replication.factor": replication,
            "share.coordinator.state.topic.min.isr": isr,
        }
        if self.scram is not None:
            values.update(self.scram.properties(node))
        return "".join(f"{key}={value}\n" for key, value in values.items())

    def format(self) -> None:
        for node in self.nodes:
            node.directory.mkdir(parents=True, exist_ok=True)
            (node.directory / "server.properties").write_text(self._properties(node))
            scram = self.scram.format_arguments() if self.scram is not None else []
            result = subprocess.run(
                self._java("kafka.tools.StorageTool", "format", "--ignore-formatted", "-t", CLUSTER_ID,
                           "-c", str(node.directory / "server.properties"), *scram, heap="-Xmx256m"),
                capture_output=True, text=True)
            if result.returncode != 0:
                raise RuntimeError(f"formatting Kafka node {node.node_id} failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")

    def start_node(self, node: KafkaNode) -> None:
        """Start (or restart) one node's JVM; readiness is :meth:`wait_started`."""
        log = open(node.log_path, "ab")
        node.process = subprocess.Popen(
            self._java(f"-Dkafka.logs.dir={node.directory}", "kafka.Kafka", str(node.directory / "server.properties")),
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            preexec_fn=child_preexec, process_group=0)

    def wait_started(self, node: KafkaNode, since: int = 0, timeout: float = START_TIMEOUT_S) -> None:
        """Until the node logs "Kafka Server started" (it is unfenced) after byte ``since`` of its log."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not node.alive():
                raise RuntimeError(f"Kafka node {node.node_id} exited before it started; see {node.log_path}:\n"
                                   f"{_tail(node.log_path)}")
            with open(node.log_path, "rb") as log:
                log.seek(since)
                if STARTED.encode() in log.read():
                    return
            time.sleep(0.1)
        raise TimeoutError(f"Kafka node {node.node_id} not started within {timeout:.0f}s; see {node.log_path}")

    def start(self) -> "KafkaCluster":
        """Format, start every node before waiting on any (a node is unfenced only once a quorum
        of controllers runs), wait for all, then until the cluster serves metadata for every broker."""
        self.format()
        try:
            for node in self.nodes:
                self.start_node(node)
            for node in self.nodes:
                self.wait_started(node)
            wait_brokers(self.bootstrap, len(self.nodes), auth=self.scram.client_auth() if self.scram else None)
        except BaseException:
            self.stop()
            raise
        return self

    def kill(self, node_id: int) -> None:
        """SIGKILL one node (a crash: no controlled shutdown)."""
        node = self.node(node_id)
        if node.alive():
            node.process.kill()
            node.process.wait()

    def restart(self, node_id: int) -> None:
        node = self.node(node_id)
        self.kill(node_id)
        since = node.log_path.stat().st_size if node.log_path.exists() else 0
        self.start_node(node)
        self.wait_started(node, since)

    def leader_of(self, topic: str, partition: int) -> int:
        """The node leading ``topic``/``partition`` as a live node's metadata has it (:data:`NO_LEADER` when none)."""
        answer = self._ask(MetadataRequest([topic]))
        [found] = [t for t in answer["topics"] if t["topic"] == topic]
        return next((p["leader"] for p in found["partitions"] if p["partition"] == partition), NO_LEADER)

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        """Make ``node_id``, a replica of ``topic``/``partition``, its leader: reorder the replicas with
        ``node_id`` first (the same set, so no data moves) and elect that preferred replica. Returns once
        the metadata names it, so a test can separate roles that one node happened to hold together."""
        answer = self._ask(MetadataRequest([topic]))
        [found] = [t for t in answer["topics"] if t["topic"] == topic]
        [replicas] = [p["replicas"] for p in found["partitions"] if p["partition"] == partition]
        if node_id not in replicas:
            raise ValueError(f"node {node_id} is not a replica of {topic}/{partition}: {replicas}")
        order = [node_id, *(r for r in replicas if r != node_id)]
        reassigned = self._ask(AlterPartitionReassignmentsRequest(30_000, [(topic, [(partition, order, {})], {})], {}))
        errors = [reassigned["error_code"],
                  *(p["error_code"] for t in reassigned["responses"] for p in t["partitions"])]
        if any(errors):
            raise RuntimeError(f"reordering the replicas of {topic}/{partition} failed: {reassigned}")
        deadline = time.monotonic() + START_TIMEOUT_S
        while self.leader_of(topic, partition) != node_id:
            if time.monotonic() > deadline:
                raise TimeoutError(f"node {node_id} did not become the leader of {topic}/{partition}")
            elected = self._ask(ElectLeadersRequest(topic, partition))
            results = [p for t in elected["replica_election_results"] for p in t["partition_result"]]
            if elected["error_code"] or any(p["error_code"] not in (0, ELECTION_NOT_NEEDED) for p in results):
                raise RuntimeError(f"electing node {node_id} for {topic}/{partition} failed: {elected}")
            time.sleep(0.2)

    def group_coordinator(self, group: str) -> int:
        """The node coordinating consumer group ``group`` (:data:`NO_LEADER` while none is available or
        the new one still loads the group's offsets)."""
        answer = self._ask(FindCoordinatorRequest(group, 0))
        if answer["error_code"] in (CoordinatorNotAvailableError.errno, CoordinatorLoadInProgressError.errno):
            return NO_LEADER
        if answer["error_code"]:
            raise RuntimeError(f"FindCoordinator({group}) failed with error code {answer['error_code']}")
        return answer["coordinator_id"]

    def quorum(self) -> dict:
        """The KRaft quorum as a live node reports it (it forwards DescribeQuorum to the active controller):
        ``leader_id``, ``leader_epoch``, ``high_watermark`` and ``current_voters`` (id, log end offset)."""
        answer = self._ask(DescribeQuorumRequest())
        error = answer["error_code"] or answer["topics"][0]["partitions"][0]["error_code"]
        if error:
            raise RuntimeError(f"DescribeQuorum failed with error code {error}")
        return answer["topics"][0]["partitions"][0]

    def active_controller(self) -> int:
        """The node id of the active controller: the leader of the KRaft metadata log."""
        return self.quorum()["leader_id"]

    def _ask(self, request: Request) -> dict:
        """``request``'s answer from the first live node that gives one (a restarting node may refuse)."""

        async def ask(node: KafkaNode) -> dict:
            auth = self.scram.client_auth() if self.scram is not None else {}
            conn = await create_conn("127.0.0.1", node.port, request_timeout_ms=5000, **auth)
            try:
                return (await conn.send(request)).to_object()
            finally:
                conn.close()

        errors = []
        for node in self.nodes:
            if node.alive():
                try:
                    return asyncio.run(ask(node))
                except Exception as error:
                    errors.append(f"node {node.node_id}: {error!r}")
        raise RuntimeError(f"no live Kafka node answered {type(request).__name__}: {'; '.join(errors) or 'none alive'}")

    def stop(self) -> None:
        """SIGTERM every node at once (a controlled shutdown of the last voters needs the others up),
        then SIGKILL what is left after :data:`STOP_TIMEOUT_S`."""
        running = [node.process for node in self.nodes if node.alive()]
        for proc in running:
            proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for proc in running:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def __enter__(self) -> "KafkaCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def cluster(directory: Path, nodes: int = 1, scram: Scram | None = None) -> KafkaCluster:
    """A cluster of ``nodes`` under ``directory`` on free ports, not yet started (see :meth:`KafkaCluster.start`);
    secured with SASL/SCRAM and ACLs when ``scram`` is given."""
    libs = kafka_libs()
    ports = free_ports(2 * nodes)
    return KafkaCluster(
        [KafkaNode(i + 1, ports[2 * i], ports[2 * i + 1], directory / f"kafka-{i + 1}") for i in range(nodes)], libs,
        scram=scram)


def wait_brokers(bootstrap: str, count: int, timeout: float = START_TIMEOUT_S, auth: dict | None = None) -> None:
    """Until a metadata request through ``bootstrap`` (with aiokafka security settings ``auth``) lists
    ``count`` brokers."""
    from aiokafka.admin import AIOKafkaAdminClient

    async def brokers() -> int:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap.split(","), request_timeout_ms=3000,
                                    **(auth or {}))
        try:
            await admin.start()
            return len((await admin.describe_cluster())["brokers"])
        except Exception:
            return 0
        finally:
            await admin.close()

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if asyncio.run(brokers()) >= count:
            return
        time.sleep(0.2)
    raise TimeoutError(f"Kafka at {bootstrap} did not list {count} brokers within {timeout:.0f}s")


_REPLICA_STATE = CompactArray(("replica_id", Int32), ("log_end_offset", Int64), ("tags", TaggedFields))


class DescribeQuorumResponse_v0(Response):
    """DescribeQuorumResponse.json, version 0 (flexible from version 0); aiokafka does not ship it."""

    API_KEY = 55
    API_VERSION = 0
    SCHEMA = Schema(
        ("error_code", Int16),
        ("topics", CompactArray(
            ("topic_name", CompactString("utf-8")),
            ("partitions", CompactArray(
                ("partition_index", Int32), ("error_code", Int16), ("leader_id", Int32), ("leader_epoch", Int32),
                ("high_watermark", Int64), ("current_voters", _REPLICA_STATE), ("observers", _REPLICA_STATE),
                ("tags", TaggedFields))),
            ("tags", TaggedFields))),
        ("tags", TaggedFields),
    )


class DescribeQuorumRequest_v0(RequestStruct):
    FLEXIBLE_VERSION = True
    API_KEY = 55
    API_VERSION = 0
    RESPONSE_TYPE = DescribeQuorumResponse_v0
    SCHEMA = Schema(
        ("topics", CompactArray(
            ("topic_name", CompactString("utf-8")),
            ("partitions", CompactArray(("partition_index", Int32), ("tags", TaggedFields))),
            ("tags", TaggedFields))),
        ("tags", TaggedFields),
    )


class DescribeQuorumRequest(Request[DescribeQuorumRequest_v0]):
    """DescribeQuorum of the metadata log's partition 0, the one question a KRaft quorum answers."""

    API_KEY = 55

    def build(self, request_struct_class: type[DescribeQuorumRequest_v0]) -> DescribeQuorumRequest_v0:
        return request_struct_class([(METADATA_LOG, [(0, {})], {})], {})


class ElectLeadersResponse_v1(Response):
    """ElectLeadersResponse.json, version 1 (not flexible); aiokafka does not ship it."""

    API_KEY = 43
    API_VERSION = 1
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("error_code", Int16),
        ("replica_election_results", Array(
            ("topic", String("utf-8")),
            ("partition_result", Array(
                ("partition_id", Int32), ("error_code", Int16), ("error_message", String("utf-8")))))),
    )


class ElectLeadersRequest_v1(RequestStruct):
    API_KEY = 43
    API_VERSION = 1
    RESPONSE_TYPE = ElectLeadersResponse_v1
    SCHEMA = Schema(
        ("election_type", Int8),
        ("topic_partitions", Array(("topic", String("utf-8")), ("partition_id", Array(Int32)))),
        ("timeout_ms", Int32),
    )


class ElectLeadersRequest(Request[ElectLeadersRequest_v1]):
    """A preferred-replica election for one partition."""

    API_KEY = 43

    def __init__(self, topic: str, partition: int):
        self.topic, self.partition = topic, partition

    def build(self, request_struct_class: type[ElectLeadersRequest_v1]) -> ElectLeadersRequest_v1:
        return request_struct_class(PREFERRED_ELECTION, [(self.topic, [self.partition])], 30_000)


def _tail(path: Path, size: int = 3000) -> str:
    try:
        return path.read_bytes()[-size:].decode(errors="replace")
    except OSError:
        return ""
