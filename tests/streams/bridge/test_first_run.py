"""The README's first run: `koord kube up`, `koord up --kubeconfig`, then pods created with a Kubernetes
client that name koord-scheduler come back bound by koordstream."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest
from lightkube import Client, KubeConfig
from lightkube.models.core_v1 import Container, PodSpec, ResourceRequirements
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Node, Pod

pytestmark = pytest.mark.integration
BOUND_TIMEOUT_S = 90


def koord(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "streams.cli", *args], capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 0, f"koord {' '.join(args)}: {result.stdout}\n{result.stderr}"
    return result


def test_pods_that_name_koord_scheduler_are_bound(tmp_path):
    if not shutil.which("go") and not os.environ.get("KOORD_REQUIRE_KUBE"):
        pytest.skip("the local control plane is built with Go, which is not on PATH")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("KOORD_")}, "KOORD_HOME": str(tmp_path)}
    koord(env, "kube", "up")
    try:
        kubeconfig = json.loads(koord(env, "kube", "status", "-o", "json").stdout)["kubeconfig"]
        koord(env, "up", "--detach", "--nodes", "0", "--kubeconfig", kubeconfig)
        try:
            client = Client(KubeConfig.from_file(kubeconfig))
            client.create(Node(metadata=ObjectMeta(name="first-node")))
            resources = {"cpu": "4", "memory": "8Gi", "pods": "110"}
            client.patch(Node.Status, "first-node", {"status": {"capacity": resources, "allocatable": resources}})
            for i in range(3):
                client.create(Pod(metadata=ObjectMeta(name=f"first-{i}", namespace="default"), spec=PodSpec(
                    schedulerName="koord-scheduler", containers=[Container(
                        name="app", image="app", resources=ResourceRequirements(requests={"cpu": "1"}))])))
            deadline = time.monotonic() + BOUND_TIMEOUT_S
            while time.monotonic() < deadline:
                nodes = {p.metadata.name: p.spec.nodeName for p in client.list(Pod, namespace="default")}
                if all(nodes.values()) and len(nodes) == 3:
                    break
                time.sleep(0.5)
            assert nodes == {f"first-{i}": "first-node" for i in range(3)}, (tmp_path / "bridge.log").read_text()[-3000:]
        finally:
            koord(env, "down")
    finally:
        koord(env, "kube", "down")
