"""A koordstream to benchmark against: a fresh embedded broker and one worker, or KOORD_BROKER.

With KOORD_BROKER unset the harness starts Tansu on a free port, applies the
topology and runs one ``koord worker`` (logs in a temporary folder), and
stops both afterwards. "Caught up" is measured with fetch high watermarks and
the worker's committed offsets, never with ListOffsets (which Tansu gets
wrong).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import tempfile
import time
from pathlib import Path
from typing import Iterator

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from streams import kafka, supervision
from streams.broker import embedded
from streams.broker.tansu_workarounds import true_highwaters
from streams.topology import Topology, load_topology

READY_TIMEOUT_S = 90


@dataclasses.dataclass
class Harness:
    bootstrap: str
    topology: Topology
    logs: Path


@contextlib.contextmanager
def running(existing_broker: str | None) -> Iterator[Harness]:
    topology = load_topology()
    if existing_broker:
        yield Harness(existing_broker, topology, Path("."))
        return
    with tempfile.TemporaryDirectory(prefix="koord-bench-") as tmp:
        logs = Path(tmp)
        bootstrap, broker = embedded.start_with_topics(logs / "broker.log", topology)
        worker = None
        try:
            worker = supervision.spawn(supervision.koord_command("worker"), logs / "worker.log",
                                       {"KOORD_BROKER": bootstrap})
            _wait_ready(worker, logs / "worker.log")
            yield Harness(bootstrap, topology, logs)
        finally:
            supervision.stop([p for p in (worker, broker) if p is not None])


def _wait_ready(worker, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if worker.poll() is not None:
            raise RuntimeError(f"worker exited with {worker.returncode}: {log.read_text()[-2000:]}")
        if log.exists() and "Worker ready" in log.read_text():
            return
        time.sleep(0.2)
    raise TimeoutError(f"worker not ready in {READY_TIMEOUT_S}s")


async def wait_caught_up(bootstrap: str, topic: str, group: str, settle_s: float = 1.0, timeout_s: float = 300) -> float:
    """Until ``group`` has committed every record of ``topic`` and no new record came for ``settle_s``;
    returns the ``time.monotonic()`` at which it was first seen caught up (within the 0.2 s poll)."""
    consumer = AIOKafkaConsumer(**kafka.client_settings(bootstrap), **kafka.consumer_settings(), group_id=None,
                                enable_auto_commit=False)
    admin = AIOKafkaAdminClient(**kafka.client_settings(bootstrap))
    await consumer.start()
    await admin.start()
    try:
        partitions = await kafka.partitions_for(consumer, topic)
        tps = [TopicPartition(topic, p) for p in partitions]
        consumer.assign(tps)
        deadline = time.monotonic() + timeout_s
        stable_since, last = None, None
        while time.monotonic() < deadline:
            highwaters = await fetch_highwaters(consumer, tps)
            committed = await admin.list_consumer_group_offsets(group, partitions=tps)
            done = all(max(committed[tp].offset if committed.get(tp) else 0, 0) >= highwaters[tp] for tp in tps)
            if done and highwaters == last:
                if stable_since is None:
                    stable_since = time.monotonic()
                elif time.monotonic() - stable_since >= settle_s:
                    return stable_since
            else:
                stable_since = None
            last = highwaters
            await asyncio.sleep(0.2)
        raise TimeoutError(f"{group} did not catch up with {topic} in {timeout_s:.0f}s")
    finally:
        await consumer.stop()
        await admin.close()


async def fetch_highwaters(consumer: AIOKafkaConsumer, tps: list[TopicPartition]) -> dict:
    """Each partition's high watermark, read from a Fetch at the last record batch (``true_highwaters``):
    fetching from offset 0 instead moved a megabyte per partition per poll and starved the broker."""
    highwaters = await true_highwaters(consumer, await consumer.end_offsets(tps))
    consumer.assign(tps)
    return highwaters
