"""A koordstream of its own for the crash test: a broker of the round's kind, the topology, named workers and the projection.

Each worker runs in its own working directory (Faust keeps a data directory there) and serves metrics on
its own port, so the test can tell which worker emits the scheduling decisions and SIGKILL that one.
The crash and failover tests run two scheduling domains: an ElasticQuotaProfile's tree (the even nodes,
the even pods) on an inbox partition of its own, and the default domain (the odd ones).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from aiokafka import AIOKafkaConsumer, TopicPartition

from streams import kafka, roles, supervision
from streams.broker import embedded, local
from streams.partitioning import partition_for
from streams.replay.reader import read_topic
from streams.routing import DEFAULT_DOMAIN
from streams.schemas import codec
from streams.topology import load_topology

READY_TIMEOUT_S = 60
TREE_QUOTA = "tree-root"
"""The quota of the profile's tree, which the even pods name."""


def tree_id(prefix: str) -> str:
    """A tree id whose scheduling-inbox partition is not the default domain's."""
    partitions = load_topology().spec("inbox-scheduling").partitions
    default = partition_for(partitions, DEFAULT_DOMAIN)
    return next(name for name in (f"{prefix}-tree-{i}" for i in range(100))
                if partition_for(partitions, name) != default)


def profile_yaml(namespace: str, tree: str) -> str:
    """The ElasticQuotaProfile of the nodes labelled ``pool: <tree>``, for ``koord apply``."""
    return f"""apiVersion: quota.koordinator.sh/v1alpha1
kind: ElasticQuotaProfile
metadata:
  name: {tree}
  namespace: {namespace}
  labels: {{quota.scheduling.koordinator.sh/tree-id: {tree}}}
spec:
  quotaName: {TREE_QUOTA}
  nodeSelector: {{matchLabels: {{pool: {tree}}}}}
"""


def node_pool(index: int, tree: str) -> str:
    """The ``pool`` label of node ``index``: the even nodes are the tree's."""
    return tree if index % 2 == 0 else "default"


def pod_quota(index: int) -> str:
    """The quota label of pod ``index``: the even pods are the tree's (a quota no one has is the default)."""
    return TREE_QUOTA if index % 2 == 0 else "default"


def in_its_domain(pod: dict) -> bool:
    """Whether a placed pod (``koord get pods -o json`` item) is on a node of its domain."""
    return int(pod["metadata"]["name"][-3:]) % 2 == int(pod["spec"]["nodeName"][-2:]) % 2


@dataclasses.dataclass
class Worker:
    name: str
    process: subprocess.Popen
    log: Path
    metrics_port: int


@dataclasses.dataclass
class CrashCluster:
    home: Path
    bootstrap: str
    env: dict[str, str]
    broker: local.LocalBroker
    workers: dict[str, Worker] = dataclasses.field(default_factory=dict)
    projection: subprocess.Popen | None = None

    @classmethod
    def start(cls, home: Path, kind: str, extra_env: dict[str, str] | None = None, nodes: int = 1,
              environment: str = "embedded") -> "CrashCluster":
        """A broker of ``kind`` with ``nodes`` nodes and the topology of ``environment`` (its replication),
        and the projection; workers are started by :meth:`start_worker`."""
        broker = local.start(kind, home, load_topology(environment=environment), nodes)
        env = {**broker.env(), "KOORD_HOME": str(home), "KOORD_DATABASE_URL": f"sqlite:///{home / 'readmodel.sqlite'}",
               "KOORD_ENV": environment, **(extra_env or {})}
        cluster = cls(home, broker.bootstrap, env, broker)
        cluster.projection = supervision.spawn(supervision.koord_command("project"), home / "projection.log", env)
        return cluster

    def start_worker(self, name: str, role: str = roles.ALL) -> Worker:
        """Start (or restart) worker ``name`` running ``role`` (``streams.roles``) in its own directory; returns
        once it is ready."""
        directory = self.home / name
        directory.mkdir(exist_ok=True)
        log = self.home / f"{name}.log"
        since = log.stat().st_size if log.exists() else 0
        port = embedded.free_loopback_port()
        process = subprocess.Popen(
            supervision.koord_command("worker", "--role", role, "--metrics-port", str(port)), cwd=directory,
            stdout=open(log, "ab"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env={**os.environ, **self.env}, preexec_fn=supervision.child_preexec, process_group=0)
        worker = self.workers[name] = Worker(name, process, log, port)
        self._wait_ready(worker, since)
        return worker

    def _wait_ready(self, worker: Worker, since: int) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            text = worker.log.read_bytes()[since:].decode(errors="replace") if worker.log.exists() else ""
            if "Worker ready" in text:
                return
            if worker.process.poll() is not None:
                raise RuntimeError(f"worker {worker.name} exited with {worker.process.returncode}:\n{text[-3000:]}")
            time.sleep(0.2)
        raise TimeoutError(f"worker {worker.name} not ready within {READY_TIMEOUT_S}s")

    def kill(self, name: str) -> None:
        """SIGKILL worker ``name``: no shutdown, no commit, no table flush."""
        process = self.workers[name].process
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)

    def stop_worker(self, name: str) -> None:
        """Stop worker ``name`` the orderly way (SIGTERM): it leaves the group and its partitions move at once."""
        supervision.stop([self.workers[name].process])

    def metric(self, name: str, sample: str, **labels: str) -> float:
        """The current value of a Prometheus sample of worker ``name`` (0 when absent)."""
        from prometheus_client.parser import text_string_to_metric_families

        url = f"http://127.0.0.1:{self.workers[name].metrics_port}/metrics"
        text = urllib.request.urlopen(url, timeout=5).read().decode()
        return sum(s.value for family in text_string_to_metric_families(text) for s in family.samples
                   if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()))

    def koord(self, *args: str, input: str | None = None, timeout: float = 90) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "streams.cli", *args], input=input, capture_output=True,
                              text=True, env={**os.environ, **self.env}, timeout=timeout)

    def diagnose(self, undecided: set[str]) -> str:
        """Where the records of ``undecided`` pod keys went, and the group's committed offsets: what a
        failure of the test needs to be understood (the broker keeps nothing after the test)."""
        return asyncio.run(_diagnose(self.bootstrap, undecided))

    def stop(self) -> None:
        processes = [w.process for w in self.workers.values()]
        supervision.stop([p for p in (self.projection, *processes) if p is not None])
        self.broker.stop()


async def _diagnose(bootstrap: str, undecided: set[str]) -> str:
    topology = load_topology()
    consumer = AIOKafkaConsumer(**kafka.client_settings(bootstrap), group_id=topology.app_id, enable_auto_commit=False)
    await consumer.start()
    try:
        committed = [f"{topic_id}/{p}={await consumer.committed(TopicPartition(topology.name(topic_id), p))}"
                     for topic_id in ("pods", "inbox-scheduling") for p in range(topology.spec(topic_id).partitions)]
    finally:
        await consumer.stop()
    forwarded: dict[tuple[int, int], list[str]] = {}
    for record in await read_topic(bootstrap, topology.name("inbox-scheduling")):
        _, envelope = codec.decode(record.value)
        if envelope["sourceTopic"] == topology.name("pods"):
            source = (envelope["sourcePartition"], envelope["sourceOffset"])
            forwarded.setdefault(source, []).append(f"{record.partition}/{record.offset}")
    lines = ["committed offsets: " + ", ".join(committed)]
    for record in await read_topic(bootstrap, topology.name("pods")):
        if record.key.decode() in undecided:
            lines.append(f"{record.key.decode()}: pods {record.partition}/{record.offset} -> inbox "
                         f"{forwarded.get((record.partition, record.offset), 'never forwarded')}")
    return "\n".join(lines)
