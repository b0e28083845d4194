"""A broker koordstream starts for itself: the embedded Tansu or a local real Kafka, one interface.

``koord up --broker``, the benchmarks and the integration tests start their broker here, wait until it
serves metadata, and create the topology's topics. ``env()`` gives the variables a child process needs
to reach it (``KOORD_BROKER`` and ``KOORD_BROKER_KIND``, which decides the Tansu workarounds).
"""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
from pathlib import Path

from streams.broker import embedded, kraft
from streams.topology import Topology

KINDS = ("tansu", "kafka")


@dataclasses.dataclass
class LocalBroker:
    kind: str
    bootstrap: str
    processes: list[subprocess.Popen]
    directory: Path
    kafka: kraft.KafkaCluster | None = None

    @property
    def logs(self) -> list[Path]:
        """One log per process, in the order of ``processes``."""
        if self.kafka is not None:
            return [node.log_path for node in self.kafka.nodes]
        return [self.directory / "broker.log"]

    def env(self) -> dict[str, str]:
        return {"KOORD_BROKER": self.bootstrap, "KOORD_BROKER_KIND": self.kind}

    def stop(self) -> None:
        if self.kafka is not None:
            self.kafka.stop()
            return
        for proc in self.processes:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    def __enter__(self) -> "LocalBroker":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start(kind: str, directory: Path, topology: Topology | None = None, nodes: int = 1) -> LocalBroker:
    """Start a ``kind`` broker with its logs (and Kafka's data) under ``directory`` and create
    ``topology``'s topics; Tansu is always one node."""
    if kind not in KINDS:
        raise ValueError(f"unknown broker kind {kind!r}: one of {', '.join(KINDS)}")
    directory.mkdir(parents=True, exist_ok=True)
    if kind == "tansu":
        if topology is None:
            port = embedded.free_loopback_port()
            proc = embedded.start_tansu(port, directory / "broker.log")
            broker = LocalBroker(kind, f"127.0.0.1:{port}", [proc], directory)
            try:
                embedded.wait_for_metadata(broker.bootstrap, proc=proc)
            except BaseException:
                broker.stop()
                raise
            return broker
        bootstrap, proc = embedded.start_with_topics(directory / "broker.log", topology)
        return LocalBroker(kind, bootstrap, [proc], directory)
    cluster = kraft.cluster(directory, nodes).start()
    broker = LocalBroker(kind, cluster.bootstrap, cluster.processes, directory, cluster)
    if topology is not None:
        try:
            asyncio.run(create_topics(broker.bootstrap, topology))
        except BaseException:
            broker.stop()
            raise
    return broker


async def create_topics(bootstrap: str, topology: Topology) -> None:
    from streams.broker.connection import admin_client
    from streams.topology import apply

    async with admin_client(bootstrap) as admin:
        await apply(admin, topology)
