"""A local Hadoop YARN: one ResourceManager and N NodeManagers, each its own JVM, from Maven Central jars
(``streams.yarn.jars``).

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
import shutil
import signal
import subprocess
import time
from pathlib import Path
from xml.sax.saxutils import escape

from streams.broker.kraft import free_ports
from streams.supervision import pid_alive, wait_gone
from streams.yarn.jars import HADOOP_VERSION, java_command
from streams.yarn.resourcemanager import ResourceManagerError, list_node_managers

LOG4J_PROPERTIES = """log4j.rootLogger=INFO, out
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=%d %p %c{1}: %m%n
"""

RESOURCE_MANAGER = "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager"
NODE_MANAGER = "org.apache.hadoop.yarn.server.nodemanager.NodeManager"
RM_HEAP = "-Xmx256m"
NM_HEAP = "-Xmx160m"
START_TIMEOUT_S = 240.0
STOP_TIMEOUT_S = 20.0
NM_HEARTBEAT_MS = 500


def site_xml(properties: dict[str, str]) -> str:
    body = "".join(f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
                   for k, v in properties.items())
    return f"<?xml version=\"1.0\"?>\n<configuration>\n{body}</configuration>\n"


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
