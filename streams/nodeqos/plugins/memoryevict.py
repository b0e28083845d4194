"""Memory eviction: when node memory usage crosses the threshold, evict BE pods until enough is released.

koordlet's ``qosmanager/plugins/memoryevict/memory_evict.go`` (the ``BEMemoryEvict`` trigger):

    usage%  = trunc(nodeMemoryUsed * 100 / capacity)          nothing below memoryEvictThresholdPercent
    lower   = memoryEvictLowerPercent, else threshold - 2
    release = capacity * (usage% - lower) / 100               (bytes)

Victims: pods of QoS BE (allowed by ``koordinator.sh/eviction-policy`` when that JSON list is present and
names ``BEMemoryEvict``), sorted: both with ``spec.priority`` and different -> lower priority first; else
both using memory -> larger usage first; both unused -> name descending; else the one using memory first.
They are evicted in that order until their summed usage reaches ``release``. After an eviction nothing is
evicted for ``cool_down_seconds`` (4 s, ``MemoryEvictCoolTimeSeconds``). On when ``resource-threshold-config``
says ``enable`` (with ``memoryEvictThresholdPercent``, 70 by default): koordlet's ``BEMemoryEvict`` feature
gate is taken as on, so the slo-controller-config alone decides, as an operator reads it.
The generic ``MemoryEvict`` and ``MemoryAllocatableEvict`` triggers are not planned.
"""

from __future__ import annotations

import dataclasses
import functools
import json

from streams.koordinator.annotations import ANNOTATION_EVICTION_POLICY
from streams.koordinator.classes import QOS_BE
from streams.nodeqos.framework import Eviction, Plan, Snapshot

NAME = "MemoryEvict"
FEATURE = "BEMemoryEvict"
REASON_EVICTED = "EvictPodByNodeMemoryUsage"
"""Koordinator's eviction reason (``evictPodByNodeMemoryUsage``)."""


@dataclasses.dataclass(frozen=True)
class MemoryEvictArgs:
    cool_down_seconds: int = 4
    """``MemoryEvictCoolTimeSeconds``: no eviction this long after the last one."""

    def validate(self) -> None:
        if self.cool_down_seconds < 0:
            raise ValueError(f"MemoryEvictArgs.cool_down_seconds must be 0 or greater, got {self.cool_down_seconds}")


def release_bytes(used: int, capacity: int, threshold: int, lower: int | None) -> int:
    """``calculateReleaseByUsedThresholdPercent``."""
    if capacity <= 0:
        return 0
    usage = used * 100 // capacity
    if usage < threshold:
        return 0
    lower = threshold - 2 if lower is None else lower
    return capacity * (usage - lower) // 100


def _compare(a: tuple[str, int | None, int], b: tuple[str, int | None, int]) -> int:
    (name_a, prio_a, used_a), (name_b, prio_b, used_b) = a, b
    if prio_a is not None and prio_b is not None and prio_a != prio_b:
        return -1 if prio_a < prio_b else 1
    if used_a and used_b:
        return (used_b > used_a) - (used_b < used_a)
    if not used_a and not used_b:
        return (name_a < name_b) - (name_a > name_b)
    return -1 if used_a else 1


def sort_victims(candidates: list[tuple[str, int | None, int]]) -> list[tuple[str, int | None, int]]:
    """(name, spec.priority, memory used) in koordlet's BE eviction order."""
    return sorted(candidates, key=functools.cmp_to_key(_compare))


def allowed(policy: str | None, feature: str) -> bool:
    """``koordinator.sh/eviction-policy``: absent allows every trigger, else the JSON list must name it."""
    if policy is None:
        return True
    try:
        names = json.loads(policy)
    except ValueError:
        return True
    return not isinstance(names, list) or feature in names


class MemoryEvict:
    name = NAME

    def __init__(self, args: MemoryEvictArgs = MemoryEvictArgs()) -> None:
        args.validate()
        self.args = args

    def plan(self, snapshot: Snapshot) -> Plan:
        threshold = snapshot.strategy.threshold
        metric = snapshot.metric
        if not threshold.enable or metric is None or metric.node_usage is None:
            return Plan()
        last = snapshot.last_eviction_ms.get(NAME)
        if last is not None and snapshot.now_ms - last < self.args.cool_down_seconds * 1000:
            return Plan()
        capacity = snapshot.node.capacity_memory
        release = release_bytes(metric.node_usage[1], capacity, threshold.memory_evict_threshold_percent,
                                threshold.memory_evict_lower_percent)
        if release <= 0:
            return Plan()
        candidates = []
        for key, pod in snapshot.pods.items():
            if pod.qos != QOS_BE or key in snapshot.evicted or not allowed(pod.annotation(ANNOTATION_EVICTION_POLICY),
                                                                          FEATURE):
                continue
            used = metric.pods.get(key, (0, 0, None))[1]
            candidates.append((key, pod.priority, used))
        chosen, released = [], 0
        for key, _, used in sort_victims(candidates):
            if released >= release:
                break
            released += used
            chosen.append((key, used))
        usage = metric.node_usage[1] * 100 // capacity
        return Plan(evictions=tuple(
            Eviction(key, snapshot.pods[key].uid, REASON_EVICTED,
                     f"node memory usage {usage}% >= threshold {threshold.memory_evict_threshold_percent}%, need to "
                     f"release {release} bytes; pod {rank} of {len(chosen)} in eviction order uses {used} bytes")
            for rank, (key, used) in enumerate(chosen, 1)))
