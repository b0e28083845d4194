"""The bridge across an API server restart: it retries with backoff, never exits, and loses no change.

A real kube-apiserver is stopped (etcd, certificates and address kept) while ``koord bridge --mode active``
runs against it, then started again. What happens around the restart must all arrive: a pod created just
before the stop (its binding may fall in the outage), a node label changed and a pod created while the
bridge is still backing off, and a pod created once it is back. The stopped API server holds its open
watches until it exits; the restarted one's watch cache starts at etcd's current revision, so a watch
resuming from before answers 410 Gone and the bridge relists, producing only what changed.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest
from lightkube import KubeConfig
from lightkube.config.client_adapter import Client as HttpClient, ConnectionParams

from streams import supervision
from streams.bridge.config import BridgeConfig, backoff_delay
from streams.replay.reader import read_topic
from streams.schemas import codec
from streams.topology import load_topology
from tests.integration.crash_support import CrashCluster
from tests.streams.bridge.test_bridge_kube import PODS, node, pod, wait_for

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
RETRIES_BEFORE_RESTART = 4
"""Failed attempts of the Node reflector the log must show before the API server comes back."""
RETRY = re.compile(r"^(\S+ \S+) WARNING streams\.bridge\.reflector: nodes: (\w+: .*) \(retry (\d+)\)$", re.MULTILINE)


@pytest.fixture(scope="module")
def running(plane, tmp_path_factory):
    home = tmp_path_factory.mktemp("bridge-restart")
    plane.install(ROOT / "deploy" / "crds")
    admin = HttpClient(KubeConfig.from_file(plane.kubeconfig).get(), ConnectionParams())
    cluster = CrashCluster.start(home, "tansu")
    log_path = home / "bridge.log"
    bridge = None
    try:
        cluster.start_worker("worker")
        bridge = subprocess.Popen(
            supervision.koord_command("bridge", "--kubeconfig", str(plane.kubeconfig), "--mode", "active"),
            stdout=open(log_path, "ab"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env={**os.environ, **cluster.env}, process_group=0)
        yield plane, admin, cluster, bridge, log_path
    finally:
        if bridge is not None and bridge.poll() is None:
            bridge.send_signal(signal.SIGKILL)
            bridge.wait(timeout=10)
        cluster.stop()
        admin.close()


def latest(bootstrap: str, topic_id: str) -> dict[str, dict | None]:
    """key -> the last record on the topic (None for a tombstone)."""
    records = asyncio.run(read_topic(bootstrap, load_topology().name(topic_id)))
    return {r.key.decode(): (codec.decode(r.value)[1] if r.value is not None else None) for r in records}


def test_an_api_server_restart_is_retried_with_backoff_and_loses_nothing(running):
    plane, admin, cluster, bridge, log_path = running

    def create(path: str, body: dict) -> None:
        response = admin.post(path, json=body)
        assert response.status_code == 201, response.text

    def bound(name: str) -> str | None:
        response = admin.get(f"{PODS}/{name}")
        return response.json()["spec"].get("nodeName") if response.status_code == 200 else None

    create("/api/v1/nodes", node("restart-n1", "16", "32Gi"))
    assert admin.patch("/api/v1/nodes/restart-n1", json={"spec": {"taints": None}},
                       headers={"Content-Type": "application/merge-patch+json"}).status_code == 200
    create(PODS, pod("before-stop"))
    assert wait_for(lambda: bound("before-stop"), "before-stop to be bound") == "restart-n1"

    mark = len(log_path.read_text(errors="replace"))
    create(PODS, pod("racing-stop"))
    plane.stop_apiserver()
    wait_for(lambda: any(int(n) >= RETRIES_BEFORE_RESTART for *_, n in
                         RETRY.findall(log_path.read_text(errors="replace")[mark:])),
             f"{RETRIES_BEFORE_RESTART} retries of the Node watch while the API server is down")
    assert bridge.poll() is None, "the bridge exited while the API server was down"

    plane.start_apiserver()
    assert admin.patch("/api/v1/nodes/restart-n1", json={"metadata": {"labels": {"zone": "after-restart"}}},
                       headers={"Content-Type": "application/merge-patch+json"}).status_code == 200
    create(PODS, pod("while-reconnecting"))
    for name in ("racing-stop", "while-reconnecting"):
        assert wait_for(lambda: bound(name), f"{name} to be bound") == "restart-n1"
    create(PODS, pod("after-restart"))
    assert wait_for(lambda: bound("after-restart"), "after-restart to be bound") == "restart-n1"

    nodes = wait_for(lambda: (found := latest(cluster.bootstrap, "nodes")) and
                     "zone" in (found["restart-n1"]["metadata"].get("labels") or {}) and found,
                     "the label changed while the bridge reconnected to reach koord.nodes")
    assert nodes["restart-n1"]["metadata"]["labels"]["zone"] == "after-restart"
    pods = latest(cluster.bootstrap, "pods")
    assert {"default/before-stop", "default/racing-stop", "default/while-reconnecting",
            "default/after-restart"} <= set(pods)

    assert bridge.poll() is None, "the bridge exited"
    log = log_path.read_text(errors="replace")
    retries = [(at, error, int(n)) for at, error, n in RETRY.findall(log[mark:])]
    assert any(error.startswith("TransportError: ") and "ClientConnectorError" in error for _, error, _ in retries)
    times = [datetime.datetime.strptime(at, "%Y-%m-%d %H:%M:%S,%f") for at, _, n in retries if n <= 4]
    assert [n for *_, n in retries][:4] == [1, 2, 3, 4]
    for attempt, (earlier, later) in enumerate(zip(times, times[1:]), start=1):
        assert (later - earlier).total_seconds() >= backoff_delay(attempt, BridgeConfig(None)) - 0.01
    assert "Traceback" not in log
    bridge.send_signal(signal.SIGTERM)
    assert bridge.wait(timeout=30) == 0
