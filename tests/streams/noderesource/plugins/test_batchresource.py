"""BatchResource, ported from Koordinator's ``batchresource/plugin_test.go`` (ids: Go test / case name).

Fixture A is ``getTestPodList`` + ``getTestResourceMetrics``; "multi" is the pod list of the
"pods in multiple priority classes" cases (podProd2 Succeeded is not bound any more, so absent).
"""

from __future__ import annotations

import json

import pytest

from streams.koordinator.annotations import (
    ANNOTATION_CPU_NORMALIZATION_RATIO, ANNOTATION_NODE_RESERVATION, ANNOTATION_ORIGIN_EXTENDED_ALLOCATABLE,
    ANNOTATION_THIRD_PARTY_ALLOCATIONS)
from streams.koordinator.resources import BATCH_CPU, BATCH_MEMORY
from streams.noderesource.framework import NodeResource, NodeStatus, ResourceItem
from streams.noderesource.plugins.batchresource import (
    DEGRADE_MESSAGE, BatchResource, BatchResourceArgs, calculate_on_numa_level, pod_numa_split,
)
from streams.noderesource.resources import is_degrade_needed, memory_under_policy
from streams.noderesource.views import Snapshot, Zone, metric_view
from streams.sloconfig.cpunormalization import CPUNormalizationStrategy
from tests.streams.noderesource.support import (
    G, MINUTE, NOW, S65, Gi, fixture_a_metric, fixture_a_pods, host_app, metric, metric_record, node, pod, pod_usage,
    strategy,
)

CPU_USAGE_25000 = ("batchAllocatable[CPU(Milli-Core)]:25000 = nodeCapacity:100000 - nodeSafetyMargin:35000 - "
                   "systemUsageOrNodeReserved:7000 - podHPUsed:33000")
MEMORY_USAGE_33 = "batchAllocatable[Mem(GB)]:33 = nodeCapacity:120 - nodeSafetyMargin:42 - systemUsage:12 - podHPUsed:33"
R70_80_REQUEST = strategy(cpu_reclaim_threshold_percent=70, memory_reclaim_threshold_percent=80,
                          memory_calculate_policy="request")
R150_120 = strategy(cpu_reclaim_threshold_percent=150, cpu_calculate_policy="maxUsageRequest",
                    memory_reclaim_threshold_percent=120, memory_calculate_policy="request")
R150_120_USAGE_MAX = strategy(cpu_reclaim_threshold_percent=150, cpu_calculate_policy="usage",
                              memory_reclaim_threshold_percent=120, memory_calculate_policy="maxUsageRequest")


def reservation(**fields) -> dict:
    return {ANNOTATION_NODE_RESERVATION: json.dumps(fields)}


def multi_pods(first: str = "podProd", first_qos: str = "LS", numa: tuple[int, ...] = ()) -> dict:
    return {f"test/{first}": pod(10_000, 10 * G, "koord-prod", first_qos, numa_nodes=numa),
            "test/podProd1": pod(10_000, 10 * G, "koord-prod", "LSR"),
            "test/podBatch": pod(10_000, 10 * G, "koord-batch", "BE"),
            "test/podMid": pod(20_000, 40 * G, "koord-mid", "BE")}


def multi_metric(first: str = "podProd"):
    return metric(node_usage={"cpu": 50_000, "memory": 55 * G}, system_usage={"cpu": 7_000, "memory": 12 * G},
                  pods=[pod_usage("test", first, 5_000, 5 * G), pod_usage("test", "podProd1", 6_000, 6 * G),
                        pod_usage("test", "podBatch", 10_000, 10 * G), pod_usage("test", "podMid", 22_000, 22 * G)])


def host_app_metric(priority: str):
    return metric(node_usage={"cpu": 50_000, "memory": 55 * G}, system_usage={"cpu": 4_000, "memory": 6 * G},
                  pods=[pod_usage("test", "podA", 11_000, 11 * G), pod_usage("test", "podB", 10_000, 10 * G),
                        pod_usage("test", "podC", 22_000, 22 * G)],
                  host_apps=[host_app("test-host-application", 3_000, 6 * G, priority)])


def calculate(strategy_, node_, pods, metric_, now=NOW) -> list[tuple]:
    snapshot = Snapshot(strategy_, CPUNormalizationStrategy(), node_, pods, metric_, now)
    return [(item.name, item.quantity, item.message) for item in BatchResource().calculate(snapshot)]


CALCULATE_CASES = [
    pytest.param(S65, {}, None, 25_000, CPU_USAGE_25000, 33 * G, MEMORY_USAGE_33,
                 id="TestPluginCalculate/calculate_with_memory_usage"),
    pytest.param(S65, reservation(), None, 25_000, CPU_USAGE_25000, 33 * G, MEMORY_USAGE_33,
                 id="TestPluginCalculate/calculate_with_memory_usage_and_reserve_nothing_from_node.annotation"),
    pytest.param(S65, reservation(reservedCPUs="0-1"), None, 25_000, CPU_USAGE_25000, 33 * G, MEMORY_USAGE_33,
                 id="TestPluginCalculate/...reserve_specific_cpus_from_node.annotation_and_left_equal_sys.used"),
    pytest.param(S65, reservation(reservedCPUs="0-19"), None, 12_000,
                 "batchAllocatable[CPU(Milli-Core)]:12000 = nodeCapacity:100000 - nodeSafetyMargin:35000 - "
                 "systemUsageOrNodeReserved:20000 - podHPUsed:33000", 33 * G, MEMORY_USAGE_33,
                 id="TestPluginCalculate/...reserve_specific_cpus_from_node.annotation_and_right_equal_sys.used"),
    pytest.param(S65, reservation(resources={"cpu": "20"}), None, 12_000,
                 "batchAllocatable[CPU(Milli-Core)]:12000 = nodeCapacity:100000 - nodeSafetyMargin:35000 - "
                 "systemUsageOrNodeReserved:20000 - podHPUsed:33000", 33 * G, MEMORY_USAGE_33,
                 id="TestPluginCalculate/...reserve_cpus_by_quantity_from_node.annotation_and_right_equal_sys.used"),
    pytest.param(S65, reservation(resources={"cpu": "20"}, reservedCPUs="0-9"), None, 22_000,
                 "batchAllocatable[CPU(Milli-Core)]:22000 = nodeCapacity:100000 - nodeSafetyMargin:35000 - "
                 "systemUsageOrNodeReserved:10000 - podHPUsed:33000", 33 * G, MEMORY_USAGE_33,
                 id="TestPluginCalculate/...reserve_cpus_by_quantity_and_specific_cores_from_node.annotation..."),
    pytest.param(S65, reservation(resources={"memory": "20G"}), None, 25_000, CPU_USAGE_25000, 25 * G,
                 "batchAllocatable[Mem(GB)]:25 = nodeCapacity:120 - nodeSafetyMargin:42 - systemUsage:20 - podHPUsed:33",
                 id="TestPluginCalculate/...reserve_memory_from_node.annotation_and_right_equal_sys.used"),
    pytest.param(S65, reservation(resources={"memory": "5G"}), None, 25_000, CPU_USAGE_25000, 33 * G, MEMORY_USAGE_33,
                 id="TestPluginCalculate/...reserve_memory_from_node.annotation_and_left_equal_sys.used"),
    pytest.param(S65, reservation(resources={"memory": "5G", "cpu": "2"}), None, 25_000, CPU_USAGE_25000, 33 * G,
                 MEMORY_USAGE_33, id="TestPluginCalculate/...reserve_memory_and_cpu...left_equal_sys.used"),
    pytest.param(S65, reservation(resources={"memory": "20G", "cpu": "10"}), None, 22_000,
                 "batchAllocatable[CPU(Milli-Core)]:22000 = nodeCapacity:100000 - nodeSafetyMargin:35000 - "
                 "systemUsageOrNodeReserved:10000 - podHPUsed:33000", 25 * G,
                 "batchAllocatable[Mem(GB)]:25 = nodeCapacity:120 - nodeSafetyMargin:42 - systemUsage:20 - podHPUsed:33",
                 id="TestPluginCalculate/...reserve_memory_and_cpu...right_equal_sys.used"),
    pytest.param(S65, reservation(resources={"memory": "20G"}, reservedCPUs="0-9"), None, 22_000,
                 "batchAllocatable[CPU(Milli-Core)]:22000 = nodeCapacity:100000 - nodeSafetyMargin:35000 - "
                 "systemUsageOrNodeReserved:10000 - podHPUsed:33000", 25 * G,
                 "batchAllocatable[Mem(GB)]:25 = nodeCapacity:120 - nodeSafetyMargin:42 - systemUsage:20 - podHPUsed:33",
                 id="TestPluginCalculate/...reserve_memory_and_specific_cores...right_equal_sys.used"),
    pytest.param(S65, reservation(resources={"memory": "5G", "cpu": "2"}), (90_000, 100 * G), 22_000,
                 "batchAllocatable[CPU(Milli-Core)]:22000 = nodeCapacity:100000 - nodeSafetyMargin:35000 - "
                 "systemUsageOrNodeReserved:10000 - podHPUsed:33000", 25 * G,
                 "batchAllocatable[Mem(GB)]:25 = nodeCapacity:120 - nodeSafetyMargin:42 - systemUsage:20 - podHPUsed:33",
                 id="TestPluginCalculate/...kubelet_reserved_is_the_biggest_among_node.annotation,_sys.used..."),
    pytest.param(R70_80_REQUEST, {}, None, 30_000,
                 "batchAllocatable[CPU(Milli-Core)]:30000 = nodeCapacity:100000 - nodeSafetyMargin:30000 - "
                 "systemUsageOrNodeReserved:7000 - podHPUsed:33000", 36 * G,
                 "batchAllocatable[Mem(GB)]:36 = nodeCapacity:120 - nodeSafetyMargin:24 - nodeReserved:0 - podHPRequest:60",
                 id="TestPluginCalculate/calculate_with_memory_request"),
    pytest.param(R70_80_REQUEST, reservation(resources={"memory": "5G"}), None, 30_000,
                 "batchAllocatable[CPU(Milli-Core)]:30000 = nodeCapacity:100000 - nodeSafetyMargin:30000 - "
                 "systemUsageOrNodeReserved:7000 - podHPUsed:33000", 31 * G,
                 "batchAllocatable[Mem(GB)]:31 = nodeCapacity:120 - nodeSafetyMargin:24 - nodeReserved:5 - podHPRequest:60",
                 id="TestPluginCalculate/calculate_with_memory_request_and_reserve_memory...left_equal_sys.used"),
    pytest.param(R70_80_REQUEST, reservation(resources={"memory": "5G"}), (90_000, 100 * G), 27_000,
                 "batchAllocatable[CPU(Milli-Core)]:27000 = nodeCapacity:100000 - nodeSafetyMargin:30000 - "
                 "systemUsageOrNodeReserved:10000 - podHPUsed:33000", 16 * G,
                 "batchAllocatable[Mem(GB)]:16 = nodeCapacity:120 - nodeSafetyMargin:24 - nodeReserved:20 - podHPRequest:60",
                 id="TestPluginCalculate/calculate_with_memory_request_and_reserve_memory_which_kubelet_reserved..."),
    pytest.param(R70_80_REQUEST, reservation(resources={"memory": "10G"}), None, 30_000,
                 "batchAllocatable[CPU(Milli-Core)]:30000 = nodeCapacity:100000 - nodeSafetyMargin:30000 - "
                 "systemUsageOrNodeReserved:7000 - podHPUsed:33000", 26 * G,
                 "batchAllocatable[Mem(GB)]:26 = nodeCapacity:120 - nodeSafetyMargin:24 - nodeReserved:10 - podHPRequest:60",
                 id="TestPluginCalculate/calculate_with_memory_request_and_reserve_memory...right_equal_sys.used"),
    pytest.param(strategy(cpu_reclaim_threshold_percent=70, cpu_calculate_policy="maxUsageRequest",
                          memory_reclaim_threshold_percent=80, memory_calculate_policy="request"), {}, None, 21_000,
                 "batchAllocatable[CPU(Milli-Core)]:21000 = nodeCapacity:100000 - nodeSafetyMargin:30000 - "
                 "systemUsageOrNodeReserved:7000 - podHPMaxUsedRequest:42000", 36 * G,
                 "batchAllocatable[Mem(GB)]:36 = nodeCapacity:120 - nodeSafetyMargin:24 - nodeReserved:0 - podHPRequest:60",
                 id="TestPluginCalculate/calculate_with_cpu_maxUsageRequest_and_memory_request"),
    pytest.param(R150_120, {}, None, 101_000,
                 "batchAllocatable[CPU(Milli-Core)]:101000 = nodeCapacity:100000 - nodeSafetyMargin:-50000 - "
                 "systemUsageOrNodeReserved:7000 - podHPMaxUsedRequest:42000", 84 * G,
                 "batchAllocatable[Mem(GB)]:84 = nodeCapacity:120 - nodeSafetyMargin:-24 - nodeReserved:0 - podHPRequest:60",
                 id="TestPluginCalculate/calculate_with_adjusted_reclaim_ratio"),
    pytest.param(R150_120.merged({"batch_cpu_threshold_percent": 100}), {}, None, 100_000,
                 "batchAllocatable[CPU(Milli-Core)]:100000 = min(nodeCapacity:100000 * thresholdRatio:1, "
                 "nodeCapacity:100000 - nodeSafetyMargin:-50000 - systemUsageOrNodeReserved:7000 - "
                 "podHPMaxUsedRequest:42000)", 84 * G,
                 "batchAllocatable[Mem(GB)]:84 = nodeCapacity:120 - nodeSafetyMargin:-24 - nodeReserved:0 - podHPRequest:60",
                 id="TestPluginCalculate/calculate_with_batch_cpu_threshold_percent_only"),
    pytest.param(R150_120.merged({"batch_memory_threshold_percent": 100}), {}, None, 101_000,
                 "batchAllocatable[CPU(Milli-Core)]:101000 = nodeCapacity:100000 - nodeSafetyMargin:-50000 - "
                 "systemUsageOrNodeReserved:7000 - podHPMaxUsedRequest:42000", 84 * G,
                 "batchAllocatable[Mem(GB)]:84 = min(nodeCapacity:120 * thresholdRatio:1, nodeCapacity:120 - "
                 "nodeSafetyMargin:-24 - nodeReserved:0 - podHPRequest:60)",
                 id="TestPluginCalculate/calculate_with_batch_memory_threshold_percent_only"),
    pytest.param(R150_120.merged({"batch_cpu_threshold_percent": 100, "batch_memory_threshold_percent": 100}), {},
                 None, 100_000,
                 "batchAllocatable[CPU(Milli-Core)]:100000 = min(nodeCapacity:100000 * thresholdRatio:1, "
                 "nodeCapacity:100000 - nodeSafetyMargin:-50000 - systemUsageOrNodeReserved:7000 - "
                 "podHPMaxUsedRequest:42000)", 84 * G,
                 "batchAllocatable[Mem(GB)]:84 = min(nodeCapacity:120 * thresholdRatio:1, nodeCapacity:120 - "
                 "nodeSafetyMargin:-24 - nodeReserved:0 - podHPRequest:60)",
                 id="TestPluginCalculate/calculate_with_both_batch_cpu/mem_threshold_percent"),
    pytest.param(R150_120_USAGE_MAX, {}, None, 110_000,
                 "batchAllocatable[CPU(Milli-Core)]:110000 = nodeCapacity:100000 - nodeSafetyMargin:-50000 - "
                 "systemUsageOrNodeReserved:7000 - podHPUsed:33000", 72 * G,
                 "batchAllocatable[Mem(GB)]:72 = nodeCapacity:120 - nodeSafetyMargin:-24 - systemUsage:12 - "
                 "podHPMaxUsedRequest:60",
                 id="TestPluginCalculate/calculate_without_batch_cpu/mem_threshold_percent-with_different_policy"),
    pytest.param(R150_120_USAGE_MAX.merged({"batch_cpu_threshold_percent": 100, "batch_memory_threshold_percent": 100}),
                 {}, None, 100_000,
                 "batchAllocatable[CPU(Milli-Core)]:100000 = min(nodeCapacity:100000 * thresholdRatio:1, "
                 "nodeCapacity:100000 - nodeSafetyMargin:-50000 - systemUsageOrNodeReserved:7000 - podHPUsed:33000)",
                 72 * G,
                 "batchAllocatable[Mem(GB)]:72 = min(nodeCapacity:120 * thresholdRatio:1, nodeCapacity:120 - "
                 "nodeSafetyMargin:-24 - systemUsage:12 - podHPMaxUsedRequest:60)",
                 id="TestPluginCalculate/calculate_with_both_batch_cpu/mem_threshold_percent-with_different_policy"),
]


@pytest.mark.parametrize("strategy_, annotations, allocatable, cpu, cpu_message, memory, memory_message",
                         CALCULATE_CASES)
def test_calculate_fixture_a(strategy_, annotations, allocatable, cpu, cpu_message, memory, memory_message):
    alloc_cpu, alloc_memory = allocatable or (None, None)
    node_ = node(annotations=annotations, alloc_cpu=alloc_cpu, alloc_memory=alloc_memory)
    got = calculate(strategy_, node_, fixture_a_pods(), metric(**_fixture_a()))
    assert got == [(BATCH_CPU, cpu, cpu_message), (BATCH_MEMORY, memory, memory_message)]


def _fixture_a() -> dict:
    record = fixture_a_metric()
    return {"node_usage": record["nodeUsage"], "system_usage": record["systemUsage"], "pods": record["podsMetric"]}


@pytest.mark.parametrize("pods, metric_, cpu, cpu_message, memory, memory_message", [
    pytest.param(multi_pods(), multi_metric(), 25_000, CPU_USAGE_25000, 33 * G, MEMORY_USAGE_33,
                 id="TestPluginCalculate/calculate_with_pods_in_multiple_priority_classes"),
    pytest.param({"test/podProd": pod(10_000, 10 * G, "koord-prod", "LS"),
                  "test/podProd1": pod(10_000, 10 * G, "koord-prod", "LSR")},
                 metric(node_usage={"cpu": 25_000, "memory": 30 * G}, system_usage={"cpu": 5_000, "memory": 10 * G},
                        pods=[pod_usage("test", "podProd", 5_000, 5 * G), pod_usage("test", "podProd2", 10_000, 10 * G)]),
                 35_000, "batchAllocatable[CPU(Milli-Core)]:35000 = nodeCapacity:100000 - nodeSafetyMargin:35000 - "
                 "systemUsageOrNodeReserved:5000 - podHPUsed:25000", 43 * G,
                 "batchAllocatable[Mem(GB)]:43 = nodeCapacity:120 - nodeSafetyMargin:42 - systemUsage:10 - podHPUsed:25",
                 id="TestPluginCalculate/calculate_with_pods_terminated"),
    pytest.param(multi_pods("podProdLSE", "LSE"), multi_metric("podProdLSE"), 20_000,
                 "batchAllocatable[CPU(Milli-Core)]:20000 = nodeCapacity:100000 - nodeSafetyMargin:35000 - "
                 "systemUsageOrNodeReserved:7000 - podHPUsed:38000", 33 * G, MEMORY_USAGE_33,
                 id="TestPluginCalculate/calculate_with_pods_QoS=LSE"),
    pytest.param(fixture_a_pods(), host_app_metric("koord-prod"), 25_000, CPU_USAGE_25000, 33 * G, MEMORY_USAGE_33,
                 id="TestPluginCalculate/calculate_with_memory_usage,_including_product_host_application_usage"),
    pytest.param(fixture_a_pods(), host_app_metric("koord-mid"), 25_000, CPU_USAGE_25000, 33 * G, MEMORY_USAGE_33,
                 id="TestPluginCalculate/calculate_with_memory_usage,_including_mid_host_application_usage"),
    pytest.param(fixture_a_pods(), host_app_metric("koord-batch"), 28_000,
                 "batchAllocatable[CPU(Milli-Core)]:28000 = nodeCapacity:100000 - nodeSafetyMargin:35000 - "
                 "systemUsageOrNodeReserved:4000 - podHPUsed:33000", 39 * G,
                 "batchAllocatable[Mem(GB)]:39 = nodeCapacity:120 - nodeSafetyMargin:42 - systemUsage:6 - podHPUsed:33",
                 id="TestPluginCalculate/calculate_with_memory_usage,_including_batch_host_application_usage"),
])
def test_calculate_pods_and_metrics(pods, metric_, cpu, cpu_message, memory, memory_message):
    assert calculate(S65, node(), pods, metric_) == [(BATCH_CPU, cpu, cpu_message),
                                                   (BATCH_MEMORY, memory, memory_message)]


TWO_ZONES = (Zone("node-0", 50_000, 62 * G), Zone("node-1", 50_000, 58 * G))
S65_REQUEST = S65.merged({"memory_calculate_policy": "request"})
DANGLING_METRIC = metric(node_usage={"cpu": 50_000, "memory": 55 * G}, system_usage={"cpu": 7_000, "memory": 12 * G},
                         pods=[pod_usage("test", "podProd1", 6_000, 6 * G, "koord-prod"),
                               pod_usage("test", "podProd2", 2_000, 4 * G, "koord-prod"),
                               pod_usage("test", "podBatch", 10_000, 10 * G, "koord-batch"),
                               pod_usage("test", "podMid", 22_000, 22 * G, "koord-mid")])


@pytest.mark.parametrize("strategy_, zones, pods, metric_, node_cpu, node_memory, expected", [
    pytest.param(S65, (Zone("node-0", 100_000, 120 * G),), multi_pods(), multi_metric(), 25_000, 33 * G,
                 {"node-0": (25_000, 33 * G)}, id="TestPluginCalculate/calculate_with_one_NUMA-level_resources"),
    pytest.param(S65, TWO_ZONES, multi_pods(numa=(0,)), multi_metric(), 25_000, 33 * G,
                 {"node-0": (10_000, 15_300_000_000), "node-1": (15_000, 17_700_000_000)},
                 id="TestPluginCalculate/calculate_with_multiple_NUMA-level_resources"),
    pytest.param(S65_REQUEST, TWO_ZONES, multi_pods("podProdLSE", "LSE", (0,)), multi_metric("podProdLSE"),
                 20_000, 18 * G, {"node-0": (5_000, 5_300_000_000), "node-1": (15_000, 12_700_000_000)},
                 id="TestPluginCalculate/calculate_with_memory_not_over-committed,_LSE_pods_and_NUMA-level_resources"),
    pytest.param(S65_REQUEST, TWO_ZONES, multi_pods("podProdLSE", "LSE", (0,)), DANGLING_METRIC,
                 18_000, 18 * G, {"node-0": (4_000, 5_300_000_000), "node-1": (14_000, 12_700_000_000)},
                 id="TestPluginCalculate/calculate_NUMA_resources_with_memory_not_over-committed,"
                    "_missing_metric_LSE_pod_and_dangling_pod"),
    pytest.param(S65_REQUEST, TWO_ZONES, multi_pods("podProdLSE", "LSE", (0,)),
                 metric(node_usage={"cpu": 50_000, "memory": 55 * G}, system_usage={"cpu": 7_000, "memory": 12 * G},
                        pods=[*metric_record(pods=[])["podsMetric"],
                              pod_usage("test", "podProd1", 6_000, 6 * G, "koord-prod"),
                              pod_usage("test", "podProd2", 2_000, 4 * G, "koord-prod"),
                              pod_usage("test", "podBatch", 10_000, 10 * G, "koord-batch"),
                              pod_usage("test", "podMid", 22_000, 22 * G, "koord-mid"),
                              pod_usage("test", "podProd3", 4_000, 8 * G, "koord-prod"),
                              pod_usage("test", "podBatch2", 8_000, 8 * G, "koord-batch")]),
                 14_000, 18 * G, {"node-0": (2_000, 5_300_000_000), "node-1": (12_000, 12_700_000_000)},
                 id="TestPluginCalculate/calculate_NUMA_resources_with_memory_not_over-committed,"
                    "_some_pods_not_shown_in_list"),
])
def test_numa_level(strategy_, zones, pods, metric_, node_cpu, node_memory, expected):
    """NUMA-level batch resources (``calculateOnNUMALevel``); the node-level numbers come out alongside."""
    node_ = node()
    assert [q for _, q, _ in calculate(strategy_, node_, pods, metric_)] == [node_cpu, node_memory]
    assert calculate_on_numa_level(strategy_, zones, node_.node_reserved, pods, metric_) == expected


@pytest.mark.parametrize("metric_, now, degrade", [
    pytest.param(None, NOW, True, id="TestPlugin_isDegradeNeeded/empty_NodeMetric_should_degrade"),
    pytest.param(metric(update_time=None), NOW, True,
                 id="TestPlugin_isDegradeNeeded/empty_NodeMetric_status_should_degrade"),
    pytest.param(metric(update_time=NOW - 11 * MINUTE), NOW, True,
                 id="TestPlugin_isDegradeNeeded/outdated_NodeMetric_status_should_degrade"),
    pytest.param(metric(update_time=NOW), NOW + 11 * MINUTE, True,
                 id="TestPlugin_isDegradeNeeded/outdated_NodeMetric_status_should_degrade_1"),
    pytest.param(metric(update_time=NOW), NOW + 10 * MINUTE, False, id="exactly_degradeTimeMinutes_is_still_fresh"),
])
def test_is_degrade_needed(metric_, now, degrade):
    assert is_degrade_needed(strategy(degrade_time_minutes=10), metric_, now) is degrade


def test_degraded_calculation_resets_both_resources():
    snapshot = Snapshot(S65, CPUNormalizationStrategy(), node(), {}, metric(update_time=NOW - 16 * MINUTE), NOW)
    assert BatchResource().calculate(snapshot) == [ResourceItem(BATCH_CPU, message_source=DEGRADE_MESSAGE, reset=True),
                                                   ResourceItem(BATCH_MEMORY, message_source=DEGRADE_MESSAGE, reset=True)]


def prepare(result: NodeResource, annotations: dict | None = None, capacity=(100_000, 400 * Gi),
            allocatable=(100_000, 380 * Gi)) -> NodeStatus:
    node_ = node(cpu=capacity[0], memory=capacity[1], alloc_cpu=allocatable[0], alloc_memory=allocatable[1],
                 annotations=annotations)
    status = NodeStatus(node_, dict(node_.base_capacity), dict(node_.base_allocatable), {})
    BatchResource().prepare(S65, status, result)
    return status


def third_party(cpu: str, memory: str) -> dict:
    return {ANNOTATION_THIRD_PARTY_ALLOCATIONS: json.dumps({"allocations": [
        {"name": "hadoop-yarn", "priority": "koord-batch",
         "resources": {BATCH_CPU: cpu, BATCH_MEMORY: memory}}]})}


@pytest.mark.parametrize("result, annotations, batch, origin", [
    pytest.param(NodeResource(resources={BATCH_CPU: 50_000, BATCH_MEMORY: 120 * G}), None, (50_000, 120 * G),
                 (50_000, "120G"), id="TestPrepare/update_batch_resources"),
    pytest.param(NodeResource(resets={BATCH_CPU: True, BATCH_MEMORY: True}), None, None, (0, "0"),
                 id="TestPrepare/reset_batch_resources"),
    pytest.param(NodeResource(resources={BATCH_CPU: 25_000, BATCH_MEMORY: 50 * G},
                              annotations={ANNOTATION_CPU_NORMALIZATION_RATIO: "1.20"}), None, (30_000, 50 * G),
                 (30_000, "50G"), id="TestPrepare/update_batch_resources_with_cpu-normalization_ratio"),
    pytest.param(NodeResource(resources={BATCH_CPU: 50_000, BATCH_MEMORY: 120 * Gi}), third_party("10000", "10Gi"),
                 (40_000, 110 * Gi), (50_000, "120Gi"), id="TestPrepareWithThirdParty/update_batch_resources_with_third_party"),
    pytest.param(NodeResource(resources={BATCH_CPU: 50_000, BATCH_MEMORY: 120 * Gi}), third_party("60000", "120Gi"),
                 (0, 0), (50_000, "120Gi"),
                 id="TestPrepareWithThirdParty/update_batch_resources_with_third_party_max_zero"),
    pytest.param(NodeResource(resets={BATCH_CPU: True, BATCH_MEMORY: True}), third_party("10000", "10Gi"), None,
                 (0, "0"), id="TestPrepareWithThirdParty/reset_batch_resources_with_third_party_allocation"),
])
def test_prepare(result, annotations, batch, origin):
    status = prepare(result, annotations)
    expected = {} if batch is None else {BATCH_CPU: batch[0], BATCH_MEMORY: batch[1]}
    assert {k: v for k, v in status.allocatable.items() if k.startswith("kubernetes.io/")} == expected
    assert {k: v for k, v in status.capacity.items() if k.startswith("kubernetes.io/")} == expected
    assert json.loads(status.annotations[ANNOTATION_ORIGIN_EXTENDED_ALLOCATABLE]) == {
        "resources": {BATCH_CPU: str(origin[0]), BATCH_MEMORY: origin[1]}}


@pytest.mark.parametrize("request_, usage, zones, numa_nodes, expected", [
    pytest.param((4000, 8 * Gi), (1500, 4 * Gi), 2, (), ([(2000, 4 * Gi)] * 2, [(750, 2 * Gi)] * 2),
                 id="Test_getPodNUMARequestAndUsage/pod_has_no_alloc_status_should_have_averaged_result"),
    pytest.param((4000, 8 * Gi), (1500, 4 * Gi), 2, (0, 1), ([(2000, 4 * Gi)] * 2, [(750, 2 * Gi)] * 2),
                 id="Test_getPodNUMARequestAndUsage/pod_allocate_2_NUMA_nodes_on_2_total_nodes"),
    pytest.param((4000, 8 * Gi), (1500, 4 * Gi), 4, (1,),
                 ([(0, 0), (4000, 8 * Gi), (0, 0), (0, 0)], [(0, 0), (1500, 4 * Gi), (0, 0), (0, 0)]),
                 id="Test_getPodNUMARequestAndUsage/pod_allocate_1_NUMA_nodes_on_4_total_nodes"),
    pytest.param((2000, 6 * Gi), (1000, 3 * Gi), 3, (), ([(667, 2 * Gi)] * 3, [(334, 1 * Gi)] * 3),
                 id="three_zones_round_up_at_milli"),
    pytest.param((4000, 8 * Gi), (1500, 4 * Gi), 2, (0, 5), ([(4000, 8 * Gi), (0, 0)], [(1500, 4 * Gi), (0, 0)]),
                 id="id_outside_the_zones_ignored"),
    pytest.param((4000, 8 * Gi), (1500, 4 * Gi), 2, (0, 0), ([(2000, 4 * Gi), (0, 0)], [(750, 2 * Gi), (0, 0)]),
                 id="id_listed_twice_counts_twice_as_koordinator_counts_entries"),
])
def test_pod_numa_split(request_, usage, zones, numa_nodes, expected):
    """Memory is given in bytes here; the split rounds up at milli precision as DivideResourceList does."""
    requests, usages = pod_numa_split(numa_nodes, request_, usage, zones)
    assert (requests, usages) == expected


def zone_result(zones: dict[str, tuple[int, int]], ratio: str | None = None) -> NodeResource:
    result = NodeResource()
    result.set([ResourceItem(BATCH_CPU, 0, zone_quantity={zone: cpu for zone, (cpu, _) in zones.items()}),
                ResourceItem(BATCH_MEMORY, 0, zone_quantity={zone: memory for zone, (_, memory) in zones.items()})])
    if ratio is not None:
        result.annotations[ANNOTATION_CPU_NORMALIZATION_RATIO] = ratio
    return result


def published(**zones: tuple[int, int]) -> dict:
    return {zone: {BATCH_CPU: cpu, BATCH_MEMORY: memory} for zone, (cpu, memory) in zones.items()}


@pytest.mark.parametrize("before, calculated, ratio, expected, sync", [
    pytest.param({}, {"node-0": (10_000, 15 * G), "node-1": (15_000, 17 * G)}, None,
                 published(**{"node-0": (10_000, 15 * G), "node-1": (15_000, 17 * G)}), True, id="first-calculation-adds"),
    pytest.param(published(**{"node-0": (10_000, 15 * G)}), {"node-0": (10_500, 16 * G)}, None,
                 published(**{"node-0": (10_000, 15 * G)}), False, id="within-threshold-kept"),
    pytest.param(published(**{"node-0": (10_000, 15 * G)}), {"node-0": (12_000, 16 * G)}, None,
                 published(**{"node-0": (12_000, 15 * G)}), True, id="only-the-value-beyond-threshold-replaced"),
    pytest.param(published(**{"node-0": (10_000, 15 * G), "node-1": (15_000, 17 * G)}), {"node-0": (10_000, 15 * G)},
                 None, published(**{"node-0": (10_000, 15 * G), "node-1": (0, 0)}), True, id="zone-without-result-zeroed"),
    pytest.param({}, {"node-0": (10_000, 15 * G)}, "1.20", published(**{"node-0": (12_000, 15 * G)}), True,
                 id="batch-cpu-amplified-by-the-cpu-normalization-ratio"),
    pytest.param({}, {"node-0": (10_000, 15 * G)}, "0.80", published(**{"node-0": (10_000, 15 * G)}), True,
                 id="ratio-not-above-one-ignored"),
])
def test_pre_update_updates_zone_resources_as_koordinator_updates_the_nrt(before, calculated, ratio, expected, sync):
    """``UpdateNRTZoneListIfNeeded`` (plugins/util), zones node-0 and node-1 listed in the NRT."""
    zones = (Zone("node-0", 50_000, 62 * G), Zone("node-1", 50_000, 58 * G))
    updated, (needed, _) = BatchResource().pre_update(S65, zones, before, zone_result(calculated, ratio))
    assert (updated, needed) == (expected, sync)


def test_pre_update_without_zone_values_leaves_the_zones():
    zones = (Zone("node-0", 50_000, 62 * G),)
    assert BatchResource().pre_update(S65, zones, published(**{"node-0": (1, 1)}), NodeResource()) is None
    assert BatchResource().pre_update(S65, (), {}, zone_result({"node-0": (1, 1)})) is None


def test_calculate_attaches_zone_values_to_the_batch_items():
    snapshot = Snapshot(S65, CPUNormalizationStrategy(), node(), multi_pods(numa=(0,)), multi_metric(), NOW, TWO_ZONES)
    items = BatchResource().calculate(snapshot)
    assert [(item.name, item.zone_quantity) for item in items] == [
        (BATCH_CPU, {"node-0": 10_000, "node-1": 15_000}),
        (BATCH_MEMORY, {"node-0": 15_300_000_000, "node-1": 17_700_000_000})]
    off = BatchResource(BatchResourceArgs(numa_level=False)).calculate(snapshot)
    assert [item.zone_quantity for item in off] == [None, None]


HOT = "usageWithHotPageCache"
COLD_NODE_USAGE = (263432804 - 254391744) << 10
"""Test_GetNodeMemUsageWithHotPageCache's meminfo: (MemTotal - MemFree) x 1024, usage with page cache."""
COLD_POD_USAGE = 104857600 * 3
"""Test_GetPodMemUsageWithHotPageCache's memory.stat: inactive_anon + active_anon + inactive_file."""


def test_memory_under_hot_page_cache_policy_leaves_out_cold_pages():
    """cold_page_test.go: node and pod usage with page cache minus 100 cold bytes; the system keeps the cold pages
    outside pods out too (here none: the pod holds all 100)."""
    measured = metric_record(node_usage={"cpu": 1000, "memory": COLD_NODE_USAGE},
                             system_usage={"cpu": 100, "memory": 10 * G},
                             pods=[{**pod_usage("test", "pod", 500, COLD_POD_USAGE), "coldPageBytes": 100}])
    view = metric_view({**measured, "memoryCollectPolicy": "usageWithPageCache", "coldPageBytes": 100})
    hot = memory_under_policy(view, HOT)
    assert hot.node_usage == (1000, COLD_NODE_USAGE - 100)
    assert hot.pods["test/pod"] == (500, 104857600 + 104857600 + 104857600 - 100, None)
    assert hot.system_usage == (100, 10 * G)
    assert memory_under_policy(view, "usageWithoutPageCache") is view


def _fixture_a_with_cold_pages(measured: str) -> object:
    """Fixture A measured ``measured``: 10G cold on the node, podA 3G and podC 5G of it."""
    record = fixture_a_metric()
    for usage, cold in zip(record["podsMetric"], (3 * G, None, 5 * G)):
        usage["coldPageBytes"] = cold
    return metric_view({**record, "memoryCollectPolicy": measured, "coldPageBytes": 10 * G})


@pytest.mark.parametrize("collect_policy, measured, memory, memory_message", [
    pytest.param(HOT, "usageWithPageCache", 43 * G, "batchAllocatable[Mem(GB)]:43 = nodeCapacity:120 - "
                 "nodeSafetyMargin:42 - systemUsage:10 - podHPUsed:25", id="hot-policy-takes-cold-pages-out"),
    pytest.param(HOT, HOT, 33 * G, MEMORY_USAGE_33, id="measured-hot-already"),
    pytest.param(HOT, "usageWithoutPageCache", 33 * G, MEMORY_USAGE_33, id="measured-without-page-cache"),
    pytest.param("usageWithPageCache", "usageWithPageCache", 33 * G, MEMORY_USAGE_33, id="page-cache-policy"),
])
def test_batch_memory_under_the_memory_collect_policy(collect_policy, measured, memory, memory_message):
    """TV-1-1 (33G = 120 - 42 - 12 - 33) with metricMemoryCollectPolicy usageWithHotPageCache: podA 11G - 3G and
    podC 22G - 5G give podHPUsed 25G, the 2G cold outside pods leave the system 10G: 120 - 42 - 10 - 25 = 43G."""
    got = calculate(S65.merged({"metric_memory_collect_policy": collect_policy}), node(), fixture_a_pods(),
                    _fixture_a_with_cold_pages(measured))
    assert got == [(BATCH_CPU, 25_000, CPU_USAGE_25000), (BATCH_MEMORY, memory, memory_message)]
