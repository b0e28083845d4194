"""``koord bench bridge``: pods created through a real kube-apiserver -> bound by koordstream, and the bridge's cost.

Setup: a local control plane (``streams.kube.controlplane``: kube-apiserver and etcd, the CRDs of
``deploy/crds``) in a temporary folder, the harness' broker and worker, and ``koord bridge --mode active``
as a child process against the control plane's admin kubeconfig.

1. The bridge starts on the empty cluster; its resident memory once every resource is listed is the
   baseline.
2. ``nodes`` Nodes (32 cpu, 128Gi) are created through the API server (``streams.bench.apiload``, its
   ``CONCURRENCY`` requests in flight); the run waits until the bridge has produced them all and the worker has read them.
3. ``pods`` Pods naming ``koord-scheduler`` are created the same way, as fast as the API server takes
   them or at ``rate`` per second. A watch on pods (this process's own, opened before the first create)
   sees each binding; a pod's latency is from just before its create request to the watch event showing
   its ``spec.nodeName``. Throughput is pods over the time from the first create to the last binding seen.
   A consumer of the decisions topic splits the latency at the moment the pod's Scheduled decision is read:
   create -> decision (bridge in, router, scheduler) and decision -> bound (the bridge's actuator, the
   Binding, the API server's watch).

Pods not bound when the bench stops are named (the first :data:`NAMED_UNBOUND`) and counted by the last
decision read for them ("none" when no decision was read): a Scheduled one points at the bridge's actuator,
none at the pipeline before the decisions topic.

With a client rate (``--client-rate``; ``streams.bench.clientrate``) the bridge is started with it.

The bridge's cost per watched object: its RSS (``/proc/<pid>/status`` VmRSS) after phase 3, minus the
baseline, over the objects it holds (nodes + pods); and its CPU seconds (utime + stime of
``/proc/<pid>/stat``) over phases 2-3 per 1,000 object changes it received (the ADDED and MODIFIED
events of nodes and pods that the bench's own watch counted; in active mode the bridge also reads every
decision and makes every binding, so this is the whole cost of active mode, not of watching alone).
"""

from __future__ import annotations

import asyncio
import collections
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from aiokafka import AIOKafkaConsumer, TopicPartition

from streams import kafka, supervision
from streams.bench import clientrate
from streams.bench.apiload import BOUND_TIMEOUT_S, ApiLoad, percentiles
from streams.bench.clientrate import ClientRate
from streams.bench.harness import Harness, fetch_highwaters, wait_scheduled
from streams.kube.controlplane import ControlPlane
from streams.schemas import codec

CRDS = Path(__file__).resolve().parents[2] / "deploy" / "crds"
LISTED_TIMEOUT_S = 120
NAMED_UNBOUND = 5
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"process {pid} has no VmRSS")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class Bench:
    def __init__(self, harness: Harness, plane: ControlPlane, nodes: int, pods: int, rate: float | None,
                 home: Path, client: ClientRate | None = None) -> None:
        self.harness, self.plane, self.nodes, self.pods, self.rate, self.home = harness, plane, nodes, pods, rate, home
        self.client = client
        self.load = ApiLoad(plane, pods)
        self.bridge: subprocess.Popen | None = None
        self.decided: dict[str, float] = {}
        self.last_result: dict[str, str] = {}

    @property
    def log(self) -> Path:
        return self.home / "bridge.log"

    def start_bridge(self) -> None:
        flags = clientrate.bridge_flags(self.client) if self.client else []
        self.bridge = supervision.spawn(
            supervision.koord_command("bridge", "--kubeconfig", str(self.plane.kubeconfig), "--mode", "active",
                                      *flags),
            self.log, {"KOORD_HOME": str(self.home)})

    async def wait_listed(self) -> None:
        """Until every watched resource was listed once (the log says so) and the bridge idles."""
        from streams.bridge.resources import WATCHED

        deadline = time.monotonic() + LISTED_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.bridge.poll() is not None:
                raise RuntimeError(f"the bridge exited with {self.bridge.returncode}: {self.log.read_text()[-2000:]}")
            text = self.log.read_text(errors="replace") if self.log.exists() else ""
            if all(f"{resource.name}: listed " in text for resource in WATCHED):
                await asyncio.sleep(2.0)
                return
            await asyncio.sleep(0.2)
        raise TimeoutError(f"the bridge did not list every resource in {LISTED_TIMEOUT_S}s")

    async def read_decisions(self, stop: asyncio.Event) -> None:
        """Note when each bench pod's first Scheduled decision is read from the decisions topic, and its last
        decision's result."""
        topic = self.harness.topology.names()["decisions"]
        consumer = AIOKafkaConsumer(**kafka.client_settings(self.harness.bootstrap), **kafka.consumer_settings(),
                                    group_id=None, enable_auto_commit=False)
        await consumer.start()
        try:
            tps = [TopicPartition(topic, p) for p in await kafka.partitions_for(consumer, topic)]
            consumer.assign(tps)
            for tp, highwater in (await fetch_highwaters(consumer, tps)).items():
                consumer.seek(tp, highwater)
            while not stop.is_set():
                for messages in (await consumer.getmany(timeout_ms=100)).values():
                    now = time.monotonic()
                    for message in messages:
                        schema, decision = codec.decode(message.value)
                        if schema != "SchedulingDecision":
                            continue
                        name = decision["pod"]["name"]
                        self.last_result[name] = decision["result"]
                        if decision["result"] == "Scheduled" and name not in self.decided:
                            self.decided[name] = now
        finally:
            await consumer.stop()

    async def nodes_produced(self) -> None:
        """Until koord.nodes holds a record per node, then until the worker has read the scheduling inbox."""
        names = self.harness.topology.names()
        consumer = AIOKafkaConsumer(**kafka.client_settings(self.harness.bootstrap), **kafka.consumer_settings(),
                                    group_id=None, enable_auto_commit=False)
        await consumer.start()
        try:
            tps = [TopicPartition(names["nodes"], p) for p in await kafka.partitions_for(consumer, names["nodes"])]
            deadline = time.monotonic() + LISTED_TIMEOUT_S + self.nodes / 20
            while sum((await fetch_highwaters(consumer, tps)).values()) < self.nodes:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the bridge did not produce {self.nodes} nodes in time")
                await asyncio.sleep(0.5)
        finally:
            await consumer.stop()
        await wait_scheduled(self.harness)

    async def run(self) -> dict:
        load = self.load
        self.start_bridge()
        await self.wait_listed()
        pid = self.bridge.pid
        baseline_rss = rss_bytes(pid)
        cpu_before = cpu_seconds(pid)
        stop_nodes, stop_pods = asyncio.Event(), asyncio.Event()
        watches = [asyncio.create_task(load.watch("nodes", await load.list_version("nodes"), stop_nodes)),
                   asyncio.create_task(load.watch("pods", await load.list_version("pods"), stop_pods)),
                   asyncio.create_task(self.read_decisions(stop_nodes))]

        started = time.monotonic()
        node_create_s = await load.create_nodes(self.nodes)
        await self.nodes_produced()
        nodes_ready_s = time.monotonic() - started

        first, pod_create_s = await load.create_pods(self.rate)
        await load.wait_bound(BOUND_TIMEOUT_S + self.pods / 10)
        await asyncio.sleep(1.0)
        cpu_after, rss_after = cpu_seconds(pid), rss_bytes(pid)
        stop_nodes.set()
        stop_pods.set()
        for task in watches:
            if task.done() and task.exception() is not None:
                raise RuntimeError(f"the bench's watch failed: {task.exception()!r}")
            task.cancel()
        await asyncio.gather(*watches, return_exceptions=True)

        created, bound = load.created, load.bound
        split = [name for name in bound if name in created and name in self.decided]
        to_decision = [self.decided[name] - created[name] for name in split]
        to_bound = [bound[name] - self.decided[name] for name in split]
        changes = load.events["nodes"] + load.events["pods"]
        objects = self.nodes + self.pods
        log = self.log.read_text(errors="replace")
        return {
            "nodes": self.nodes, "pods": self.pods, **(await load.figures(first)),
            "offered_pods_per_s": self.rate,
            "create_to_decision": percentiles(to_decision) if split else None,
            "decision_to_bound": percentiles(to_bound) if split else None,
            "node_create_seconds": round(node_create_s, 1), "nodes_ready_seconds": round(nodes_ready_s, 1),
            "pod_create_seconds": round(pod_create_s, 1),
            "pod_creates_per_s": round(self.pods / pod_create_s, 1),
            "bridge": {
                "baseline_rss_mib": round(baseline_rss / 2**20, 1), "rss_mib": round(rss_after / 2**20, 1),
                "rss_bytes_per_object": round((rss_after - baseline_rss) / objects),
                "objects": objects, "object_changes": changes,
                "cpu_seconds": round(cpu_after - cpu_before, 2),
                "cpu_seconds_per_1000_changes": round((cpu_after - cpu_before) * 1000 / changes, 3) if changes else None,
                "alive": self.bridge.poll() is None, "tracebacks": log.count("Traceback"),
                "client": clientrate.bridge_setting(self.client),
            },
            "unbound": self.unbound(),
            "loadavg": [round(x, 2) for x in os.getloadavg()],
        }

    def unbound(self) -> dict | None:
        """The pods created but not seen bound: how many, the first few, and how many by their last decision."""
        names = sorted(set(self.load.created) - set(self.load.bound))
        if not names:
            return None
        return {"count": len(names), "first": names[:NAMED_UNBOUND],
                "last_decision": dict(collections.Counter(self.last_result.get(name, "none") for name in names))}

    async def close(self) -> None:
        if self.bridge is not None and self.bridge.poll() is None:
            self.bridge.send_signal(signal.SIGTERM)
            try:
                self.bridge.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.bridge.kill()
                self.bridge.wait()
        await self.load.close()


def run(harness: Harness, nodes: int, pods: int, rate: float | None = None, plane: ControlPlane | None = None,
        client: ClientRate | None = None) -> dict:
    """Create the nodes then the pods through the API server of ``plane`` (default: a control plane started
    for the run in a temporary folder) with the bridge running (at ``client``'s QPS/burst when given);
    return the figures."""
    with tempfile.TemporaryDirectory(prefix="koord-bench-bridge-") as tmp:
        folder = Path(tmp)
        own = plane is None
        plane = plane or ControlPlane(folder / "kube")
        if own:
            plane.start()
        try:
            plane.install(CRDS)
            loadavg_before = [round(x, 2) for x in os.getloadavg()]

            async def measure() -> dict:
                bench = Bench(harness, plane, nodes, pods, rate, folder, client)
                try:
                    return await bench.run()
                finally:
                    await bench.close()
            result = asyncio.run(measure())
        finally:
            if own:
                plane.stop()
    return {**result, "loadavg": {"before": loadavg_before, "after": result["loadavg"]},
            "cpus": os.cpu_count()}
