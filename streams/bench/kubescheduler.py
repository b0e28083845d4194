"""kube-scheduler on a local control plane binding the bench's pods: the other side of ``--versus kube-scheduler``.

kube-scheduler is the one built with the control plane (``streams.kube.controlplane``, same Kubernetes
version), with its default plugins and one profile named ``koord-scheduler``, so the pods are the same
manifests the bridge binds. It runs with:

- the control plane's admin kubeconfig (``system:masters``: every right it needs, and more) for its
  client and for delegated authentication/authorization of its own HTTPS port (no request-header lookup:
  this API server has no front proxy);
- leader election off (one instance, nothing to elect);
- ``clientConnection`` qps/burst from :class:`streams.bench.clientrate.ClientRate`.

The nodes are created before it starts; its ``/readyz`` (informers synced, event handlers synced:
``sched-handler-sync``) then means every node is in its cache before the first pod is created, as the
bridge's run waits until the worker has every node. The load and the clock are ``streams.bench.apiload``'s.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from streams.bench import clientrate
from streams.bench.apiload import BOUND_TIMEOUT_S, SCHEDULER, ApiLoad
from streams.bench.bridge import cpu_seconds, rss_bytes
from streams.bench.clientrate import ClientRate
from streams.broker.embedded import free_loopback_port
from streams.kube.controlplane import KUBE_SCHEDULER, KUBERNETES_VERSION, ControlPlane, binaries

READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 20.0


def configuration(kubeconfig: Path, rate: ClientRate) -> dict:
    """The KubeSchedulerConfiguration of the run (JSON is YAML)."""
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": str(kubeconfig), **clientrate.kube_scheduler_connection(rate)},
            "leaderElection": {"leaderElect": False},
            "profiles": [{"schedulerName": SCHEDULER}]}


class KubeScheduler:
    """One kube-scheduler process against ``plane``, its files in ``folder``."""

    def __init__(self, plane: ControlPlane, rate: ClientRate, folder: Path) -> None:
        self.plane, self.rate, self.folder = plane, rate, folder
        self.port = free_loopback_port()
        self.process: subprocess.Popen | None = None

    @property
    def log(self) -> Path:
        return self.folder / "kube-scheduler.log"

    def start(self) -> None:
        config = self.folder / "kube-scheduler.yaml"
        config.write_text(json.dumps(configuration(self.plane.kubeconfig, self.rate), indent=2))
        kubeconfig = str(self.plane.kubeconfig)
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [str(binaries() / KUBE_SCHEDULER), f"--config={config}", "--bind-address=127.0.0.1",
                 f"--secure-port={self.port}", f"--authentication-kubeconfig={kubeconfig}",
                 f"--authorization-kubeconfig={kubeconfig}", "--authentication-skip-lookup"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    async def wait_ready(self) -> None:
        """Until its ``/readyz`` answers 200 (self-signed serving certificate: not verified)."""
        context = ssl._create_unverified_context()
        url = f"https://127.0.0.1:{self.port}/readyz"
        deadline = time.monotonic() + READY_TIMEOUT_S
        last = ""
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"kube-scheduler exited with {self.process.returncode}; {self.log}:\n{self._tail()}")
            try:
                with await asyncio.to_thread(urllib.request.urlopen, url, timeout=2, context=context) as response:
                    if response.status == 200:
                        return
            except urllib.error.HTTPError as error:
                last = f"HTTP {error.code}"
            except OSError as error:
                last = str(error)
            await asyncio.sleep(0.2)
        raise TimeoutError(f"kube-scheduler did not answer {url} with 200 within {READY_TIMEOUT_S:.0f}s ({last}); "
                           f"{self.log}:\n{self._tail()}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def _tail(self) -> str:
        return self.log.read_bytes()[-3000:].decode(errors="replace") if self.log.exists() else ""


async def _measure(plane: ControlPlane, nodes: int, pods: int, rate: float | None, client: ClientRate,
                   folder: Path) -> dict:
    load = ApiLoad(plane, pods)
    scheduler = KubeScheduler(plane, client, folder)
    try:
        node_create_s = await load.create_nodes(nodes)
        scheduler.start()
        await scheduler.wait_ready()
        pid = scheduler.process.pid
        cpu_before = cpu_seconds(pid)
        stop = asyncio.Event()
        watch = asyncio.create_task(load.watch("pods", await load.list_version("pods"), stop))
        first, pod_create_s = await load.create_pods(rate)
        await load.wait_bound(BOUND_TIMEOUT_S + pods / 10)
        cpu, rss = cpu_seconds(pid) - cpu_before, rss_bytes(pid)
        stop.set()
        if watch.done() and watch.exception() is not None:
            raise RuntimeError(f"the bench's watch failed: {watch.exception()!r}")
        watch.cancel()
        await asyncio.gather(watch, return_exceptions=True)
        alive = scheduler.process.poll() is None
        figures = await load.figures(first)
    finally:
        scheduler.stop()
        await load.close()
    return {"nodes": nodes, "pods": pods, **figures, "offered_pods_per_s": rate,
            "node_create_seconds": round(node_create_s, 1), "pod_create_seconds": round(pod_create_s, 1),
            "kube_scheduler": {"version": KUBERNETES_VERSION, "client": client.describe(),
                               "cpu_seconds": round(cpu, 2), "rss_mib": round(rss / 2**20, 1), "alive": alive}}


def run(nodes: int, pods: int, rate: float | None, client: ClientRate, plane: ControlPlane | None = None) -> dict:
    """Create the nodes, start kube-scheduler at ``client``'s QPS/burst, create the pods through the API server
    of ``plane`` (default: a fresh control plane in a temporary folder); return the figures."""
    with tempfile.TemporaryDirectory(prefix="koord-bench-kube-scheduler-") as tmp:
        folder = Path(tmp)
        own = plane is None
        plane = plane or ControlPlane(folder / "kube")
        if own:
            plane.start()
        try:
            loadavg_before = [round(x, 2) for x in os.getloadavg()]
            result = asyncio.run(_measure(plane, nodes, pods, rate, client, folder))
        finally:
            if own:
                plane.stop()
    return {**result, "loadavg": {"before": loadavg_before, "after": [round(x, 2) for x in os.getloadavg()]}}
