"""Issue 4 end to end: Koordinator's batch/mid numbers from config, Node, Pods and NodeMetric on the real broker.

The case is the pure end-to-end one (``tests/streams/noderesource/test_end_to_end.py``): Koordinator's
batchresource ``TestPluginCalculate/calculate with memory usage`` with the midresource NodeMetric's
``prodReclaimableMetric``. Here every object goes through ``koord apply --wait``; the pods arrive with
``spec.nodeName`` set, so the scheduler publishes them as ``Bound`` and the node aggregate counts them;
the node is tainted so that no pending pod of another test in the shared cluster is scheduled onto it.
The NodeMetric's updateTime is the wall clock at apply time, so it is fresh for the aggregate (whose time
is the event's timestamp).
"""

from __future__ import annotations

import datetime

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from state.db import open_database
from state.models import NodeResource
from tests.integration.manifests import COLOCATION_CONFIG, pre_bound_node

pytestmark = [pytest.mark.integration, pytest.mark.scenario]

NODE = "nr-e2e-node"
NAMESPACE = "nr-e2e"
G = 10**9

NODE_YAML = pre_bound_node(NODE, cpu="100", memory="120G")


def _pod(name: str, labels: str, containers: str) -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {NAMESPACE}, labels: {{{labels}}}}}
spec:
  nodeName: {NODE}
  containers:
{containers}"""


PODS = "---\n".join([
    _pod("pod-a", "koordinator.sh/qosClass: LS",
         '  - {name: main, image: app, resources: {requests: {cpu: "20", memory: 20G}}}\n'),
    _pod("pod-b", "koordinator.sh/qosClass: BE", "  - {name: main, image: batch}\n"),
    _pod("pod-c", "",
         '  - {name: a, image: db, resources: {requests: {cpu: "10", memory: 20G}, limits: {cpu: "10", memory: 20G}}}\n'
         '  - {name: b, image: db, resources: {requests: {cpu: "10", memory: 20G}, limits: {cpu: "10", memory: 20G}}}\n'),
])


def _node_metric(update_time: str) -> str:
    return f"""\
apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeMetric
metadata: {{name: {NODE}}}
status:
  updateTime: "{update_time}"
  nodeMetric:
    nodeUsage: {{resources: {{cpu: "50", memory: 55G}}}}
    systemUsage: {{resources: {{cpu: "7", memory: 12G}}}}
  podsMetric:
  - {{namespace: {NAMESPACE}, name: pod-a, podUsage: {{resources: {{cpu: "11", memory: 11G}}}}}}
  - {{namespace: {NAMESPACE}, name: pod-b, podUsage: {{resources: {{cpu: "10", memory: 10G}}}}}}
  - {{namespace: {NAMESPACE}, name: pod-c, podUsage: {{resources: {{cpu: "22", memory: 22G}}}}}}
  prodReclaimableMetric:
    resource: {{resources: {{cpu: "10", memory: 15G}}}}
"""


EXPECTED_MESSAGE = "; ".join((
    "batchAllocatable[CPU(Milli-Core)]:25000 = nodeCapacity:100000 - nodeSafetyMargin:35000 - "
    "systemUsageOrNodeReserved:7000 - podHPUsed:33000",
    "batchAllocatable[Mem(GB)]:33 = nodeCapacity:120 - nodeSafetyMargin:42 - systemUsage:12 - podHPUsed:33",
    "midAllocatable[CPU(milli-core)]:10000 = min(min(ProdReclaimable:10000, NodeUnused:50000) + "
    "Unallocated:53000 * midUnallocatedRatio:0, NodeCapacity:100000 * thresholdRatio:1)",
    "midAllocatable[Memory(GB)]:15 = min(min(ProdReclaimable:15, NodeUnused:65) + "
    "Unallocated:48 * midUnallocatedRatio:0, NodeCapacity:120 * thresholdRatio:1)",
))


def test_apply_config_node_pods_and_metric_then_get_node_shows_koordinators_numbers(cluster):
    for manifest in (COLOCATION_CONFIG, NODE_YAML, PODS):
        cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=manifest)
    pods = {p["metadata"]["name"]: p for p in cluster.koord_json("get", "pods", "-n", NAMESPACE)["items"]}
    assert {name: pod["spec"].get("nodeName") for name, pod in pods.items()} == dict.fromkeys(pods, NODE)
    assert sorted(pods) == ["pod-a", "pod-b", "pod-c"]

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=_node_metric(now))

    node = cluster.koord_json("get", "nodes", NODE)
    expected = {"kubernetes.io/batch-cpu": "25000", "kubernetes.io/batch-memory": "33G",
                "kubernetes.io/mid-cpu": "10000", "kubernetes.io/mid-memory": "15G"}
    for field in ("capacity", "allocatable"):
        shown = node["status"][field]
        assert {name: shown.get(name) for name in expected} == expected, field
    annotations = node["metadata"]["annotations"]
    assert annotations["node.koordinator.sh/cpu-normalization-ratio"] == "1.00"

    engine = open_database(cluster.env["KOORD_DATABASE_URL"])
    with Session(engine) as session:
        latest = session.scalars(select(NodeResource).where(NodeResource.node_name == NODE)
                                 .order_by(NodeResource.topic_offset.desc()).limit(1)).one()
    assert latest.message == EXPECTED_MESSAGE, latest.message
    assert latest.allocatable["kubernetes.io/batch-cpu"] == 25_000
    assert latest.allocatable["kubernetes.io/batch-memory"] == 33 * G
