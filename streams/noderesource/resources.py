"""Helpers the node-resource plugins share (Koordinator's ``noderesource/plugins/util/util.go``).

- ``safety_margin``: ``GetNodeSafetyMargin`` = capacity * (100 - reclaimPercent) / 100,
  cpu with ``MultiplyMilliQuant``, memory with ``MultiplyQuant``.
- ``host_app_used_above``: ``GetHostAppHPUsed`` = usage of the host applications
  whose default priority is strictly above the given class's (for batch:
  koord-prod and koord-mid apps; for mid: koord-prod apps only).
- ``prepare_node_for_resource``: ``PrepareNodeForResource`` = delete the resource
  when reset or without quantity, else set capacity = allocatable = quantity,
  batch-cpu first amplified by the CPU normalization ratio (> 1) and rounded
  up to an integer.

- ``memory_under_policy``: the NodeMetric's memory usages under the node's
  ``metricMemoryCollectPolicy`` (cold pages taken out for usageWithHotPageCache).

``DivideResourceList`` is ``quantities.divide_milli`` (the NUMA-level calculation's only user).
"""

from __future__ import annotations

import dataclasses

from streams.koordinator.annotations import ANNOTATION_CPU_NORMALIZATION_RATIO
from streams.koordinator.classes import default_priority
from streams.koordinator.resources import BATCH_CPU, USAGE_WITH_HOT_PAGE_CACHE, USAGE_WITH_PAGE_CACHE
from streams.noderesource.framework import NodeResource, NodeStatus
from streams.noderesource.quantities import ceil_milli_to_value, multiply, multiply_milli
from streams.noderesource.views import MetricView
from streams.sloconfig.colocation import ColocationStrategy


def reserve_ratio(reclaim_threshold_percent: int) -> float:
    """``getReserveRatio``."""
    return float(100 - reclaim_threshold_percent) / 100.0


def safety_margin(strategy: ColocationStrategy, capacity_cpu: int, capacity_memory: int) -> tuple[int, int]:
    return (multiply_milli(capacity_cpu, reserve_ratio(strategy.cpu_reclaim_threshold_percent)),
            multiply(capacity_memory, reserve_ratio(strategy.memory_reclaim_threshold_percent)))


def host_app_used_above(metric: MetricView, priority_class: str) -> tuple[int, int]:
    floor = default_priority(priority_class)
    cpu = memory = 0
    for app in metric.host_apps:
        if default_priority(app.priority) > floor:
            cpu += app.cpu
            memory += app.memory
    return cpu, memory


def memory_under_policy(metric: MetricView, policy: str) -> MetricView:
    """The metric with its memory usages as Koordinator would report them under ``policy``.

    The slo-controller puts the colocation ``metricMemoryCollectPolicy`` into the NodeMetric spec and koordlet
    reports under it (``statesinformer`` ``collectNodeMetric`` / ``collectPodMetric``); usageWithHotPageCache
    is usage with page cache minus kidled's cold page bytes (``util/cold_page.go``: node
    ``MemTotal - MemFree - cold``, pod ``anon + file - cold``). The node agent picks its policy itself and
    reports it, so when the policy is usageWithHotPageCache and the metric was measured usageWithPageCache
    with the node's cold page bytes, the cold pages are taken out here::

        node memory   = max(node - node cold, 0)
        pod memory    = max(pod - pod cold, 0)                     (pods reporting cold page bytes)
        system memory = max(system - (node cold - sum pod cold), 0)   (cold pages outside pods)

    Host applications stay as reported. Any other case is the metric as reported: measured
    usageWithHotPageCache it already leaves cold pages out; measured without page cache it has none to
    leave out (koordlet, too, reports usageWithoutPageCache when kidled is not running).
    """
    if (policy != USAGE_WITH_HOT_PAGE_CACHE or metric.memory_policy != USAGE_WITH_PAGE_CACHE
            or metric.cold_page_bytes is None):
        return metric
    cold = metric.pod_cold_page_bytes
    pods = {key: (cpu, max(memory - cold[key], 0), priority) if key in cold else (cpu, memory, priority)
            for key, (cpu, memory, priority) in metric.pods.items()}
    outside_pods = metric.cold_page_bytes - sum(cold[key] for key in metric.pods if key in cold)
    node_usage = None if metric.node_usage is None else (
        metric.node_usage[0], max(metric.node_usage[1] - metric.cold_page_bytes, 0))
    system = (metric.system_usage[0], max(metric.system_usage[1] - outside_pods, 0))
    return dataclasses.replace(metric, node_usage=node_usage, system_usage=system, pods=pods,
                               memory_policy=USAGE_WITH_HOT_PAGE_CACHE)


def cpu_normalization_ratio(result: NodeResource) -> float:
    """``getCPUNormalizationRatio`` of the calculated result; -1 when absent or unparsable."""
    text = result.annotations.get(ANNOTATION_CPU_NORMALIZATION_RATIO)
    if text is None:
        return -1.0
    try:
        return float(text)
    except ValueError:
        return -1.0


def amplify_batch_cpu(quantity: int, ratio: float) -> int:
    """batch-cpu (an integer of milli-cores) times the ratio, as ``MultiplyMilliQuant`` then ``Value()``."""
    return ceil_milli_to_value(multiply_milli(quantity * 1000, ratio))


def prepare_node_for_resource(status: NodeStatus, result: NodeResource, name: str) -> None:
    quantity = result.resources.get(name)
    if quantity is None or result.resets.get(name):
        status.capacity.pop(name, None)
        status.allocatable.pop(name, None)
        return
    if name == BATCH_CPU:
        ratio = cpu_normalization_ratio(result)
        if ratio > 1.0:
            quantity = amplify_batch_cpu(quantity, ratio)
    status.capacity[name] = quantity
    status.allocatable[name] = quantity


def prepare_synced(status: NodeStatus, result: NodeResource, names: tuple[str, ...]) -> None:
    """The Prepare of a resource synced from the Device (GPU, RDMA): a reset name is removed from capacity and
    allocatable, a calculated one written into both, a name with neither left as the node shows it."""
    for name in names:
        if result.resets.get(name):
            status.capacity.pop(name, None)
            status.allocatable.pop(name, None)
        elif result.resources.get(name) is not None:
            status.capacity[name] = status.allocatable[name] = result.resources[name]


def is_degrade_needed(strategy: ColocationStrategy, metric: MetricView | None, now_ms: int) -> bool:
    """``isDegradeNeeded`` of both the batch and the mid plugin: no metric, no update time, or ``now``
    after ``updateTime + degradeTimeMinutes`` (for mid, a missing ProdReclaimable does not degrade)."""
    if metric is None or metric.update_time_ms is None:
        return True
    return now_ms > metric.update_time_ms + strategy.degrade_time_minutes * 60_000
