"""The node agent's Device and NodeMetric on a real kube-apiserver and etcd (``node_agent.kubereport``).

The agent runs as ``koord-node-agent`` with the ClusterRole of ``deploy/kubernetes/node-agent.yaml``, set
up by ``LocalNode.authorize_node_agent`` as ``koord kube up --node`` does (no node is started): every write
below shows the role suffices, and a write outside it is refused. A concurrent writer is a second real
client that updates the object between the agent's read and its write.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from lightkube import KubeConfig
from lightkube.config.client_adapter import Client as HttpClient, ConnectionParams

from node_agent.kubereport import CREATED, DEVICES, NODEMETRICS, UNCHANGED, UPDATED, KubeReporter
from node_agent.report import GPUDevice, device_manifest
from streams.bridge.convert import PUBLISHED_BY
from streams.bridge.api import CONFLICT, FORBIDDEN, ApiError, KubeApi
from streams.cli.kube import CRDS
from streams.kube import controlplane, pki
from streams.kube.node import LocalNode

pytestmark = pytest.mark.integration

NODE = "agent-node"
PARTITIONS = "node.koordinator.sh/gpu-partitions"


class RacingApi(KubeApi):
    """After the agent's first read of ``path``, ``write()`` (another client) changes the object; counts the
    409s the API server answers."""

    def __init__(self, kubeconfig, path: str, write) -> None:
        super().__init__(kubeconfig, None)
        self.race_path, self.write, self.conflicts = path, write, 0

    async def call(self, verb, resource, method, path, body=None, content_type="application/json", params=None):
        try:
            result = await super().call(verb, resource, method, path, body, content_type, params)
        except ApiError as error:
            self.conflicts += error.code == CONFLICT
            raise
        if method == "GET" and path == self.race_path and self.write is not None:
            self.write()
            self.write = None
        return result


@pytest.fixture(scope="module")
def kube(plane):
    plane.install(CRDS)
    server = plane.state()["server"]
    agent_kubeconfig = LocalNode(plane.directory / "node", plane.pki).authorize_node_agent(server)
    admin = HttpClient(KubeConfig.from_file(plane.kubeconfig).get(), ConnectionParams())
    created = admin.post("/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}})
    assert created.status_code == 201, created.text
    deadline = time.monotonic() + 30
    while any(admin.get(path).status_code != 200 for path in (DEVICES, NODEMETRICS)):
        assert time.monotonic() < deadline, "the Device and NodeMetric CRDs were not served within 30s"
        time.sleep(0.2)
    yield admin, agent_kubeconfig
    admin.close()


def gpus(count: int) -> dict:
    return device_manifest(NODE, [GPUDevice(f"GPU-{m}", m, 80 << 30, 0, "pci0000:00", f"0000:3b:0{m}.0")
                                  for m in range(count)], [], "A100-SXM4-80GB", "535.161.08")


def report(kubeconfig, call, api: KubeApi | None = None):
    async def run():
        client = api or KubeApi(kubeconfig, None)
        try:
            return await call(KubeReporter(client, NODE))
        finally:
            await client.close()
    return asyncio.run(run())


def test_the_device_is_created_owned_by_its_node_and_updated_only_when_it_changes(kube):
    admin, kubeconfig = kube
    assert report(kubeconfig, lambda r: r.report_device(gpus(1))) == CREATED
    device = admin.get(f"{DEVICES}/{NODE}").json()
    owner = admin.get(f"/api/v1/nodes/{NODE}").json()["metadata"]["uid"]
    assert device["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": owner,
                                                       "controller": True, "blockOwnerDeletion": True}]
    assert device["spec"]["devices"] == gpus(1)["spec"]["devices"]
    assert device["metadata"]["labels"] == gpus(1)["metadata"]["labels"]
    assert device["metadata"]["annotations"] == {PUBLISHED_BY: "node-agent"}, "the bridge is not to mirror it"
    assert report(kubeconfig, lambda r: r.report_device(gpus(1))) == UNCHANGED
    assert admin.get(f"{DEVICES}/{NODE}").json()["metadata"]["resourceVersion"] == device["metadata"]["resourceVersion"]
    assert report(kubeconfig, lambda r: r.report_device(gpus(2))) == UPDATED
    assert [d["minor"] for d in admin.get(f"{DEVICES}/{NODE}").json()["spec"]["devices"]] == [0, 1]


def test_a_device_changed_between_the_agents_read_and_write_is_read_again_not_overwritten(kube):
    admin, kubeconfig = kube
    report(kubeconfig, lambda r: r.report_device(gpus(1)))
    path = f"{DEVICES}/{NODE}"

    def administrator_writes_a_partition_table():
        patched = admin.patch(path, json={"metadata": {"annotations": {PARTITIONS: "{}"},
                                                       "labels": {"team": "ml"}}},
                              headers={"Content-Type": "application/merge-patch+json"})
        assert patched.status_code == 200, patched.text

    racing = RacingApi(kubeconfig, path, administrator_writes_a_partition_table)
    assert report(kubeconfig, lambda r: r.report_device(gpus(2)), racing) == UPDATED
    assert racing.conflicts == 1, "the write at the version read before the administrator's was refused"
    device = admin.get(path).json()
    assert [d["minor"] for d in device["spec"]["devices"]] == [0, 1]
    assert device["metadata"]["annotations"] == {PARTITIONS: "{}", PUBLISHED_BY: "node-agent"}
    assert device["metadata"]["labels"]["team"] == "ml"


def test_the_node_metric_is_created_with_its_spec_and_its_status_written_through_the_subresource(kube):
    admin, kubeconfig = kube
    metric = {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": {"name": NODE},
              "spec": {"metricCollectPolicy": {"nodeMemoryCollectPolicy": "usageWithoutPageCache"}},
              "status": {"updateTime": "2026-11-29T04:00:00Z",
                         "nodeMetric": {"nodeUsage": {"resources": {"cpu": "1", "memory": "1Gi"}}}}}
    assert report(kubeconfig, lambda r: r.report_node_metric(metric)) == CREATED
    stored = admin.get(f"{NODEMETRICS}/{NODE}").json()
    assert (stored["spec"], stored["status"]) == (metric["spec"], metric["status"])
    assert stored["metadata"]["annotations"] == {PUBLISHED_BY: "node-agent"}
    later = {**metric, "spec": {"metricCollectPolicy": {"nodeMemoryCollectPolicy": "usageWithPageCache"}},
             "status": {**metric["status"], "updateTime": "2026-11-29T04:00:10Z"}}

    def slo_controller_writes_the_spec():
        stored["spec"]["metricCollectPolicy"]["reportIntervalSeconds"] = 60
        assert admin.put(f"{NODEMETRICS}/{NODE}", json=stored).status_code == 200

    racing = RacingApi(kubeconfig, f"{NODEMETRICS}/{NODE}", slo_controller_writes_the_spec)
    assert report(kubeconfig, lambda r: r.report_node_metric(later), racing) == UPDATED
    assert racing.conflicts == 1
    again = admin.get(f"{NODEMETRICS}/{NODE}").json()
    assert again["status"]["updateTime"] == "2026-11-29T04:00:10Z"
    assert again["spec"]["metricCollectPolicy"] == {"nodeMemoryCollectPolicy": "usageWithoutPageCache",
                                                    "reportIntervalSeconds": 60}, "the status write left the spec"


def test_the_node_agents_role_allows_nothing_beyond_its_objects(kube):
    _, kubeconfig = kube

    async def outside(reporter: KubeReporter):
        for verb, method, path in (("delete", "DELETE", f"{DEVICES}/{NODE}"), ("list", "GET", "/api/v1/pods"),
                                   ("update", "PUT", f"/api/v1/nodes/{NODE}/status")):
            with pytest.raises(ApiError) as refused:
                await reporter.api.call(verb, path, method, path, {} if method == "PUT" else None)
            assert refused.value.code == FORBIDDEN, (verb, path)
    report(kubeconfig, outside)


def test_run_writes_the_newest_object_offered(kube):
    """An offer replaces an object not sent yet, as the report loop offers one per round."""
    admin, kubeconfig = kube

    async def offered(reporter: KubeReporter):
        stop = asyncio.Event()
        task = asyncio.create_task(reporter.run(stop))
        reporter.offer_device(gpus(3))
        reporter.offer_device(gpus(4))
        deadline = time.monotonic() + 10
        while len(admin.get(f"{DEVICES}/{NODE}").json()["spec"]["devices"]) != 4:
            assert time.monotonic() < deadline, "the offered Device was not written within 10s"
            await asyncio.sleep(0.1)
        stop.set()
        await task
    report(kubeconfig, offered)


def test_a_refused_write_is_logged_and_the_loop_goes_on_until_stopped(kube, plane, caplog, tmp_path):
    """A user without the role: the write is refused (403, naming verb and resource), logged, and ``run``
    returns at ``stop`` instead of raising into the agent."""
    pki.issue_client(plane.pki, "no-role")
    kubeconfig = tmp_path / "no-role.kubeconfig"
    kubeconfig.write_text(controlplane.kubeconfig(plane.state()["server"], plane.pki, "no-role"))

    async def refused(reporter: KubeReporter):
        stop = asyncio.Event()
        task = asyncio.create_task(reporter.run(stop))
        reporter.offer_device(gpus(1))
        deadline = time.monotonic() + 10
        while "could not write Device" not in caplog.text:
            assert time.monotonic() < deadline, "no refusal logged within 10s"
            await asyncio.sleep(0.1)
        stop.set()
        await asyncio.wait_for(task, 5)
    report(kubeconfig, refused)
    assert "get devices: HTTP 403" in caplog.text
