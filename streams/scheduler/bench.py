"""In-process benchmark of the scheduling core: ``run_in_process(nodes, pods, seed)``.

Builds a domain of ``nodes`` nodes (32 cores, 128Gi, 110 pods) each with a fresh
NodeUsage (random usage, as the node aggregate sends it for a NodeMetric), a few
ElasticQuotas under the root with enough min for the load, then schedules ``pods`` pods
(random requests from a few shapes, spread over the quotas) with the default profile:
NodeResourcesFit + LoadAwareScheduling + ElasticQuota and the basic filters. Only the pod events are timed. Pure and seeded: the same
arguments give the same decisions (the timing varies).

The objects built before timing are moved out of the cyclic garbage collector's
generations (``gc.freeze``), as a long-running worker would after restoring its state;
without it the collector rescans the 5,000 nodes' objects and costs about 15 %.

Pods/s is also given per slice of ``slice_pods`` pods, so that a cost growing with the
number of bound pods shows as falling figures; ``profile_from`` runs cProfile over the
pods from that index on and returns its top lines (by own time and by cumulative time).

``run_workload(name, case)`` does the same for one of kube-scheduler's scheduler_perf workloads
(``streams.scheduler.perfworkloads``): its nodes and init pods go through the domain untimed (as the
end-to-end bench schedules them before its clock starts), then only its measured pods are timed, each
manifest turned into the record ``koord apply`` would send.
"""

from __future__ import annotations

import cProfile
import gc
import io
import json
import pstats
import random
import time

from streams.scheduler import perfworkloads
from streams.events import Causation, InboxEvent
from streams.koordinator.labels import LABEL_QUOTA_NAME
from streams.nodeaggregate.usage import summary
from streams.objects import Document, to_record
from streams.scheduler.domain import SchedulingDomain

GI = 1 << 30
QUOTAS = 4
SHAPES = ((500, GI // 2), (1000, GI), (2000, 4 * GI), (250, 256 << 20))
SLICE_PODS = 5000
PROFILE_LINES = 15


def _event(kind: str, key: str, record: dict, offset: int, ts: int) -> InboxEvent:
    topic = {"Node": "koord.nodes", "Pod": "koord.pods", "NodeUsage": "koord.nodeusages",
             "ElasticQuota": "koord.quotas", "Namespace": "koord.namespaces"}.get(kind, "koord.objects")
    return InboxEvent(Causation("koord.inbox.scheduling", 0, offset, topic, 0, offset), ts, key, kind, record)


def build(nodes: int, pods: int, seed: int, now_ms: int = 1_700_000_000_000):
    """(domain with nodes, metrics and quotas; the pod events to schedule)."""
    rng = random.Random(seed)
    domain = SchedulingDomain("bench")
    offset = 0
    cpu, memory = 32_000, 128 * GI
    for i in range(nodes):
        name = f"node-{i:05d}"
        alloc = {"cpu": cpu, "memory": memory, "pods": 110}
        domain.handle(_event("Node", name, {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}, "annotations": {}},
            "manifest": "{}", "unschedulable": False, "taints": [], "capacity": alloc, "allocatable": alloc},
            offset, now_ms))
        offset += 1
        usage = {"cpu": rng.randrange(0, cpu * 6 // 10), "memory": rng.randrange(0, memory * 8 // 10)}
        metric = {"manifest": json.dumps({"status": {"nodeMetric": {}}}), "nodeUsage": usage, "updateTime": now_ms}
        cause = Causation("koord.inbox.node", 0, offset, "koord.nodemetrics", 0, offset)
        domain.handle(_event("NodeUsage", name, summary(name, metric, cause, now_ms), offset, now_ms))
        offset += 1
    share = {"cpu": cpu * nodes // QUOTAS, "memory": memory * nodes // QUOTAS}
    for q in range(QUOTAS):
        name = f"team-{q}"
        domain.handle(_event("ElasticQuota", f"bench/{name}", {
            "metadata": {"name": name, "namespace": "bench", "labels": {}, "annotations": {}},
            "manifest": "{}", "min": share, "max": {"cpu": cpu * nodes, "memory": memory * nodes}}, offset, now_ms))
        offset += 1
    events = []
    for i in range(pods):
        name = f"pod-{i:06d}"
        request_cpu, request_memory = SHAPES[rng.randrange(len(SHAPES))]
        record = {
            "metadata": {"name": name, "namespace": "bench", "uid": f"uid-{i}",
                         "labels": {LABEL_QUOTA_NAME: f"team-{i % QUOTAS}"}, "annotations": {}},
            "manifest": "{}", "nodeName": None, "schedulerName": "default-scheduler", "priority": None,
            "priorityClassName": None, "requests": {"cpu": request_cpu, "memory": request_memory},
            "limits": {}, "nodeSelector": {}, "tolerations": [], "phase": None}
        events.append(_event("Pod", f"bench/{name}", record, offset, now_ms + i // 1000))
        offset += 1
    return domain, events


def _rate(pods: int, seconds: float) -> float:
    return pods / seconds if seconds > 0 else float("inf")


def run_in_process(nodes: int, pods: int, seed: int, slice_pods: int = SLICE_PODS,
                   profile_from: int | None = None) -> dict:
    """Schedule ``pods`` pods on ``nodes`` nodes in process.

    Returns {"pods_per_s" (wall clock), "cpu_pods_per_s" (this process's CPU time: what a busy
    machine does not distort), "seconds", "nodes", "pods", "scheduled", "slices" (per slice of
    ``slice_pods`` pods: "first" pod index, "pods", "pods_per_s", "cpu_pods_per_s"), "plugins" (per plugin and
    extension point: calls and µs per pod, costliest first, from the framework's own ``PluginStats``), and with
    ``profile_from`` "profile" (the cProfile top lines; the slices it covers run slower)}."""
    domain, events = build(nodes, pods, seed)
    return {"nodes": nodes, **_timed(domain, events, slice_pods, profile_from)}


def workload_events(name: str, case: str | None = None, now_ms: int = 1_700_000_000_000
                    ) -> tuple[perfworkloads.Case, list[InboxEvent], list[InboxEvent]]:
    """(the case, the events of its nodes and init pods, the events of its measured pods) of scheduler_perf
    workload ``name``."""
    workload = perfworkloads.WORKLOADS[name]
    chosen = workload.case(case)
    init, measured = perfworkloads.phases(workload, chosen, "inproc")
    manifests = perfworkloads.node_manifests(workload, chosen.nodes) + [pod for phase in init for pod in phase]
    events = [_manifest_event(m, offset, now_ms) for offset, m in enumerate(manifests)]
    timed = [_manifest_event(m, offset, now_ms) for offset, m in enumerate(measured, len(manifests))]
    return chosen, events, timed


def _manifest_event(manifest: dict, offset: int, now_ms: int) -> InboxEvent:
    record = to_record(Document("<bench>", 0, 1, manifest))
    return _event(record.kind, record.key, record.record, offset, now_ms)


def run_workload(name: str, case: str | None = None, slice_pods: int = SLICE_PODS,
                 profile_from: int | None = None) -> dict:
    """scheduler_perf workload ``name`` in process: ``run_in_process``'s figures over its measured pods (the
    index of ``profile_from`` counts measured pods), with "workload", "case", "init_pods" and "init_scheduled"."""
    chosen, setup, events = workload_events(name, case)
    domain = SchedulingDomain("bench")
    init_scheduled = sum(1 for ev in setup for n, r in domain.handle(ev)
                         if n == "SchedulingDecision" and r["result"] == "Scheduled")
    return {"workload": name, "case": chosen.name, "nodes": chosen.nodes, "init_pods": len(setup) - chosen.nodes,
            "init_scheduled": init_scheduled, **_timed(domain, events, slice_pods, profile_from)}


def _timed(domain: SchedulingDomain, events: list[InboxEvent], slice_pods: int, profile_from: int | None) -> dict:
    pods = len(events)
    for framework in domain.frameworks.values():
        framework.stats.take()
    gc.collect()
    gc.freeze()
    profiler = cProfile.Profile() if profile_from is not None and profile_from < pods else None
    start_profile = max(profile_from or 0, 0)
    scheduled = 0
    slices = []
    started, cpu_started = time.perf_counter(), time.process_time()
    for first in range(0, pods, slice_pods):
        chunk = events[first:first + slice_pods]
        slice_started, slice_cpu = time.perf_counter(), time.process_time()
        for index, ev in enumerate(chunk, first):
            if profiler is not None and index == start_profile:
                profiler.enable()
            for name, record in domain.handle(ev):
                if name == "SchedulingDecision" and record["result"] == "Scheduled":
                    scheduled += 1
        slices.append({"first": first, "pods": len(chunk),
                       "pods_per_s": _rate(len(chunk), time.perf_counter() - slice_started),
                       "cpu_pods_per_s": _rate(len(chunk), time.process_time() - slice_cpu)})
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    gc.unfreeze()
    result = {"pods_per_s": _rate(pods, elapsed), "cpu_pods_per_s": _rate(pods, cpu), "seconds": elapsed,
              "pods": pods, "scheduled": scheduled, "slices": slices, "plugins": plugin_costs(domain, pods)}
    if profiler is not None:
        profiler.disable()
        result["profile"] = profile_lines(profiler)
    return result


def plugin_costs(domain, pods: int) -> list[dict]:
    """Each (plugin, extension point)'s calls and wall-clock µs per pod over the run, costliest first."""
    totals: dict[tuple[str, str], list] = {}
    for framework in domain.frameworks.values():
        for (plugin, stage, _), (calls, seconds) in framework.stats.take().items():
            entry = totals.setdefault((plugin, stage), [0, 0.0])
            entry[0] += calls
            entry[1] += seconds
    rows = [{"plugin": plugin, "stage": stage, "calls": calls, "us_per_pod": seconds * 1e6 / max(pods, 1)}
            for (plugin, stage), (calls, seconds) in totals.items()]
    return sorted(rows, key=lambda row: (-row["us_per_pod"], row["plugin"], row["stage"]))


def profile_lines(profiler: cProfile.Profile, lines: int = PROFILE_LINES) -> str:
    """The profile's top ``lines`` by own time, then by cumulative time."""
    out = io.StringIO()
    for key in ("tottime", "cumulative"):
        pstats.Stats(profiler, stream=out).sort_stats(key).print_stats(lines)
    return out.getvalue()


if __name__ == "__main__":
    import sys

    args = [int(a) for a in sys.argv[1:]] or [5000, 3000, 1]
    print(json.dumps(run_in_process(*args)))
