"""BatchResource: ``kubernetes.io/batch-cpu`` and ``kubernetes.io/batch-memory`` of a node.

Koordinator's ``pkg/slo-controller/noderesource/plugins/batchresource`` and
``CalculateBatchResourceByPolicy`` (``plugins/util``), followed exactly. Per
resource (cpu in milli-cores, memory in bytes)::

    safetyMargin  = capacity * (100 - reclaimThresholdPercent) / 100
    systemUsed    = NodeMetric.systemUsage + usage of prod/mid host applications
    nodeReserved  = max(kubelet reserved = capacity - allocatable,
                        node.koordinator.sh/reservation (reservedCPUs counts CPUs and wins))
    sysOrReserved = max(systemUsed, nodeReserved)

    byUsage           = max(capacity - safetyMargin - sysOrReserved - podHPUsed, 0)
    byRequest         = max(capacity - safetyMargin - nodeReserved  - podHPRequest, 0)
    byMaxUsageRequest = max(capacity - safetyMargin - sysOrReserved - podHPMaxUsedRequest, 0)

    batch-cpu    = byMaxUsageRequest if cpuCalculatePolicy == maxUsageRequest else byUsage
    batch-memory = byRequest if memoryCalculatePolicy == request,
                   byMaxUsageRequest if maxUsageRequest, else byUsage
    then, when batch{CPU,Memory}ThresholdPercent is set: min(that, capacity * percent / 100)

Memory usages are the NodeMetric's under the node's ``metricMemoryCollectPolicy``
(``resources.memory_under_policy``): with usageWithHotPageCache, kidled's cold
page bytes are not counted as used, so batch-memory can reclaim them.

Any other cpu policy (``request`` included: Koordinator does not implement it
for cpu) behaves as ``usage``. HP (high-priority) pods are the Running/Pending
pods whose priority class with default is neither koord-batch nor koord-free:

- ``podHPRequest``  += request;
- no metric: ``podHPUsed`` += request (``podHPMaxUsedRequest`` is *not*
  increased — a quirk of the node-level code, kept);
- QoS LSE: ``podHPUsed`` += (cpu request, memory usage) — LSE cpu is never
  reclaimed — and ``podHPMaxUsedRequest`` += max(request, usage);
- else: ``podHPUsed`` += usage, ``podHPMaxUsedRequest`` += max(request, usage).

Dangling metrics (pods the NodeMetric reports but the node does not list)
whose reported priority is not koord-batch/koord-free add their usage to both
``podHPUsed`` and ``podHPMaxUsedRequest``.

Degrade: no NodeMetric, no ``updateTime``, or ``now > updateTime +
degradeTimeMinutes`` resets both resources. Prepare writes the values into
capacity and allocatable (batch-cpu amplified by the CPU normalization ratio
when > 1), records them in ``node.koordinator.sh/originExtendedAllocatable``
and subtracts the koord-batch third-party allocations
(``node.koordinator.sh/thirdPartyAllocations``), clamped at zero. The node is
updated when either value moves by more than ``resourceDiffThreshold``.

NUMA level (``calculate_on_numa_level``, Koordinator's ``calculateOnNUMALevel``),
when the node's NodeResourceTopology lists cpu or memory in some zone: the
same formula per zone with the zone's allocatable as capacity; system usage
and node reservation are divided evenly over the zones, each pod's request and
usage over its allocated NUMA nodes (``scheduling.koordinator.sh/resource-status``;
all zones when none). Calculate attaches the zone values to the batch items;
PreUpdate (``pre_update``, Koordinator's ``updateNRTIfNeeded`` /
``UpdateNRTZoneListIfNeeded``) turns them into the zone resources to publish:
batch-cpu amplified by the CPU normalization ratio when > 1, each value
replaced only when it moved by more than ``resourceDiffThreshold`` (or was
absent), a zone without result zeroed. A degraded or reset calculation has no
zone values and leaves the published zones as they are, as Koordinator leaves
the NRT.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from functools import partial

from streams.koordinator.annotations import ANNOTATION_ORIGIN_EXTENDED_ALLOCATABLE
from streams.koordinator.classes import PRIORITY_BATCH, PRIORITY_FREE, QOS_LSE
from streams.koordinator.resources import BATCH_CPU, BATCH_MEMORY
from streams.noderesource.framework import NodeResource, NodeStatus, ResourceItem, ZoneResources
from streams.noderesource.quantities import (
    divide_milli, format_go_float, is_quantity_diff, is_resource_diff, multiply, multiply_milli, scaled_value,
)
from streams.noderesource.resources import (amplify_batch_cpu, cpu_normalization_ratio, host_app_used_above,
                                            is_degrade_needed, memory_under_policy, prepare_node_for_resource,
                                            safety_margin)
from streams.noderesource.views import MetricView, PodView, Snapshot, Zone, pod_totals
from streams.objects.quantity import format_quantity
from streams.sloconfig.colocation import CALCULATE_BY_MAX_USAGE_REQUEST, CALCULATE_BY_REQUEST, ColocationStrategy

NAME = "BatchResource"
RESOURCE_NAMES = (BATCH_CPU, BATCH_MEMORY)
DEGRADE_MESSAGE = "degrade node resource because of abnormal nodeMetric, reason: degradedByBatchResource"
NEED_SYNC_REASON = "batch resource diff is big than threshold"
ZONE_SYNC_REASON = "NRT batch resources diff threshold reached"
LOW_PRIORITY = (PRIORITY_BATCH, PRIORITY_FREE)


@dataclasses.dataclass(frozen=True)
class BatchResourceArgs:
    numa_level: bool = True
    """Also calculate per NUMA zone when the node's NodeResourceTopology lists cpu or memory in a zone
    (Koordinator always does; False skips it)."""

    def validate(self) -> None:
        if not isinstance(self.numa_level, bool):
            raise ValueError(f"{NAME}: numa_level must be a boolean")


@dataclasses.dataclass(frozen=True, slots=True)
class BatchAllocatable:
    """Result of ``CalculateBatchResourceByPolicy``: the values and the terms of their messages."""

    cpu: int
    """milli-cores."""
    memory: int
    """bytes (milli-bytes when the inputs were, as at NUMA level)."""
    cpu_terms: tuple
    memory_terms: tuple

    @property
    def cpu_message(self) -> str:
        return cpu_message(*self.cpu_terms)

    @property
    def memory_message(self) -> str:
        return memory_message(*self.memory_terms)


def cpu_message(cpu: int, capacity: int, margin: int, system: int, pods_label: str, pods: int,
                ratio: float | None) -> str:
    formula = (f"nodeCapacity:{capacity} - nodeSafetyMargin:{margin} - systemUsageOrNodeReserved:{system}"
               f" - {pods_label}:{pods}")
    if ratio is None:
        return f"batchAllocatable[CPU(Milli-Core)]:{cpu} = {formula}"
    return (f"batchAllocatable[CPU(Milli-Core)]:{cpu} = min(nodeCapacity:{capacity} * thresholdRatio:"
            f"{format_go_float(ratio)}, {formula})")


def memory_message(memory: int, capacity: int, margin: int, system_label: str, system: int, pods_label: str,
                   pods: int, ratio: float | None) -> str:
    g = scaled_value
    formula = (f"nodeCapacity:{g(capacity)} - nodeSafetyMargin:{g(margin)} - {system_label}:{g(system)}"
               f" - {pods_label}:{g(pods)}")
    if ratio is None:
        return f"batchAllocatable[Mem(GB)]:{g(memory)} = {formula}"
    return (f"batchAllocatable[Mem(GB)]:{g(memory)} = min(nodeCapacity:{g(capacity)} * thresholdRatio:"
            f"{format_go_float(ratio)}, {formula})")


def calculate_by_policy(strategy: ColocationStrategy, capacity: tuple[int, int], margin: tuple[int, int],
                        reserved: tuple[int, int], system_used: tuple[int, int], hp_request: tuple[int, int],
                        hp_used: tuple[int, int], hp_max_used_request: tuple[int, int]) -> BatchAllocatable:
    """``CalculateBatchResourceByPolicy`` (see the module docstring), messages worded as Koordinator's."""
    cap_cpu, cap_mem = capacity
    sys_cpu = system_used[0] if system_used[0] > reserved[0] else reserved[0]
    sys_mem = system_used[1] if system_used[1] > reserved[1] else reserved[1]
    base_cpu, base_mem = cap_cpu - margin[0], cap_mem - margin[1]

    cpu_percent = strategy.batch_cpu_threshold_percent
    cpu_ratio = None if cpu_percent is None else float(cpu_percent) / 100
    if strategy.cpu_calculate_policy == CALCULATE_BY_MAX_USAGE_REQUEST:
        cpu = max(base_cpu - sys_cpu - hp_max_used_request[0], 0)
        cpu_pods = ("podHPMaxUsedRequest", hp_max_used_request[0])
    else:
        cpu = max(base_cpu - sys_cpu - hp_used[0], 0)
        cpu_pods = ("podHPUsed", hp_used[0])
    if cpu_ratio is not None:
        cpu = min(cpu, multiply_milli(cap_cpu, cpu_ratio))

    mem_percent = strategy.batch_memory_threshold_percent
    mem_ratio = None if mem_percent is None else float(mem_percent) / 100
    policy = strategy.memory_calculate_policy
    if policy == CALCULATE_BY_REQUEST:
        memory = max(base_mem - reserved[1] - hp_request[1], 0)
        mem_terms = ("nodeReserved", reserved[1], "podHPRequest", hp_request[1])
    elif policy == CALCULATE_BY_MAX_USAGE_REQUEST:
        memory = max(base_mem - sys_mem - hp_max_used_request[1], 0)
        mem_terms = ("systemUsage", sys_mem, "podHPMaxUsedRequest", hp_max_used_request[1])
    else:
        memory = max(base_mem - sys_mem - hp_used[1], 0)
        mem_terms = ("systemUsage", sys_mem, "podHPUsed", hp_used[1])
    if mem_ratio is not None:
        memory = min(memory, multiply(cap_mem, mem_ratio))
        if policy not in (CALCULATE_BY_REQUEST, CALCULATE_BY_MAX_USAGE_REQUEST):
            # Koordinator's message for the capped usage policy names podHPMaxUsedRequest (quirk, kept).
            mem_terms = ("systemUsage", sys_mem, "podHPMaxUsedRequest", hp_max_used_request[1])
    return BatchAllocatable(cpu, memory, (cpu, cap_cpu, margin[0], sys_cpu, *cpu_pods, cpu_ratio),
                            (memory, cap_mem, margin[1], *mem_terms, mem_ratio))


Pair = tuple[int, int]


def hp_sums(pods: Mapping[str, PodView], metric: MetricView) -> tuple[Pair, Pair, Pair]:
    """(podHPRequest, podHPUsed, podHPMaxUsedRequest) of ``calculateOnNode``, dangling metrics included.

    One pass over the metrics: an HP pod without metric adds its request to podHPUsed, i.e. podHPUsed is
    the metric-based sum plus (all HP requests - the requests of the HP pods that have a metric).
    """
    request_cpu, request_memory = pod_totals(pods).high_priority_request
    used_cpu = used_mem = max_cpu = max_mem = measured_cpu = measured_mem = 0
    for key, usage in metric.pods.items():
        usage_cpu, usage_memory = usage[0], usage[1]
        pod = pods.get(key)
        if pod is None:
            if usage[2] in LOW_PRIORITY:
                continue
            used_cpu += usage_cpu
            used_mem += usage_memory
            max_cpu += usage_cpu
            max_mem += usage_memory
            continue
        if pod.priority_class in LOW_PRIORITY:
            continue
        pod_cpu, pod_memory = pod.request_cpu, pod.request_memory
        measured_cpu += pod_cpu
        measured_mem += pod_memory
        used_cpu += pod_cpu if pod.qos == QOS_LSE else usage_cpu
        used_mem += usage_memory
        max_cpu += pod_cpu if pod_cpu > usage_cpu else usage_cpu
        max_mem += pod_memory if pod_memory > usage_memory else usage_memory
    used_cpu += request_cpu - measured_cpu
    used_mem += request_memory - measured_mem
    return (request_cpu, request_memory), (used_cpu, used_mem), (max_cpu, max_mem)


def calculate_on_node(snapshot: Snapshot) -> BatchAllocatable:
    """``calculateOnNode``: node-level batch cpu and memory with their messages."""
    strategy, node, metric = snapshot.strategy, snapshot.node, snapshot.metric
    hp_request, hp_used, hp_max = hp_sums(snapshot.pods, metric)
    capacity = (node.capacity_cpu, node.capacity_memory)
    host_cpu, host_mem = host_app_used_above(metric, PRIORITY_BATCH)
    system_used = (metric.system_usage[0] + host_cpu, metric.system_usage[1] + host_mem)
    return calculate_by_policy(strategy, capacity, safety_margin(strategy, *capacity), node.node_reserved,
                               system_used, hp_request, hp_used, hp_max)


def pod_numa_split(numa_nodes: Sequence[int], request: tuple[int, int], usage: tuple[int, int],
                   zone_count: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """``GetPodNUMARequestAndUsage`` on (cpu milli, memory milli-bytes): per-zone request and usage.

    Evenly over the pod's allocated NUMA nodes (ids outside ``[0, zone_count)`` ignored; a listed id counts
    each time it is listed, as Koordinator counts entries), or over all zones when it has none;
    ``DivideResourceList`` rounds each share up at milli precision.
    """
    targets, share = numa_share(numa_nodes, zone_count)
    zone_request = (divide_milli(request[0], share), divide_milli(request[1], share))
    zone_usage = (divide_milli(usage[0], share), divide_milli(usage[1], share))
    requests, usages = [(0, 0)] * zone_count, [(0, 0)] * zone_count
    for zone in targets:
        requests[zone], usages[zone] = zone_request, zone_usage
    return requests, usages


def numa_share(numa_nodes: Sequence[int], zone_count: int) -> tuple[range | list[int], float]:
    """The zones a pod's request and usage go to and the divisor of each share (see ``pod_numa_split``)."""
    count = sum(1 for node in numa_nodes if 0 <= node < zone_count)
    if count <= 0:
        return range(zone_count), float(zone_count)
    return sorted(set(node for node in numa_nodes if 0 <= node < zone_count)), float(count)


def calculate_on_numa_level(strategy: ColocationStrategy, zones: Sequence[Zone], node_reserved: tuple[int, int],
                            pods: Mapping[str, PodView], metric: MetricView) -> dict[str, tuple[int, int]]:
    """``calculateOnNUMALevel``: zone name -> (batch cpu milli-cores, batch memory bytes).

    Memory runs at milli-byte precision as Koordinator's quantities do after the divisions; each zone's
    batch memory is rounded up to bytes (``Quantity.Value()``). Unlike node level, a pod without metric
    adds its split request to ``podHPMaxUsedRequest`` as well. Each pod's shares are ``pod_numa_split``'s,
    added only to the zones they go to (the others get zero).
    """
    count = len(zones)
    if count == 0:
        return {}
    host_cpu, host_mem = host_app_used_above(metric, PRIORITY_BATCH)
    system = (metric.system_usage[0] + host_cpu, (metric.system_usage[1] + host_mem) * 1000)
    reserved = (node_reserved[0], node_reserved[1] * 1000)
    zone_system = (divide_milli(system[0], count), divide_milli(system[1], count))
    zone_reserved = (divide_milli(reserved[0], count), divide_milli(reserved[1], count))
    hp_req = [[0, 0] for _ in zones]
    hp_used = [[0, 0] for _ in zones]
    hp_max = [[0, 0] for _ in zones]

    def add(target: list[list[int]], zones_: range | list[int], cpu: int, memory: int) -> None:
        for zone in zones_:
            target[zone][0] += cpu
            target[zone][1] += memory

    for key, pod in pods.items():
        if pod.priority_class in LOW_PRIORITY:
            continue
        usage_metric = metric.pods.get(key)
        targets, share = numa_share(pod.numa_nodes, count)
        request_cpu = divide_milli(pod.request_cpu, share)
        request_memory = divide_milli(pod.request_memory * 1000, share)
        add(hp_req, targets, request_cpu, request_memory)
        if usage_metric is None:
            add(hp_used, targets, request_cpu, request_memory)
            add(hp_max, targets, request_cpu, request_memory)
            continue
        usage_cpu, usage_memory = divide_milli(usage_metric[0], share), divide_milli(usage_metric[1] * 1000, share)
        add(hp_used, targets, request_cpu if pod.qos == QOS_LSE else usage_cpu, usage_memory)
        add(hp_max, targets, max(request_cpu, usage_cpu), max(request_memory, usage_memory))
    every_zone = range(count)
    for key, usage_metric in metric.pods.items():
        if key in pods or usage_metric[2] in LOW_PRIORITY:
            continue
        cpu, memory = divide_milli(usage_metric[0], count), divide_milli(usage_metric[1] * 1000, count)
        add(hp_used, every_zone, cpu, memory)
        add(hp_max, every_zone, cpu, memory)

    result = {}
    memory_percent = strategy.batch_memory_threshold_percent
    unscaled = dataclasses.replace(strategy, batch_memory_threshold_percent=None)
    for index, zone in enumerate(zones):
        margin = safety_margin(strategy, zone.cpu, zone.memory)
        allocatable = calculate_by_policy(
            unscaled, (zone.cpu, zone.memory * 1000), (margin[0], margin[1] * 1000), zone_reserved, zone_system,
            (hp_req[index][0], hp_req[index][1]), (hp_used[index][0], hp_used[index][1]),
            (hp_max[index][0], hp_max[index][1]))
        cpu, memory_milli = allocatable.cpu, allocatable.memory
        if memory_percent is not None:
            memory_milli = min(memory_milli, multiply(zone.memory, float(memory_percent) / 100) * 1000)
        result[zone.name] = (cpu, -(-memory_milli // 1000))
    return result


class BatchResource:
    name = NAME

    def __init__(self, args: BatchResourceArgs = BatchResourceArgs()) -> None:
        args.validate()
        self.args = args

    def calculate(self, snapshot: Snapshot) -> list[ResourceItem]:
        if is_degrade_needed(snapshot.strategy, snapshot.metric, snapshot.now_ms):
            return self.reset(DEGRADE_MESSAGE)
        metric = memory_under_policy(snapshot.metric, snapshot.strategy.metric_memory_collect_policy)
        if metric is not snapshot.metric:
            snapshot = dataclasses.replace(snapshot, metric=metric)
        allocatable = calculate_on_node(snapshot)
        zone_cpu = zone_memory = None
        if self.args.numa_level and snapshot.zones:
            zoned = calculate_on_numa_level(snapshot.strategy, snapshot.zones, snapshot.node.node_reserved,
                                            snapshot.pods, snapshot.metric)
            zone_cpu = {zone: values[0] for zone, values in zoned.items()}
            zone_memory = {zone: values[1] for zone, values in zoned.items()}
        return [ResourceItem(BATCH_CPU, allocatable.cpu, zone_quantity=zone_cpu,
                             message_source=partial(cpu_message, *allocatable.cpu_terms)),
                ResourceItem(BATCH_MEMORY, allocatable.memory, zone_quantity=zone_memory,
                             message_source=partial(memory_message, *allocatable.memory_terms))]

    def reset(self, message: str) -> list[ResourceItem]:
        return [ResourceItem(name, message_source=message, reset=True) for name in RESOURCE_NAMES]

    def prepare(self, strategy: ColocationStrategy, status: NodeStatus, result: NodeResource) -> None:
        """Write batch resources, the origin annotation, then subtract koord-batch third-party allocations."""
        for name in RESOURCE_NAMES:
            prepare_node_for_resource(status, result, name)
        cpu, memory = status.allocatable.get(BATCH_CPU, -1), status.allocatable.get(BATCH_MEMORY, -1)
        status.annotations[ANNOTATION_ORIGIN_EXTENDED_ALLOCATABLE] = origin_annotation(max(cpu, 0), max(memory, 0))
        third_party_batch = status.node.third_party_batch
        if cpu < 0 or memory < 0 or third_party_batch is None:
            return
        for name, origin, allocated in ((BATCH_CPU, cpu, third_party_batch[0]),
                                        (BATCH_MEMORY, memory, third_party_batch[1])):
            status.allocatable[name] = status.capacity[name] = max(origin - allocated, 0)

    def pre_update(self, strategy: ColocationStrategy, zones: Sequence[Zone], published: ZoneResources,
                   result: NodeResource) -> tuple[dict[str, dict[str, int]], tuple[bool, str]] | None:
        """``UpdateNRTZoneListIfNeeded`` over the NRT's zones: the zone resources to publish and whether
        they need a sync (a value moved by more than ``resourceDiffThreshold``, was added or zeroed); None
        when nothing was calculated per zone (Koordinator then leaves the NRT alone)."""
        if not result.zone_resources or not zones:
            return None
        ratio = cpu_normalization_ratio(result)
        threshold = strategy.resource_diff_threshold
        updated, changed = {}, False
        for zone in zones:
            old = published.get(zone.name, {})
            new = dict(old)
            calculated = result.zone_resources.get(zone.name)
            if calculated is None:
                for name in RESOURCE_NAMES:
                    if new.get(name):
                        new[name] = 0
                        changed = True
            else:
                for name, quantity in calculated.items():
                    if name == BATCH_CPU and ratio > 1.0:
                        quantity = amplify_batch_cpu(quantity, ratio)
                    if name not in old or is_quantity_diff(old[name], quantity, threshold):
                        new[name] = quantity
                        changed = True
            if new:
                updated[zone.name] = new
        return updated, (changed, ZONE_SYNC_REASON if changed else "")

    def need_sync(self, strategy: ColocationStrategy, old_allocatable: Mapping[str, int],
                  new_allocatable: Mapping[str, int]) -> tuple[bool, str]:
        for name in RESOURCE_NAMES:
            if is_resource_diff(old_allocatable, new_allocatable, name, strategy.resource_diff_threshold):
                return True, NEED_SYNC_REASON
        return False, ""


def memory_text(value: int) -> str:
    """A byte count as a Kubernetes quantity: a decimal suffix when exact (``50G``), else a binary one
    (``120Gi``), else the plain number."""
    if value:
        for suffix, power in (("E", 18), ("P", 15), ("T", 12), ("G", 9), ("M", 6), ("k", 3)):
            if value % 10**power == 0:
                return f"{value // 10**power}{suffix}"
        if not value & 1023:
            return format_quantity(BATCH_MEMORY, value)
    return str(value)


def origin_annotation(cpu: int, memory: int) -> str:
    """``node.koordinator.sh/originExtendedAllocatable``: ``{"resources": {...}}`` with the batch values
    (batch-cpu as its integer of milli-cores)."""
    return f'{{"resources":{{"{BATCH_CPU}":"{cpu}","{BATCH_MEMORY}":"{memory_text(memory)}"}}}}'
