"""Descheduling end to end on the embedded broker: a DeschedulerConfiguration applied with ``koord apply``, a hot
node beside a cool one, LowNodeLoad's PodMigrationJob with its status written back, the Eviction decision,
``koord explain pod`` saying why the pod was moved, and ``koord replay scheduling`` reproducing the eviction.

The configuration's ``nodeSelector`` keeps the rounds to this scenario's nodes, so the other tests' nodes in
the shared cluster are never candidates; the configuration is deleted at the end.
"""

from __future__ import annotations

import datetime
import json
import time

import pytest

from tests.integration.manifests import scenario_node

pytestmark = [pytest.mark.integration, pytest.mark.scenario]

SCENARIO = "deschedule"
CONFIG = f"""\
apiVersion: descheduler/v1alpha2
kind: DeschedulerConfiguration
deschedulingInterval: 1s
nodeSelector: {{matchLabels: {{e2e-scenario: {SCENARIO}}}}}
profiles:
- name: koord-descheduler
  plugins:
    balance: {{enabled: [{{name: LowNodeLoad}}]}}
  pluginConfig:
  - name: LowNodeLoad
    args:
      lowThresholds: {{cpu: 30}}
      highThresholds: {{cpu: 50}}
      anomalyCondition: {{consecutiveAbnormalities: 1}}
  - name: MigrationController
    args: {{defaultJobMode: EvictDirectly}}
"""


def node(name: str) -> str:
    return scenario_node(name, SCENARIO, cpu="8", memory="32Gi")


def pod(name: str, node_name: str) -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: e2e-desched
  ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: web, uid: rs-web-uid, controller: true}}]
spec:
  nodeName: {node_name}
  nodeSelector: {{e2e-scenario: {SCENARIO}}}
  tolerations: [{{key: e2e-scenario, operator: Equal, value: {SCENARIO}, effect: NoSchedule}}]
  containers:
  - {{name: main, image: app, resources: {{requests: {{cpu: "1", memory: 1Gi}}}}}}
"""


def node_metric(name: str, pods: list[str]) -> str:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    used = [{"namespace": "e2e-desched", "name": p, "podUsage": {"resources": {"cpu": "1", "memory": "1Gi"}}}
            for p in pods]
    document = {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": {"name": name},
                "status": {"updateTime": now, "nodeMetric": {"nodeUsage": {"resources": {
                    "cpu": str(len(pods)), "memory": f"{len(pods)}Gi"}}}, "podsMetric": used}}
    return f"# YAML flow style\n{json.dumps(document)}\n"


def apply(cluster, *manifests: str) -> None:
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input="---\n".join(manifests))


def test_a_hot_node_gets_a_migration_job_and_its_pod_an_eviction(cluster):
    hot = [f"desched-web-{i}" for i in range(5)]
    apply(cluster, node("desched-hot"), node("desched-cool"))
    apply(cluster, *[pod(name, "desched-hot") for name in hot], pod("desched-web-cool", "desched-cool"))
    apply(cluster, node_metric("desched-hot", hot), node_metric("desched-cool", ["desched-web-cool"]))
    try:
        apply(cluster, CONFIG)
        deadline, jobs = time.monotonic() + 60, []
        while time.monotonic() < deadline:
            jobs = [j for j in json.loads(cluster.koord("get", "podmigrationjobs", "-o", "json").stdout)["items"]
                    if j["spec"]["podRef"]["namespace"] == "e2e-desched"]
            if any((j.get("status") or {}).get("phase") == "Succeeded" for j in jobs):
                break
            time.sleep(0.5)
        done = [j for j in jobs if (j.get("status") or {}).get("phase") == "Succeeded"]
        # 5 cpu used of 8 is over the 50 % high threshold (4 cpu); moving one pod brings it to 4: one job.
        assert len(done) == 1, jobs
        moved = done[0]["spec"]["podRef"]["name"]
        assert moved in hot
        assert done[0]["metadata"]["annotations"]["koordinator.sh/evict-reason"] == (
            "node is overutilized, node cpu usage(62.50%)>threshold(50.00%)")
        explained = cluster.koord_json("explain", "pod", moved, "-n", "e2e-desched")
        [eviction] = explained["evictions"]
        assert eviction["nodeName"] == "desched-hot" and eviction["reason"] == "Descheduled"
        assert "node cpu usage(62.50%)>threshold(50.00%)" in eviction["message"]
        replayed = cluster.koord("replay", "scheduling", "-o", "json", check=False, timeout=120)
        report = json.loads(replayed.stdout)
        assert report["ok"] and report["outputs"]["Eviction"]["reproduced"] >= 1, report
    finally:
        cluster.koord("delete", "deschedulerconfiguration", "koord-descheduler", check=False)
