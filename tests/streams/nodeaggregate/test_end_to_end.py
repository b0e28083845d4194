"""End to end without a broker: the manifests a user applies, decoded as ``koord apply`` decodes them,
through the node aggregate, give Koordinator's numbers and messages.

The documented case is Koordinator's batchresource ``TestPluginCalculate/calculate with memory usage``
(fixture ``getTestPodList``/``getTestResourceMetrics``: node 100 cores / 120G, reclaim 65 %) with the
NodeMetric also carrying koordlet's ``prodReclaimableMetric`` of midresource ``TestPluginCalculate/calculate
correctly when node metric is valid`` (10 cores / 15G). The pods reach the node aggregate as the
SchedulingDecisions the scheduler publishes for them (``Bound``: they arrived with ``spec.nodeName``).
"""

from __future__ import annotations

import json

from streams.nodeaggregate import node as aggregate
from streams.nodeaggregate.settings import DEFAULT_SETTINGS
from streams.objects.records import load_and_validate
from streams.schemas import codec
from streams.sloconfig.configmap import DEFAULT_CONFIG, parse_slo_config
from tests.streams.noderesource.support import G, decision, event

MANIFESTS = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: slo-controller-config, namespace: koordinator-system}
data:
  colocation-config: |
    {"enable": true, "cpuReclaimThresholdPercent": 65, "memoryReclaimThresholdPercent": 65,
     "degradeTimeMinutes": 15, "updateTimeThresholdSeconds": 300, "resourceDiffThreshold": 0.1}
---
apiVersion: v1
kind: Node
metadata: {name: test-node1}
status:
  capacity: {cpu: "100", memory: 120G, pods: "110"}
  allocatable: {cpu: "100", memory: 120G, pods: "110"}
---
apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeMetric
metadata: {name: test-node1}
status:
  updateTime: "2023-11-14T22:13:20Z"
  nodeMetric:
    nodeUsage: {resources: {cpu: "50", memory: 55G}}
    systemUsage: {resources: {cpu: "7", memory: 12G}}
  podsMetric:
  - {namespace: test, name: podA, podUsage: {resources: {cpu: "11", memory: 11G}}}
  - {namespace: test, name: podB, podUsage: {resources: {cpu: "10", memory: 10G}}}
  - {namespace: test, name: podC, podUsage: {resources: {cpu: "22", memory: 22G}}}
  prodReclaimableMetric:
    resource: {resources: {cpu: "10", memory: 15G}}
"""
UPDATE_TIME = 1_700_000_000_000
"""2023-11-14T22:13:20Z."""

PODS = [decision("podA", cpu=20_000, memory=20 * G, qos="LS"),
        decision("podB", cpu=0, memory=0, qos="BE"),
        decision("podC", cpu=20_000, memory=40 * G, qos="LSR")]
"""podA: qosClass LS, 20/20G; podB: BE without resources; podC: no labels, 2 x (10/20G) Guaranteed -> LSR."""

EXPECTED_MESSAGE = "; ".join((
    "batchAllocatable[CPU(Milli-Core)]:25000 = nodeCapacity:100000 - nodeSafetyMargin:35000 - "
    "systemUsageOrNodeReserved:7000 - podHPUsed:33000",
    "batchAllocatable[Mem(GB)]:33 = nodeCapacity:120 - nodeSafetyMargin:42 - systemUsage:12 - podHPUsed:33",
    "midAllocatable[CPU(milli-core)]:10000 = min(min(ProdReclaimable:10000, NodeUnused:50000) + "
    "Unallocated:53000 * midUnallocatedRatio:0, NodeCapacity:100000 * thresholdRatio:1)",
    "midAllocatable[Memory(GB)]:15 = min(min(ProdReclaimable:15, NodeUnused:65) + "
    "Unallocated:48 * midUnallocatedRatio:0, NodeCapacity:120 * thresholdRatio:1)",
))


def test_manifests_give_koordinators_numbers_and_message(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text(MANIFESTS)
    configmap, node, node_metric = load_and_validate(path)
    config = parse_slo_config(configmap.record, DEFAULT_CONFIG)

    state = aggregate.initial_state()
    events = [event("Node", "test-node1", node.record, ts=UPDATE_TIME - 60_000),
              *(event("SchedulingDecision", "test-node1", pod, ts=UPDATE_TIME - 30_000) for pod in PODS),
              event("NodeMetric", "test-node1", node_metric.record, ts=UPDATE_TIME + 5_000)]
    outputs = []
    for ev in events:
        state, out = aggregate.handle(state, ev, config, DEFAULT_SETTINGS)
        outputs.extend(record for schema, record in out if schema == "NodeResource")

    first, last = outputs
    assert first["message"].startswith("degrade node resource because of abnormal nodeMetric")
    batch_and_mid = {"kubernetes.io/batch-cpu": 25_000, "kubernetes.io/batch-memory": 33 * G,
                     "kubernetes.io/mid-cpu": 10_000, "kubernetes.io/mid-memory": 15 * G}
    assert last["allocatable"] == {"cpu": 100_000, "memory": 120 * G, "pods": 110, **batch_and_mid}
    assert last["capacity"] == {"cpu": 100_000, "memory": 120 * G, "pods": 110, **batch_and_mid}
    assert last["message"] == EXPECTED_MESSAGE
    assert last["annotations"] == {
        "node.koordinator.sh/cpu-normalization-ratio": "1.00",
        "node.koordinator.sh/originExtendedAllocatable": json.dumps(
            {"resources": {"kubernetes.io/batch-cpu": "25000", "kubernetes.io/batch-memory": "33G"}},
            separators=(",", ":"))}
    assert last["causation"]["sourceTopic"] == "koord.nodemetrics" and last["timestamp"] == UPDATE_TIME + 5_000
    assert codec.decode(codec.encode("NodeResource", last))[1] == last
