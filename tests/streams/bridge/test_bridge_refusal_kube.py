"""A Pod any Kubernetes user may create (a node affinity of 200,000 values, an 800 KB record), whose stored form
is over the state budget, reaches ``koord bridge`` from a real kube-apiserver: the bridge dead-letters it,
writes a ``KoordstreamRefused`` Warning Event on it, and goes on producing the next pod (issue 37 failure 3:
through the bridge, such a pod used to stop the worker)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess

import httpx2 as httpx
import pytest
from lightkube import KubeConfig
from lightkube.config.client_adapter import Client as HttpClient, ConnectionParams

from streams import supervision
from streams.replay.reader import read_topic
from streams.schemas import codec
from streams.topology import load_topology
from tests.integration.crash_support import CrashCluster
from tests.streams.bridge.test_bridge_kube import wait_for

pytestmark = pytest.mark.integration



def _pod(name: str, excluded_zones: int = 0) -> dict:
    spec = {"containers": [{"name": "main", "image": "nginx"}]}
    if excluded_zones:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"] * excluded_zones}]}]}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


@pytest.fixture(scope="module")
def running(plane, tmp_path_factory):
    home = tmp_path_factory.mktemp("bridge-refusal")
    admin = HttpClient(KubeConfig.from_file(plane.kubeconfig).get(), ConnectionParams(timeout=httpx.Timeout(120.0)))
    cluster = CrashCluster.start(home, "tansu")
    bridge = None
    try:
        bridge = subprocess.Popen(
            supervision.koord_command("bridge", "--kubeconfig", str(plane.kubeconfig), "--mode", "observe"),
            stdout=open(home / "bridge.log", "ab"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env={**os.environ, **cluster.env}, process_group=0)
        yield admin, cluster, home
    finally:
        if bridge is not None and bridge.poll() is None:
            bridge.send_signal(signal.SIGTERM)
            bridge.wait(timeout=30)
        cluster.stop()
        admin.close()


def _keys(bootstrap: str, topic_id: str) -> list[tuple[bytes, bytes]]:
    return [(r.key, r.value) for r in asyncio.run(read_topic(bootstrap, load_topology().name(topic_id)))]


def test_a_pod_over_the_state_budget_is_refused_with_an_event_and_the_next_pod_is_produced(running):
    admin, cluster, home = running
    response = admin.post("/api/v1/namespaces/default/pods", json=_pod("over-budget", excluded_zones=200_000))
    assert response.status_code == 201, response.text[:500]
    letters = wait_for(lambda: [codec.decode(value)[1] for key, value in _keys(cluster.bootstrap, "deadletters")
                                if key == b"default/over-budget"], "the bridge's dead letter")
    assert "budget of a stored object" in letters[0]["reason"]
    events = wait_for(lambda: [e for e in admin.get("/api/v1/namespaces/default/events").json()["items"]
                               if e["reason"] == "KoordstreamRefused"], "the refusal event")
    assert events[0]["involvedObject"]["name"] == "over-budget" and events[0]["type"] == "Warning"
    assert "budget of a stored object" in events[0]["message"]

    assert admin.post("/api/v1/namespaces/default/pods", json=_pod("after")).status_code == 201
    wait_for(lambda: [key for key, _ in _keys(cluster.bootstrap, "pods") if key == b"default/after"],
             "the next pod on koord.pods")
    assert not [key for key, _ in _keys(cluster.bootstrap, "pods") if key == b"default/over-budget"]
    assert "Traceback" not in (home / "bridge.log").read_text(errors="replace")
