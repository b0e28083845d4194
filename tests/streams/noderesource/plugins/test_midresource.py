"""MidResource, ported from Koordinator's ``midresource/plugin_test.go`` (ids: Go test / case name).

``getTestNode``: capacity cpu 100 / memory 210G, allocatable 100 / 200G (kubelet reserves 10G);
``podA`` koord-prod LS 20/40G, ``podB`` koord-batch BE 15/30G. The NodeMetric is 20 s old.
"""

from __future__ import annotations

import pytest

from streams.koordinator.resources import MID_CPU, MID_MEMORY
from streams.noderesource.framework import NodeResource, NodeStatus, ResourceItem
from streams.noderesource.plugins.midresource import DEGRADE_MESSAGE, NEED_SYNC_REASON, MidResource
from streams.noderesource.resources import is_degrade_needed
from streams.noderesource.views import Snapshot
from streams.sloconfig.cpunormalization import CPUNormalizationStrategy
from tests.streams.noderesource.support import G, MINUTE, NOW, host_app, metric, node, pod, pod_usage, strategy

PODS = {"test/podA": pod(20_000, 40 * G, "koord-prod", "LS"), "test/podB": pod(15_000, 30 * G, "koord-batch", "BE")}


def mid_test_node():
    """``getTestNode``."""
    return node(name="test-node", cpu=100_000, memory=210 * G, alloc_cpu=100_000, alloc_memory=200 * G)


def mid_metric(cpu: int | None, memory: int | None, reclaimable: dict | None, usages=((10_000, 20 * G), (15_000, 20 * G)),
               host_apps=None, age_ms: int = 20_000):
    return metric(update_time=NOW - age_ms,
                  node_usage=None if cpu is None else {"cpu": cpu, "memory": memory},
                  pods=[pod_usage("test", "podA", *usages[0]), pod_usage("test", "podB", *usages[1])],
                  prod_reclaimable=reclaimable, host_apps=host_apps)


STATIC = dict(mid_reclaim_mode="static", mid_cpu_threshold_percent=10, mid_memory_threshold_percent=20,
              mid_unallocated_percent=10)
BASE = dict(degrade_time_minutes=10, mid_static_cpu_reserved_percent=10, mid_static_memory_reserved_percent=10)
LOW_USAGE = ((5_000, 10 * G), (15_000, 30 * G))


def msg_cpu(value, reclaimable, unused, unallocated, unallocated_ratio, threshold):
    return (f"midAllocatable[CPU(milli-core)]:{value} = min(min(ProdReclaimable:{reclaimable}, NodeUnused:{unused}) + "
            f"Unallocated:{unallocated} * midUnallocatedRatio:{unallocated_ratio}, NodeCapacity:100000 * "
            f"thresholdRatio:{threshold})")


def msg_memory(value, reclaimable, unused, unallocated, unallocated_ratio, threshold):
    return (f"midAllocatable[Memory(GB)]:{value} = min(min(ProdReclaimable:{reclaimable}, NodeUnused:{unused}) + "
            f"Unallocated:{unallocated} * midUnallocatedRatio:{unallocated_ratio}, NodeCapacity:210 * "
            f"thresholdRatio:{threshold})")


@pytest.mark.parametrize("fields, metric_, cpu, cpu_message, memory, memory_message", [
    pytest.param(BASE, mid_metric(20_000, 45 * G, {"cpu": 10_000, "memory": 15 * G}),
                 10_000, msg_cpu(10000, 10000, 80000, 80000, 0, 1), 15 * G, msg_memory(15, 15, 165, 160, 0, 1),
                 id="TestPluginCalculate/calculate_correctly_when_node_metric_is_valid"),
    pytest.param({**BASE, "mid_cpu_threshold_percent": 10, "mid_memory_threshold_percent": 20,
                  "mid_unallocated_percent": 10},
                 mid_metric(30_000, 50 * G, {"cpu": 15_000, "memory": 30 * G}, LOW_USAGE),
                 10_000, msg_cpu(10000, 15000, 70000, 80000, 0.1, 0.1), 42 * G, msg_memory(42, 30, 160, 160, 0.1, 0.2),
                 id="TestPluginCalculate/calculate_correctly_where_the_prod_reclaimable_exceeds_the_mid_threshold"),
    pytest.param(BASE, mid_metric(30_000, 50 * G, None, LOW_USAGE),
                 0, msg_cpu(0, 0, 70000, 80000, 0, 1), 0, msg_memory(0, 0, 160, 160, 0, 1),
                 id="TestPluginCalculate/calculate_correctly_when_prod_reclaimable_is_nil"),
    pytest.param({**BASE, **STATIC}, mid_metric(30_000, 50 * G, {"cpu": 15_000, "memory": 30 * G}, LOW_USAGE),
                 10_000, "midAllocatable[CPU(milli-core)]:10000 = min(nodeCapacity:100000 * staticReservedPercent:0.1, "
                 "nodeCapacity:100000 * thresholdRatio:0.1)", 21 * G,
                 "midAllocatable[Memory(GB)]:21 = min(nodeCapacity:210 * staticReservedPercent:0.1, nodeCapacity:210 * "
                 "thresholdRatio:0.2)",
                 id="TestPluginCalculate/calculate_correctly_when_set_reserved_resource_in_static_mode:_not_exceed"),
    pytest.param({**BASE, **STATIC, "mid_static_cpu_reserved_percent": 100, "mid_static_memory_reserved_percent": 100},
                 mid_metric(30_000, 50 * G, {"cpu": 15_000, "memory": 30 * G}, LOW_USAGE),
                 10_000, "midAllocatable[CPU(milli-core)]:10000 = min(nodeCapacity:100000 * staticReservedPercent:1, "
                 "nodeCapacity:100000 * thresholdRatio:0.1)", 42 * G,
                 "midAllocatable[Memory(GB)]:42 = min(nodeCapacity:210 * staticReservedPercent:1, nodeCapacity:210 * "
                 "thresholdRatio:0.2)",
                 id="TestPluginCalculate/calculate_correctly_when_set_reserved_resource_in_static_mode:_exceed"),
    pytest.param(BASE, mid_metric(None, None, {"cpu": 20_000, "memory": 20 * G}),
                 0, msg_cpu(0, 20000, 0, 80000, 0, 1), 0, msg_memory(0, 20, 0, 160, 0, 1),
                 id="TestPluginCalculate/calculate_correctly_where_node_metrics_is_invalid"),
    pytest.param(BASE, mid_metric(90_000, 200 * G, {"cpu": 20_000, "memory": 20 * G}),
                 10_000, msg_cpu(10000, 20000, 10000, 80000, 0, 1), 10 * G, msg_memory(10, 20, 10, 160, 0, 1),
                 id="TestPluginCalculate/calculate_correctly_where_the_prod_reclaimable_exceeds_the_node_free_resource"),
    pytest.param(BASE, mid_metric(30_000, 50 * G, None, LOW_USAGE,
                                  [host_app("test-product-host-application", 5_000, 15 * G, "koord-prod")]),
                 0, msg_cpu(0, 0, 70000, 75000, 0, 1), 0, msg_memory(0, 0, 160, 155, 0, 1),
                 id="TestPluginCalculate/including_product_host_application_usage"),
    pytest.param(BASE, mid_metric(30_000, 50 * G, None, LOW_USAGE,
                                  [host_app("test-mid-host-application", 5_000, 15 * G, "koord-mid")]),
                 0, msg_cpu(0, 0, 70000, 80000, 0, 1), 0, msg_memory(0, 0, 160, 160, 0, 1),
                 id="TestPluginCalculate/including_mid_host_application_usage"),
    pytest.param(BASE, mid_metric(30_000, 50 * G, None, LOW_USAGE,
                                  [host_app("test-batch-host-application", 2_000, 10 * G, "koord-batch")]),
                 0, msg_cpu(0, 0, 70000, 80000, 0, 1), 0, msg_memory(0, 0, 160, 160, 0, 1),
                 id="TestPluginCalculate/including_batch_host_application_usage"),
])
def test_calculate(fields, metric_, cpu, cpu_message, memory, memory_message):
    snapshot = Snapshot(strategy(**fields), CPUNormalizationStrategy(), mid_test_node(), PODS, metric_, NOW)
    items = MidResource().calculate(snapshot)
    assert [(i.name, i.quantity, i.message) for i in items] == [(MID_CPU, cpu, cpu_message),
                                                               (MID_MEMORY, memory, memory_message)]


def test_calculate_degrades_when_node_metric_is_expired():
    """TestPluginCalculate/degrade_when_node_metric_is_expired."""
    snapshot = Snapshot(strategy(degrade_time_minutes=5), CPUNormalizationStrategy(), mid_test_node(), PODS,
                        mid_metric(20_000, 45 * G, None, age_ms=30 * MINUTE), NOW)
    assert MidResource().calculate(snapshot) == [ResourceItem(MID_CPU, message_source=DEGRADE_MESSAGE, reset=True),
                                                 ResourceItem(MID_MEMORY, message_source=DEGRADE_MESSAGE, reset=True)]


@pytest.mark.parametrize("metric_, now, degrade", [
    pytest.param(None, NOW, True, id="TestPlugin_isDegradeNeeded/empty_NodeMetric_should_degrade"),
    pytest.param(metric(update_time=None), NOW, True, id="TestPlugin_isDegradeNeeded/empty_NodeMetric_status_should_degrade"),
    pytest.param(metric(update_time=NOW - 11 * MINUTE), NOW, True,
                 id="TestPlugin_isDegradeNeeded/outdated_NodeMetric_status_should_degrade"),
    pytest.param(metric(update_time=NOW), NOW + 11 * MINUTE, True,
                 id="TestPlugin_isDegradeNeeded/outdated_NodeMetric_status_should_degrade_1"),
    pytest.param(metric(update_time=NOW - 20_000), NOW, False,
                 id="TestPlugin_isDegradeNeeded/NodeMetric_without_prod_reclaimable_should_degrade(want_false)"),
    pytest.param(metric(update_time=NOW - 20_000, prod_reclaimable={"cpu": 1000, "memory": G}), NOW, False,
                 id="TestPlugin_isDegradeNeeded/valid_NodeMetric_status_should_not_degrade"),
])
def test_is_degrade_needed(metric_, now, degrade):
    assert is_degrade_needed(strategy(degrade_time_minutes=10), metric_, now) is degrade


@pytest.mark.parametrize("new, expected", [
    pytest.param({MID_CPU: 20_000, MID_MEMORY: 40 * G}, (False, ""),
                 id="TestPluginNeedSync/no_need_to_sync_for_no_mid_resource_changed"),
    pytest.param({MID_CPU: 10_000, MID_MEMORY: 30 * G}, (True, NEED_SYNC_REASON),
                 id="TestPluginNeedSync/need_to_sync_for_mid_resource_changed"),
])
def test_need_sync(new, expected):
    old = {MID_CPU: 20_000, MID_MEMORY: 40 * G}
    assert MidResource().need_sync(strategy(resource_diff_threshold=0.05), old, new) == expected


@pytest.mark.parametrize("result, expected", [
    pytest.param(NodeResource(resources={MID_CPU: 30_000, MID_MEMORY: 55 << 30}),
                 {MID_CPU: 30_000, MID_MEMORY: 55 << 30}, id="TestPluginPrepare/prepare_mid_resources"),
    pytest.param(NodeResource(resets={MID_CPU: True, MID_MEMORY: True}), {}, id="TestPluginPrepare/reset_mid_resources"),
])
def test_prepare(result, expected):
    node_ = mid_test_node()
    status = NodeStatus(node_, dict(node_.base_capacity), {**node_.base_allocatable, MID_CPU: 20_000}, {})
    MidResource().prepare(strategy(), status, result)
    assert {k: v for k, v in status.allocatable.items() if k.startswith("kubernetes.io/")} == expected
    assert {k: v for k, v in status.capacity.items() if k.startswith("kubernetes.io/")} == expected
