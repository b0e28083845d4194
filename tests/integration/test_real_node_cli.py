"""``koord kube up --node`` and ``koord kube down`` from the command line: a pod runs on the node, and down
leaves no process, mount, network namespace, bridge, cgroup or shim socket behind.

Skipped, with the reason, when not root. Runs beside ``test_real_node.py`` in the measuring round (one
node at a time on a machine: both use the host-wide bridge and cgroup root).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from lightkube import KubeConfig
from lightkube.config.client_adapter import Client as HttpClient, ConnectionParams

from streams.kube.controlplane import ControlPlane
from streams.kube.node import LocalNode
from tests.integration.test_real_node import PODS, leftovers, pod, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.real_cgroups, pytest.mark.measures]


def test_koord_kube_up_node_runs_a_pod_and_down_removes_everything():
    if os.geteuid() != 0:
        pytest.skip("needs root to run containerd and kubelet and to create cgroups")
    if not shutil.which("go"):
        pytest.skip("the local control plane and kubelet are built with Go, which is not on PATH")
    home = Path(tempfile.mkdtemp(prefix="koord-node-cli-", dir="/tmp"))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("KOORD_")}, "KOORD_HOME": str(home)}

    def koord(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "streams.cli", "kube", *args], capture_output=True, text=True,
                              env=env, timeout=600)

    plane = ControlPlane(home / "kube")
    node = LocalNode(plane.directory / "node", plane.pki)
    state = {}
    try:
        started = koord("up", "--node")
        assert started.returncode == 0, started.stderr
        assert "node koord-node Ready" in started.stdout
        state = json.loads(koord("status", "-o", "json").stdout)["node"]
        assert state["name"] == "koord-node" and state["socket"].startswith(str(home))
        assert json.loads(Path(state["nodeAgentKubeconfig"]).read_text())["users"][0]["name"] == "koord-node-agent"
        client = HttpClient(KubeConfig.from_file(plane.kubeconfig).get(), ConnectionParams())
        try:
            assert client.post(PODS, json=pod("cli-pod", "sleep 3600")).status_code == 201
            wait_for(lambda: client.get(f"{PODS}/cli-pod").json()["status"].get("phase") == "Running",
                     "kubelet to run cli-pod")
        finally:
            client.close()
        made = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
                if line.split()[4].startswith(str(home))]
        assert any(point.endswith("/rootfs") for point in made) and any("/netns/" in point for point in made)
        stopped = time.monotonic()
        down = koord("down")
        print(f"\nkoord kube down with a running pod: {time.monotonic() - stopped:.1f}s")
        assert down.returncode == 0, down.stderr
        assert down.stdout.splitlines()[:2] == ["node stopped", "control plane stopped"]
        assert leftovers(node, state["pids"]) == []
    finally:
        if node.state():
            node.stop()
        if plane.state():
            plane.stop()
        shutil.rmtree(home, ignore_errors=True)
