"""The admission core: AdmissionReview in, answer out (``streams.webhook.review``)."""

from __future__ import annotations

import base64
import json

from streams.colocationprofile.profile import parse_profile
from streams.koordinator.colocationprofile import API_VERSION, KIND
from streams.koordinator.labels import LABEL_POD_QOS
from streams.koordinator.resources import BATCH_CPU, BATCH_MEMORY
from streams.webhook.review import ClusterView, mutate, validate

PROFILE = parse_profile({"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "batch"},
                         "spec": {"namespaceSelector": {"matchLabels": {"colocation": "on"}}, "qosClass": "BE"}})
VIEW = ClusterView(profiles={"batch": PROFILE}, namespaces={"jobs": {"colocation": "on"}, "web": {}})


def request(kind: str, operation: str, obj: dict | None, namespace: str = "", name: str = "") -> dict:
    return {"uid": "u-1", "kind": {"group": "", "version": "v1", "kind": kind}, "operation": operation,
            "namespace": namespace, "name": name, "object": obj}


def pod(namespace: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": namespace},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]}}


def test_a_pod_in_a_selected_namespace_gets_a_patch():
    answer = mutate(request("Pod", "CREATE", pod("jobs"), "jobs"), VIEW)["response"]
    assert answer["allowed"] and answer["uid"] == "u-1" and answer["patchType"] == "JSONPatch"
    patch = {op["path"]: op["value"] for op in json.loads(base64.b64decode(answer["patch"]))}
    assert patch["/metadata"]["labels"] == {LABEL_POD_QOS: "BE"}
    assert patch["/spec"]["containers"][0]["resources"]["requests"] == {BATCH_CPU: "500", BATCH_MEMORY: "1Gi"}


def test_a_pod_elsewhere_gets_no_patch():
    answer = mutate(request("Pod", "CREATE", pod("web"), "web"), VIEW)["response"]
    assert answer == {"uid": "u-1", "allowed": True}


def test_a_request_it_does_not_serve_is_allowed_with_a_warning():
    mutated = mutate(request("Pod", "UPDATE", pod("jobs"), "jobs"), VIEW)["response"]
    validated = validate(request("Secret", "CREATE", {"apiVersion": "v1", "kind": "Secret",
                                                      "metadata": {"name": "s", "namespace": "web"}}), VIEW)["response"]
    for answer in (mutated, validated):
        assert answer["allowed"] and answer["warnings"], answer


def test_a_missing_priority_class_refuses_the_pod():
    profile = parse_profile({"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "batch"},
                             "spec": {"priorityClassName": "koord-batch"}})
    answer = mutate(request("Pod", "CREATE", pod("web"), "web"), ClusterView(profiles={"batch": profile}))["response"]
    assert not answer["allowed"]
    assert answer["status"]["message"].startswith('spec.priorityClassName: priorityclasses.scheduling.k8s.io')


def quota(name: str, parent: str | None = None, is_parent: bool = False, cpu_min: str = "1") -> dict:
    labels = {"quota.scheduling.koordinator.sh/is-parent": str(is_parent).lower()}
    if parent:
        labels["quota.scheduling.koordinator.sh/parent"] = parent
    return {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
            "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {"min": {"cpu": cpu_min}, "max": {"cpu": "10"}}}


def test_the_quota_tree_is_checked_against_the_quotas_in_the_cluster():
    from streams.objects import to_record
    from streams.objects.documents import Document

    view = ClusterView(quotas={"root-a": to_record(Document("t", 0, 1, quota("root-a", is_parent=True,
                                                                              cpu_min="2"))).record})
    fits = validate(request("ElasticQuota", "CREATE", quota("child", "root-a", cpu_min="2")), view)["response"]
    too_big = validate(request("ElasticQuota", "CREATE", quota("child", "root-a", cpu_min="3")), view)["response"]
    assert fits["allowed"]
    assert not too_big["allowed"]
    assert "checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: root-a" in too_big["status"]["message"]


def test_a_bad_slo_controller_config_is_refused():
    config = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": "slo-controller-config", "namespace": "koordinator-system"},
              "data": {"colocation-config": "{not json"}}
    answer = validate(request("ConfigMap", "UPDATE", config), ClusterView())["response"]
    assert not answer["allowed"] and "colocation-config" in answer["status"]["message"]
