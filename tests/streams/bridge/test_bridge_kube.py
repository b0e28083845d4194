"""``koord bridge`` against a real kube-apiserver and etcd, a broker, a worker and the projection.

One koordstream and one control plane for the module; the tests run in order: observe (shadow) mode
first, then the bridge restarts in active mode. The bridge runs as user ``koord-bridge``, bound to the
ClusterRole and Role of ``deploy/kubernetes/bridge.yaml``, so every write it makes shows the role
suffices; the API server's audit log (writes only) tells who wrote what.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import httpx2 as httpx
import pytest
import yaml
from lightkube import KubeConfig
from lightkube.config.client_adapter import Client as HttpClient, ConnectionParams

from state import queries
from state.db import open_database
from streams import supervision
from streams.bridge.api import ApiError, KubeApi
from streams.bridge.statuses import PatchStatus
from streams.bridge.writes import DECISION_ANNOTATION, Bind, Evict, MarkUnschedulable, PatchNodeStatus
from streams.koordinator.annotations import (
    ANNOTATION_DEVICE_ALLOCATED, ANNOTATION_HAMI_VGPU_NODE, ANNOTATION_RESERVATION_ALLOCATED,
    ANNOTATION_RESOURCE_STATUS)
from streams.koordinator.annotations import ANNOTATION_QUOTA_REQUEST as QUOTA_REQUEST
from streams.koordinator.annotations import ANNOTATION_QUOTA_RUNTIME as QUOTA_RUNTIME
from streams.koordinator.labels import GPU_ISOLATION_HAMI, LABEL_GPU_ISOLATION_PROVIDER, LABEL_POD_QOS, LABEL_QUOTA_NAME
from streams.kafka import produce
from streams.kube import pki
from streams.kube.controlplane import kubeconfig
from streams.objects.quantity import parse_quantity, to_canonical
from streams.schemas import codec
from streams.settings import Settings
from streams.signing import signer
from tests.integration.crash_support import CrashCluster
from tests.integration.manifests import COLOCATION_CONFIG

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
WAIT_S = 60
BRIDGE_USER = "koord-bridge"
SCHEDULER = "koord-scheduler"


@dataclasses.dataclass
class Setup:
    plane: object
    cluster: CrashCluster
    admin: httpx.Client
    bridge_kubeconfig: Path
    bridge: subprocess.Popen | None = None

    def start_bridge(self, mode: str) -> None:
        log = open(self.cluster.home / "bridge.log", "ab")
        self.bridge = subprocess.Popen(
            supervision.koord_command("bridge", "--kubeconfig", str(self.bridge_kubeconfig), "--mode", mode),
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env={**os.environ, **self.cluster.env}, process_group=0)

    def stop_bridge(self) -> int:
        self.bridge.send_signal(signal.SIGTERM)
        return self.bridge.wait(timeout=30)

    def kill_bridge(self) -> None:
        self.bridge.send_signal(signal.SIGKILL)
        self.bridge.wait(timeout=10)

    def bridge_log(self) -> str:
        return (self.cluster.home / "bridge.log").read_text(errors="replace")

    def create_node(self, name: str, cpu: str, memory: str) -> None:
        """A Ready node without the not-ready taint the API server's admission adds on create (the node
        lifecycle controller, absent here, removes it once the node is Ready)."""
        self.create("/api/v1/nodes", node(name, cpu, memory))
        response = self.admin.patch(f"/api/v1/nodes/{name}", json={"spec": {"taints": None}},
                                    headers={"Content-Type": "application/merge-patch+json"})
        assert response.status_code == 200, response.text

    def create(self, path: str, body: dict) -> dict:
        response = self.admin.post(path, json=body)
        assert response.status_code == 201, response.text
        return response.json()

    def get(self, path: str) -> dict | None:
        response = self.admin.get(path)
        return None if response.status_code == 404 else response.json()

    def engine(self):
        return open_database(self.cluster.env["KOORD_DATABASE_URL"])

    def audit(self) -> list[dict]:
        return [json.loads(line) for line in (self.plane.directory / "audit.log").read_text().splitlines() if line]


def wait_for(condition, what: str, timeout: float = WAIT_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := condition():
            return result
        time.sleep(0.3)
    raise AssertionError(f"waited {timeout:g}s for {what}")


def node(name: str, cpu: str, memory: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                       "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                       "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}}


def pod(name: str, cpu: str = "100m", scheduler: str = SCHEDULER, node_name: str | None = None,
        labels: dict | None = None) -> dict:
    spec = {"schedulerName": scheduler, "containers": [
        {"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default",
                                                            "labels": labels or {}}, "spec": spec}


PODS = "/api/v1/namespaces/default/pods"


def bound_node(setup: Setup, name: str) -> str | None:
    return ((setup.get(f"{PODS}/{name}") or {}).get("spec") or {}).get("nodeName")


def bindings_by_pod(setup: Setup) -> dict[str, int]:
    """Successful pods/binding writes per pod name, from the audit log."""
    counts: dict[str, int] = {}
    for event in setup.audit():
        ref = event.get("objectRef") or {}
        if event["stage"] == "ResponseComplete" and ref.get("subresource") == "binding" and \
                event.get("responseStatus", {}).get("code") == 201:
            counts[ref["name"]] = counts.get(ref["name"], 0) + 1
    return counts


def bridge_writes(setup: Setup) -> set[tuple[str, str, int]]:
    """(verb, resource[/subresource], code) of every write user koord-bridge made."""
    return {(e["verb"], "/".join(filter(None, (e["objectRef"].get("resource"), e["objectRef"].get("subresource")))),
             e.get("responseStatus", {}).get("code"))
            for e in setup.audit() if e["user"]["username"] == BRIDGE_USER and e["stage"] == "ResponseComplete"}


@pytest.fixture(scope="module")
def setup(plane, tmp_path_factory):
    home = tmp_path_factory.mktemp("bridge")
    state = plane.state()
    config = KubeConfig.from_file(plane.kubeconfig).get()
    admin = HttpClient(config, ConnectionParams())
    admin.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace",
                                            "metadata": {"name": "koordinator-system"}})
    for path in sorted((ROOT / "deploy" / "crds").glob("*.yaml")):
        response = admin.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                              json=yaml.safe_load(path.read_text()))
        assert response.status_code == 201, f"{path.name}: {response.text}"
    role_paths = {"ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                  "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/koordinator-system/roles"}
    for document in yaml.safe_load_all((ROOT / "deploy" / "kubernetes" / "bridge.yaml").read_text()):
        if document["kind"] in role_paths:
            assert admin.post(role_paths[document["kind"]], json=document).status_code == 201
            binding_kind = "ClusterRoleBinding" if document["kind"] == "ClusterRole" else "RoleBinding"
            binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": binding_kind,
                       "metadata": {"name": f"{BRIDGE_USER}-user"},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": document["kind"],
                                   "name": document["metadata"]["name"]},
                       "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": BRIDGE_USER}]}
            assert admin.post(role_paths[document["kind"]].replace("roles", "rolebindings"),
                              json=binding).status_code == 201
    pki.issue_client(plane.pki, BRIDGE_USER)
    bridge_kubeconfig = home / "bridge.kubeconfig"
    bridge_kubeconfig.write_text(kubeconfig(state["server"], plane.pki, BRIDGE_USER))
    cluster = CrashCluster.start(home, "tansu")
    setup = Setup(plane, cluster, admin, bridge_kubeconfig)
    try:
        cluster.start_worker("worker")
        yield setup
    finally:
        if setup.bridge is not None and setup.bridge.poll() is None:
            setup.kill_bridge()
        cluster.stop()
        admin.close()


def test_crds_are_established(setup):
    names = [yaml.safe_load(p.read_text())["metadata"]["name"] for p in (ROOT / "deploy" / "crds").glob("*.yaml")]

    def established():
        return all(any(c["type"] == "Established" and c["status"] == "True" for c in
                       setup.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{n}")["status"]
                       .get("conditions", [])) for n in names)
    wait_for(established, "every CRD to be established")
    assert len(names) == 9


def test_observe_mode_writes_nothing_and_the_shadow_report_compares(setup):
    for name in ("shadow-n1", "shadow-n2"):
        setup.create_node(name, "4", "8Gi")
    setup.start_bridge("observe")
    for name, cpu in (("same", "100m"), ("other", "100m"), ("too-big", "64"), ("cluster-refused", "100m")):
        setup.create(PODS, pod(f"shadow-{name}", cpu, scheduler="default-scheduler"))
    engine = setup.engine()

    expected = {"same": "Scheduled", "other": "Scheduled", "too-big": "Unschedulable", "cluster-refused": "Scheduled"}

    def opinions():
        found = {name: [d for d in queries.get_decisions(engine, f"default/shadow-{name}")
                        if d["result"] in ("Scheduled", "Unschedulable")] for name in expected}
        return found if all(found[n] and found[n][-1]["result"] == r for n, r in expected.items()) else None
    decided = wait_for(opinions, "koordstream's decisions about the shadow pods")
    chosen = decided["same"][-1]["nodeName"]
    other = next(n for n in ("shadow-n1", "shadow-n2") if n != decided["other"][-1]["nodeName"])
    for name, target in (("same", chosen), ("other", other), ("too-big", "shadow-n1")):
        binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": f"shadow-{name}"},
                   "target": {"kind": "Node", "name": target}}
        assert setup.admin.post(f"{PODS}/shadow-{name}/binding", json=binding).status_code == 201
    refused = {"status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                          "message": "0/2 nodes are available: 2 node(s) didn't match affinity."}]}}
    response = setup.admin.patch(f"{PODS}/shadow-cluster-refused/status", json=refused,
                                 headers={"Content-Type": "application/strategic-merge-patch+json"})
    assert response.status_code == 200, response.text

    def report():
        result = setup.cluster.koord("shadow", "report", "-o", "json")
        assert result.returncode == 0, result.stderr
        rows = {p["name"]: p for p in json.loads(result.stdout)["pods"]}
        outcomes = {name: rows.get(f"shadow-{name}", {}).get("outcome") for name in
                    ("same", "other", "too-big", "cluster-refused")}
        return (outcomes, rows) if outcomes == {
            "same": "same-node", "other": "other-node", "too-big": "only-koordstream-unschedulable",
            "cluster-refused": "only-cluster-unschedulable"} else None
    outcomes, rows = wait_for(report, "the shadow report to show each outcome")
    assert "Insufficient cpu" in rows["shadow-too-big"]["koordstream"]["message"]
    assert "didn't match affinity" in rows["shadow-cluster-refused"]["cluster"]["message"]
    assert rows["shadow-other"]["cluster"]["node"] == other
    assert bridge_writes(setup) == set()
    assert setup.stop_bridge() == 0
    assert "Traceback" not in setup.bridge_log()


def test_active_mode_binds_pods_and_marks_the_unplaceable(setup):
    setup.create_node("active-n1", "8", "16Gi")
    setup.start_bridge("active")
    for index in range(3):
        setup.create(PODS, pod(f"active-{index}"))
    setup.create(PODS, pod("active-huge", cpu="512"))
    for index in range(3):
        assert wait_for(lambda: bound_node(setup, f"active-{index}"), f"active-{index} to be bound")
    annotations = setup.get(f"{PODS}/active-0")["metadata"]["annotations"]
    assert len(annotations[DECISION_ANNOTATION]) == 24

    def condition():
        status = setup.get(f"{PODS}/active-huge").get("status") or {}
        return next((c for c in status.get("conditions") or [] if c["type"] == "PodScheduled"), None)
    scheduled = wait_for(condition, "active-huge's PodScheduled condition")
    assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")
    assert "Insufficient cpu" in scheduled["message"]
    events = setup.get("/api/v1/namespaces/default/events")["items"]
    assert any(e["involvedObject"]["name"] == "active-huge" and e["reason"] == "FailedScheduling" for e in events)


def test_garbage_and_a_decision_for_a_node_that_does_not_exist_neither_stop_nor_fool_the_bridge(setup):
    """On the decisions topic: undecodable bytes (a dead letter of stage bridge) and a decision binding a real
    pod to a node the cluster does not have (skipped: the API server would accept that binding). A pod
    created after both is still bound."""
    import asyncio

    from streams.kafka import produce
    from streams.schemas import codec
    from streams.topology import load_topology

    if setup.bridge is None or setup.bridge.poll() is not None:
        setup.start_bridge("active")
    setup.create(PODS, pod("stranded", cpu="512"))
    stranded = wait_for(lambda: setup.get(f"{PODS}/stranded"), "the stranded pod")
    decisions = load_topology().name("decisions")
    forged = {"decisionId": "forged-0", "pod": {"namespace": "default", "name": "stranded",
                                                "uid": stranded["metadata"]["uid"]},
              "result": "Scheduled", "nodeName": "ghost-node", "timestamp": 0,
              "causation": {"inboxTopic": "koord.inbox.scheduling", "inboxPartition": 0, "inboxOffset": 0,
                            "sourceTopic": "koord.pods", "sourcePartition": 0, "sourceOffset": 0}}
    garbage, _ = asyncio.run(produce(setup.cluster.bootstrap, [
        (decisions, "default/garbage", b"\x00 not a decision"),
        (decisions, "default/stranded", codec.encode("SchedulingDecision", forged))]))
    setup.create_node("after-garbage-node", "8", "16Gi")
    setup.create(PODS, pod("after-garbage"))
    assert wait_for(lambda: bound_node(setup, "after-garbage"), "after-garbage to be bound")
    engine = setup.engine()
    letter = wait_for(lambda: next((d for d in queries.get_deadletters(engine) if d["stage"] == "bridge"
                                    and d["sourceTopic"] == decisions and d["sourceOffset"] == garbage.offset), None),
                      "the bridge's dead letter of the garbage")
    assert "CodecError" in letter["reason"]
    assert bound_node(setup, "stranded") is None


def test_node_status_shows_batch_and_mid_allocatable_from_a_node_metric(setup):
    config = yaml.safe_load(COLOCATION_CONFIG)
    setup.create("/api/v1/namespaces/koordinator-system/configmaps", config)
    path = "/apis/slo.koordinator.sh/v1alpha1/nodemetrics"
    setup.create(path, {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
                        "metadata": {"name": "active-n1"}})
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = {"status": {"updateTime": now, "nodeMetric": {"nodeUsage": {"resources": {"cpu": "2", "memory": "4Gi"}},
                                                           "systemUsage": {"resources": {"cpu": "0", "memory": "0"}}},
                         "podsMetric": [], "prodReclaimableMetric": {"resource": {"resources": {"cpu": "1",
                                                                                                "memory": "1Gi"}}}}}
    response = setup.admin.patch(f"{path}/active-n1/status", json=status,
                                 headers={"Content-Type": "application/merge-patch+json"})
    assert response.status_code == 200, response.text

    def extended():
        allocatable = setup.get("/api/v1/nodes/active-n1")["status"]["allocatable"]
        return allocatable if {"kubernetes.io/batch-cpu", "kubernetes.io/mid-cpu"} <= set(allocatable) else None
    allocatable = wait_for(extended, "batch and mid allocatable on active-n1")
    capacity = setup.get("/api/v1/nodes/active-n1")["status"]["capacity"]
    for name in ("kubernetes.io/batch-cpu", "kubernetes.io/batch-memory", "kubernetes.io/mid-cpu"):
        assert parse_quantity(allocatable[name]) > 0 and capacity[name] == allocatable[name]
    assert 0 < parse_quantity(allocatable["kubernetes.io/batch-cpu"]) <= 8000, "milli-cores of an 8-cpu node"
    assert parse_quantity(allocatable["kubernetes.io/mid-cpu"]) == 1000, "the NodeMetric's prodReclaimable cpu"


def test_an_eviction_decision_evicts_through_the_eviction_api_and_a_budget_blocks_one(setup):
    pods = {name: setup.create(PODS, pod(name, node_name="active-n1", labels={"app": name}))
            for name in ("evict-free", "evict-guarded")}
    running = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    for name in pods:
        # The Eviction API ignores budgets for Pending pods; here no kubelet starts them, so the test does.
        response = setup.admin.patch(f"{PODS}/{name}/status", json=running,
                                     headers={"Content-Type": "application/strategic-merge-patch+json"})
        assert response.status_code == 200, response.text
    budget = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "guard"},
              "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "evict-guarded"}}}}
    setup.create("/apis/policy/v1/namespaces/default/poddisruptionbudgets", budget)

    def eviction(name: str) -> tuple[str, str, bytes]:
        record = {"decisionId": f"evict-{name}", "nodeName": "active-n1",
                  "pod": {"namespace": "default", "name": name, "uid": pods[name]["metadata"]["uid"]},
                  "reason": "EvictPodByNodeMemoryUsage", "message": "test",
                  "causation": {"inboxTopic": "koord.inbox.node", "inboxPartition": 0, "inboxOffset": 0,
                                "sourceTopic": "koord.nodemetrics", "sourcePartition": 0, "sourceOffset": 0},
                  "timestamp": int(time.time() * 1000)}
        return "koord.decisions", f"default/{name}", codec.encode("Eviction", record)
    sign = signer(Settings.from_env(setup.cluster.env))
    for topic, key, value in [eviction("evict-free"), eviction("evict-free"), eviction("evict-guarded")]:
        asyncio.run(produce(setup.cluster.bootstrap, [(topic, key, value)],
                            headers=[sign.header("decisions", key.encode(), value)]))

    def evicted(name):
        found = setup.get(f"{PODS}/{name}")
        return found is None or bool(found["metadata"].get("deletionTimestamp"))
    wait_for(lambda: evicted("evict-free"), "evict-free to be evicted")
    wait_for(lambda: "eviction of default/evict-guarded refused" in setup.bridge_log(), "the budget to refuse")
    assert not evicted("evict-guarded")
    assert setup.admin.delete("/apis/policy/v1/namespaces/default/poddisruptionbudgets/guard").status_code == 200
    wait_for(lambda: evicted("evict-guarded"), "evict-guarded to be evicted once the budget is gone")
    evictions = [e["objectRef"]["name"] for e in setup.audit() if e["user"]["username"] == BRIDGE_USER
                 and e["objectRef"].get("subresource") == "eviction" and e["stage"] == "ResponseComplete"
                 and e["responseStatus"]["code"] == 201]
    assert sorted(evictions) == ["evict-free", "evict-guarded"]


def signed_decision(setup: Setup, name: str, uid: str, decision_id: str, annotations: dict,
                    labels: dict | None = None) -> None:
    """A Scheduled decision for default/``name`` to active-n1, signed as the worker signs its outputs."""
    record = {"decisionId": decision_id, "pod": {"namespace": "default", "name": name, "uid": uid},
              "result": "Scheduled", "nodeName": "active-n1", "timestamp": int(time.time() * 1000),
              "annotations": annotations, "labels": labels or {},
              "causation": {"inboxTopic": "koord.inbox.scheduling", "inboxPartition": 0, "inboxOffset": 0,
                            "sourceTopic": "koord.pods", "sourcePartition": 0, "sourceOffset": 0}}
    key, value = f"default/{name}".encode(), codec.encode("SchedulingDecision", record)
    sign = signer(Settings.from_env(setup.cluster.env))
    asyncio.run(produce(setup.cluster.bootstrap, [("koord.decisions", key.decode(), value)],
                        headers=[sign.header("decisions", key, value)]))


def held_back(setup: Setup, name: str) -> dict:
    """A pod the pipeline cannot place (no node has its label; only the test's decision binds it), once the
    bridge marked it."""
    manifest = pod(name)
    manifest["spec"]["nodeSelector"] = {"koordstream-test": "nowhere"}
    created = setup.create(PODS, manifest)

    def marked():
        status = (setup.get(f"{PODS}/{name}") or {}).get("status") or {}
        return any(c["type"] == "PodScheduled" and c["reason"] == "Unschedulable" for c in status.get("conditions") or [])
    wait_for(marked, f"{name} to be marked Unschedulable")
    return created


def pod_history(setup: Setup, name: str, since: str) -> list[dict]:
    """Every version of default/``name`` the API server recorded after resourceVersion ``since`` (a watch)."""
    response = setup.admin.get(PODS, params={"watch": "true", "resourceVersion": since, "timeoutSeconds": "2",
                                             "fieldSelector": f"metadata.name={name}"}, timeout=30)
    return [json.loads(line)["object"] for line in response.text.splitlines() if line]


def bridge_patches(setup: Setup, name: str) -> int:
    return sum(1 for e in setup.audit() if e["user"]["username"] == BRIDGE_USER and e["stage"] == "ResponseComplete"
               and e["verb"] == "patch" and e["objectRef"].get("resource") == "pods"
               and not e["objectRef"].get("subresource") and e["objectRef"].get("name") == name
               and e["responseStatus"]["code"] == 200)


PREBIND = {ANNOTATION_RESOURCE_STATUS: '{"cpuset":"2-3"}',
           ANNOTATION_DEVICE_ALLOCATED: '{"gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-core":"50"}}]}',
           ANNOTATION_RESERVATION_ALLOCATED: '{"name":"reserve-1","uid":"4f1c"}',
           ANNOTATION_HAMI_VGPU_NODE: "active-n1"}


def test_the_binding_carries_what_prebind_decided_and_the_pod_never_shows_its_node_without_it(setup):
    """Issue 40 item 1: every annotation and label of the decision is on the pod before (or with) its node, in
    one patch; the same decision read again patches and binds nothing more."""
    if setup.bridge is None or setup.bridge.poll() is not None:
        setup.start_bridge("active")
    created = held_back(setup, "prebind-all")
    uid = created["metadata"]["uid"]
    signed_decision(setup, "prebind-all", uid, "prebind-d1", PREBIND, {LABEL_POD_QOS: "LS"})
    assert wait_for(lambda: bound_node(setup, "prebind-all"), "prebind-all to be bound") == "active-n1"
    metadata = setup.get(f"{PODS}/prebind-all")["metadata"]
    assert {k: metadata["annotations"].get(k) for k in PREBIND} == PREBIND
    assert metadata["annotations"][DECISION_ANNOTATION] == "prebind-d1"
    assert metadata["labels"][LABEL_POD_QOS] == "LS"
    history = pod_history(setup, "prebind-all", created["metadata"]["resourceVersion"])
    with_node = [v for v in history if v["spec"].get("nodeName")]
    assert with_node, history
    for version in with_node:
        assert PREBIND.items() <= (version["metadata"].get("annotations") or {}).items(), version["metadata"]
    first_bound = history.index(with_node[0])
    assert PREBIND.items() <= (history[first_bound - 1]["metadata"].get("annotations") or {}).items(), \
        "the patch is its own write, before the binding"
    signed_decision(setup, "prebind-all", uid, "prebind-d1", PREBIND, {LABEL_POD_QOS: "LS"})
    setup.create(PODS, pod("after-prebind"))
    wait_for(lambda: bound_node(setup, "after-prebind"), "a later pod to be bound")
    assert bridge_patches(setup, "prebind-all") == 1
    assert bindings_by_pod(setup)["prebind-all"] == 1


def test_a_patch_the_api_server_refuses_binds_nothing_and_says_why(setup):
    """A PreBind patch refused for good (422: an annotation key the API server rejects): not bound, a
    FailedScheduling Event and PodScheduled=False with reason SchedulerError (which the pipeline's next
    Unschedulable decision about the pod may replace, so the pod's history is read), a dead letter of the
    decision."""
    created = held_back(setup, "prebind-refused")
    bad = {**PREBIND, "not a/valid/key": "x"}
    signed_decision(setup, "prebind-refused", created["metadata"]["uid"], "prebind-d2", bad)
    engine = setup.engine()
    letter = wait_for(lambda: next((d for d in queries.get_deadletters(engine) if d["stage"] == "bridge"
                                    and d["key"] == "default/prebind-refused"), None),
                      "the bridge's dead letter of the refused decision")
    assert letter["reason"].startswith('PreBindRefused: running PreBind plugin "KoordstreamPreBind": patch pods: '
                                       'HTTP 422: ')
    conditions = [c for version in pod_history(setup, "prebind-refused", created["metadata"]["resourceVersion"])
                  for c in (version.get("status") or {}).get("conditions") or [] if c["type"] == "PodScheduled"]
    assert any(c["reason"] == "SchedulerError" and "HTTP 422" in c["message"] for c in conditions), conditions
    events = setup.get("/api/v1/namespaces/default/events")["items"]
    assert any(e["involvedObject"]["name"] == "prebind-refused" and e["reason"] == "FailedScheduling"
               and e["type"] == "Warning" and "HTTP 422" in e["message"] for e in events)
    assert bound_node(setup, "prebind-refused") is None
    assert "prebind-refused" not in bindings_by_pod(setup)


def test_a_shared_gpu_pod_placed_by_the_pipeline_carries_its_device_allocation(setup):
    """End to end: a HAMi node and its Device created through the API server, a pod asking half a GPU; the
    pipeline's decision is bound with ``device-allocated`` and ``hami.io/vgpu-node`` on the pod."""
    resources = {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "1"}
    setup.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                    "metadata": {"name": "gpu-n1", "labels": {
                                        LABEL_GPU_ISOLATION_PROVIDER: GPU_ISOLATION_HAMI, "gpu-node": "yes"}},
                                    "status": {"conditions": [{"type": "Ready", "status": "True"}],
                                               "capacity": resources, "allocatable": resources}})
    response = setup.admin.patch("/api/v1/nodes/gpu-n1", json={"spec": {"taints": None}},
                                 headers={"Content-Type": "application/merge-patch+json"})
    assert response.status_code == 200, response.text
    setup.create("/apis/scheduling.koordinator.sh/v1alpha1/devices", {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Device", "metadata": {"name": "gpu-n1"},
        "spec": {"devices": [{"type": "gpu", "minor": 0, "id": "GPU-0", "health": True,
                              "resources": {"koordinator.sh/gpu-core": "100", "koordinator.sh/gpu-memory": "80Gi",
                                            "koordinator.sh/gpu-memory-ratio": "100"},
                              "topology": {"socketID": 0, "nodeID": 0, "pcieID": "0", "busID": "0000:00:00.0"}}]}})
    gpu = {"cpu": "40m", "memory": "40Mi", "koordinator.sh/gpu-shared": "1", "koordinator.sh/gpu-core": "50",
           "koordinator.sh/gpu-memory-ratio": "50"}
    manifest = pod("shared-gpu", labels={LABEL_GPU_ISOLATION_PROVIDER: "hami-core"})
    manifest["spec"]["nodeSelector"] = {"gpu-node": "yes"}
    manifest["spec"]["containers"][0]["resources"] = {"requests": gpu, "limits": gpu}
    created = setup.create(PODS, manifest)
    assert wait_for(lambda: bound_node(setup, "shared-gpu"), "shared-gpu to be bound", timeout=120) == "gpu-n1"
    annotations = setup.get(f"{PODS}/shared-gpu")["metadata"]["annotations"]
    allocated = json.loads(annotations[ANNOTATION_DEVICE_ALLOCATED])["gpu"]
    assert [(a["minor"], a["resources"]["koordinator.sh/gpu-core"]) for a in allocated] == [(0, "50")]
    assert annotations[ANNOTATION_HAMI_VGPU_NODE] == "gpu-n1"
    for version in pod_history(setup, "shared-gpu", created["metadata"]["resourceVersion"]):
        if version["spec"].get("nodeName"):
            assert ANNOTATION_DEVICE_ALLOCATED in version["metadata"].get("annotations", {})

def test_node_status_shows_batch_mid_and_device_resources_and_keeps_what_kubelet_owns(setup):
    """Issue 40 item 2: a Device created through the API server reaches the node's status as koord-manager's
    device resource sync writes it (GPU and RDMA resources, the GPU model label), beside batch and mid;
    the node's own cpu, memory, pods and device-plugin resources are untouched; the Device's deletion
    removes them again."""
    if setup.bridge is None or setup.bridge.poll() is not None:
        setup.start_bridge("active")
    own = {"cpu": "8", "memory": "16Gi", "pods": "110", "nvidia.com/gpu": "2"}
    setup.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "dev-n1"},
                                    "status": {"conditions": [{"type": "Ready", "status": "True"}],
                                               "capacity": own, "allocatable": own}})
    gpu = {"type": "gpu", "health": True, "resources": {
        "koordinator.sh/gpu-core": "100", "koordinator.sh/gpu-memory": "80Gi",
        "koordinator.sh/gpu-memory-ratio": "100"}}
    devices = [{**gpu, "minor": 0, "id": "GPU-0"}, {**gpu, "minor": 1, "id": "GPU-1"},
               {"type": "rdma", "health": True, "minor": 0, "id": "0000:1f:00.0", "resources": {}}]
    setup.create("/apis/scheduling.koordinator.sh/v1alpha1/devices", {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Device",
        "metadata": {"name": "dev-n1", "labels": {"node.koordinator.sh/gpu-model": "A100"}},
        "spec": {"devices": devices}})
    device_resources = {"koordinator.sh/gpu": "200", "koordinator.sh/gpu-core": "200",
                        "koordinator.sh/gpu-memory": str(160 << 30), "koordinator.sh/gpu-memory-ratio": "200",
                        "koordinator.sh/rdma": "100"}

    def synced():
        found = setup.get("/api/v1/nodes/dev-n1")
        allocatable = found["status"]["allocatable"]
        return found if device_resources.items() <= allocatable.items() else None
    found = wait_for(synced, "dev-n1's device resources")
    assert device_resources.items() <= found["status"]["capacity"].items()
    assert found["metadata"]["labels"]["node.koordinator.sh/gpu-model"] == "A100"
    for name, value in own.items():
        assert parse_quantity(found["status"]["allocatable"][name]) == parse_quantity(value), name
    active = setup.get("/api/v1/nodes/active-n1")["status"]["allocatable"]
    assert {"kubernetes.io/batch-cpu", "kubernetes.io/batch-memory", "kubernetes.io/mid-cpu"} <= set(active)
    assert setup.admin.delete("/apis/scheduling.koordinator.sh/v1alpha1/devices/dev-n1").status_code == 200
    gone = wait_for(lambda: (lambda a: a if not [k for k in a if k.startswith("koordinator.sh/")] else None)(
        setup.get("/api/v1/nodes/dev-n1")["status"]["allocatable"]), "dev-n1's device resources to be removed")
    assert gone["nvidia.com/gpu"] == "2"


RESERVATIONS = "/apis/scheduling.koordinator.sh/v1alpha1/reservations"
JOBS = "/apis/scheduling.koordinator.sh/v1alpha1/podmigrationjobs"
QUOTAS = "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/default/elasticquotas"


def test_the_statuses_koordstream_computes_are_on_the_api_server(setup):
    """Issue 40 item 3: a Reservation, a PodMigrationJob and an ElasticQuota created through the API server get
    the status the scheduling domain computed, written by the bridge through ``/status`` (and the quota's
    runtime and request annotations on the object), as ``kubectl get`` would show them."""
    if setup.bridge is None or setup.bridge.poll() is not None:
        setup.start_bridge("active")
    setup.create(RESERVATIONS, {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation", "metadata": {"name": "hold-1"},
        "spec": {"template": {"metadata": {"namespace": "default"}, "spec": {
            "nodeName": "active-n1", "containers": [{"name": "c", "image": "app",
                                                     "resources": {"requests": {"cpu": "200m", "memory": "64Mi"}}}]}},
                 "owners": [{"object": {"namespace": "default", "name": "hold-1-owner"}}]}})
    setup.create(JOBS, {"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "PodMigrationJob",
                        "metadata": {"name": "move-ghost"},
                        "spec": {"podRef": {"namespace": "default", "name": "no-such-pod"}}})
    setup.create(QUOTAS, {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
                          "metadata": {"name": "team-q", "namespace": "default"},
                          "spec": {"min": {"cpu": "1", "memory": "1Gi"}, "max": {"cpu": "4", "memory": "8Gi"}}})
    # Earlier tests bound a 64-cpu pod of the default quota by hand; a big node leaves the quota tree room.
    setup.create_node("quota-n1", "256", "512Gi")
    setup.create(PODS, pod("quota-user", cpu="300m", labels={LABEL_QUOTA_NAME: "team-q"}))

    def status(path: str, wanted) -> dict | None:
        found = setup.get(path) or {}
        return found if wanted(found.get("status") or {}, found["metadata"].get("annotations") or {}) else None
    reservation = wait_for(lambda: status(f"{RESERVATIONS}/hold-1", lambda s, _: s.get("phase") == "Available"),
                           "hold-1 to be Available")["status"]
    assert reservation["nodeName"] == "active-n1"
    assert reservation["allocatable"] == {"cpu": "200m", "memory": "64Mi"}
    assert reservation["conditions"][0]["type"] == "Ready" and reservation["currentOwners"] == []
    job = wait_for(lambda: status(f"{JOBS}/move-ghost", lambda s, _: s.get("phase") == "Failed"),
                   "move-ghost to be Failed")["status"]
    assert job["message"] == 'Abort job caused by missing Pod "default/no-such-pod"'
    engine = setup.engine()

    def quota_as_computed():
        """The quota on the API server once it shows what ``koord get elasticquotas`` shows (koordstream's latest
        ElasticQuotaStatus), the pod's 300m in use."""
        found, computed = setup.get(f"{QUOTAS}/team-q"), queries.get_elasticquotas(engine, "default", "team-q")
        last[:] = [found, computed]
        if not computed or canonical(computed[0]["status"]["used"]).get("cpu") != 300:
            return None
        shown, wanted = found["metadata"].get("annotations") or {}, computed[0]["metadata"]["annotations"]
        same = all(canonical(json.loads(shown.get(name) or "{}")) == canonical(json.loads(wanted[name]))
                   for name in (QUOTA_RUNTIME, QUOTA_REQUEST))
        used = canonical(computed[0]["status"]["used"])
        return found if same and used == canonical((found.get("status") or {}).get("used")) else None
    last: list = []
    try:
        quota = wait_for(quota_as_computed, "team-q's used, runtime and request as koordstream computed them")
    except AssertionError as error:
        raise AssertionError(f"{error}; last seen (API server, koordstream): {last}") from None
    assert canonical(json.loads(quota["metadata"]["annotations"][QUOTA_REQUEST]))["cpu"] == 300
    written = {(e["objectRef"]["resource"], e["objectRef"].get("subresource")) for e in setup.audit()
               if e["user"]["username"] == BRIDGE_USER and e["verb"] == "patch" and e["stage"] == "ResponseComplete"
               and e["responseStatus"]["code"] == 200}
    assert {("reservations", "status"), ("podmigrationjobs", "status"), ("elasticquotas", "status"),
            ("elasticquotas", None)} <= written


PODGROUPS = "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/default/podgroups"


def test_a_gang_koordstream_places_shows_its_podgroup_status_on_the_api_server(setup):
    """Issue 40 item 3, PodGroup: a PodGroup of two and its two members created through the API server; the
    pipeline binds both at once and its PodGroup status (Koordinator's PodGroup controller: Scheduled, scheduled
    2; no kubelet runs the pods, so not Running) is on the API server, written by the bridge through
    ``/status``, the same as ``koord get podgroups`` shows. ``scheduleStartTime`` is there when the domain
    wrote the group's status while both members were present and not yet both bound (Scheduling on the way);
    whether it did depends on how the creates reached it in batches."""
    if setup.bridge is None or setup.bridge.poll() is not None:
        setup.start_bridge("active")
    setup.create(PODGROUPS, {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "PodGroup",
                             "metadata": {"name": "train", "namespace": "default"},
                             "spec": {"minMember": 2, "scheduleTimeoutSeconds": 30}})
    for name in ("train-0", "train-1"):
        setup.create(PODS, pod(name, labels={"pod-group.scheduling.sigs.k8s.io": "train"}))
    engine = setup.engine()

    def as_computed():
        found = setup.get(f"{PODGROUPS}/train") or {}
        computed = queries.get_objects(engine, "podgroups", "PodGroup", "train", "default")
        last[:] = [found.get("status"), computed and computed[0].get("status")]
        if not computed or (computed[0].get("status") or {}).get("phase") != "Scheduled":
            return None
        return found if found.get("status") == computed[0]["status"] else None
    last: list = []
    try:
        group = wait_for(as_computed, "the PodGroup's status as koordstream computed it")
    except AssertionError as error:
        raise AssertionError(f"{error}; last seen (API server, koordstream): {last}") from None
    status = dict(group["status"])
    started = status.pop("scheduleStartTime", None)
    assert status == {"phase": "Scheduled", "scheduled": 2}
    if started is not None:
        datetime.datetime.strptime(started, "%Y-%m-%dT%H:%M:%SZ")
    assert bound_node(setup, "train-0") and bound_node(setup, "train-1")
    written = {(e["objectRef"]["resource"], e["objectRef"].get("subresource")) for e in setup.audit()
               if e["user"]["username"] == BRIDGE_USER and e["verb"] == "patch" and e["stage"] == "ResponseComplete"
               and e["responseStatus"]["code"] == 200}
    assert ("podgroups", "status") in written


def test_a_status_write_at_a_stale_version_is_planned_again_from_a_fresh_read(setup):
    """The view holds an old version of a job; a user aborts the job meanwhile. The bridge's write names the
    old resourceVersion, the API server refuses it (409), the bridge reads the job afresh, sees Aborted (a
    final phase) and writes nothing: the user's abort stands. A second job changed by someone else (a label)
    is written after its 409, at the fresh version, keeping that change. The running bridge is stopped
    meanwhile: the pipeline passes a new job's arbitration (its pod is missing) and the bridge would write that
    status (Pending, no message) too, racing the writes under test; a CI run saw it overwrite ``moving``."""
    if setup.bridge is not None and setup.bridge.poll() is None:
        assert setup.stop_bridge() == 0
    try:
        stale_writes(setup)
    finally:
        setup.start_bridge("active")


def stale_writes(setup: Setup) -> None:
    from streams.bridge.actuator import Actuator
    from streams.bridge.config import BridgeConfig
    from streams.bridge.view import ClusterView

    kubeconfig_path = user_with_the_bridge_role(setup, "stale-writer")
    for name in ("stale-abort", "stale-label"):
        setup.create(JOBS, {"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "PodMigrationJob",
                            "metadata": {"name": name, "labels": {"koordstream-test": "stale"}},
                            "spec": {"podRef": {"namespace": "default", "name": "no-such-pod"}, "paused": True}})
    old = {name: setup.get(f"{JOBS}/{name}") for name in ("stale-abort", "stale-label")}
    aborted = setup.admin.patch(f"{JOBS}/stale-abort/status", json={"status": {"phase": "Aborted"}},
                                headers={"Content-Type": "application/merge-patch+json"})
    assert aborted.status_code == 200, aborted.text
    relabelled = setup.admin.patch(f"{JOBS}/stale-label", json={"metadata": {"labels": {"owner": "someone"}}},
                                   headers={"Content-Type": "application/merge-patch+json"})
    assert relabelled.status_code == 200, relabelled.text

    def record(name: str) -> dict:
        manifest = {"metadata": {"name": name}, "status": {"phase": "Running", "reason": "", "message": "moving"}}
        return {"metadata": {"name": name, "namespace": None, "uid": None}, "manifest": json.dumps(manifest)}

    async def write() -> None:
        view = ClusterView()
        for obj in old.values():
            view.observe("PodMigrationJob", obj, deleted=False)
        api = KubeApi(kubeconfig_path, None)
        actuator = Actuator(api, None, None, view, BridgeConfig(kubeconfig_path))
        for name in old:
            await actuator.write_status("PodMigrationJob", record(name))
        await api.close()
    asyncio.run(write())
    assert setup.get(f"{JOBS}/stale-abort")["status"]["phase"] == "Aborted"
    final = setup.get(f"{JOBS}/stale-label")
    assert final["status"]["message"] == "moving" and final["metadata"]["labels"]["owner"] == "someone"
    codes = {name: [e["responseStatus"]["code"] for e in setup.audit()
                    if e["user"]["username"] == "stale-writer" and e["stage"] == "ResponseComplete"
                    and e["verb"] == "patch" and e["objectRef"].get("name") == name]
             for name in old}
    assert codes["stale-abort"] and set(codes["stale-abort"]) == {409}, codes
    assert codes["stale-label"][0] == 409 and codes["stale-label"][-1] == 200, codes


def canonical(resources: dict | None) -> dict[str, int]:
    """A ResourceList in canonical integers, zeros removed (``quotav1.RemoveZeros``)."""
    return {name: value for name, value in ((n, to_canonical(n, v)) for n, v in (resources or {}).items()) if value}


def user_with_the_bridge_role(setup: Setup, user: str) -> Path:
    """A kubeconfig of ``user``, bound to the bridge's ClusterRole (so the audit log tells its writes apart)."""
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": f"{user}-bridge-role"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "koordstream-bridge"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}
    setup.create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding)
    pki.issue_client(setup.plane.pki, user)
    path = setup.cluster.home / f"{user}.kubeconfig"
    path.write_text(kubeconfig(setup.plane.state()["server"], setup.plane.pki, user))
    return path


def test_wait_for_first_consumer_claims_get_their_node_and_volume_before_the_pod_binds(setup):
    """Issue 39: VolumeBinding's PreBind through the bridge. A claim of a class with a provisioner gets
    ``volume.kubernetes.io/selected-node``; a claim of a local class gets the Available volume of the pod's node
    (its ``claimRef``, ``bound-by-controller``); both before the pod shows its node."""
    setup.create_node("vol-n1", "4", "8Gi")
    setup.admin.patch("/api/v1/nodes/vol-n1", json={"metadata": {"labels": {"kubernetes.io/hostname": "vol-n1"}}},
                      headers={"Content-Type": "application/merge-patch+json"})
    classes = "/apis/storage.k8s.io/v1/storageclasses"
    for name, provisioner in (("wffc-local", "kubernetes.io/no-provisioner"), ("wffc-csi", "csi.example.com")):
        setup.create(classes, {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
                               "provisioner": provisioner, "volumeBindingMode": "WaitForFirstConsumer"})
    setup.create("/api/v1/persistentvolumes", {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "local-vol-n1"},
        "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "wffc-local",
                 "local": {"path": "/mnt/disk"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [{
                     "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                           "values": ["vol-n1"]}]}]}}}})
    wait_for(lambda: (setup.get("/api/v1/persistentvolumes/local-vol-n1").get("status") or {}).get("phase"),
             "the volume's phase")
    setup.admin.patch("/api/v1/persistentvolumes/local-vol-n1/status", json={"status": {"phase": "Available"}},
                      headers={"Content-Type": "application/merge-patch+json"})
    claims = "/api/v1/namespaces/default/persistentvolumeclaims"
    for name, storage_class in (("data-local", "wffc-local"), ("data-csi", "wffc-csi")):
        setup.create(claims, {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
                              "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                                       "resources": {"requests": {"storage": "1Gi"}}}})
    manifest = pod("claimer")
    manifest["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "vol-n1"}
    manifest["spec"]["volumes"] = [{"name": n, "persistentVolumeClaim": {"claimName": n}}
                                   for n in ("data-local", "data-csi")]
    created = setup.create(PODS, manifest)
    assert wait_for(lambda: bound_node(setup, "claimer"), "claimer to be bound", timeout=120) == "vol-n1"
    claim = setup.get(f"{claims}/data-csi")
    assert claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == "vol-n1"
    volume = setup.get("/api/v1/persistentvolumes/local-vol-n1")
    local = setup.get(f"{claims}/data-local")
    assert (volume["spec"]["claimRef"]["name"], volume["spec"]["claimRef"]["uid"]) == ("data-local",
                                                                                      local["metadata"]["uid"])
    assert volume["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    selected_at = int(claim["metadata"]["resourceVersion"])
    bound_at = min(int(v["metadata"]["resourceVersion"])
                   for v in pod_history(setup, "claimer", created["metadata"]["resourceVersion"])
                   if v["spec"].get("nodeName"))
    assert selected_at < bound_at


def test_each_write_of_the_role_works_and_fails_without_it(setup):
    made = bridge_writes(setup)
    for write in (("create", "pods/binding", 201), ("patch", "pods", 200), ("patch", "pods/status", 200),
                  ("create", "events", 201),
                  ("patch", "nodes/status", 200), ("create", "pods/eviction", 201),
                  ("patch", "reservations/status", 200), ("patch", "podmigrationjobs/status", 200),
                  ("patch", "elasticquotas/status", 200), ("patch", "elasticquotas", 200), ("patch", "nodes", 200),
                  ("patch", "persistentvolumeclaims", 200), ("patch", "persistentvolumes", 200),
                  ("patch", "podgroups/status", 200)):
        assert write in made
    pki.issue_client(setup.plane.pki, "no-role")
    path = setup.cluster.home / "no-role.kubeconfig"
    path.write_text(kubeconfig(setup.plane.state()["server"], setup.plane.pki, "no-role"))
    setup.create(PODS, pod("rbac-target"))
    uid = setup.get(f"{PODS}/rbac-target")["metadata"]["uid"]

    async def attempts() -> list[str]:
        api = KubeApi(path, None)
        refused = []
        for call in (api.patch_pod_metadata(Bind("default", "rbac-target", uid, "active-n1", "d1", {"a": "b"})),
                     api.bind(Bind("default", "rbac-target", uid, "active-n1", "d1")),
                     api.mark_unschedulable(MarkUnschedulable("default", "rbac-target", uid, "d1", "U", "m"), SCHEDULER),
                     api.patch_node_status(PatchNodeStatus("active-n1", {}, {}, labels={"a": "b"})),
                     api.patch_node_status(PatchNodeStatus("active-n1", {"kubernetes.io/batch-cpu": "1"},
                                                           {"kubernetes.io/batch-cpu": "1"})),
                     api.evict(Evict("default", "rbac-target", uid, "d1", "r", "m")),
                     api.patch_status(PatchStatus("Reservation", None, "hold-1", "", "1", {"phase": "Failed"}))):
            with pytest.raises(ApiError) as error:
                await call
            assert error.value.code == 403
            refused.append(str(error.value))
        await api.close()
        return refused
    refused = asyncio.run(attempts())
    assert [r.split(":")[0] for r in refused] == [
        "patch pods", "create pods/binding", "create events", "patch nodes", "patch nodes/status",
        "create pods/eviction",
        "patch reservations.scheduling.koordinator.sh/status"]


def test_a_dead_letter_names_an_object_that_cannot_be_converted(setup):
    created = setup.create("/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/default/elasticquotas",
                           {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
                            "metadata": {"name": "bad-quota"}, "spec": {"max": {"cpu": "lots"}}})
    version = created["metadata"]["resourceVersion"]
    engine = setup.engine()
    letter = wait_for(lambda: next((d for d in queries.get_deadletters(engine) if d["stage"] == "bridge"
                                    and d["key"] == "default/bad-quota"), None),
                      "the bridge's dead letter of default/bad-quota")
    assert letter["reason"].startswith(f"ElasticQuota default/bad-quota resourceVersion {version}: ")
    assert "spec.max.cpu" in letter["reason"]


def test_a_restart_and_a_kill_lose_and_double_nothing(setup):
    assert setup.stop_bridge() == 0
    setup.create(PODS, pod("while-down"))
    assert setup.admin.delete(f"{PODS}/active-1", params={"gracePeriodSeconds": 0}).status_code == 200
    setup.start_bridge("active")
    wait_for(lambda: bound_node(setup, "while-down"), "the pod created while the bridge was down to be bound")
    engine = setup.engine()
    wait_for(lambda: not [p for p in queries.get_pods(engine, "default", "active-1")],
             "the pod deleted while the bridge was down to be deleted from the topics")
    for index in range(6):
        setup.create(PODS, pod(f"killed-{index}"))
        if index == 2:
            setup.kill_bridge()
            setup.start_bridge("active")
    for index in range(6):
        wait_for(lambda: bound_node(setup, f"killed-{index}"), f"killed-{index} to be bound")
    counts = bindings_by_pod(setup)
    ours = [name for name in counts if not name.startswith("shadow-")]
    assert ours and all(counts[name] == 1 for name in ours), counts
    assert {"while-down", *(f"killed-{i}" for i in range(6))} <= set(ours)
    assert setup.stop_bridge() == 0
