"""``koord bench actuation``: NodeMetric produced -> BE cgroup quota written by a node agent, through the broker.

Setup: an slo-controller-config with CPU suppress on (cfsQuota, threshold 65 %), an 8-CPU Node and an LS
and a BE pod bound to it. An in-process actuator (``run_actuator`` and a ``Publisher`` for the acks, as
``koord node-agent`` runs them) applies the node's actuations to a test cgroup tree: under the real v1
``cpu`` hierarchy when running as root (``kpbench<hex>/besteffort``), else a fake tree in a temporary
folder (same code path; writes to tmpfs/disk instead of cgroupfs).

Then ``events`` NodeMetrics are produced at ``rate`` per second. Each one's LS usage is chosen so the
planned BE quota differs from the previous one by about 40 % of a CPU (more than the planner's 1 %-of-node
dead band, less than its 10 %-of-node step limit) and is unique, so every write identifies its event::

    suppress = 8000 * 65 % - LS usage (system usage 0)      quota = suppress * 100 us

Latency per event: from just before the NodeMetric is handed to the producer to the moment the
actuator's ``write()`` of that quota returned (the actuator's write completion), split at the moment a
separate consumer read the Actuation from the ``actuations`` topic (pipeline: router + node aggregate;
node agent: consume + verify + plan + write).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import numpy as np
from aiokafka.structs import TopicPartition

from node_agent.actuator.actuator import Actuator, OffsetStore, run_actuator
from node_agent.actuator.cgroupv1 import CgroupV1Backend
from node_agent.actuator.files import write_value
from node_agent.actuator.sequences import SequenceStore
from node_agent.actuator.verify import Verifier
from node_agent.collectors.cgroups import CgroupLayout
from node_agent.publisher import Publisher
from streams import kafka
from streams.bench.harness import Harness
from streams.koordinator.classes import QOS_BE, QOS_LS
from streams.koordinator.labels import LABEL_POD_QOS
from streams.objects import Document, to_record
from streams.partitioning import partition_for
from streams.schemas import codec

NODE = "bench-actuation-node"
NAMESPACE = "bench-actuation"
CAPACITY_MILLI = 8000
THRESHOLD_PERCENT = 65
BE_USAGE = 100
WARM_UP_TIMEOUT_S = 90
V1_ROOT = Path("/sys/fs/cgroup")
QUOTA = "cpu.cfs_quota_us"


def planned_quota(index: int) -> int:
    """The BE quota event ``index`` plans: alternating levels 40000 us apart, unique per index."""
    return 200_000 + (index % 2) * 40_000 + (index // 2) * 100


def ls_usage(quota: int) -> int:
    return CAPACITY_MILLI * THRESHOLD_PERCENT // 100 - quota // 100


def _manifests() -> list[dict]:
    config = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": "slo-controller-config", "namespace": "koordinator-system"},
              "data": {"resource-threshold-config":
                       '{"clusterStrategy": {"enable": true, "cpuSuppressThresholdPercent": %d, '
                       '"cpuSuppressPolicy": "cfsQuota"}}' % THRESHOLD_PERCENT}}
    resources = {"cpu": str(CAPACITY_MILLI // 1000), "memory": "32Gi", "pods": "110"}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE},
            "status": {"capacity": resources, "allocatable": resources}}
    pods = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": name, "namespace": NAMESPACE, "uid": str(uuid.uuid4()),
                          "labels": {LABEL_POD_QOS: qos}},
             "spec": {"nodeName": NODE, "containers": [{"name": "main", "image": "app"}]}}
            for name, qos in (("ls-pod", QOS_LS), ("be-pod", QOS_BE))]
    return [config, node, *pods]


def node_metric(ls_milli: int) -> dict:
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": {"name": NODE},
            "status": {"updateTime": now,
                       "nodeMetric": {"nodeUsage": {"resources": {"cpu": f"{ls_milli + BE_USAGE}m",
                                                                  "memory": "4Gi"}}},
                       "podsMetric": [
                           {"namespace": NAMESPACE, "name": "ls-pod",
                            "podUsage": {"resources": {"cpu": f"{ls_milli}m", "memory": "1Gi"}}},
                           {"namespace": NAMESPACE, "name": "be-pod",
                            "podUsage": {"resources": {"cpu": f"{BE_USAGE}m", "memory": "1Gi"}}}]}}


def _encode(manifest: dict, names: dict) -> tuple[str, str, bytes]:
    record = to_record(Document("<bench>", 0, 1, manifest))
    return names[record.topic], record.key, codec.encode(record.schema, record.record)


@contextlib.contextmanager
def bench_tree(mode: str) -> Iterator[tuple[CgroupLayout, Path, str]]:
    """(layout, the BE tier's quota file, description): a real v1 tree when ``mode`` allows and we are root,
    else a fake one; removed afterwards."""
    kubepods = f"kpbench{uuid.uuid4().hex[:10]}"
    real = mode == "real" or (mode == "auto" and os.geteuid() == 0 and os.access(V1_ROOT / "cpu", os.W_OK))
    if real:
        created = [V1_ROOT / "cpu" / kubepods, V1_ROOT / "cpu" / kubepods / "besteffort"]
        for path in created:
            path.mkdir()
        try:
            yield (CgroupLayout.detect(V1_ROOT, kubepods, "cgroupfs", "v1"), created[-1] / QUOTA,
                   f"real cgroup v1 {created[-1]}")
        finally:
            for path in reversed(created):
                path.rmdir()
        return
    with tempfile.TemporaryDirectory(prefix="koord-bench-cgroup-") as tmp:
        root = Path(tmp)
        for rel in (kubepods, f"{kubepods}/besteffort"):
            directory = root / "cpu" / rel
            directory.mkdir(parents=True)
            for name, text in ((QUOTA, "-1"), ("cpu.cfs_period_us", "100000"), ("cpu.shares", "1024")):
                (directory / name).write_text(text + "\n")
        yield (CgroupLayout.detect(root, kubepods, "cgroupfs", "v1"), root / "cpu" / kubepods / "besteffort" / QUOTA,
               f"fake tree {root} (not root: no real cgroup)")


class _AgentThread:
    """The actuation loop and the ack publisher on their own event loop, as in ``koord node-agent``."""

    def __init__(self, actuator: Actuator, bootstrap: str, names: dict, state: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.stop: asyncio.Event | None = None
        self.ready = threading.Event()
        self.args = actuator, bootstrap, names, state
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._main(),), daemon=True)

    async def _main(self) -> None:
        actuator, bootstrap, names, state = self.args
        self.stop = asyncio.Event()
        self.ready.set()
        publisher = Publisher(bootstrap, names)
        await asyncio.gather(publisher.run(self.stop),
                             run_actuator(actuator, publisher, bootstrap, names, self.stop, OffsetStore(state)))

    def __enter__(self) -> "_AgentThread":
        self.thread.start()
        self.ready.wait(10)
        return self

    def __exit__(self, *_) -> None:
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(timeout=30)


def _percentiles(values: list[float]) -> dict:
    if not values:
        return {"p50_ms": None, "p99_ms": None, "max_ms": None}
    array = np.array(values) * 1000
    return {"p50_ms": round(float(np.percentile(array, 50)), 2), "p99_ms": round(float(np.percentile(array, 99)), 2),
            "max_ms": round(float(array.max()), 2)}


def run(harness: Harness, events: int, rate: float, cgroups: str) -> dict:
    names = harness.topology.names()
    writes: dict[str, float] = {}

    def timed_writer(path: Path, value: str) -> None:
        write_value(path, value)
        if path.name == QUOTA:
            writes[value.strip()] = time.monotonic()

    with bench_tree(cgroups) as (layout, quota_file, where), tempfile.TemporaryDirectory() as state:
        actuator = Actuator(NODE, {"cgroup": CgroupV1Backend(layout, writer=timed_writer)},
                            Verifier(NODE, None, SequenceStore(Path(state))), out=lambda line: None)
        with _AgentThread(actuator, harness.bootstrap, names, Path(state)):
            result = asyncio.run(_measure(harness.bootstrap, names, events, rate, writes))
        result["cgroup"] = where
        result["final_quota"] = quota_file.read_text().strip()
    return result


async def _measure(bootstrap: str, names: dict, events: int, rate: float, writes: dict[str, float]) -> dict:
    seen: dict[str, float] = {}
    consumer = kafka.consumer(bootstrap, [], group_id=None, from_beginning=False)
    await consumer.start()
    stop = asyncio.Event()
    try:
        topic = names["actuations"]
        tp = TopicPartition(topic, partition_for(await kafka.partitions_for(consumer, topic), NODE))
        consumer.assign([tp])
        await consumer.seek_to_end(tp)

        async def watch() -> None:
            while not stop.is_set():
                for records in (await consumer.getmany(tp, timeout_ms=200)).values():
                    arrived = time.monotonic()
                    for record in records:
                        if record.key == NODE.encode() and record.value is not None:
                            _, value = codec.decode(record.value)
                            if QUOTA in value["values"]:
                                seen.setdefault(value["values"][QUOTA], arrived)
        watcher = asyncio.create_task(watch())
        async with kafka.producer(bootstrap) as producer:
            for manifest in _manifests():
                topic_name, key, value = _encode(manifest, names)
                await producer.send_and_wait(topic_name, key=key.encode(), value=value)
            await _warm_up(producer, names, writes)
            produced: dict[str, float] = {}
            interval = 1.0 / rate
            start = time.monotonic()
            for index in range(events):
                quota = planned_quota(index)
                topic_name, key, value = _encode(node_metric(ls_usage(quota)), names)
                await asyncio.sleep(max(0.0, start + index * interval - time.monotonic()))
                produced[str(quota)] = time.monotonic()
                await producer.send(topic_name, key=key.encode(), value=value)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not all(q in writes for q in produced):
                await asyncio.sleep(0.1)
        stop.set()
        await watcher
    finally:
        await consumer.stop()
    total = [writes[q] - t for q, t in produced.items() if q in writes]
    pipeline = [seen[q] - t for q, t in produced.items() if q in seen]
    agent = [writes[q] - seen[q] for q in produced if q in writes and q in seen]
    return {"events": events, "rate_per_s": rate, "written": len(total), **_percentiles(total),
            "stages": {"produce_to_actuation_on_topic": _percentiles(pipeline),
                       "actuation_on_topic_to_write": _percentiles(agent)}}


async def _warm_up(producer, names: dict, writes: dict[str, float]) -> None:
    """NodeMetrics until one is actuated: the worker has joined its group, seen the config, node and pods."""
    deadline = time.monotonic() + WARM_UP_TIMEOUT_S
    attempt = 0
    while time.monotonic() < deadline:
        attempt += 1
        quota = 180_000 + (attempt % 2) * 40_000 + attempt * 10
        topic_name, key, value = _encode(node_metric(ls_usage(quota)), names)
        await producer.send_and_wait(topic_name, key=key.encode(), value=value)
        for _ in range(20):
            await asyncio.sleep(0.1)
            if str(quota) in writes:
                break
        if str(quota) in writes and attempt >= 3:
            return
    raise TimeoutError(f"no actuation written within {WARM_UP_TIMEOUT_S}s of warm-up")
