"""``koord bench scheduler``: pods/s and submit-to-decision latency through the real broker.

Loads ``nodes`` nodes (32 cores, 128Gi) with a fresh NodeMetric each and four
ElasticQuotas (with ``domains`` above 1: that many ElasticQuotaProfiles instead, each selecting an equal
share of the nodes, each its own scheduling domain, the pods spread over their quotas in turn), waits until the node inbox and then the scheduling inbox are caught up (the
NodeMetrics reach the scheduler as the node aggregate's NodeUsages), then submits
``pods`` pods (as fast as possible, or at ``rate`` pods/s) spread over the
quotas, and reads the decision stream. Latency is from the moment a pod is
handed to the producer to the moment its first decision is read back.
Also reports the pure core's in-process pods/s (``streams.scheduler.bench``); ``core_only`` runs
just the core, without a broker, with its pods/s per slice of 5,000 pods (a cost that grows
with the number of bound pods shows as falling slices) and optionally its profile.

Workloads: ``plain`` (the above); ``gang`` (the pods are one Strict gang whose min-available is all of
them: no member is bound before the last arrives, and latency runs to each member's Scheduled decision);
``reservations`` (one Reservation per pod, owned by that pod by name, applied and placed before the
pods are submitted; latency runs to the owner's Scheduled decision, and the owners that landed on their
reservation are counted).
"""

from __future__ import annotations

import asyncio
import random
import time
from datetime import datetime, timezone

import numpy as np
from aiokafka import AIOKafkaConsumer, TopicPartition

from streams import kafka
from streams.bench.harness import (
    Harness, cpu_figures, cpu_reading, fetch_highwaters, wait_scheduled, wait_through_scheduling)
from streams.koordinator.annotations import ANNOTATION_RESERVATION_ALLOCATED
from streams.koordinator.labels import ANNOTATION_GANG_MIN_NUM, ANNOTATION_GANG_NAME, LABEL_QUOTA_NAME, LABEL_QUOTA_TREE_ID
from streams.objects import Document, to_record
from streams.partitioning import partition_for
from streams.scheduler import bench as in_process
from streams.scheduler import perfworkloads
from streams.schemas import codec

NAMESPACE = "bench"
QUOTAS = 4
SHAPES = (("500m", "512Mi"), ("1", "1Gi"), ("2", "4Gi"), ("250m", "256Mi"))
DOMAIN_LABEL = "bench.koordstream.io/domain"


def _encode(manifest: dict, names: dict) -> tuple[str, str, bytes]:
    record = to_record(Document("<bench>", 0, 1, manifest))
    return names[record.topic], record.key, codec.encode(record.schema, record.record)


def domain_names(count: int, partitions: int) -> list[str]:
    """``count`` tree ids whose scheduling-inbox partitions (the producer's default partitioner) differ while
    partitions last, so that the domains can land on different workers."""
    names, used, index = [], set(), 0
    while len(names) < count:
        name, index = f"bench-{index}", index + 1
        partition = partition_for(partitions, name)
        if partition not in used or len(used) == partitions:
            names.append(name)
            used.add(partition)
    return names


def profile_manifest(tree: str) -> dict:
    """An ElasticQuotaProfile whose tree ``tree`` is the nodes labelled with it; pods use its root quota."""
    return {"apiVersion": "quota.koordinator.sh/v1alpha1", "kind": "ElasticQuotaProfile",
            "metadata": {"name": tree, "namespace": NAMESPACE, "labels": {LABEL_QUOTA_TREE_ID: tree}},
            "spec": {"quotaName": f"{tree}-root", "nodeSelector": {"matchLabels": {DOMAIN_LABEL: tree}}}}


def cluster_manifests(nodes: int, seed: int, trees: list[str] | None = None) -> list[dict]:
    """The nodes with their NodeMetrics; the four quotas of the default domain, or with ``trees`` one profile per
    tree, node ``i`` labelled for tree ``i % len(trees)``."""
    rng = random.Random(seed)
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    out = [profile_manifest(tree) for tree in trees or ()]
    for i in range(nodes):
        name = f"bench-node-{i:05d}"
        resources = {"cpu": "32", "memory": "128Gi", "pods": "110"}
        labels = {DOMAIN_LABEL: trees[i % len(trees)]} if trees else {}
        out.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
                    "status": {"capacity": resources, "allocatable": resources}})
        usage = {"cpu": f"{rng.randrange(0, 19200)}m", "memory": f"{rng.randrange(0, 100)}Gi"}
        out.append({"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": {"name": name},
                    "status": {"updateTime": now, "nodeMetric": {"nodeUsage": {"resources": usage}}}})
    if trees:
        return out
    share = {"cpu": str(32 * nodes // QUOTAS), "memory": f"{128 * nodes // QUOTAS}Gi"}
    for q in range(QUOTAS):
        out.append({"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
                    "metadata": {"name": f"team-{q}", "namespace": NAMESPACE},
                    "spec": {"min": share, "max": share}})
    return out


WORKLOADS = ("plain", "gang", "reservations")


def pod_manifest(run: str, index: int, rng: random.Random, workload: str = "plain", pods: int = 0,
                 trees: list[str] | None = None) -> dict:
    cpu, memory = rng.choice(SHAPES)
    quota = f"{trees[index % len(trees)]}-root" if trees else f"team-{index % QUOTAS}"
    annotations = {ANNOTATION_GANG_NAME: f"bench-{run}", ANNOTATION_GANG_MIN_NUM: str(pods)} \
        if workload == "gang" else {}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"bench-{run}-{index:06d}", "namespace": NAMESPACE, "annotations": annotations,
                         "labels": {LABEL_QUOTA_NAME: quota}},
            "spec": {"containers": [{"name": "main", "image": "bench",
                                     "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}


def reservation_manifest(pod: dict) -> dict:
    """A Reservation of exactly ``pod``'s requests, owned by that pod by name."""
    meta = pod["metadata"]
    return {"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation",
            "metadata": {"name": f"reserve-{meta['name']}"},
            "spec": {"template": {"metadata": {"namespace": NAMESPACE}, "spec": pod["spec"]},
                     "owners": [{"object": {"namespace": NAMESPACE, "name": meta["name"]}}]}}


async def _end_to_end(harness: Harness, nodes: int, pods: int, rate: float | None, seed: int,
                      workload: str = "plain", domains: int = 1) -> dict:
    names = harness.topology.names()
    run = f"{int(time.time()) % 100000:05d}"
    rng = random.Random(seed)
    trees = domain_names(domains, harness.topology.spec("inbox-scheduling").partitions) if domains > 1 else None
    manifests = [pod_manifest(run, i, rng, workload, pods, trees) for i in range(pods)]
    setup = cluster_manifests(nodes, seed, trees)
    if workload == "reservations":
        setup += [reservation_manifest(m) for m in manifests]
    await _send(harness, setup)
    await wait_through_scheduling(harness)
    if workload == "reservations":
        await asyncio.sleep(2.0)
        await wait_scheduled(harness)
    figures = await _measure(harness, [_encode(m, names) for m in manifests], f"bench-{run}-", rate,
                             final=workload != "plain")
    if workload != "reservations":
        del figures["on_their_reservation"]
    return {**figures, "offered_rate": rate, "workload": workload, "domains": domains, "workers": harness.workers}


async def _send(harness: Harness, manifests: list[dict]) -> None:
    names = harness.topology.names()
    async with kafka.producer(harness.bootstrap) as producer:
        for topic, key, value in (_encode(m, names) for m in manifests):
            await producer.send(topic, key=key.encode(), value=value)
        await producer.flush()


async def _measure(harness: Harness, encoded: list[tuple[str, str, bytes]], prefix: str, rate: float | None,
                   final: bool = False) -> dict:
    """Submit ``encoded`` pods (at ``rate``/s, or as fast as possible) and read the decision stream until each
    pod whose name starts with ``prefix`` has its first decision (with ``final``: its Scheduled one)."""
    pods = len(encoded)
    on_reservation: set[str] = set()
    scheduled: set[str] = set()
    decisions = harness.topology.names()["decisions"]
    consumer = AIOKafkaConsumer(**kafka.client_settings(harness.bootstrap), **kafka.consumer_settings(), group_id=None,
                                enable_auto_commit=False)
    await consumer.start()
    tps = [TopicPartition(decisions, p) for p in await kafka.partitions_for(consumer, decisions)]
    consumer.assign(tps)
    for tp, highwater in (await fetch_highwaters(consumer, tps)).items():
        consumer.seek(tp, highwater)
    sent: dict[str, float] = {}
    seen: dict[str, float] = {}
    sent_wall: dict[str, float] = {}
    produced_wall: dict[str, float] = {}

    async def submit() -> None:
        async with kafka.producer(harness.bootstrap) as producer:
            started = time.monotonic()
            for index, (topic, key, value) in enumerate(encoded):
                if rate:
                    delay = started + index / rate - time.monotonic()
                    if delay > 0:
                        await asyncio.sleep(delay)
                sent[key.split("/", 1)[1]] = time.monotonic()
                sent_wall[key.split("/", 1)[1]] = time.time()
                await producer.send(topic, key=key.encode(), value=value)
            await producer.flush()

    async def collect() -> None:
        deadline = time.monotonic() + 120 + pods / 100
        while len(seen) < pods and time.monotonic() < deadline:
            for messages in (await consumer.getmany(timeout_ms=100)).values():
                now = time.monotonic()
                for message in messages:
                    schema, decision = codec.decode(message.value)
                    if schema != "SchedulingDecision":
                        continue
                    name = decision["pod"]["name"]
                    if not name.startswith(prefix) or name in seen:
                        continue
                    if final and decision["result"] != "Scheduled":
                        continue
                    seen[name] = now
                    produced_wall[name] = message.timestamp / 1000
                    if decision["result"] == "Scheduled":
                        scheduled.add(name)
                    if ANNOTATION_RESERVATION_ALLOCATED in (decision.get("annotations") or {}):
                        on_reservation.add(name)

    cpu_before = cpu_reading(harness)
    try:
        await asyncio.gather(submit(), collect())
    finally:
        await consumer.stop()
    await wait_scheduled(harness)  # the node aggregate's part of the pods (their bindings) is theirs too
    cpu = cpu_figures(harness, cpu_before, len(seen))
    latencies = np.array([seen[name] - sent[name] for name in seen]) * 1000
    to_output = np.array([produced_wall[name] - sent_wall[name] for name in seen]) * 1000
    elapsed = max(seen.values()) - min(sent.values()) if seen else float("nan")
    return {"pods": pods, "decided": len(seen), "scheduled": len(scheduled),
            "pods_per_s": round(len(seen) / elapsed, 1) if seen else 0.0,
            "p50_ms": round(float(np.percentile(latencies, 50)), 1) if seen else None,
            "p99_ms": round(float(np.percentile(latencies, 99)), 1) if seen else None,
            "submit_to_decision_sent": {"p50_ms": round(float(np.percentile(to_output, 50)), 1),
                                        "p99_ms": round(float(np.percentile(to_output, 99)), 1)} if seen else None,
            "worker_cpu_us_per_pod": cpu["worker_cpu_us_per_event"], "worker_cpu_us_per_pod_by_role": cpu["by_role"],
            "on_their_reservation": len(on_reservation)}


async def _perf(harness: Harness, workload: perfworkloads.Workload, case: perfworkloads.Case,
                rate: float | None) -> dict:
    run = f"{int(time.time()) % 100000:05d}"
    init, measured = perfworkloads.phases(workload, case, run)
    await _send(harness, perfworkloads.node_manifests(workload, case.nodes))
    await wait_through_scheduling(harness)
    for phase in init:
        await _send(harness, phase)
        await wait_scheduled(harness)
    names = harness.topology.names()
    figures = await _measure(harness, [_encode(m, names) for m in measured], f"perf-{run}-measure-", rate)
    return {"workload": workload.name, "case": case.name, "source": workload.source, "nodes": case.nodes,
            "init_pods": case.init * len(init), "floor_pods_per_s": case.floor, "offered_rate": rate,
            "workers": harness.workers, **figures}


def run_perf(harness: Harness, workload: str, case: str | None, rate: float | None) -> dict:
    """One scheduler_perf workload (``streams.scheduler.perfworkloads``) end to end: its nodes, its init pods
    scheduled before the clock starts, then its measured pods, with kube-scheduler's floor beside them."""
    chosen = perfworkloads.WORKLOADS[workload]
    return asyncio.run(_perf(harness, chosen, chosen.case(case), rate))


def run(harness: Harness, nodes: int, pods: int, rate: float | None, seed: int, workload: str = "plain",
        domains: int = 1) -> dict:
    end_to_end = asyncio.run(_end_to_end(harness, nodes, pods, rate, seed, workload, domains))
    core = in_process.run_in_process(nodes, min(pods, 3000), seed)
    return {"end_to_end": end_to_end, "in_process": {"pods_per_s": core["pods_per_s"], "nodes": nodes,
                                                     "pods": core["pods"]}}


def core_only(nodes: int, pods: int, seed: int, profile_from: int | None = None) -> dict:
    """The pure core in this process, no broker (``streams.scheduler.bench.run_in_process``)."""
    return in_process.run_in_process(nodes, pods, seed, profile_from=profile_from)


def core_lines(core: dict) -> list[str]:
    """``core_only``'s figures as printed: overall, then per slice, then the profile if taken."""
    lines = [f"in process ({core['nodes']} nodes, {core['pods']} pods, {core['scheduled']} scheduled): "
             f"{core['pods_per_s']:.0f} pods/s ({core['cpu_pods_per_s']:.0f} per CPU second)"]
    for part in core["slices"]:
        lines.append(f"  pods {part['first']:>6}-{part['first'] + part['pods']:<6} {part['pods_per_s']:7.0f} pods/s "
                     f"({part['cpu_pods_per_s']:.0f} per CPU second)")
    lines.append("  cost per plugin (wall-clock µs per pod, costliest first):")
    lines.extend(f"    {row['plugin']:<32} {row['stage']:<11} {row['us_per_pod']:8.1f}" for row in core["plugins"]
                 if row["us_per_pod"] >= 0.5)
    if "profile" in core:
        lines.append(core["profile"])
    return lines
