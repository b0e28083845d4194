"""``koord bench trace``: a GPU cluster trace replayed through the broker as Koordinator objects.

Per seed (``gputrace``: the FGD paper's protocol), on a fresh broker and worker (the simulator starts each run
from an empty cluster): the trace's GPU nodes (Node + Device) are applied and the
scheduling inbox caught up; the seed's pods are submitted in order, one at a time as fast as the broker takes
them; every decision is read back from the decision stream; a pod decided Unschedulable is deleted at once
(the trace's failed pods are dropped, never retried); then the unallocated GPU and the fragmentation at 100 %
arrived are computed from the placements the decisions name (``device-allocated``). On a shared broker
(``KOORD_BROKER``) the cluster is deleted before the next seed instead.

Policies: ``default`` (Koordinator's default profile: DeviceShare LeastAllocated) and
``fragmentation`` (GPUFragmentation, with the trace's typical pods and their mean memory, as the only score
plugin, as the paper runs each policy alone; ties go to the node whose name sorts first).

A failed pod is deleted as soon as its decision is read; if the scheduler retried it before the deletion arrived
(a node event in between) and placed it, the run counts it failed as the protocol says and reports how many
(``placed_before_their_deletion``): their brief stay is a deviation from the simulator, which never retries.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time

import numpy as np
from aiokafka import AIOKafkaConsumer, TopicPartition

from streams import kafka
from streams.bench import gputrace
from streams.bench.harness import Harness, fetch_highwaters, wait_scheduled
from streams.koordinator.annotations import ANNOTATION_DEVICE_ALLOCATED
from streams.koordinator.resources import DEVICE_GPU, GPU_CORE
from streams.objects import Document, to_record
from streams.objects.quantity import to_canonical
from streams.scheduler.plugins.gpufragmentation import NAME as FRAGMENTATION, FragmentModel
from streams.schemas import codec

POLICIES = ("default", "fragmentation")
FIRST_SEED = 42
"""The paper's seeds are 42, 43, ..."""
FRAGMENTATION_WEIGHT = 1000
CATCH_UP_S = 900


def _encode(manifest: dict, names: dict) -> tuple[str, str, bytes]:
    record = to_record(Document("<trace>", 0, 1, manifest))
    return names[record.topic], record.key, codec.encode(record.schema, record.record)


def _tombstone(manifest: dict, names: dict) -> tuple[str, str, None]:
    record = to_record(Document("<trace>", 0, 1, manifest))
    return names[record.topic], record.key, None


def scheduler_configuration(policy: str, pods: list[gputrace.TracePod]) -> dict:
    profile: dict = {"schedulerName": "default-scheduler"}
    if policy == "fragmentation":
        profile["plugins"] = {"score": {"disabled": [{"name": "*"}],
                                        "enabled": [{"name": FRAGMENTATION, "weight": FRAGMENTATION_WEIGHT}]}}
        profile["pluginConfig"] = [{"name": FRAGMENTATION, "args": gputrace.fragmentation_args(pods, memory=True)}]
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [profile]}


def _placement(decision: dict) -> gputrace.Placement:
    if decision["result"] != "Scheduled":
        return gputrace.Placement(None)
    raw = (decision.get("annotations") or {}).get(ANNOTATION_DEVICE_ALLOCATED)
    gpus = []
    for entry in (json.loads(raw).get(DEVICE_GPU, []) if raw else []):
        core = to_canonical(GPU_CORE, entry["resources"][GPU_CORE])
        gpus.append((int(entry["minor"]), core * gputrace.MILLI_PER_GPU // 100))
    return gputrace.Placement(decision["nodeName"], tuple(gpus))


async def _send_all(harness: Harness, items) -> None:
    async with kafka.producer(harness.bootstrap) as producer:
        for topic, key, value in items:
            await producer.send(topic, key=key.encode(), value=value)
        await producer.flush()


async def _seed(harness: Harness, nodes: list[gputrace.TraceNode], order: list[gputrace.TracePod],
                timeout_s: float) -> tuple[dict[str, gputrace.Placement], dict]:
    names = harness.topology.names()
    cluster = [m for node in nodes for m in gputrace.node_manifests(node)]
    await _send_all(harness, (_encode(m, names) for m in cluster))
    await wait_scheduled(harness, timeout_s=CATCH_UP_S)
    manifests = {pod.name: gputrace.pod_manifest(pod) for pod in order}
    decisions = names["decisions"]
    consumer = AIOKafkaConsumer(**kafka.client_settings(harness.bootstrap), **kafka.consumer_settings(),
                                group_id=None, enable_auto_commit=False)
    await consumer.start()
    placements: dict[str, gputrace.Placement] = {}
    sent: dict[str, float] = {}
    seen: dict[str, float] = {}
    late: set[str] = set()
    try:
        tps = [TopicPartition(decisions, p) for p in await kafka.partitions_for(consumer, decisions)]
        consumer.assign(tps)
        for tp, highwater in (await fetch_highwaters(consumer, tps)).items():
            consumer.seek(tp, highwater)
        async with kafka.producer(harness.bootstrap) as producer:
            async def submit() -> None:
                for pod in order:
                    topic, key, value = _encode(manifests[pod.name], names)
                    sent[pod.name] = time.monotonic()
                    await producer.send(topic, key=key.encode(), value=value)
                await producer.flush()

            async def collect() -> None:
                deadline = time.monotonic() + timeout_s
                while len(seen) < len(order) and time.monotonic() < deadline:
                    for messages in (await consumer.getmany(timeout_ms=100)).values():
                        now = time.monotonic()
                        for message in messages:
                            schema, decision = codec.decode(message.value)
                            if schema != "SchedulingDecision":
                                continue
                            name = decision["pod"]["name"]
                            if name in seen and placements[name].node is None and decision["result"] == "Scheduled":
                                late.add(name)
                            if name not in manifests or name in seen:
                                continue
                            seen[name] = now
                            placements[name] = _placement(decision)
                            if placements[name].node is None:
                                topic, key, _ = _tombstone(manifests[name], names)
                                await producer.send(topic, key=key.encode(), value=None)

            await asyncio.gather(submit(), collect())
    finally:
        await consumer.stop()
    latencies = np.array([seen[name] - sent[name] for name in seen]) * 1000
    elapsed = max(seen.values()) - min(sent.values()) if seen else float("nan")
    timing = {"decided": len(seen), "pods_per_s": round(len(seen) / elapsed, 1) if seen else 0.0,
              "p50_ms": round(float(np.percentile(latencies, 50)), 1) if seen else None,
              "p99_ms": round(float(np.percentile(latencies, 99)), 1) if seen else None,
              "placed_before_their_deletion": len(late)}
    if harness.broker_origin != "fresh":
        await _send_all(harness, [_tombstone(manifests[pod.name], names) for pod in order if
                                  placements.get(pod.name, gputrace.Placement(None)).node is not None] +
                        [_tombstone(m, names) for m in cluster])
        await wait_scheduled(harness, timeout_s=CATCH_UP_S)
    return placements, timing


async def _run_seed(harness: Harness, nodes: list[gputrace.TraceNode], pods: list[gputrace.TracePod], policy: str,
                    seed: int) -> dict:
    names = harness.topology.names()
    await _send_all(harness, [_encode(scheduler_configuration(policy, pods), names)])
    model = FragmentModel(tuple((shape + (0,), float(count)) for shape, count in gputrace.typical_pods(pods)))
    cluster, order = gputrace.seeded(pods, nodes, seed)
    placements, timing = await _seed(harness, cluster, order, timeout_s=300 + len(order) / 20)
    return {"seed": seed, **gputrace.measure(cluster, order, placements, model), **timing}


def run_seed(harness: Harness, nodes: list[gputrace.TraceNode], pods: list[gputrace.TracePod], policy: str,
             seed: int) -> dict:
    """One seed on ``harness``: a fresh broker and worker (or, on a shared broker, its cluster deleted after)."""
    return asyncio.run(_run_seed(harness, nodes, pods, policy, seed))


def summary(nodes: list[gputrace.TraceNode], pods: list[gputrace.TracePod], policy: str, runs: list[dict]) -> dict:
    def median(key: str) -> float | None:
        values = [r[key] for r in runs if r.get(key) is not None and r[key] == r[key]]
        return round(statistics.median(values), 2) if values else None

    return {"policy": policy, "nodes": len(nodes), "gpus": gputrace.capacity(nodes) // gputrace.MILLI_PER_GPU,
            "trace_pods": len(pods), "seeds": runs,
            "median": {key: median(key) for key in ("unallocated_gpu_pct", "fragmentation_pct", "pods_per_s",
                                                    "p99_ms", "failed_pods")},
            "paper_baselines_unallocated_gpu_pct": gputrace.BASELINES}
