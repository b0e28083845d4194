"""A koordstream to benchmark against: a fresh broker of the chosen kind and its workers, or KOORD_BROKER.

With KOORD_BROKER unset the harness starts a broker of the kind asked for (the embedded Tansu or a local
Apache Kafka, ``streams.broker.local``) on free ports, applies the topology and runs ``workers``
``koord worker`` processes, one consumer group (logs in a temporary folder), and stops both afterwards. With KOORD_BROKER set it uses that broker as it
is, of the kind ``KOORD_BROKER_KIND`` says (Kafka when unset). "Caught up" is measured with fetch high
watermarks and the worker's committed offsets, never with ListOffsets (which Tansu gets wrong).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from streams import kafka, supervision
from streams.broker import local
from streams.broker.tansu_workarounds import true_highwaters
from streams.settings import Settings
from streams.topology import Topology, load_topology

READY_TIMEOUT_S = 90
STALL_TIMEOUT_S = 180.0
"""A wait for the worker gives up when the worker is behind and has committed nothing more for this long:
it is stalled (as a 10,000-node node bench is on Tansu), not slow. Faust commits every 2.8 s while it
makes progress; one batch of a large run can take tens of seconds."""


@dataclasses.dataclass
class Harness:
    bootstrap: str
    topology: Topology
    logs: Path
    broker_kind: str
    """``tansu`` or ``kafka``: the broker the figures were taken on."""
    broker_origin: str
    """``fresh`` (started for this run) or ``KOORD_BROKER`` (an existing one)."""
    workers: int | None = None
    """How many workers the harness runs; None when they are not the harness's (KOORD_BROKER)."""
    replace_worker: Callable[[float], float] | None = None
    """Stop the workers, start one new one and wait until it logs ready, at most the seconds given (its table
    recovery is part of it); returns the ``time.monotonic()`` of the start. None when the worker is not the
    harness's (KOORD_BROKER)."""

    def describe(self) -> str:
        if self.broker_origin == "fresh":
            return f"fresh {self.broker_kind} broker at {self.bootstrap}"
        return f"KOORD_BROKER {self.bootstrap} ({self.broker_kind})"


@contextlib.contextmanager
def running(broker_kind: str, settings: Settings | None = None, workers: int = 1) -> Iterator[Harness]:
    """A broker and ``workers`` workers to benchmark; ``broker_kind`` is ignored when KOORD_BROKER is set."""
    settings = settings or Settings.from_env()
    topology = load_topology()
    if settings.broker:
        yield Harness(settings.broker, topology, Path("."), settings.resolved_broker_kind, "KOORD_BROKER")
        return
    with tempfile.TemporaryDirectory(prefix="koord-bench-") as tmp:
        logs = Path(tmp)
        broker = local.start(broker_kind, logs / "broker", topology)
        processes = []

        def spawn() -> tuple:
            log = logs / f"worker-{len(processes)}.log"
            processes.append(supervision.spawn(supervision.koord_command("worker"), log, broker.env()))
            return processes[-1], log

        def start_worker(ready_timeout_s: float = READY_TIMEOUT_S) -> float:
            supervision.stop(processes)
            started = time.monotonic()
            _wait_ready(*spawn(), ready_timeout_s)
            return started

        try:
            # The clients of this process (producers, consumers) pick their settings from the broker kind too.
            os.environ.update(broker.env())
            for worker, log in [spawn() for _ in range(workers)]:
                _wait_ready(worker, log, READY_TIMEOUT_S)
            yield Harness(broker.bootstrap, topology, logs, broker_kind, "fresh", workers, start_worker)
        finally:
            supervision.stop(processes)
            broker.stop()
            for name in broker.env():
                os.environ.pop(name, None)


def _wait_ready(worker, log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if worker.poll() is not None:
            raise RuntimeError(f"worker exited with {worker.returncode}: {log.read_text()[-2000:]}")
        if log.exists() and "Worker ready" in log.read_text():
            return
        time.sleep(0.2)
    raise TimeoutError(f"worker not ready in {timeout_s:.0f}s")


async def wait_caught_up(bootstrap: str, topic: str, group: str, settle_s: float = 1.0, timeout_s: float = 300,
                         stall_s: float = STALL_TIMEOUT_S) -> float:
    """Until ``group`` has committed every record of ``topic`` and no new record came for ``settle_s``;
    returns the ``time.monotonic()`` at which it was first seen caught up (within the 0.2 s poll).
    Raises TimeoutError after ``timeout_s``, or earlier when the group is behind and its committed
    offsets have not moved for ``stall_s``."""
    consumer = AIOKafkaConsumer(**kafka.client_settings(bootstrap), **kafka.consumer_settings(), group_id=None,
                                enable_auto_commit=False)
    admin = AIOKafkaAdminClient(**kafka.client_settings(bootstrap))
    await consumer.start()
    await admin.start()
    try:
        partitions = await kafka.partitions_for(consumer, topic)
        tps = [TopicPartition(topic, p) for p in partitions]
        consumer.assign(tps)
        started = time.monotonic()
        deadline = started + timeout_s
        stable_since, last = None, None
        progress, progress_at = -1, started
        while time.monotonic() < deadline:
            highwaters = await fetch_highwaters(consumer, tps)
            committed = await admin.list_consumer_group_offsets(group, partitions=tps)
            offsets = {tp: max(committed[tp].offset if committed.get(tp) else 0, 0) for tp in tps}
            done = all(offsets[tp] >= highwaters[tp] for tp in tps)
            if sum(offsets.values()) != progress:
                progress, progress_at = sum(offsets.values()), time.monotonic()
            elif not done and time.monotonic() - progress_at >= stall_s:
                raise TimeoutError(
                    f"{group} stalled on {topic}: its committed offsets did not move for {stall_s:.0f}s "
                    f"({progress} of {sum(highwaters.values())} records committed, "
                    f"{time.monotonic() - started:.0f}s after the wait began)")
            if done and highwaters == last:
                if stable_since is None:
                    stable_since = time.monotonic()
                elif time.monotonic() - stable_since >= settle_s:
                    return stable_since
            else:
                stable_since = None
            last = highwaters
            await asyncio.sleep(0.2)
        raise TimeoutError(f"{group} did not catch up with {topic} in {timeout_s:.0f}s "
                           f"({progress} of {sum(last.values()) if last else '?'} records committed)")
    finally:
        await consumer.stop()
        await admin.close()


async def wait_scheduled(harness: Harness, timeout_s: float = 300) -> float:
    """Until the domain router's inbox and then the scheduling inbox are committed; returns when the
    scheduling inbox was first seen caught up."""
    names, group = harness.topology.names(), harness.topology.app_id
    await wait_caught_up(harness.bootstrap, names["inbox-routing"], group, settle_s=0, timeout_s=timeout_s)
    return await wait_caught_up(harness.bootstrap, names["inbox-scheduling"], group, timeout_s=timeout_s)


async def wait_through_scheduling(harness: Harness, timeout_s: float = 300) -> tuple[float, float]:
    """Until a NodeMetric's whole path into the scheduling domain is committed: the node inbox, the
    NodeUsages the node aggregate wrote (forwarded by the router), the domain router's inbox and the
    scheduling inbox. Returns when the node inbox and when the scheduling inbox were first seen caught up."""
    names, group = harness.topology.names(), harness.topology.app_id
    node = await wait_caught_up(harness.bootstrap, names["inbox-node"], group, timeout_s=timeout_s)
    await wait_caught_up(harness.bootstrap, names["nodeusages"], group, settle_s=0, timeout_s=timeout_s)
    return node, await wait_scheduled(harness, timeout_s)


async def fetch_highwaters(consumer: AIOKafkaConsumer, tps: list[TopicPartition]) -> dict:
    """Each partition's high watermark, read from a Fetch at the last record batch (``true_highwaters``):
    fetching from offset 0 instead moved a megabyte per partition per poll and starved the broker."""
    highwaters = await true_highwaters(consumer, await consumer.end_offsets(tps))
    consumer.assign(tps)
    return highwaters
