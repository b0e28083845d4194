"""CPU suppress: cap what BE pods may use so LS pods, LS host applications and the system keep theirs.

koordlet's ``qosmanager/plugins/cpusuppress/cpu_suppress.go`` (``calculateBESuppressCPU``,
``adjustByCfsQuota``, ``adjustByCPUSet``, ``calculateBESuppressCPUSetPolicy``), on the last NodeMetric:

    systemUsed   = max(max(nodeUsed - sum(podUsed) - sum(hostAppUsed), 0), nodeReserved)
    suppress     = capacity * cpuSuppressThresholdPercent / 100
                   - sum(non-BE podUsed) - sum(non-BE hostAppUsed) - systemUsed          (milli-cores)
    suppress     = max(suppress, capacity * cpuSuppressMinPercent / 100)   when the min percent is set

A pod is BE by its QoS class (with default); a pod metric whose pod the node does not know counts as
non-BE; a host application is BE only when its QoS is BE and its cgroup base is ``KubepodsBesteffort``.

- ``cfsQuota``: ``quota = max(suppress * 100, 2000)`` on ``qos/BE``; unchanged when it moves by less than
  1 % of the node (``cores * 1000``) unless it is the floor; an increase is capped at 10 % of the node
  (``cores * 10000``) per round unless the current quota is -1. The BE cpuset is recovered to all CPUs.
- ``cpuset`` (default): ``ceil(suppress / 1000)`` CPUs, at least 2, at most the current count plus
  ``ceil(CPUs * 0.1)``, picked by ``suppress_cpuset`` (HT pairs first, round robin over NUMA nodes/sockets).
  The Node record carries no CPU topology, so the node's CPUs are ``0..ceil(capacity/1000)-1`` as one
  socket without Hyper-Threading, minus the ``reservedCPUs`` of the node reservation annotation and the
  CPUs pinned to LSE pods (``resource-status`` cpuset; ``adjustByCPUSet``): of the rest, CPUs pinned to LSR
  pods give ``cpus * |LSR| // (|LSR| + |LS|)`` of the set and the others the remainder, each picked as
  above. The BE quota is recovered to -1.
- Disabled (``enable`` false, or the ``BECPUSuppress`` gate off): what was suppressed is recovered once
  (quota -1, the full cpuset: the node's CPUs less reserved and LSE-pinned ones, ``calcBECPUSet``), as
  ``recoverCFSQuotaIfNeed`` / ``recoverCPUSetIfNeed``; nothing when nothing was written.

"Current" values are the ones this planner emitted last (``Snapshot.previous``): koordlet reads the cgroup
it wrote itself. No plan without a NodeMetric carrying node usage (koordlet skips such rounds).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence

from streams.actuation import CPU_QUOTA, CPUSET_CPUS, MECHANISM_CGROUP, TARGET_QOS
from streams.koordinator.annotations import ANNOTATION_NODE_RESERVATION
from streams.koordinator.classes import QOS_BE, QOS_LSE, QOS_LSR
from streams.nodeqos.framework import NOTHING, Plan, Setting, Snapshot
from streams.nodeqos.podmeta import pinned_cpus
from streams.sloconfig.nodeqos import SUPPRESS_CFS_QUOTA

NAME = "CPUSuppress"
REASON_DISABLED = "suppress disabled"
REASON_NO_METRIC = "no node usage in the last NodeMetric"
BE_TARGET = (TARGET_QOS, QOS_BE, MECHANISM_CGROUP)
CFS_PERIOD = 100_000
BE_MIN_QUOTA = 2000
BE_MIN_CPUSET_CORES = 2
BYPASS_DELTA_RATIO = 0.01
MAX_INCREASE_RATIO = 0.1
HOST_APP_BE_BASE = "KubepodsBesteffort"


def suppress_milli(snapshot: Snapshot) -> int | None:
    """``calculateBESuppressCPU`` in milli-cores; None without node usage."""
    metric = snapshot.metric
    if metric is None or metric.node_usage is None:
        return None
    node, threshold = snapshot.node, snapshot.strategy.threshold
    capacity = node.capacity_cpu
    all_pods = non_be_pods = 0
    for key, (cpu, _, _) in metric.pods.items():
        all_pods += cpu
        pod = snapshot.pods.get(key)
        if pod is None or pod.qos != QOS_BE:
            non_be_pods += cpu
    be_bases = {app.name: app.cgroup_base for app in snapshot.strategy.host_apps}
    all_apps = non_be_apps = 0
    for app in metric.host_apps:
        all_apps += app.cpu
        if not (app.qos == QOS_BE and be_bases.get(app.name) == HOST_APP_BE_BASE):
            non_be_apps += app.cpu
    system = max(max(metric.node_usage[0] - all_pods - all_apps, 0), node.node_reserved[0])
    suppress = capacity * threshold.cpu_suppress_threshold_percent // 100 - non_be_pods - non_be_apps - system
    if threshold.cpu_suppress_min_percent is not None:
        suppress = max(suppress, capacity * threshold.cpu_suppress_min_percent // 100)
    return suppress


def cfs_quota(suppress: int, capacity_milli: int, current: int) -> int:
    """``adjustByCfsQuota``: the BE quota to write given the current one (-1: unlimited)."""
    new = max(suppress * CFS_PERIOD // 1000, BE_MIN_QUOTA)
    cores = math.ceil(capacity_milli / 1000)
    if abs(new - current) < cores * CFS_PERIOD * BYPASS_DELTA_RATIO and new != BE_MIN_QUOTA:
        return current
    max_increase = cores * CFS_PERIOD * MAX_INCREASE_RATIO
    if new - current > max_increase and current != -1:
        new = current + int(max_increase)
    return new


Processor = tuple[int, int, int, int]
"""(cpu id, core id, socket id, NUMA node id), as koordlet's ``ProcessorInfo``."""


def suppress_cpuset(cpus: int, processors: Sequence[Processor]) -> list[int]:
    """``calculateBESuppressCPUSetPolicy``: HT pairs first, round robin over (node, socket) buckets."""
    count = len(processors)
    if count < cpus:
        return []
    buckets: dict[int, list[Processor]] = {}
    for processor in processors:
        buckets.setdefault((processor[3] + count) * (processor[2] + 1), []).append(processor)
    ordered = [sorted(bucket, key=lambda p: (p[1], p[0])) for bucket in buckets.values()]
    ordered.sort(key=lambda bucket: (-len(bucket), bucket[0][0]))
    chosen: list[int] = []
    used: set[int] = set()
    need, i = cpus, 0
    previous_need = -1
    while ordered:
        if need <= 1:
            break
        if i == 0:
            if previous_need == need:
                break
            previous_need = need
        bucket = ordered[i]
        for j in range(len(bucket) - 1):
            if bucket[j][0] in used:
                continue
            if bucket[j][1] == bucket[j + 1][1]:
                chosen += [bucket[j][0], bucket[j + 1][0]]
                used.update((bucket[j][0], bucket[j + 1][0]))
                need -= 2
                break
        i = (i + 1) % len(ordered)
    start, previous_need = i, -1
    while ordered:
        if need <= 0:
            break
        if i == start:
            if previous_need == need:
                break
            previous_need = need
        free = next((p[0] for p in ordered[i] if p[0] not in used), None)
        if free is not None:
            chosen.append(free)
            used.add(free)
            need -= 1
        i = (i + 1) % len(ordered)
    return chosen


def parse_cpuset(text: str) -> list[int]:
    cpus: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if part:
            low, _, high = part.partition("-")
            cpus.update(range(int(low), int(high or low) + 1))
    return sorted(cpus)


def format_cpuset(cpus: Iterable[int]) -> str:
    """Linux list format with ranges (``0-3,8``), as ``cpuset.GenerateCPUSetStr``."""
    ordered = sorted(set(cpus))
    parts, index = [], 0
    while index < len(ordered):
        end = index
        while end + 1 < len(ordered) and ordered[end + 1] == ordered[end] + 1:
            end += 1
        parts.append(str(ordered[index]) if end == index else f"{ordered[index]}-{ordered[end]}")
        index = end + 1
    return ",".join(parts)


def node_processors(snapshot: Snapshot) -> list[Processor]:
    """The node's CPUs as one socket without HT, less the reservation annotation's ``reservedCPUs``."""
    total = math.ceil(snapshot.node.capacity_cpu / 1000)
    reserved: set[int] = set()
    text = snapshot.node.annotations.get(ANNOTATION_NODE_RESERVATION)
    if text:
        try:
            raw = json.loads(text)
            reserved = set(parse_cpuset(raw.get("reservedCPUs") or "")) if isinstance(raw, dict) else set()
        except ValueError:
            reserved = set()
    return [(cpu, cpu, 0, 0) for cpu in range(total) if cpu not in reserved]


def pinned_classes(snapshot: Snapshot) -> dict[int, str]:
    """CPU -> QoS class of the pod pinned to it (cpusets that do not parse are skipped, as koordlet does)."""
    pinned: dict[int, str] = {}
    for key in sorted(snapshot.pods):
        pod = snapshot.pods[key]
        for cpu in pinned_cpus(pod.cpuset)[0]:
            pinned[cpu] = pod.qos
    return pinned


def be_cpuset(cpus: int, processors: Sequence[Processor], pinned: dict[int, str]) -> list[int]:
    """``adjustByCPUSet``'s pick: LSE-pinned CPUs left out, LSR-pinned ones contributing in proportion."""
    lsr = [p for p in processors if pinned.get(p[0]) == QOS_LSR]
    ls = [p for p in processors if pinned.get(p[0]) not in (QOS_LSR, QOS_LSE)]
    if not lsr and not ls:
        return []
    lsr_cpus = cpus * len(lsr) // (len(lsr) + len(ls))
    chosen = suppress_cpuset(lsr_cpus, lsr) if lsr_cpus > 0 else []
    return chosen + (suppress_cpuset(cpus - lsr_cpus, ls) if cpus - lsr_cpus > 0 else [])


class CPUSuppress:
    name = NAME

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled

    def plan(self, snapshot: Snapshot) -> Plan:
        previous = snapshot.previous.get(BE_TARGET, {})
        threshold = snapshot.strategy.threshold
        enabled = self.enabled and threshold.enable
        if not enabled and not previous:
            return NOTHING
        pinned = pinned_classes(snapshot)
        full = format_cpuset(p[0] for p in node_processors(snapshot) if pinned.get(p[0]) != QOS_LSE)
        recover_quota = {CPU_QUOTA: "-1"} if CPU_QUOTA in previous else {}
        recover_cpuset = {CPUSET_CPUS: full} if CPUSET_CPUS in previous and full else {}
        if not enabled:
            values = {**recover_quota, **recover_cpuset}
            return Plan((Setting(*BE_TARGET, values),)) if values else NOTHING
        suppress = suppress_milli(snapshot)
        if suppress is None:
            return NOTHING
        capacity = snapshot.node.capacity_cpu
        if threshold.cpu_suppress_policy == SUPPRESS_CFS_QUOTA:
            current = int(previous.get(CPU_QUOTA, "-1"))
            values = {CPU_QUOTA: str(cfs_quota(suppress, capacity, current)), **recover_cpuset}
            return Plan((Setting(*BE_TARGET, values),))
        processors = node_processors(snapshot)
        cpus = max(math.ceil(suppress / 1000), BE_MIN_CPUSET_CORES)
        old = len(parse_cpuset(previous[CPUSET_CPUS])) if CPUSET_CPUS in previous else len(processors)
        cpus = min(cpus, old + math.ceil(len(processors) * MAX_INCREASE_RATIO))
        chosen = be_cpuset(cpus, processors, pinned)
        if not chosen:
            return Plan((Setting(*BE_TARGET, recover_quota),)) if recover_quota else NOTHING
        return Plan((Setting(*BE_TARGET, {CPUSET_CPUS: format_cpuset(chosen), **recover_quota}),))
