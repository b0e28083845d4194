"""Nodes and pods created through a real kube-apiserver, and each pod's create -> bound latency from a watch.

The load of ``koord bench bridge`` whatever binds the pods (koordstream's bridge or kube-scheduler), so both
are measured by the same client with the same clock: a pod's latency is from just before its create request
to the watch event showing its ``spec.nodeName``; throughput is the pods bound over the time from the first
create to the last binding seen. The bench's own client is not rate-limited; :data:`CONCURRENCY` creates are
in flight.
"""

from __future__ import annotations

import asyncio
import json
import time

import httpx2 as httpx
import numpy as np
from lightkube import KubeConfig
from lightkube.config.client_adapter import AsyncClient, ConnectionParams

from streams.kube.controlplane import ControlPlane

SCHEDULER = "koord-scheduler"
NAMESPACE = "default"
CONCURRENCY = 16
"""Create requests in flight: enough to keep the API server busy, few enough not to queue in its filters."""
WATCH_READ_TIMEOUT_S = 3600.0
"""The bench's watches may wait long between events (no pod changes while the nodes are created)."""
EVENT_TYPES = ("ADDED", "MODIFIED")
BOUND_TIMEOUT_S = 120
"""Seconds (plus one per 10 pods) the pods get to be bound after the last create; the figures count those that were."""


def node_manifest(index: int) -> dict:
    resources = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"bench-node-{index:05d}"},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                       "capacity": resources, "allocatable": resources}}


def pod_manifest(index: int) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"bench-pod-{index:06d}", "namespace": NAMESPACE},
            "spec": {"schedulerName": SCHEDULER, "containers": [
                {"name": "main", "image": "bench", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}


def percentiles(seconds: list[float]) -> dict:
    array = np.array(seconds) * 1000
    return {"p50_ms": round(float(np.percentile(array, 50)), 1), "p99_ms": round(float(np.percentile(array, 99)), 1),
            "max_ms": round(float(array.max()), 1)}


class ApiLoad:
    """One client of ``plane``'s API server: creates, watches, and the bound pods' figures."""

    def __init__(self, plane: ControlPlane, pods: int) -> None:
        self.pods = pods
        self.http = AsyncClient(KubeConfig.from_file(plane.kubeconfig).get(),
                                ConnectionParams(timeout=httpx.Timeout(30.0, read=WATCH_READ_TIMEOUT_S)))
        self.events = {"nodes": 0, "pods": 0}
        self.created: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self.all_bound = asyncio.Event()

    async def create_nodes(self, nodes: int) -> float:
        """Create ``nodes`` Nodes; the seconds it took."""
        started = time.monotonic()
        await self.create_all("/api/v1/nodes", [node_manifest(i) for i in range(nodes)])
        return time.monotonic() - started

    async def create_pods(self, rate: float | None) -> tuple[float, float]:
        """Create the pods, the n-th not before n / ``rate`` s; when the first create started, and the seconds."""
        first = time.monotonic()
        await self.create_all(f"/api/v1/namespaces/{NAMESPACE}/pods", [pod_manifest(i) for i in range(self.pods)],
                              self.created, rate)
        return first, time.monotonic() - first

    async def create_all(self, path: str, manifests: list[dict], created: dict[str, float] | None = None,
                         rate: float | None = None) -> None:
        """Create ``manifests`` with :data:`CONCURRENCY` requests in flight, the n-th not before n / ``rate`` s."""
        queue: asyncio.Queue = asyncio.Queue()
        for index, manifest in enumerate(manifests):
            queue.put_nowait((index, manifest))
        started = time.monotonic()

        async def creator() -> None:
            while not queue.empty():
                index, manifest = queue.get_nowait()
                if rate and (delay := started + index / rate - time.monotonic()) > 0:
                    await asyncio.sleep(delay)
                if created is not None:
                    created[manifest["metadata"]["name"]] = time.monotonic()
                response = await self.http.request("POST", path, content=json.dumps(manifest).encode(),
                                                   headers={"Content-Type": "application/json"})
                if response.status_code != 201:
                    raise RuntimeError(f"POST {path}: HTTP {response.status_code}: {response.text[:300]}")
                body = response.json()
                if body["kind"] == "Node" and body.get("spec", {}).get("taints"):
                    await self.http.request("PATCH", f"{path}/{body['metadata']['name']}",
                                            content=b'{"spec":{"taints":null}}',
                                            headers={"Content-Type": "application/merge-patch+json"})
        await asyncio.gather(*(creator() for _ in range(CONCURRENCY)))

    async def list_version(self, plural: str) -> str:
        response = await self.http.request("GET", f"/api/v1/{plural}", params={"limit": 1})
        return response.json()["metadata"]["resourceVersion"]

    async def watch(self, plural: str, version: str, stop: asyncio.Event) -> None:
        """Count the ADDED and MODIFIED events of ``plural``; for pods, note when each is first seen bound and
        set :attr:`all_bound` at the last one. A watch the API server ends is opened again from the last
        version seen, as a reflector does; an ERROR event (e.g. 410 Gone) fails the bench."""
        while not stop.is_set():
            params = {"watch": "true", "resourceVersion": version, "allowWatchBookmarks": "true",
                      "timeoutSeconds": 3600}
            async with self.http.stream("GET", f"/api/v1/{plural}", params=params) as response:
                if response.status_code != 200:
                    raise RuntimeError(f"watch of {plural}: HTTP {response.status_code}")
                async for line in response.aiter_lines():
                    if stop.is_set():
                        return
                    if not line:
                        continue
                    event = json.loads(line)
                    if event["type"] == "ERROR":
                        raise RuntimeError(f"watch of {plural} from version {version}: {event['object']}")
                    obj = event["object"]
                    version = obj["metadata"]["resourceVersion"]
                    if event["type"] not in EVENT_TYPES:
                        continue
                    self.events[plural] += 1
                    if plural == "pods" and obj["spec"].get("nodeName") and obj["metadata"]["name"] not in self.bound:
                        self.bound[obj["metadata"]["name"]] = time.monotonic()
                        if len(self.bound) >= self.pods:
                            self.all_bound.set()

    async def bound_listed(self) -> int:
        """Pods of :data:`NAMESPACE` the API server lists with a ``spec.nodeName``: the watch's count checked."""
        response = await self.http.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")
        return sum(1 for pod in response.json()["items"] if pod["spec"].get("nodeName"))

    async def wait_bound(self, timeout_s: float) -> None:
        """Until every pod is seen bound or ``timeout_s`` passed (the figures then count those that were)."""
        try:
            await asyncio.wait_for(self.all_bound.wait(), timeout=timeout_s)
        except asyncio.TimeoutError:
            pass

    async def figures(self, first: float) -> dict:
        """Pods bound (seen by the watch, and listed at the end), pods/s from ``first`` create to the last binding
        seen, and the create -> bound percentiles."""
        latencies = [self.bound[name] - self.created[name] for name in self.bound if name in self.created]
        last = max(self.bound.values()) if self.bound else first
        return {"bound": len(latencies), "bound_listed": await self.bound_listed(),
                "pods_per_s": round(len(latencies) / (last - first), 1) if latencies else 0.0,
                **(percentiles(latencies) if latencies else {"p50_ms": None, "p99_ms": None, "max_ms": None})}

    async def close(self) -> None:
        await self.http.aclose()
