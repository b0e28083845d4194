"""A real koordstream on a real broker, once per broker kind per session: Tansu and Apache Kafka.

``broker_kind`` (``tests/conftest.py``) parametrizes every integration test over the embedded Tansu
and a local Apache Kafka (KRaft, ``streams.broker.kraft``), ``scenario`` tests excepted (Tansu only);
pytest runs all tests of one kind before it starts the other. The ``cluster`` of a kind starts the broker on free loopback ports, applies the
topology and runs one Faust worker and the projection as child processes, exactly as ``koord up``
does. Tests talk to it through the ``koord`` CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest
from aiokafka.admin import NewTopic

from streams import kafka, supervision
from streams.broker import embedded, local
from streams.topology import Topology, load_topology
from tests.brokers import require_kafka  # noqa: F401  (re-exported for the Kafka-only tests)

READY_TIMEOUT_S = 60


def start_broker(kind: str, directory: Path, topology: Topology | None = None, nodes: int = 1) -> local.LocalBroker:
    return local.start(kind, directory, load_topology() if topology is None else topology, nodes)


@contextlib.contextmanager
def broker_with_topics(kind: str, directory: Path, topics: dict[str, int]) -> Iterator[str]:
    """A broker of ``kind`` (``start_broker``) with ``topics`` (name -> partitions, one replica) created too; its
    bootstrap servers."""
    broker = start_broker(kind, directory)
    try:
        asyncio.run(_create_topics(broker.bootstrap, topics))
        yield broker.bootstrap
    finally:
        broker.stop()


async def _create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    async with kafka.admin_client(bootstrap) as admin:
        await admin.create_topics([NewTopic(name, partitions, 1) for name, partitions in topics.items()])


@dataclasses.dataclass
class Cluster:
    bootstrap: str
    home: Path
    env: dict[str, str]
    topology: Topology
    worker: subprocess.Popen | None = None
    kind: str = "tansu"

    def koord(self, *args: str, input: str | None = None, check: bool = True, timeout: float = 90) -> subprocess.CompletedProcess:
        result = subprocess.run([sys.executable, "-m", "streams.cli", *args], input=input, capture_output=True,
                                text=True, env={**os.environ, **self.env}, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(f"koord {' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
        return result

    def koord_json(self, *args: str) -> dict:
        return json.loads(self.koord(*args, "-o", "json").stdout)

    metrics_port: int = 0

    def start_worker(self) -> None:
        self.metrics_port = embedded.free_loopback_port()
        self.worker = supervision.spawn(supervision.koord_command("worker", "--metrics-port", str(self.metrics_port)),
                                        self.home / "worker.log", self.env)

    def worker_metric(self, name: str, **labels: str) -> float:
        """The worker's current value of a Prometheus sample (0 when absent)."""
        from prometheus_client.parser import text_string_to_metric_families

        text = urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5).read().decode()
        return sum(sample.value for family in text_string_to_metric_families(text) for sample in family.samples
                   if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()))

    def stop_worker(self) -> None:
        supervision.stop([self.worker])

    def worker_log(self) -> str:
        return (self.home / "worker.log").read_text()


@pytest.fixture(scope="session")
def cluster(tmp_path_factory, broker_kind) -> Cluster:
    """The session's cluster, shared by the integration tests of one broker kind; ``test_replay`` audits
    everything they did to it."""
    with _running_cluster(tmp_path_factory.mktemp(f"koord-home-{broker_kind}"), broker_kind) as running:
        yield running


@pytest.fixture(scope="module")
def own_cluster(tmp_path_factory, broker_kind) -> Cluster:
    """A cluster of the module's own, for tests that write what no pipeline would (forged inbox records,
    huge nodes): on the shared one they would change other tests' placements and the session's replay."""
    with _running_cluster(tmp_path_factory.mktemp(f"own-home-{broker_kind}"), broker_kind) as running:
        yield running


@contextlib.contextmanager
def _running_cluster(home: Path, broker_kind: str) -> Iterator[Cluster]:
    topology = load_topology()
    broker = start_broker(broker_kind, home, topology)
    env = {**broker.env(), "KOORD_HOME": str(home), "KOORD_DATABASE_URL": f"sqlite:///{home / 'readmodel.sqlite'}"}
    cluster = Cluster(broker.bootstrap, home, env, topology, kind=broker_kind)
    projection = None
    try:
        cluster.start_worker()
        projection = supervision.spawn(supervision.koord_command("project"), home / "projection.log", env)
        _wait_worker_ready(cluster)
        yield cluster
    finally:
        supervision.stop([p for p in (projection, cluster.worker) if p is not None])
        broker.stop()


def _wait_worker_ready(cluster: Cluster, since: int = 0) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        log = cluster.worker_log()[since:] if (cluster.home / "worker.log").exists() else ""
        if "Worker ready" in log:
            return
        if cluster.worker.poll() is not None:
            raise RuntimeError(f"worker exited with {cluster.worker.returncode}:\n{log[-3000:]}")
        time.sleep(0.2)
    raise TimeoutError(f"worker not ready within {READY_TIMEOUT_S}s")


def restart_worker(cluster: Cluster) -> None:
    cluster.stop_worker()
    since = len(cluster.worker_log())
    cluster.start_worker()
    _wait_worker_ready(cluster, since)
