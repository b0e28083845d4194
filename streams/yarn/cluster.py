"""A local Hadoop YARN: one ResourceManager and N NodeManagers, each its own JVM, from Maven Central jars.

The jars of one pinned Hadoop release (``hadoop-client-minicluster``, whose shaded jar holds the
ResourceManager and NodeManager servers, with ``hadoop-client-api``/``-runtime``) come through ``mvn``
into ``~/.cache/koordstream/hadoop-<version>/libs`` (``KOORD_CACHE_DIR``) on first use, as the Kafka
jars do (``streams.broker.kraft``). The shaded jars leave out what Hadoop's own distribution adds
beside them, so the POM below adds it: reload4j and its SLF4J binding (the servers log through
log4j 1), BouncyCastle (the ResourceManager's proxy CA) and JAXB with javax.activation (dropped from
Java 11+, needed by the web services).

The daemons run their real ``main`` classes (``ResourceManager``, ``NodeManager``), not Hadoop's
``MiniYARNCluster``: in one JVM the servers share Guice's static servlet pipeline and the last
NodeManager's web services answer on the ResourceManager's port, so ``ws/v1/cluster`` is unreachable.
Each daemon reads a ``yarn-site.xml`` written into its own folder under the cluster directory; all
listen on loopback ports chosen at start. ``state.json`` keeps the pids, the ResourceManager's web
and admin addresses and the NodeManager ids, so ``koord yarn down|status`` work from another process.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from xml.sax.saxutils import escape

from streams import cache
from streams.broker.kraft import DEPENDENCY_PLUGIN, free_ports
from streams.supervision import pid_alive, wait_gone

HADOOP_VERSION = "3.4.1"
BOUNCYCASTLE_VERSION = "1.78.1"
"""BouncyCastle of that Hadoop release (``hadoop-project/pom.xml``)."""
RELOAD4J_VERSION = "1.2.22"
SLF4J_VERSION = "1.7.36"

RUNTIME_POM = f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.koordstream</groupId><artifactId>yarn-runtime</artifactId><version>0</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-minicluster</artifactId>
      <version>{HADOOP_VERSION}</version></dependency>
    <dependency><groupId>ch.qos.reload4j</groupId><artifactId>reload4j</artifactId>
      <version>{RELOAD4J_VERSION}</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId>
      <version>{SLF4J_VERSION}</version></dependency>
    <dependency><groupId>org.bouncycastle</groupId><artifactId>bcpkix-jdk18on</artifactId>
      <version>{BOUNCYCASTLE_VERSION}</version></dependency>
    <dependency><groupId>javax.xml.bind</groupId><artifactId>jaxb-api</artifactId><version>2.2.11</version></dependency>
    <dependency><groupId>com.sun.xml.bind</groupId><artifactId>jaxb-impl</artifactId><version>2.2.3-1</version></dependency>
    <dependency><groupId>javax.activation</groupId><artifactId>javax.activation-api</artifactId>
      <version>1.2.0</version></dependency>
  </dependencies>
</project>
"""

LOG4J_PROPERTIES = """log4j.rootLogger=INFO, out
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=%d %p %c{1}: %m%n
"""

JAVA_OPENS = tuple(f"--add-opens=java.base/{package}=ALL-UNNAMED" for package in (
    "java.lang", "java.lang.reflect", "java.util", "java.util.concurrent", "java.io", "java.net", "sun.nio.ch"))
"""Hadoop 3.4 on Java 17: Guice's cglib defines classes through ``ClassLoader.defineClass``."""

RESOURCE_MANAGER = "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager"
NODE_MANAGER = "org.apache.hadoop.yarn.server.nodemanager.NodeManager"
RM_HEAP = "-Xmx256m"
NM_HEAP = "-Xmx160m"
START_TIMEOUT_S = 240.0
STOP_TIMEOUT_S = 20.0
NM_HEARTBEAT_MS = 500


class MissingPrerequisite(RuntimeError):
    """Java 17 or Maven is not installed: the YARN tier cannot run here."""


def check_prerequisites() -> tuple[str, str]:
    """Paths of ``java`` (17 or newer) and ``mvn``, or :class:`MissingPrerequisite` naming what is missing."""
    java, mvn = shutil.which("java"), shutil.which("mvn")
    missing = [name for name, path in (("Java 17 (java)", java), ("Maven (mvn)", mvn)) if not path]
    if missing:
        raise MissingPrerequisite(
            f"the local YARN needs {' and '.join(missing)} on PATH: install them "
            f"(Debian: apt-get install openjdk-17-jre-headless maven)")
    version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    match = re.search(r'version "(\d+)', version)
    if not match or int(match.group(1)) < 17:
        raise MissingPrerequisite(f"the local YARN needs Java 17 or newer; {java} is: {version.strip()}")
    return java, mvn


def yarn_libs() -> Path:
    """The folder of Hadoop's jars, fetched with Maven on first use (``streams.cache``)."""
    _, mvn = check_prerequisites()

    def fetch(home: Path) -> None:
        (home / "pom.xml").write_text(RUNTIME_POM)
        libs = home / "libs"
        shutil.rmtree(libs, ignore_errors=True)
        result = subprocess.run(
            [mvn, "-B", "-q", "-f", str(home / "pom.xml"), f"{DEPENDENCY_PLUGIN}:copy-dependencies",
             "-DincludeScope=runtime", f"-DoutputDirectory={libs}"],
            capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"mvn could not fetch Hadoop {HADOOP_VERSION}:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")

    return cache.build_once(f"hadoop-{HADOOP_VERSION}", fetch) / "libs"


def site_xml(properties: dict[str, str]) -> str:
    body = "".join(f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
                   for k, v in properties.items())
    return f"<?xml version=\"1.0\"?>\n<configuration>\n{body}</configuration>\n"


def java_command(conf: Path, main: str, heap: str, *args: str) -> list[str]:
    """A JVM running ``main`` with ``conf`` (its ``*-site.xml`` and log4j file) first on the class path."""
    java, _ = check_prerequisites()
    return [java, heap, "-XX:TieredStopAtLevel=1", *JAVA_OPENS, "-cp", f"{conf}:{yarn_libs()}/*", main, *args]


@dataclasses.dataclass
class YarnCluster:
    """A ResourceManager and NodeManagers with their folders under ``directory``."""

    directory: Path
    processes: dict[str, subprocess.Popen] = dataclasses.field(default_factory=dict)
    """The daemons this object started (reaped on stop); another process stops them by pid."""

    @property
    def state_file(self) -> Path:
        return self.directory / "state.json"

    def state(self) -> dict | None:
        try:
            return json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return None

    def running(self) -> bool:
        state = self.state()
        return bool(state) and all(self._alive(name, pid) for name, pid in state["pids"].items())

    def _alive(self, name: str, pid: int) -> bool:
        process = self.processes.get(name)
        return process.poll() is None if process is not None else pid_alive(pid)

    def start(self, node_managers: int = 2, memory_mb: int = 4096, vcores: int = 4) -> dict:
        """Start the ResourceManager and ``node_managers`` NodeManagers of ``memory_mb`` and ``vcores`` each;
        return the state once every NodeManager is RUNNING on the ResourceManager."""
        shutil.rmtree(self.directory, ignore_errors=True)
        self.directory.mkdir(parents=True)
        ports = free_ports(5 + 3 * node_managers)
        rm = {"yarn.resourcemanager.hostname": "127.0.0.1",
              "yarn.resourcemanager.address": f"127.0.0.1:{ports[0]}",
              "yarn.resourcemanager.scheduler.address": f"127.0.0.1:{ports[1]}",
              "yarn.resourcemanager.resource-tracker.address": f"127.0.0.1:{ports[2]}",
              "yarn.resourcemanager.admin.address": f"127.0.0.1:{ports[3]}",
              "yarn.resourcemanager.webapp.address": f"127.0.0.1:{ports[4]}"}
        pids: dict[str, int] = {}
        started = time.monotonic()
        try:
            pids["resourcemanager"] = self._spawn("resourcemanager", RESOURCE_MANAGER, RM_HEAP, {
                **rm, "yarn.scheduler.capacity.root.queues": "default",
                "yarn.scheduler.capacity.root.default.capacity": "100",
                "yarn.scheduler.minimum-allocation-mb": "128",
                "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms": str(NM_HEARTBEAT_MS)})
            for index in range(node_managers):
                name = f"nodemanager-{index}"
                folder = self.directory / name
                address, localizer, web = ports[5 + 3 * index: 8 + 3 * index]
                pids[name] = self._spawn(name, NODE_MANAGER, NM_HEAP, {
                    **rm, "yarn.nodemanager.address": f"127.0.0.1:{address}",
                    "yarn.nodemanager.localizer.address": f"127.0.0.1:{localizer}",
                    "yarn.nodemanager.webapp.address": f"127.0.0.1:{web}",
                    "yarn.nodemanager.collector-service.address": "127.0.0.1:0",
                    "yarn.nodemanager.resource.memory-mb": str(memory_mb),
                    "yarn.nodemanager.resource.cpu-vcores": str(vcores),
                    "yarn.nodemanager.local-dirs": str(folder / "local"),
                    "yarn.nodemanager.log-dirs": str(folder / "logs"),
                    "yarn.nodemanager.pmem-check-enabled": "false",
                    "yarn.nodemanager.vmem-check-enabled": "false",
                    "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": "100"})
            state = {"rm": f"http://127.0.0.1:{ports[4]}", "admin": rm["yarn.resourcemanager.admin.address"],
                     "conf": str(self.directory / "resourcemanager"), "pids": pids, "version": HADOOP_VERSION}
            self.state_file.write_text(json.dumps(state, indent=2))
            state["nodes"] = self._wait_running(state, node_managers, started)
            state["start_seconds"] = round(time.monotonic() - started, 1)
            self.state_file.write_text(json.dumps(state, indent=2))
            return state
        except BaseException:
            self.stop()
            raise

    def _spawn(self, name: str, main: str, heap: str, properties: dict[str, str]) -> int:
        conf = self.directory / name
        conf.mkdir(parents=True, exist_ok=True)
        (conf / "yarn-site.xml").write_text(site_xml(properties))
        (conf / "core-site.xml").write_text(site_xml({"hadoop.tmp.dir": str(conf / "tmp")}))
        (conf / "log4j.properties").write_text(LOG4J_PROPERTIES)
        log = open(conf / f"{name}.log", "ab")
        process = subprocess.Popen(java_command(conf, main, heap), stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.processes[name] = process
        return process.pid

    def _wait_running(self, state: dict, count: int, started: float) -> list[str]:
        """The NodeManager ids once ``count`` are RUNNING; RuntimeError naming the log when a daemon dies."""
        from streams.yarn.resourcemanager import ResourceManagerError, list_node_managers

        while time.monotonic() - started < START_TIMEOUT_S:
            for name, pid in state["pids"].items():
                if not self._alive(name, pid):
                    log = self.directory / name / f"{name}.log"
                    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                    raise RuntimeError(f"{name} exited while starting; its log {log} ends:\n{tail}")
            try:
                running = sorted(node.node_id for node in list_node_managers(state["rm"]) if node.state == "RUNNING")
                if len(running) >= count:
                    return running
            except ResourceManagerError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"{count} NodeManagers did not register with the ResourceManager within "
                           f"{START_TIMEOUT_S:.0f} s (logs under {self.directory})")

    def stop(self) -> None:
        """SIGTERM every daemon recorded in the state (SIGKILL after the timeout); forget the state."""
        pids = {name: process.pid for name, process in self.processes.items()}
        pids.update((self.state() or {}).get("pids", {}))
        for name, pid in pids.items():
            if self._alive(name, pid):
                os.kill(pid, signal.SIGTERM)
        for name, pid in pids.items():
            process = self.processes.pop(name, None)
            if process is not None:
                try:
                    process.wait(STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(5)
            elif not wait_gone(pid, STOP_TIMEOUT_S):
                os.kill(pid, signal.SIGKILL)
                wait_gone(pid, 5)
        self.state_file.unlink(missing_ok=True)
