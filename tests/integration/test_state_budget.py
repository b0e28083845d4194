"""Issue 37 failure 3 on both brokers: valid objects whose state entries used to be over 1 MiB (a Pod of
400,000 ``"`` in a manifest field, a 790 KB PodGroup) no longer stop the worker; an object whose stored form
is still over the state budget is refused by ``koord apply`` and dead-lettered by the router. Records are
produced raw to koord.pods and koord.podgroups, as ``koord apply`` would without its checks; afterwards the
worker runs and a following pod is decided."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from streams import kafka
from streams.objects.documents import Document
from streams.objects.records import to_record
from streams.schemas import codec

pytestmark = pytest.mark.integration

NAMESPACE = "state-budget"
TOLERATION = {"key": "koordstream.io/e2e", "operator": "Equal", "value": "state-budget", "effect": "NoSchedule"}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "state-budget-node"},
        "spec": {"taints": [{"key": "koordstream.io/e2e", "value": "state-budget", "effect": "NoSchedule"}]},
        "status": {"capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                   "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}


def _pod(name: str, args: list[str] | None = None, excluded_zones: int = 0) -> dict:
    spec = {"tolerations": [TOLERATION],
            "containers": [{"name": "main", "image": "nginx", "args": args or [],
                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}
    if excluded_zones:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ['"' * 50] * excluded_zones}]}]}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec}


QUOTES_POD = _pod("quotes", args=['"' * 400_000])
OVER_BUDGET_POD = _pod("over-budget", excluded_zones=8_000)
BIG_POD_GROUP = {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "PodGroup",
                 "metadata": {"name": "big", "namespace": NAMESPACE},
                 "spec": {"minMember": 1, "description": "x" * 790_000}}


def _raw(cluster, *manifests: dict) -> None:
    """Produce the records ``koord apply`` would make, without its checks."""
    sends = []
    for manifest in manifests:
        record = to_record(Document("raw", 0, 0, manifest))
        sends.append((cluster.topology.name(record.topic), record.key, codec.encode(record.schema, record.record)))
    asyncio.run(kafka.produce(cluster.bootstrap, sends))


def _node_of(cluster, name: str, timeout_s: float = 90) -> str | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for pod in cluster.koord_json("get", "pods", "-n", NAMESPACE)["items"]:
            if pod["metadata"]["name"] == name and pod["spec"].get("nodeName"):
                return pod["spec"]["nodeName"]
        time.sleep(1)
    return None


def _dead_letter(cluster, key: str, timeout_s: float = 60) -> dict | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = [d for d in cluster.koord_json("get", "deadletters")["items"] if d.get("key") == key]
        if found:
            return found[0]
        time.sleep(1)
    return None


def test_objects_once_over_a_mib_in_the_state_leave_the_worker_running_and_the_next_pod_decided(cluster):
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "90", input=json.dumps(NODE))
    _raw(cluster, BIG_POD_GROUP, QUOTES_POD, OVER_BUDGET_POD)

    refused = cluster.koord("apply", "-f", "-", input=json.dumps(OVER_BUDGET_POD), check=False)
    assert refused.returncode != 0
    assert f"Pod {NAMESPACE}/over-budget" in refused.stderr and "budget of a stored object" in refused.stderr

    letter = _dead_letter(cluster, f"{NAMESPACE}/over-budget")
    assert letter is not None and "budget of a stored object" in json.dumps(letter)
    assert _node_of(cluster, "quotes") == "state-budget-node"
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "90", input=json.dumps(_pod("after")))
    assert _node_of(cluster, "after") == "state-budget-node"
    assert cluster.worker.poll() is None, cluster.worker_log()[-3000:]
    assert "MessageSizeTooLarge" not in cluster.worker_log()
