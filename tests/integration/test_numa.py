"""Issue 4, item 3 end to end: NUMA-level batch resources from a NodeResourceTopology on the real broker.

The case is Koordinator's batchresource ``TestPluginCalculate/calculate with multiple NUMA-level
resources`` (``tests/streams/nodeaggregate/test_node_numa.py`` runs it on the pure core): a
100-core / 120G node whose NodeResourceTopology lists two zones (50 cores / 62G and 50 cores / 58G),
pods of every priority class, podProd pinned to NUMA node 0 by its ``scheduling.koordinator.sh/resource-status``
annotation. Every object goes through ``koord apply --wait``; the pods arrive with ``spec.nodeName``, so the
scheduler publishes them as ``Bound`` with that annotation passed through. The NodeMetric's updateTime is the
wall clock at apply time, so it is fresh for the aggregate.
"""

from __future__ import annotations

import datetime
import json

import pytest

from tests.integration.manifests import COLOCATION_CONFIG, pre_bound_node

pytestmark = [pytest.mark.integration, pytest.mark.scenario]

NODE = "numa-e2e-node"
NAMESPACE = "numa-e2e"

NODE_YAML = pre_bound_node(NODE, cpu="100", memory="120G")

TOPOLOGY = f"""\
apiVersion: topology.node.k8s.io/v1alpha1
kind: NodeResourceTopology
metadata: {{name: {NODE}}}
topologyPolicies: [None]
zones:
- name: node-0
  type: Node
  resources:
  - {{name: cpu, capacity: "50", allocatable: "50", available: "50"}}
  - {{name: memory, capacity: 62G, allocatable: 62G, available: 62G}}
- name: node-1
  type: Node
  resources:
  - {{name: cpu, capacity: "50", allocatable: "50", available: "50"}}
  - {{name: memory, capacity: 58G, allocatable: 58G, available: 58G}}
"""

RESOURCE_STATUS = '{"numaNodeResources":[{"node":0,"resources":{"cpu":"10","memory":"10G"}}]}'


def _pod(name: str, qos: str, priority: int, cpu: str, memory: str, annotations: str = "") -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {NAMESPACE}
  labels: {{koordinator.sh/qosClass: {qos}}}
  annotations: {{{annotations}}}
spec:
  nodeName: {NODE}
  priority: {priority}
  containers:
  - {{name: main, image: app, resources: {{requests: {{cpu: "{cpu}", memory: {memory}}}}}}}
"""


PODS = "---\n".join([
    _pod("pod-prod", "LS", 9100, "10", "10G", f"scheduling.koordinator.sh/resource-status: '{RESOURCE_STATUS}'"),
    _pod("pod-prod1", "LSR", 9100, "10", "10G"),
    _pod("pod-batch", "BE", 5100, "10", "10G"),
    _pod("pod-mid", "BE", 7100, "20", "40G"),
])


def _node_metric(update_time: str) -> str:
    usage = {"pod-prod": ("5", "5G"), "pod-prod1": ("6", "6G"), "pod-batch": ("10", "10G"), "pod-mid": ("22", "22G")}
    pods = "".join(f"  - {{namespace: {NAMESPACE}, name: {name}, podUsage: {{resources: {{cpu: \"{cpu}\", "
                   f"memory: {memory}}}}}}}\n" for name, (cpu, memory) in usage.items())
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
{pods}"""


def test_node_resource_topology_gives_koordinators_numa_level_batch_resources(cluster):
    for manifest in (COLOCATION_CONFIG, NODE_YAML, TOPOLOGY, PODS):
        cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=manifest)
    pods = cluster.koord_json("get", "pods", "-n", NAMESPACE)["items"]
    assert {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods} == {
        "pod-batch": NODE, "pod-mid": NODE, "pod-prod": NODE, "pod-prod1": NODE}

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=_node_metric(now))

    node = cluster.koord_json("get", "nodes", NODE)
    allocatable = node["status"]["allocatable"]
    assert (allocatable["kubernetes.io/batch-cpu"], allocatable["kubernetes.io/batch-memory"]) == ("25000", "33G")
    assert json.loads(node["metadata"]["annotations"]["koordstream.io/numa-zone-resources"]) == [
        {"name": "node-0", "resources": {"kubernetes.io/batch-cpu": "10000", "kubernetes.io/batch-memory": "15300M"}},
        {"name": "node-1", "resources": {"kubernetes.io/batch-cpu": "15000", "kubernetes.io/batch-memory": "17700M"}},
    ]

    topology = cluster.koord_json("get", "noderesourcetopologies", NODE)
    zones = {zone["name"]: {entry["name"]: entry for entry in zone["resources"]} for zone in topology["zones"]}
    for zone, (cpu, memory) in {"node-0": ("10000", "15300M"), "node-1": ("15000", "17700M")}.items():
        assert [entry["name"] for entry in topology["zones"][int(zone[-1])]["resources"]] == [
            "cpu", "kubernetes.io/batch-cpu", "kubernetes.io/batch-memory", "memory"]
        assert zones[zone]["kubernetes.io/batch-cpu"] == {
            "name": "kubernetes.io/batch-cpu", "capacity": cpu, "allocatable": cpu, "available": cpu}
        assert zones[zone]["kubernetes.io/batch-memory"]["allocatable"] == memory
