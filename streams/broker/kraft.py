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
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

from streams.supervision import child_preexec

KAFKA_VERSION = "4.1.1"
LOG4J_VERSION = "2.24.3"
"""log4j2 of that Kafka release (``gradle/dependencies.gradle``), for the SLF4J binding."""
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
CLUSTER_ID = "4L6g3nShT-eMCtK--X86sw"
"""A fixed 22-character base64url cluster id (any valid one works; a fresh data directory is formatted)."""

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


class MissingPrerequisite(RuntimeError):
    """Java 17 or Maven is not installed: the real-Kafka tier cannot run here."""


def cache_dir() -> Path:
    return Path(os.environ.get("KOORD_CACHE_DIR") or Path.home() / ".cache" / "koordstream")


def check_prerequisites() -> tuple[str, str]:
    """Paths of ``java`` (17 or newer) and ``mvn``, or :class:`MissingPrerequisite` naming what is missing."""
    java, mvn = shutil.which("java"), shutil.which("mvn")
    missing = [name for name, path in (("Java 17 (java)", java), ("Maven (mvn)", mvn)) if not path]
    if missing:
        raise MissingPrerequisite(
            f"the real Kafka broker needs {' and '.join(missing)} on PATH: install them "
            f"(Debian: apt-get install openjdk-17-jre-headless maven), or use the embedded broker")
    version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    match = re.search(r'version "(\d+)', version)
    if not match or int(match.group(1)) < 17:
        raise MissingPrerequisite(f"the real Kafka broker needs Java 17 or newer; {java} is: {version.strip()}")
    return java, mvn


def kafka_libs() -> Path:
    """The folder of Kafka's runtime jars, fetched with Maven on first use (serialised by a file lock)."""
    java, mvn = check_prerequisites()
    home = cache_dir() / f"kafka-{KAFKA_VERSION}"
    libs, done = home / "libs", home / ".complete"
    if done.exists():
        return libs
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return libs
        (home / "pom.xml").write_text(RUNTIME_POM)
        staging = home / "libs.partial"
        shutil.rmtree(staging, ignore_errors=True)
        result = subprocess.run(
            [mvn, "-B", "-q", "-f", str(home / "pom.xml"), f"{DEPENDENCY_PLUGIN}:copy-dependencies",
             "-DincludeScope=runtime", f"-DoutputDirectory={staging}"],
            capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"mvn could not fetch Kafka {KAFKA_VERSION}:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
        shutil.rmtree(libs, ignore_errors=True)
        staging.rename(libs)
        (home / "log4j2.properties").write_text(LOG4J2_PROPERTIES)
        done.touch()
    return libs


def free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports (held open together, so they differ)."""
    import socket

    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]


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
        return "".join(f"{key}={value}\n" for key, value in values.items())

    def format(self) -> None:
        for node in self.nodes:
            node.directory.mkdir(parents=True, exist_ok=True)
            (node.directory / "server.properties").write_text(self._properties(node))
            result = subprocess.run(
                self._java("kafka.tools.StorageTool", "format", "--ignore-formatted", "-t", CLUSTER_ID,
                           "-c", str(node.directory / "server.properties"), heap="-Xmx256m"),
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
            wait_brokers(self.bootstrap, len(self.nodes))
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


def cluster(directory: Path, nodes: int = 1) -> KafkaCluster:
    """A cluster of ``nodes`` under ``directory`` on free ports, not yet started (see :meth:`KafkaCluster.start`)."""
    libs = kafka_libs()
    ports = free_ports(2 * nodes)
    return KafkaCluster(
        [KafkaNode(i + 1, ports[2 * i], ports[2 * i + 1], directory / f"kafka-{i + 1}") for i in range(nodes)], libs)


def wait_brokers(bootstrap: str, count: int, timeout: float = START_TIMEOUT_S) -> None:
    """Until a metadata request through ``bootstrap`` lists ``count`` brokers."""
    import asyncio

    from aiokafka.admin import AIOKafkaAdminClient

    async def brokers() -> int:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap.split(","), request_timeout_ms=3000)
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


def _tail(path: Path, size: int = 3000) -> str:
    try:
        return path.read_bytes()[-size:].decode(errors="replace")
    except OSError:
        return ""
