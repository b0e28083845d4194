"""MidResource: ``kubernetes.io/mid-cpu`` and ``kubernetes.io/mid-memory`` of a node.

The formula Koordinator's code implements (``plugins/midresource`` and
``CalculateMidResourceByPolicy``), which differs from the proposal's wording:
the threshold caps the whole sum, and it is a share of node *capacity*::

    Mid = min( max(min(ProdReclaimable, NodeUnused), 0) + Unallocated * midUnallocatedPercent / 100,
               NodeCapacity * midThresholdPercent / 100 )

    NodeUnused   = capacity - NodeMetric.nodeUsage   (0 when nodeUsage lacks cpu or memory)
    Unallocated  = max(capacity - nodeReservedMid - ProdAllocated, 0)
    ProdAllocated   = requests of the Running/Pending pods whose class with default is Prod or None
    nodeReservedMid = max(systemUsage + usage of koord-prod host applications,
                          kubelet reserved, node.koordinator.sh/reservation)

cpu in milli-cores (products truncated toward zero), memory in bytes.
``ProdReclaimable`` is ``status.prodReclaimableMetric.resource`` of the
NodeMetric, 0 when absent (Koordinator does not degrade for it). Static mode
(``midReclaimMode: static``)::

    Mid = min(capacity * midStaticReservedPercent / 100, capacity * midThresholdPercent / 100)

Degrade as BatchResource: no NodeMetric, no ``updateTime`` or a stale one
resets both resources. mid-cpu is not amplified by CPU normalization. The node
is updated when either value moves by more than ``resourceDiffThreshold``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from functools import partial

from streams.koordinator.classes import PRIORITY_MID
from streams.koordinator.resources import MID_CPU, MID_MEMORY
from streams.noderesource.framework import NodeResource, NodeStatus, ResourceItem
from streams.noderesource.quantities import format_go_float, is_resource_diff, multiply, multiply_milli, scaled_value
from streams.noderesource.resources import host_app_used_above, is_degrade_needed, prepare_node_for_resource
from streams.noderesource.views import Snapshot, pod_totals
from streams.sloconfig.colocation import MID_RECLAIM_MODE_STATIC, ColocationStrategy

NAME = "MidResource"
RESOURCE_NAMES = (MID_CPU, MID_MEMORY)
DEGRADE_MESSAGE = "degrade node Mid resource because of abnormal nodeMetric, reason: degradedByMidResource"
NEED_SYNC_REASON = "mid resource diff is big than threshold"


@dataclasses.dataclass(frozen=True)
class MidResourceArgs:
    predict_unreported_reclaimable: bool = True
    """When a NodeMetric carries no ``prodReclaimableMetric``, use the node profile's ProdReclaimable
    (koordstream's node aggregate does koordlet's prediction). False: Koordinator's slo-controller
    behaviour, which counts it as 0."""

    def validate(self) -> None:
        if not isinstance(self.predict_unreported_reclaimable, bool):
            raise ValueError(f"{NAME}: predict_unreported_reclaimable must be a boolean")


@dataclasses.dataclass(frozen=True, slots=True)
class MidAllocatable:
    """Result of ``CalculateMidResourceBy{Policy,StaticMode}``: the values and the terms of their messages."""

    cpu: int
    memory: int
    cpu_terms: tuple
    memory_terms: tuple
    static: bool = False

    @property
    def cpu_message(self) -> str:
        return (static_cpu_message if self.static else cpu_message)(*self.cpu_terms)

    @property
    def memory_message(self) -> str:
        return (static_memory_message if self.static else memory_message)(*self.memory_terms)


def static_cpu_message(cpu: int, capacity: int, reserved: float, ratio: float) -> str:
    return (f"midAllocatable[CPU(milli-core)]:{cpu} = min(nodeCapacity:{capacity} * staticReservedPercent:"
            f"{format_go_float(reserved)}, nodeCapacity:{capacity} * thresholdRatio:{format_go_float(ratio)})")


def static_memory_message(memory: int, capacity: int, reserved: float, ratio: float) -> str:
    g = scaled_value
    return (f"midAllocatable[Memory(GB)]:{g(memory)} = min(nodeCapacity:{g(capacity)} * staticReservedPercent:"
            f"{format_go_float(reserved)}, nodeCapacity:{g(capacity)} * thresholdRatio:{format_go_float(ratio)})")


def cpu_message(cpu: int, reclaimable: int, unused: int, unallocated_value: int, unallocated_ratio: float,
                capacity: int, ratio: float) -> str:
    return (f"midAllocatable[CPU(milli-core)]:{cpu} = min(min(ProdReclaimable:{reclaimable}, NodeUnused:{unused})"
            f" + Unallocated:{unallocated_value} * midUnallocatedRatio:{format_go_float(unallocated_ratio)},"
            f" NodeCapacity:{capacity} * thresholdRatio:{format_go_float(ratio)})")


def memory_message(memory: int, reclaimable: int, unused: int, unallocated_value: int, unallocated_ratio: float,
                   capacity: int, ratio: float) -> str:
    g = scaled_value
    return (f"midAllocatable[Memory(GB)]:{g(memory)} = min(min(ProdReclaimable:{g(reclaimable)}, "
            f"NodeUnused:{g(unused)}) + Unallocated:{g(unallocated_value)} * midUnallocatedRatio:"
            f"{format_go_float(unallocated_ratio)}, NodeCapacity:{g(capacity)} * thresholdRatio:"
            f"{format_go_float(ratio)})")


def calculate_static(strategy: ColocationStrategy, capacity: tuple[int, int]) -> MidAllocatable:
    """``CalculateMidResourceByStaticMode``."""
    cap_cpu, cap_mem = capacity
    cpu_reserved = float(strategy.mid_static_cpu_reserved_percent) / 100
    mem_reserved = float(strategy.mid_static_memory_reserved_percent) / 100
    cpu_ratio = float(strategy.mid_cpu_threshold_percent) / 100
    mem_ratio = float(strategy.mid_memory_threshold_percent) / 100
    cpu = min(multiply_milli(cap_cpu, cpu_reserved), int(float(cap_cpu) * cpu_ratio))
    memory = min(multiply(cap_mem, mem_reserved), int(float(cap_mem) * mem_ratio))
    return MidAllocatable(cpu, memory, (cpu, cap_cpu, cpu_reserved, cpu_ratio),
                          (memory, cap_mem, mem_reserved, mem_ratio), static=True)


def calculate_by_policy(strategy: ColocationStrategy, capacity: tuple[int, int], unallocated: tuple[int, int],
                        node_unused: tuple[int, int], prod_reclaimable: tuple[int, int]) -> MidAllocatable:
    """``CalculateMidResourceByPolicy``: mid cpu (milli-cores) and memory (bytes)."""
    cap_cpu, cap_mem = capacity
    unallocated_ratio = float(strategy.mid_unallocated_percent) / 100
    cpu_ratio = float(strategy.mid_cpu_threshold_percent) / 100
    mem_ratio = float(strategy.mid_memory_threshold_percent) / 100
    cpu = max(min(prod_reclaimable[0], node_unused[0]), 0) + int(float(unallocated[0]) * unallocated_ratio)
    memory = max(min(prod_reclaimable[1], node_unused[1]), 0) + int(float(unallocated[1]) * unallocated_ratio)
    cpu = min(cpu, int(float(cap_cpu) * cpu_ratio))
    memory = min(memory, int(float(cap_mem) * mem_ratio))
    return MidAllocatable(
        cpu, memory,
        (cpu, prod_reclaimable[0], node_unused[0], unallocated[0], unallocated_ratio, cap_cpu, cpu_ratio),
        (memory, prod_reclaimable[1], node_unused[1], unallocated[1], unallocated_ratio, cap_mem, mem_ratio))


def unallocated(snapshot: Snapshot) -> tuple[int, int]:
    """``getUnallocated`` with ``nodeReservedMid``."""
    node, metric = snapshot.node, snapshot.metric
    host_cpu, host_mem = host_app_used_above(metric, PRIORITY_MID)
    reserved_cpu, reserved_mem = node.node_reserved
    reserved_cpu = max(metric.system_usage[0] + host_cpu, reserved_cpu)
    reserved_mem = max(metric.system_usage[1] + host_mem, reserved_mem)
    prod_cpu, prod_mem = pod_totals(snapshot.pods).prod_allocated
    return (max(node.capacity_cpu - reserved_cpu - prod_cpu, 0),
            max(node.capacity_memory - reserved_mem - prod_mem, 0))


class MidResource:
    name = NAME

    def __init__(self, args: MidResourceArgs = MidResourceArgs()) -> None:
        args.validate()
        self.args = args

    def calculate(self, snapshot: Snapshot) -> list[ResourceItem]:
        strategy, node, metric = snapshot.strategy, snapshot.node, snapshot.metric
        if is_degrade_needed(strategy, metric, snapshot.now_ms):
            return self.reset(DEGRADE_MESSAGE)
        capacity = (node.capacity_cpu, node.capacity_memory)
        if strategy.mid_reclaim_mode == MID_RECLAIM_MODE_STATIC:
            allocatable = calculate_static(strategy, capacity)
            cpu_format, memory_format = static_cpu_message, static_memory_message
        else:
            reclaimable = metric.prod_reclaimable or (0, 0)
            usage = metric.node_usage
            unused = (0, 0) if usage is None else (capacity[0] - usage[0], capacity[1] - usage[1])
            allocatable = calculate_by_policy(strategy, capacity, unallocated(snapshot), unused, reclaimable)
            cpu_format, memory_format = cpu_message, memory_message
        return [ResourceItem(MID_CPU, allocatable.cpu, message_source=partial(cpu_format, *allocatable.cpu_terms)),
                ResourceItem(MID_MEMORY, allocatable.memory,
                             message_source=partial(memory_format, *allocatable.memory_terms))]

    def reset(self, message: str) -> list[ResourceItem]:
        return [ResourceItem(name, message_source=message, reset=True) for name in RESOURCE_NAMES]

    def prepare(self, strategy: ColocationStrategy, status: NodeStatus, result: NodeResource) -> None:
        for name in RESOURCE_NAMES:
            prepare_node_for_resource(status, result, name)

    def need_sync(self, strategy: ColocationStrategy, old_allocatable: Mapping[str, int],
                  new_allocatable: Mapping[str, int]) -> tuple[bool, str]:
        for name in RESOURCE_NAMES:
            if is_resource_diff(old_allocatable, new_allocatable, name, strategy.resource_diff_threshold):
                return True, NEED_SYNC_REASON
        return False, ""
