"""PodMigrationJobs end to end on the embedded broker (issue 18): a ReservationFirst job reserves a place, evicts
the pod once the reservation is placed, and the workload's replacement binds the reservation; a burst of 50 jobs
for one node is held to ``maxMigratingPerNode`` (2 Running, the other 48 waiting, ``koord explain pod`` naming
the limit), and a job the user aborts frees its place for a waiting one.

The pods are pre-bound on this scenario's tainted nodes and owned by ReplicaSets (two replicas each, so the
expected-replicas rule forbids no move). The cluster carries the eviction out as Kubernetes would: the test
applies the evicted pod as Failed and the ReplicaSet's replacement. The DeschedulerConfiguration (only
MigrationController's args) is deleted at the end.
"""

from __future__ import annotations

import json
import time

import pytest

from tests.integration.manifests import scenario_node

pytestmark = [pytest.mark.integration, pytest.mark.scenario]

SCENARIO = "migrate"
NAMESPACE = "e2e-migrate"
CONFIG = """\
apiVersion: descheduler/v1alpha2
kind: DeschedulerConfiguration
deschedulingInterval: 1s
profiles:
- name: koord-descheduler
  pluginConfig:
  - name: MigrationController
    args: {maxMigratingPerNode: 2}
"""


def node(name: str) -> str:
    return scenario_node(name, SCENARIO, cpu="64", memory="256Gi", pods="200")


def pod(name: str, workload: str, node_name: str | None, phase: str | None = None) -> str:
    bound = f"\n  nodeName: {node_name}" if node_name else ""
    status = f"\nstatus: {{phase: {phase}}}" if phase else ""
    return f"""\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {NAMESPACE}
  labels: {{app: {workload}}}
  ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: {workload}, uid: rs-{workload}, controller: true}}]
spec:{bound}
  nodeSelector: {{e2e-scenario: {SCENARIO}}}
  tolerations: [{{key: e2e-scenario, operator: Equal, value: {SCENARIO}, effect: NoSchedule}}]
  containers:
  - {{name: main, image: app, resources: {{requests: {{cpu: 500m, memory: 1Gi}}}}}}{status}
"""


def job(name: str, pod_name: str, phase: str | None = None) -> str:
    status = f"\nstatus: {{phase: {phase}}}" if phase else ""
    return f"""\
apiVersion: scheduling.koordinator.sh/v1alpha1
kind: PodMigrationJob
metadata: {{name: {name}}}
spec:
  mode: ReservationFirst
  podRef: {{namespace: {NAMESPACE}, name: {pod_name}}}{status}
"""


def apply(cluster, *manifests: str, wait: bool = True) -> None:
    args = ["apply", "-f", "-"] + (["--wait", "--timeout", "60"] if wait else [])
    cluster.koord(*args, input="---\n".join(manifests))


def jobs(cluster, prefix: str) -> dict[str, dict]:
    items = json.loads(cluster.koord("get", "podmigrationjobs", "-o", "json").stdout)["items"]
    return {j["metadata"]["name"]: j for j in items if j["metadata"]["name"].startswith(prefix)}


def until(condition, timeout_s: float, what: str):
    deadline, value = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}; last: {value!r}")


def phase(job_record: dict) -> str | None:
    return (job_record.get("status") or {}).get("phase")


def test_reservation_first_then_a_burst_held_to_the_per_node_limit(cluster):
    apply(cluster, node("migrate-a"), node("migrate-b"))
    apply(cluster, pod("rf-web-0", "rf-web", "migrate-a"), pod("rf-web-1", "rf-web", "migrate-b"))
    apply(cluster, CONFIG)
    try:
        apply(cluster, job("rf-move", "rf-web-0"), wait=False)
        until(lambda: phase(jobs(cluster, "rf-move").get("rf-move", {})) in ("Running", "Succeeded"), 60,
              "the ReservationFirst job to run")
        explained = until(lambda: cluster.koord_json("explain", "pod", "rf-web-0", "-n", NAMESPACE).get("evictions"),
                          60, "the eviction of rf-web-0")
        assert explained[0]["nodeName"] == "migrate-a", explained
        reservations = json.loads(cluster.koord("get", "reservations", "-o", "json").stdout)["items"]
        [made] = [r for r in reservations if any(o.get("controller", {}).get("name") == "rf-web"
                                                  for o in r["spec"].get("owners", []))]
        assert (made.get("status") or {}).get("nodeName") == "migrate-b", made
        apply(cluster, pod("rf-web-0", "rf-web", "migrate-a", phase="Failed"),
              pod("rf-web-2", "rf-web", None))
        done = until(lambda: phase(jobs(cluster, "rf-move")["rf-move"]) == "Succeeded" and
                     jobs(cluster, "rf-move")["rf-move"], 60, "the job to succeed")
        assert f'in Reservation "{made["metadata"]["name"]}"' in done["status"]["message"], done
        assert cluster.koord_json("get", "pods", "rf-web-2", "-n", NAMESPACE)["spec"]["nodeName"] == "migrate-b"

        burst = [pod(f"burst-{i:02d}", f"burst-w{i:02d}", "migrate-a") for i in range(50)]
        burst += [pod(f"burst-spare-{i:02d}", f"burst-w{i:02d}", "migrate-b") for i in range(50)]
        apply(cluster, *burst)
        apply(cluster, *[job(f"burst-move-{i:02d}", f"burst-{i:02d}") for i in range(50)], wait=False)
        def running() -> list[str]:
            found = jobs(cluster, "burst-move-")
            return sorted(name for name, j in found.items() if phase(j) == "Running") if len(found) == 50 else []
        until(running, 90, "two of the 50 jobs to run")
        time.sleep(5)
        found = jobs(cluster, "burst-move-")
        assert len(running()) == 2, {name: phase(j) for name, j in found.items()}
        first = running()
        assert all(phase(j) in (None, "Pending") for name, j in found.items() if name not in first)
        waiting = next(name for name in sorted(found) if name not in first)
        [held] = cluster.koord_json("explain", "pod", waiting.replace("-move", ""), "-n", NAMESPACE)["migrationJobs"]
        assert held["heldBy"] == 'maxMigratingPerNode: 2 pods migrating on node "migrate-a"', held

        aborted = first[0]
        apply(cluster, job(aborted, aborted.replace("-move", ""), phase="Aborted"), wait=False)
        until(lambda: phase(jobs(cluster, aborted)[aborted]) == "Aborted" and len(set(running()) - {aborted}) == 2,
              60, "the aborted job to free its place for a waiting one")
    finally:
        cluster.koord("delete", "deschedulerconfiguration", "koord-descheduler", check=False)
