"""Priority preemption end to end on the embedded broker: a high-priority pod preempts a low-priority one, whose
decisions and eviction name the preemptor; a PodDisruptionBudget that allows no disruption steers the
preemption to the node whose pod it does not protect."""

from __future__ import annotations

import time

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.scenario]

NAMESPACE = "e2e-preempt"


def node(name: str, scenario: str) -> str:
    resources = '{cpu: "2", memory: 8Gi, pods: "110"}'
    return f"""\
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{e2e-scenario: {scenario}}}}}
spec: {{taints: [{{key: e2e-scenario, value: {scenario}, effect: NoSchedule}}]}}
status: {{capacity: {resources}, allocatable: {resources}}}
"""


def pod(name: str, scenario: str, priority: int, node_name: str = "", app: str = "") -> str:
    bound = f"\n  nodeName: {node_name}" if node_name else ""
    labels = f"{{app: {app}}}" if app else "{}"
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {NAMESPACE}, labels: {labels}}}
spec:
  priority: {priority}{bound}
  nodeSelector: {{e2e-scenario: {scenario}}}
  tolerations: [{{key: e2e-scenario, operator: Equal, value: {scenario}, effect: NoSchedule}}]
  containers:
  - {{name: main, image: app, resources: {{requests: {{cpu: "2", memory: 1Gi}}}}}}
"""


def apply(cluster, *manifests: str) -> None:
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input="---\n".join(manifests))


def latest(cluster, name: str) -> dict:
    return cluster.koord_json("explain", "pod", name, "-n", NAMESPACE)


def wait_for_eviction(cluster, name: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        explained = latest(cluster, name)
        if explained.get("evictions"):
            return explained
        time.sleep(0.3)
    return latest(cluster, name)


def test_a_high_priority_pod_preempts_a_low_priority_one(cluster):
    apply(cluster, node("preempt-a", "preempt"))
    apply(cluster, pod("batch-job", "preempt", 10, node_name="preempt-a"))
    apply(cluster, pod("critical", "preempt", 1000))
    assert cluster.koord_json("get", "pods", "critical", "-n", NAMESPACE)["spec"]["nodeName"] == "preempt-a"
    victim = wait_for_eviction(cluster, "batch-job")
    preempted = next(d for d in victim["decisions"] if d["result"] == "Preempted")
    assert preempted["message"] == f"Preempted by {NAMESPACE}/critical on node preempt-a"
    assert victim["evictions"][0]["reason"] == "Preempted"


def test_a_disruption_budget_protects_its_pod_and_the_other_node_is_preempted(cluster):
    budget = f"""\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: guarded, namespace: {NAMESPACE}}}
spec: {{selector: {{matchLabels: {{app: guarded}}}}, minAvailable: 1}}
status: {{disruptionsAllowed: 0}}
"""
    apply(cluster, node("pdb-a", "pdb"), node("pdb-b", "pdb"), budget)
    apply(cluster, pod("guarded-0", "pdb", 10, node_name="pdb-a", app="guarded"),
          pod("free-0", "pdb", 10, node_name="pdb-b"))
    apply(cluster, pod("urgent", "pdb", 1000))
    assert cluster.koord_json("get", "pods", "urgent", "-n", NAMESPACE)["spec"]["nodeName"] == "pdb-b"
    assert wait_for_eviction(cluster, "free-0")["evictions"]
    assert not latest(cluster, "guarded-0").get("evictions")
