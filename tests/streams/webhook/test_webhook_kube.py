"""``koord webhook`` served to a real kube-apiserver and etcd, objects created with a real client.

The webhook runs as user ``koord-webhook``, bound to the ClusterRole of ``deploy/kubernetes/webhook.yaml``,
so the role is shown to suffice; it registers its configurations with the API server, which calls it on
``https://127.0.0.1:<port>``. The tests run in order: onboarding and validation with the webhook up, then
admission with it stopped.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from lightkube import KubeConfig
from lightkube.config.client_adapter import Client as HttpClient, ConnectionParams

from streams import supervision
from streams.koordinator.classes import PRIORITY_BATCH, PRIORITY_CLASS_VALUES
from streams.koordinator.colocationprofile import API_VERSION, KIND
from streams.koordinator.labels import LABEL_POD_QOS, LABEL_POD_SUB_PRIORITY
from streams.koordinator.resources import BATCH_CPU, BATCH_MEMORY
from streams.kube import pki
from streams.kube.controlplane import kubeconfig
from streams.objects import ManifestError, load_and_validate
from streams.objects.quantity import parse_quantity

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
USER = "koord-webhook"
WAIT_S = 60
BATCH_NAMESPACE = "batch-jobs"
SCHEDULER = "koord-scheduler"


@dataclasses.dataclass
class Setup:
    plane: object
    admin: HttpClient
    home: Path
    kubeconfig: Path
    port: int
    process: subprocess.Popen | None = None

    def start(self) -> None:
        log = open(self.home / "webhook.log", "ab")
        self.process = subprocess.Popen(
            supervision.koord_command("webhook", "--kubeconfig", str(self.kubeconfig), "--port", str(self.port),
                                      "--cert-dir", str(self.home / "certs")),
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env={**os.environ, "KOORD_HOME": str(self.home)}, process_group=0)

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=30)

    def audit(self) -> list[dict]:
        return [json.loads(line) for line in (self.plane.directory / "audit.log").read_text().splitlines() if line]

    def log(self) -> str:
        return (self.home / "webhook.log").read_text(errors="replace")

    def post(self, path: str, body: dict):
        return self.admin.post(path, json=body)


def wait_for(condition, what: str, timeout: float = WAIT_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := condition():
            return result
        time.sleep(0.2)
    raise AssertionError(f"waited {timeout:g}s for {what}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def pod(name: str, namespace: str, cpu: str = "1", memory: str = "2Gi") -> dict:
    resources = {"cpu": cpu, "memory": memory}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "c", "image": "app",
                                     "resources": {"requests": dict(resources), "limits": dict(resources)}}]}}


PROFILE = {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "colocation"},
           "spec": {"namespaceSelector": {"matchLabels": {"koordstream.io/colocation": "on"}},
                    "qosClass": "BE", "priorityClassName": PRIORITY_BATCH, "koordinatorPriority": 1000,
                    "schedulerName": SCHEDULER, "labels": {"onboarded-by": "colocation"}}}


def _apply_role(admin: HttpClient) -> None:
    for document in yaml.safe_load_all((ROOT / "deploy" / "kubernetes" / "webhook.yaml").read_text()):
        if document["kind"] != "ClusterRole":
            continue
        assert admin.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", json=document).status_code == 201
        binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": f"{USER}-user"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                               "name": document["metadata"]["name"]},
                   "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}]}
        assert admin.post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", json=binding).status_code == 201


@pytest.fixture(scope="module")
def setup(plane, tmp_path_factory):
    home = tmp_path_factory.mktemp("webhook")
    plane.install(ROOT / "deploy" / "crds")
    admin = HttpClient(KubeConfig.from_file(plane.kubeconfig).get(), ConnectionParams())
    wait_for(lambda: admin.get(f"/apis/{API_VERSION}/clustercolocationprofiles").status_code == 200,
             "the ClusterColocationProfile CRD to be served")
    _apply_role(admin)
    pki.issue_client(plane.pki, USER)
    user_kubeconfig = home / "webhook.kubeconfig"
    user_kubeconfig.write_text(kubeconfig(plane.state()["server"], plane.pki, USER))
    for body in (
            {"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": BATCH_NAMESPACE, "labels": {"koordstream.io/colocation": "on"}}},
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": PRIORITY_BATCH},
             "value": PRIORITY_CLASS_VALUES[PRIORITY_BATCH], "preemptionPolicy": "PreemptLowerPriority"},
            PROFILE):
        path = {"Namespace": "/api/v1/namespaces", "PriorityClass": "/apis/scheduling.k8s.io/v1/priorityclasses",
                KIND: f"/apis/{API_VERSION}/clustercolocationprofiles"}[body["kind"]]
        response = admin.post(path, json=body)
        assert response.status_code == 201, response.text
    setup = Setup(plane, admin, home, user_kubeconfig, free_port())
    setup.start()
    wait_for(lambda: admin.get("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/koordstream")
             .status_code == 200 or setup.process.poll() is not None, "koord webhook to register")
    assert setup.process.poll() is None, setup.log()
    try:
        yield setup
    finally:
        if setup.process.poll() is None:
            setup.process.kill()
            setup.process.wait(timeout=10)
        admin.close()


def test_a_pod_in_a_selected_namespace_arrives_onboarded(setup):
    response = setup.post(f"/api/v1/namespaces/{BATCH_NAMESPACE}/pods", pod("spark-1", BATCH_NAMESPACE))
    assert response.status_code == 201, response.text
    stored = setup.admin.get(f"/api/v1/namespaces/{BATCH_NAMESPACE}/pods/spark-1").json()
    labels, spec = stored["metadata"]["labels"], stored["spec"]
    assert (labels[LABEL_POD_QOS], labels[LABEL_POD_SUB_PRIORITY], labels["onboarded-by"]) == ("BE", "1000", "colocation")
    assert (spec["priorityClassName"], spec["priority"], spec["schedulerName"]) == (
        PRIORITY_BATCH, PRIORITY_CLASS_VALUES[PRIORITY_BATCH], SCHEDULER)
    requests = spec["containers"][0]["resources"]["requests"]
    assert set(requests) == {BATCH_CPU, BATCH_MEMORY}
    assert (parse_quantity(requests[BATCH_CPU]), parse_quantity(requests[BATCH_MEMORY])) == (1000, 2 * 2**30)
    assert spec["containers"][0]["resources"]["limits"] == requests


def test_a_pod_elsewhere_is_left_as_written(setup):
    response = setup.post("/api/v1/namespaces/default/pods", pod("web-1", "default"))
    assert response.status_code == 201, response.text
    stored = response.json()
    assert LABEL_POD_QOS not in (stored["metadata"].get("labels") or {})
    assert set(stored["spec"]["containers"][0]["resources"]["requests"]) == {"cpu", "memory"}


def test_a_pod_in_a_namespace_created_just_before_it_is_matched_on_that_namespace_s_labels(setup):
    """The watch may not have the namespace yet; the webhook reads it rather than treat it as unknown (which
    Koordinator's webhook would let every profile match)."""
    for name, labels in (("fresh-web", {}), ("fresh-jobs", {"koordstream.io/colocation": "on"})):
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
        assert setup.post("/api/v1/namespaces", namespace).status_code == 201
        response = setup.post(f"/api/v1/namespaces/{name}/pods", pod("first", name))
        assert response.status_code == 201, response.text
        onboarded = LABEL_POD_QOS in (response.json()["metadata"].get("labels") or {})
        assert onboarded == bool(labels), (name, response.json()["metadata"])


def _koord_apply_problems(manifest: dict) -> list[str]:
    """What ``koord apply`` says of ``manifest``, each line without its file position."""
    with pytest.raises(ManifestError) as error:
        load_and_validate("-", stdin_text=yaml.safe_dump(manifest))
    return [problem.split(" ", 3)[3] for problem in error.value.problems]


INVALID = {
    "ElasticQuota min over max": ("/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/default/elasticquotas", {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
        "metadata": {"name": "team-a", "namespace": "default"},
        "spec": {"min": {"cpu": "8"}, "max": {"cpu": "4"}}}),
    "Reservation without owners": ("/apis/scheduling.koordinator.sh/v1alpha1/reservations", {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation", "metadata": {"name": "r1"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}}),
}


@pytest.mark.parametrize("path, manifest", INVALID.values(), ids=INVALID.keys())
def test_an_invalid_object_is_refused_with_koord_apply_s_message(setup, path, manifest):
    response = setup.post(path, manifest)
    assert response.status_code == 403, response.text
    message = response.json()["message"]
    assert 'admission webhook "objects.koordstream.io" denied the request' in message
    for problem in _koord_apply_problems(manifest):
        assert problem in message


def test_an_elasticquota_under_a_missing_parent_is_refused(setup):
    quota = {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
             "metadata": {"name": "team-b", "namespace": "default",
                          "labels": {"quota.scheduling.koordinator.sh/parent": "nowhere"}},
             "spec": {"min": {"cpu": "1"}, "max": {"cpu": "2"}}}
    response = setup.post("/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/default/elasticquotas", quota)
    assert response.status_code == 403, response.text
    assert "team-b has parentName nowhere but not find parentInfo in quotaInfoMap" in response.json()["message"]


def test_a_child_quota_is_admitted_once_the_watch_has_seen_its_parent(setup):
    """The tree is checked against the quotas the webhook watches: a child created right after its parent
    may be refused until the parent's ADDED event arrives (Koordinator's informer cache has the same lag)."""
    path = "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/default/elasticquotas"
    parent = {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
              "metadata": {"name": "org", "namespace": "default",
                           "labels": {"quota.scheduling.koordinator.sh/is-parent": "true"}},
              "spec": {"min": {"cpu": "4"}, "max": {"cpu": "8"}}}
    assert setup.post(path, parent).status_code == 201
    child = {**parent, "metadata": {"name": "org-team", "namespace": "default",
                                    "labels": {"quota.scheduling.koordinator.sh/parent": "org"}},
             "spec": {"min": {"cpu": "2"}, "max": {"cpu": "8"}}}
    wait_for(lambda: setup.post(path, child).status_code == 201, "the child quota to be admitted", timeout=15)
    greedy = {**child, "metadata": {**child["metadata"], "name": "org-greedy"}, "spec": {"min": {"cpu": "3"},
                                                                                        "max": {"cpu": "8"}}}
    response = setup.post(path, greedy)
    assert response.status_code == 403
    assert "checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: org" in response.json()["message"]


def test_a_valid_gang_pod_passes_the_validating_hook(setup):
    gang = pod("gang-0", "default")
    gang["metadata"]["annotations"] = {"gang.scheduling.koordinator.sh/name": "g",
                                       "gang.scheduling.koordinator.sh/min-available": "2"}
    response = setup.post("/api/v1/namespaces/default/pods", gang)
    assert response.status_code == 201, response.text
    checked = [event for event in setup.audit() if (event.get("objectRef") or {}).get("name") == "gang-0"
               and event["stage"] == "ResponseComplete"]
    assert checked and checked[0]["annotations"].get("gang.pods.koordstream.io/checked") == "true", checked


def test_a_profile_with_a_bad_probability_is_refused_with_the_field_named(setup):
    bad = {**PROFILE, "metadata": {"name": "bad"}, "spec": {"probability": 150}}
    response = setup.post(f"/apis/{API_VERSION}/clustercolocationprofiles", bad)
    assert response.status_code == 403, response.text
    assert "spec.probability: must be between 0 and 100" in response.json()["message"]


RATIO = "node.koordinator.sh/resource-amplification-ratio"
RAW = "node.koordinator.sh/raw-allocatable"


def kubelet_status_update(setup: Setup, name: str, cpu: str, memory: str = "16Gi"):
    """What kubelet sends: its own allocatable, through ``nodes/status``."""
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110"}
    return setup.admin.patch(f"/api/v1/nodes/{name}/status",
                             json={"status": {"allocatable": allocatable, "capacity": allocatable}},
                             headers={"Content-Type": "application/strategic-merge-patch+json"})


def test_a_kubelet_status_update_of_an_amplified_node_arrives_amplified(setup):
    """Issue 40 item 2: a node carrying the amplification ratio the bridge writes gets the amplified cpu on
    every kubelet status update, its raw allocatable kept in ``raw-allocatable``, as Koordinator's node
    webhook does; kubelet's new allocatable becomes the raw one."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "amp-n1", "annotations": {RATIO: '{"cpu":1.20}'}},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}
    assert setup.post("/api/v1/nodes", node).status_code == 201
    for cpu, amplified in (("8", "9600m"), ("6", "7200m")):
        response = kubelet_status_update(setup, "amp-n1", cpu)
        assert response.status_code == 200, response.text
        shown = setup.admin.get("/api/v1/nodes/amp-n1").json()
        assert shown["status"]["allocatable"]["cpu"] == amplified
        assert shown["status"]["allocatable"]["memory"] == "16Gi"
        assert json.loads(shown["metadata"]["annotations"][RAW]) == {"cpu": cpu, "memory": "16Gi"}
    plain = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "plain-n1"},
             "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}
    assert setup.post("/api/v1/nodes", plain).status_code == 201
    assert kubelet_status_update(setup, "plain-n1", "4").status_code == 200
    assert setup.admin.get("/api/v1/nodes/plain-n1").json()["status"]["allocatable"]["cpu"] == "4"


def test_with_the_webhook_stopped_pods_are_still_admitted(setup):
    assert setup.stop() == 0, setup.log()
    for namespace in ("default", "kube-system", BATCH_NAMESPACE):
        response = setup.post(f"/api/v1/namespaces/{namespace}/pods", pod("after-stop", namespace))
        assert response.status_code == 201, response.text
        assert set(response.json()["spec"]["containers"][0]["resources"]["requests"]) == {"cpu", "memory"}
    response = kubelet_status_update(setup, "amp-n1", "4")
    assert response.status_code == 200, "a kubelet's status update is never refused: " + response.text
    assert response.json()["status"]["allocatable"]["cpu"] == "4"
