"""A real kube-apiserver and etcd: objects created through the API, RBAC enforced, pods stay Pending.

The binaries are built with Go on first use (minutes, once per machine: ``~/.cache/koordstream/k8s``);
without Go the test skips with the reason, unless ``KOORD_REQUIRE_KUBE`` is set (``make test``).
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import urllib.request

import pytest
from lightkube import ApiError, Client, KubeConfig
from lightkube.models.core_v1 import Container, NodeStatus, PodSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Node, Pod

from streams import supervision
from streams.kube import pki
from streams.kube.controlplane import ControlPlane, kubeconfig

pytestmark = pytest.mark.integration


def client(plane: ControlPlane, user: str | None = None) -> Client:
    if user is None:
        return Client(KubeConfig.from_file(plane.kubeconfig))
    pki.issue_client(plane.pki, user)
    path = plane.directory / f"{user}.kubeconfig"
    path.write_text(kubeconfig(plane.state()["server"], plane.pki, user))
    return Client(KubeConfig.from_file(path))


def admin_tls(plane: ControlPlane) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(plane.pki.ca))
    context.load_cert_chain(*map(str, plane.pki.client("admin")))
    return context


def test_a_bound_pod_stays_pending_on_its_node(plane):
    admin = client(plane)
    admin.create(Node(metadata=ObjectMeta(name="cp-node"),
                      status=NodeStatus(capacity={"cpu": "4"}, allocatable={"cpu": "4"})))
    admin.create(Pod(metadata=ObjectMeta(name="cp-pod", namespace="default"),
                     spec=PodSpec(schedulerName="koord-scheduler", containers=[Container(name="c", image="app")])))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "cp-pod"},
               "target": {"kind": "Node", "name": "cp-node"}}
    request = urllib.request.Request(f"{plane.state()['server']}/api/v1/namespaces/default/pods/cp-pod/binding",
                                     data=json.dumps(binding).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, context=admin_tls(plane)) as response:
        assert response.status == 201
    pod = admin.get(Pod, "cp-pod", namespace="default")
    assert pod.spec.nodeName == "cp-node"
    assert pod.status.phase == "Pending"


def test_rbac_refuses_a_user_without_a_role(plane):
    with pytest.raises(ApiError) as refused:
        list(client(plane, "nobody").list(Pod, namespace="default"))
    assert refused.value.status.code == 403
    assert 'User "nobody" cannot list resource "pods"' in refused.value.status.message


def test_writes_are_audited(plane):
    client(plane).create(Node(metadata=ObjectMeta(name="audited-node")))
    assert '"resource":"nodes"' in (plane.directory / "audit.log").read_text()


def test_koord_kube_up_status_down(plane, tmp_path):
    """The CLI runs its own control plane under KOORD_HOME and stops it, leaving no process behind."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("KOORD_")}, "KOORD_HOME": str(tmp_path)}

    def koord(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "streams.cli", "kube", *args], capture_output=True, text=True,
                              env=env, timeout=180)

    started = koord("up")
    assert started.returncode == 0, started.stderr
    assert f"export KUBECONFIG={tmp_path / 'kube' / 'kubeconfig'}" in started.stdout
    status = json.loads(koord("status", "-o", "json").stdout)
    assert status["running"]
    Client(KubeConfig.from_file(status["kubeconfig"])).create(Node(metadata=ObjectMeta(name="cli-node")))
    assert koord("down").returncode == 0
    assert not any(supervision.pid_alive(pid) for pid in status["pids"].values())
    assert json.loads(koord("status", "-o", "json").stdout)["running"] is False
