"""CPU eviction by BE satisfaction: when BE gets far less cpu than it requested, evict BE pods.

koordlet's ``qosmanager/plugins/cpuevict/cpu_evict.go`` (the ``BECPUEvict`` trigger):

    satisfaction = BE limit / BE request          (milli-cores; no release when the request is <= 0)
    release      = trunc(request * (upper/100 - satisfaction))
                   only if satisfaction <= lower/100 and BE's usage is high enough:
                   limit <= 0: no; limit < 1000: yes; else used / limit >= cpuEvictBEUsageThresholdPercent/100 (90)

with ``lower = cpuEvictBESatisfactionLowerPercent`` in (0, 60], ``upper = ...UpperPercent`` in (0, 100),
``upper >= lower`` (else nothing). koordlet takes the average over ``cpuEvictTimeWindowSeconds`` and the
last sample and releases ``min(avg, current)`` (``be_release``); a NodeMetric is one sample, so both are the
last NodeMetric here. BE figures: used = BE pods' cpu usage, request = their ``batch-cpu`` requests, limit =
the BE cgroup's limit as last actuated (``cfs_quota / 100``, or ``|cpuset| * 1000``, else the node capacity)
or, with ``cpuEvictPolicy: evictByAllocatable``, the node's ``kubernetes.io/batch-cpu`` allocatable
(0 -> 1, missing -> -1).

Victims: BE pods sorted by ``spec.priority`` ascending when both are set and differ, else by usage ratio
(used / batch-cpu request) descending; evicted until their batch-cpu requests reach the release. Cool-down
20 s after an eviction, counted from the first plan (koordlet's evictor starts its clock at creation).
On when ``resource-threshold-config`` says ``enable`` and sets both satisfaction percents (koordlet's
``BECPUEvict`` gate is taken as on: the config alone decides). The ``CPUEvict`` (used threshold) and ``CPUAllocatableEvict`` triggers are not planned.
"""

from __future__ import annotations

import dataclasses
import functools

from streams.actuation import CPU_QUOTA, CPUSET_CPUS, MECHANISM_CGROUP, TARGET_QOS
from streams.koordinator.classes import QOS_BE
from streams.koordinator.resources import BATCH_CPU
from streams.nodeqos.framework import Eviction, Plan, Snapshot
from streams.sloconfig.nodeqos import EVICT_BY_ALLOCATABLE

NAME = "CPUEvict"
REASON_EVICTED = "EvictPodByBECPUSatisfaction"
DEFAULT_USAGE_THRESHOLD_PERCENT = 90
MAX_LOWER_PERCENT = 60


@dataclasses.dataclass(frozen=True)
class CPUEvictArgs:
    cool_down_seconds: int = 20
    """``CPUEvictCoolTimeSeconds``."""

    def validate(self) -> None:
        if self.cool_down_seconds < 0:
            raise ValueError(f"CPUEvictArgs.cool_down_seconds must be 0 or greater, got {self.cool_down_seconds}")


BEMetric = tuple[int, int, int]
"""(limit, used, request) in milli-cores."""


def _release(metric: BEMetric, lower: int, upper: int, usage_threshold: int) -> int:
    limit, used, request = metric
    if limit <= 0:
        return 0
    if limit >= 1000 and used / limit < usage_threshold / 100:
        return 0
    if request <= 0:
        return 0
    satisfaction = limit / request
    if satisfaction > lower / 100:
        return 0
    gap = upper / 100 - satisfaction
    return int(request * gap) if gap > 0 else 0


def be_release(average: BEMetric, current: BEMetric, lower: int, upper: int,
               usage_threshold: int = DEFAULT_USAGE_THRESHOLD_PERCENT) -> int:
    """``calculateMilliRelease``: the average's release, or the smaller of both when the current request or
    limit differs from the average's."""
    by_average = _release(average, lower, upper, usage_threshold)
    if by_average <= 0:
        return 0
    if (current[0], current[2]) == (average[0], average[2]):
        return by_average
    by_current = _release(current, lower, upper, usage_threshold)
    return 0 if by_current <= 0 else min(by_average, by_current)


def be_limit(snapshot: Snapshot, by_allocatable: bool) -> int:
    if by_allocatable:
        allocatable = snapshot.node.allocatable.get(BATCH_CPU)
        if allocatable is None or allocatable < 0:
            return -1
        return allocatable or 1
    actuated = snapshot.previous.get((TARGET_QOS, QOS_BE, MECHANISM_CGROUP), {})
    quota = int(actuated.get(CPU_QUOTA, "-1"))
    if quota > 0:
        return quota * 1000 // 100_000
    if CPUSET_CPUS in actuated:
        cpus = set()
        for part in actuated[CPUSET_CPUS].split(","):
            low, _, high = part.partition("-")
            cpus.update(range(int(low), int(high or low) + 1))
        return len(cpus) * 1000
    return snapshot.node.capacity_cpu


def _compare(a: tuple[str, int | None, float], b: tuple[str, int | None, float]) -> int:
    if a[1] is not None and b[1] is not None and a[1] != b[1]:
        return -1 if a[1] < b[1] else 1
    return (b[2] > a[2]) - (b[2] < a[2])


def sort_victims(candidates: list[tuple[str, int | None, float]]) -> list[tuple[str, int | None, float]]:
    """(key, spec.priority, cpu usage / batch-cpu request) in koordlet's order."""
    return sorted(candidates, key=functools.cmp_to_key(_compare))


class CPUEvict:
    name = NAME

    def __init__(self, args: CPUEvictArgs = CPUEvictArgs()) -> None:
        args.validate()
        self.args = args

    def plan(self, snapshot: Snapshot) -> Plan:
        threshold = snapshot.strategy.threshold
        lower, upper = threshold.cpu_evict_be_satisfaction_lower_percent, threshold.cpu_evict_be_satisfaction_upper_percent
        metric = snapshot.metric
        if not threshold.enable or metric is None:
            return Plan()
        if lower is None or upper is None or not 0 < lower <= MAX_LOWER_PERCENT or not 0 < upper < 100 or upper < lower:
            return Plan()
        last = snapshot.last_eviction_ms.get(NAME)
        if last is None:
            return Plan(start_cool_down=True)
        if snapshot.now_ms - last < self.args.cool_down_seconds * 1000:
            return Plan()
        be = {key: pod for key, pod in snapshot.pods.items() if pod.qos == QOS_BE}
        used = sum(metric.pods.get(key, (0, 0, None))[0] for key in be)
        request = sum(pod.request_batch_cpu for pod in be.values())
        limit = be_limit(snapshot, threshold.cpu_evict_policy == EVICT_BY_ALLOCATABLE)
        usage_threshold = threshold.cpu_evict_be_usage_threshold_percent or DEFAULT_USAGE_THRESHOLD_PERCENT
        sample = (limit, used, request)
        release = be_release(sample, sample, lower, upper, usage_threshold)
        if release <= 0:
            return Plan()
        candidates = [(key, pod.priority, metric.pods.get(key, (0, 0, None))[0] / pod.request_batch_cpu
                       if pod.request_batch_cpu > 0 else 0.0)
                      for key, pod in be.items() if key not in snapshot.evicted]
        victims, released = [], 0
        for key, _, _ in sort_victims(candidates):
            if released >= release:
                break
            released += be[key].request_batch_cpu
            victims.append(Eviction(key, be[key].uid, REASON_EVICTED,
                                    f"BE cpu satisfaction {limit}/{request} <= {lower}%, need to release "
                                    f"{release} milli-cores of batch-cpu"))
        return Plan(evictions=tuple(victims))
