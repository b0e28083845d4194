"""``koord bench nodes``: NodeMetric events/s through the node aggregate and bytes of state per node.

Setup (not timed): the slo-controller-config (co-location enabled, Koordinator's defaults but for
:data:`DEGRADE_TIME_MINUTES`), ``nodes`` Nodes (32 cores, 128Gi) and ``pods`` Pods per node already bound
(``spec.nodeName`` set; 60 % koord-prod LS, 40 % koord-batch BE, each requesting 1 cpu and 2Gi), as the
bridge mirrors a cluster's running pods; the scheduling domain decides each ``Bound`` and copies the decision
to the node inbox, the path every binding takes. Then the harness waits until all of it is committed
(``harness.wait_through_scheduling``: the pods through the scheduling domain, their decisions through the
node inbox).

Measured: ``rounds`` NodeMetrics per node, each with ``pods`` pod metrics, produced as the node agent
would (``node_agent.report`` manifests through ``koord apply``'s record builder, pre-encoded), one minute
of event time apart so every event trains the node profile and predicts ProdReclaimable. The clock runs
from the first send to the moment the worker's committed offsets of the node inbox reach its fetch high
watermark; events/s counts NodeMetrics, so it covers the router's forwarding and the node aggregate
(profile, batch and mid, NodeResource outputs, changelog writes) on one worker. A second clock runs to the
moment the scheduling domain has also taken every NodeUsage the node aggregate sent of them (the domain router
has committed the copies in its inbox, then the scheduling domain its inbox): NodeMetrics/s through both aggregates,
what load-aware scheduling waits for.

Restart: the worker is replaced (stopped, a new one started) and one NodeMetric of a next round is sent per
node-inbox partition; the figure runs from the new worker's start until both aggregates have taken them,
so it covers the start-up, the group join and the recovery of both tables of every node.

The whole run is bounded by ``timeout_s`` (``--timeout``): past it the run is cancelled and fails with
a TimeoutError naming what it was waiting for (:class:`Progress`): the broker taking a batch of records (how
many were sent and acknowledged), the worker committing, or the changelog read.

Bytes per node: the latest value of every node in the node-state changelog topic (the compact
``dump_state`` bytes a worker restores from), averaged; NaN when the changelog could not be read back
(``STATE_READ_IDLE_S`` without a fetch answer) or did not hold every node.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from datetime import datetime, timezone

from streams import kafka
from streams.bench.harness import Harness, cpu_figures, cpu_reading, wait_through_scheduling
from streams.koordinator.classes import PRIORITY_BATCH, PRIORITY_PROD, QOS_BE, QOS_LS
from streams.koordinator.labels import LABEL_POD_QOS
from streams.objects import Document, to_record
from streams.partitioning import partition_for
from streams.replay.reader import read_topic
from streams.schemas import codec
from streams.sloconfig.document import CONFIG_NAME, CONFIG_NAMESPACE

GI = 1 << 30
NAMESPACE = "bench"
MINUTE_MS = 60_000
PROD_SHARE = 0.6
DEGRADE_TIME_MINUTES = 24 * 60
"""How long the bench's NodeMetrics stay fresh (Koordinator's default is 15). A real node reports every
minute, so its metric never goes stale; the bench's nodes report ``rounds`` times only, and a run longer than
15 minutes (10,000 nodes on Tansu) would measure every node degrading at once instead of the NodeMetrics."""


def _record(manifest: dict):
    return to_record(Document("<bench>", 0, 1, manifest))


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _node_name(node: int) -> str:
    return f"bench-node-{node:05d}"


def _pod_names(node: int, pods: int) -> list[str]:
    return [f"bench-pod-{node:05d}-{index:02d}" for index in range(pods)]


def pod_manifest(node: str, pod: str, prod: bool) -> dict:
    """A pod bound to ``node``: koord-prod (priority 9100) with QoS LS, or koord-batch (5100) with QoS BE."""
    priority, priority_class, qos = (9100, PRIORITY_PROD, QOS_LS) if prod else (5100, PRIORITY_BATCH, QOS_BE)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod, "namespace": NAMESPACE, "labels": {LABEL_POD_QOS: qos}},
            "spec": {"nodeName": node, "priority": priority, "priorityClassName": priority_class,
                     "containers": [{"name": "main", "image": "bench",
                                     "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}]},
            "status": {"phase": "Running"}}


def setup_records(nodes: int, pods: int, start_ms: int, names: dict[str, str]) -> list[tuple[str, str, bytes, int]]:
    """(topic, key, value, timestamp ms) of the config, the Nodes and the bound Pods."""
    config = _record({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": CONFIG_NAME, "namespace": CONFIG_NAMESPACE},
                      "data": {"colocation-config": json.dumps({"enable": True,
                                                                 "degradeTimeMinutes": DEGRADE_TIME_MINUTES})}})
    out = [(names[config.topic], config.key, codec.encode(config.schema, config.record), start_ms)]
    resources = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    prod_count = int(pods * PROD_SHARE)
    for node in range(nodes):
        name = _node_name(node)
        record = _record({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                          "status": {"capacity": resources, "allocatable": resources}})
        out.append((names[record.topic], record.key, codec.encode(record.schema, record.record), start_ms))
        for index, pod in enumerate(_pod_names(node, pods)):
            bound = _record(pod_manifest(name, pod, index < prod_count))
            out.append((names[bound.topic], bound.key, codec.encode(bound.schema, bound.record), start_ms))
    return out


def metric_records(nodes: int, pods: int, rounds: int, start_ms: int, seed: int,
                   names: dict[str, str]) -> list[tuple[str, str, bytes, int]]:
    """``rounds`` NodeMetrics per node, one minute of event time apart, with log-normal pod usage."""
    rng = random.Random(seed)
    return [_metric_record(node, pods, start_ms + (step + 1) * MINUTE_MS, rng, names)
            for step in range(rounds) for node in range(nodes)]


def _metric_record(node: int, pods: int, ts: int, rng: random.Random, names: dict[str, str]) -> tuple[str, str, bytes, int]:
    usages = [(pod, int(700 * rng.lognormvariate(0, 0.3)), int(1.5 * GI * rng.lognormvariate(0, 0.05)))
              for pod in _pod_names(node, pods)]
    node_cpu = sum(cpu for _, cpu, _ in usages) + 1000
    node_memory = sum(memory for _, _, memory in usages) + GI // 2
    record = _record({
        "apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
        "metadata": {"name": _node_name(node)},
        "status": {"updateTime": _iso(ts),
                   "nodeMetric": {"nodeUsage": {"resources": {"cpu": f"{node_cpu}m", "memory": str(node_memory)}},
                                  "systemUsage": {"resources": {"cpu": "1", "memory": "512Mi"}}},
                   "podsMetric": [{"namespace": "bench", "name": pod,
                                   "podUsage": {"resources": {"cpu": f"{cpu}m", "memory": str(memory)}}}
                                  for pod, cpu, memory in usages]}})
    return names[record.topic], record.key, codec.encode(record.schema, record.record), ts


CANCEL_GRACE_S = 30.0
"""How long a run past its timeout gets to stop what it was doing before the bench fails anyway."""
PRODUCER_STOP_S = 10.0
"""How long the producer's stop may flush what is pending: a broker that takes nothing would hold it forever."""


class Progress:
    """What the run is waiting for now, for the message of its timeout."""

    def __init__(self) -> None:
        self.waiting_for = "the run to start"
        self.sent = self.acknowledged = self.total = 0

    def wait(self, what: str, total: int = 0) -> None:
        self.waiting_for, self.total, self.sent, self.acknowledged = what, total, 0, 0

    def describe(self) -> str:
        if not self.total:
            return self.waiting_for
        return f"{self.waiting_for}: {self.sent} of {self.total} sent, {self.acknowledged} acknowledged"


@contextlib.asynccontextmanager
async def _producer(bootstrap: str):
    """``kafka.producer``, its stop (a flush of what is pending) bounded by :data:`PRODUCER_STOP_S`."""
    context = kafka.producer(bootstrap)
    producer = await context.__aenter__()
    try:
        yield producer
    finally:
        await asyncio.wait_for(context.__aexit__(None, None, None), PRODUCER_STOP_S)


async def _send(bootstrap: str, records: list[tuple[str, str, bytes, int]], progress: Progress, what: str) -> None:
    """Send the records (``what`` names them in ``progress``)."""
    topics = sorted({topic for topic, _, _, _ in records})
    progress.wait(f"the broker to take {what} ({', '.join(topics)})", len(records))

    def acknowledged(_) -> None:
        progress.acknowledged += 1

    async with _producer(bootstrap) as producer:
        futures = []
        for topic, key, value, ts in records:
            futures.append(await producer.send(topic, key=key.encode(), value=value, timestamp_ms=ts))
            futures[-1].add_done_callback(acknowledged)
            progress.sent += 1
        for future in futures:
            await future


STATE_READ_IDLE_S = 120.0
"""How long the read of the node-state changelog waits for a fetch answer: a changelog of 5,000 nodes holds
hundreds of MB, and Tansu answers its first fetch slowly."""


async def _state_bytes(bootstrap: str, changelog: str, nodes: int) -> float:
    latest: dict[str, int] = {}
    for message in await read_topic(bootstrap, changelog, idle_timeout_s=STATE_READ_IDLE_S):
        key = json.loads(message.key) if message.key else ""  # Faust writes table keys as JSON strings
        if isinstance(key, str) and key.startswith("bench-node-"):
            latest[key] = len(message.value) if message.value is not None else 0
    return sum(latest.values()) / max(len(latest), 1) if len(latest) == nodes else float("nan")


async def _run(harness: Harness, nodes: int, pods: int, rounds: int, seed: int, progress: Progress) -> dict:
    names = harness.topology.names()
    start_ms = (int(time.time() * 1000) // MINUTE_MS) * MINUTE_MS - (rounds + 1) * MINUTE_MS
    setup = setup_records(nodes, pods, start_ms, names)
    await _send(harness.bootstrap, setup, progress, f"the setup's {len(setup)} records")
    setup_started = time.monotonic()
    setup_timeout_s = 600 + nodes * pods / 100
    progress.wait("the worker to commit the setup through the scheduling domain")
    await wait_through_scheduling(harness, timeout_s=setup_timeout_s)
    setup_s = time.monotonic() - setup_started

    metrics = metric_records(nodes, pods, rounds, start_ms, seed, names)
    size = sum(len(value) for _, _, value, _ in metrics) / len(metrics)
    cpu_before = cpu_reading(harness)
    started = time.monotonic()
    await _send(harness.bootstrap, metrics, progress, f"{len(metrics)} NodeMetrics")
    produced_s = time.monotonic() - started
    progress.wait(f"the worker to commit the {len(metrics)} NodeMetrics through the node inbox and the scheduling "
                  "domain")
    caught_up, both = await wait_through_scheduling(harness, timeout_s=600 + len(metrics) / 100)
    cpu = cpu_figures(harness, cpu_before, len(metrics))
    elapsed = caught_up - started
    changelog = harness.topology.name("changelog-node")
    progress.wait(f"the read of the node-state changelog {changelog}")
    try:
        state_bytes = await _state_bytes(harness.bootstrap, changelog, nodes)
    except TimeoutError:
        state_bytes = float("nan")
    restart_s = float("nan")
    if harness.replace_worker is not None:
        next_round_ms = start_ms + (rounds + 1) * MINUTE_MS
        probes = [_metric_record(node, pods, next_round_ms, random.Random(seed), names)
                  for node in _first_node_per_partition(nodes, harness.topology.spec("inbox-node").partitions)]
        restart_s = await _restart(harness, probes, setup_timeout_s, progress)
    return {"nodes": nodes, "pods_per_node": pods, "events": len(metrics), "event_bytes": round(size),
            "events_per_s": round(len(metrics) / elapsed, 1), "seconds": round(elapsed, 2),
            "worker_cpu_us_per_event": cpu["worker_cpu_us_per_event"], "worker_cpu_us_per_event_by_role": cpu["by_role"],
            "through_scheduler_per_s": round(len(metrics) / (both - started), 1),
            "produce_seconds": round(produced_s, 2), "setup_seconds": round(setup_s, 1),
            "state_bytes_per_node": round(state_bytes, 1), "restart_seconds": round(restart_s, 1)}


def _first_node_per_partition(nodes: int, partitions: int) -> list[int]:
    """The first node of each node-inbox partition (the router's key partitioning, the producer default)."""
    first: dict[int, int] = {}
    for node in range(nodes):
        first.setdefault(partition_for(partitions, _node_name(node)), node)
        if len(first) == partitions:
            break
    return [first[p] for p in sorted(first)]


async def _restart(harness: Harness, probes: list[tuple[str, str, bytes, int]], timeout_s: float,
                   progress: Progress) -> float:
    """Seconds from a new worker's start (the old one stopped first) until it has taken ``probes`` (a NodeMetric on
    each node-inbox partition) through both aggregates: its tables of every node recovered first."""
    progress.wait("the replaced worker to start")
    started = await asyncio.to_thread(harness.replace_worker, timeout_s)
    await _send(harness.bootstrap, probes, progress, f"{len(probes)} restart probes")
    progress.wait("the restarted worker to commit the restart probes through both aggregates")
    _, scheduled = await wait_through_scheduling(harness, timeout_s=timeout_s)
    return scheduled - started


async def _bounded(harness: Harness, nodes: int, pods: int, rounds: int, seed: int, timeout_s: float) -> dict:
    """:func:`_run`, cancelled past ``timeout_s``: then a TimeoutError naming what it was waiting for."""
    progress = Progress()
    task = asyncio.ensure_future(_run(harness, nodes, pods, rounds, seed, progress))
    await asyncio.wait({task}, timeout=timeout_s)
    if task.done():
        return task.result()
    waiting = progress.describe()
    task.cancel()
    await asyncio.wait({task}, timeout=CANCEL_GRACE_S)
    raise TimeoutError(f"koord bench nodes ({nodes} nodes, {pods} pods per node, {rounds} rounds) did not finish "
                       f"within {timeout_s:g} s (--timeout); it was waiting for {waiting}")


def run(harness: Harness, nodes: int, pods: int, rounds: int, seed: int, timeout_s: float) -> dict:
    return asyncio.run(_bounded(harness, nodes, pods, rounds, seed, timeout_s))
