"""CPU burst: let LS pods with a cpu limit burst above it (``cpu.cfs_burst_us``) and scale their quota.

koordlet's ``qosmanager/plugins/cpuburst/cpu_burst.go``. Pods handled: QoS not LSR/LSE/BE (with default),
with a UID. The pod annotation ``koordinator.sh/cpuBurst`` (``CPUBurstConfig`` JSON) is merged over the
node's ``cpu-burst-config`` strategy.

- Static burst (policies ``cpuBurstOnly``, ``auto``): ``cfs_burst_us = limit_cores * cpuBurstPercent / 100
  * 100000 = limit_milli * cpuBurstPercent``; 0 for other policies or without a cpu limit. The pod value is
  the sum over its containers, i.e. computed on the pod's cpu limit (containers without a limit add 0).
  Then capped at the pod's quota in force (the scaled quota of this plan, else ``base``): Linux refuses
  ``burst > quota`` (``tg_set_cfs_bandwidth``: EINVAL), so koordlet's default of 1000 % is written as 100 %
  of the quota on an upstream kernel, and the node agent refuses a value above it rather than lowering it.
- Share pool (every plan): ``poolTotal = CPUs*1000 - sum(cpu requests of LSE/LSR pods)``,
  ``poolUsage = nodeUsage - sum(usage of LSE/LSR/BE pods)``, ``ratio = poolUsage / poolTotal`` (1 when the
  total is <= 0): **overload** if ``ratio >= t``, **cooling** if ``0.9 t <= ratio < t``, else **idle**
  (``t = sharePoolThresholdPercent / 100``); **unknown** without node usage.
- Quota burst (policies ``cfsQuotaBurstOnly``, ``auto``), per pod with a limit:
  ``base = limit_milli * 100`` (at least 1000), ``ceil = base * cfsQuotaBurstPercent / 100`` (when > 100 %).
  Operation (``quota_operation``): reset without a quota-burst policy; else scale up when the pod was
  throttled (its NodeMetric ``throttledRatio > 0``), remain when it was not or when the ratio is not
  reported; overload turns up/remain into down, cooling/unknown turns up into remain. Up ``cur * 1.2``, down
  ``cur * 0.8``, reset ``base``, clamped to ``[base, ceil]``.

One NodeMetric is one sample, as one reconcile with a fresh throttled ratio is for koordlet: the quota scales
once per NodeMetric (``Snapshot.metric_is_new``); a plan for anything else (a config change) only resets or
keeps the quota. The current quota is the one last emitted for the pod (``Snapshot.previous``, else
``base``), so the whole state is the decision stream's and a replay reaches the same quotas; a reset is
emitted only when a scaled quota was emitted before. The token limiter of ``cfsQuotaBurstPeriodSeconds``
needs a random initial token; only the default (-1, unlimited: always allowed) is followed, a set period is
treated as unlimited too. koordlet scales the container quotas and the pod's by the same delta; here the
pod cgroup's quota is the one planned.
"""

from __future__ import annotations

import json

from streams.actuation import CPU_BURST, CPU_QUOTA, MECHANISM_CGROUP, TARGET_POD
from streams.koordinator.annotations import ANNOTATION_CPU_BURST
from streams.koordinator.classes import QOS_BE, QOS_LSE, QOS_LSR
from streams.nodeqos.framework import Plan, Setting, Snapshot
from streams.sloconfig.document import overlay
from streams.sloconfig.nodeqos import (
    BURST_AUTO, BURST_CFS_QUOTA_ONLY, BURST_CONFIG_FIELDS, BURST_CPU_ONLY, CPUBurstStrategy)

NAME = "CPUBurst"
IDLE, COOLING, OVERLOAD, UNKNOWN = "idle", "cooling", "overload", "unknown"
UP, DOWN, REMAIN, RESET = "scaleUp", "scaleDown", "remain", "reset"
REASON_BAD_ANNOTATION = "cpuBurst annotation does not parse"
CFS_PERIOD = 100_000
MIN_QUOTA = 1000
SCALE_UP_RATIO = 1.2
SCALE_DOWN_RATIO = 0.8
COOLING_RATIO = 0.9


def static_burst(limit_milli: int, policy: str, percent: int) -> int:
    if policy not in (BURST_CPU_ONLY, BURST_AUTO) or limit_milli <= 0:
        return 0
    return int(limit_milli / 1000 * percent / 100 * CFS_PERIOD)


def share_pool_state(processors: int, node_usage: int | None, lsr_requests: int, excluded_usage: int,
                     threshold_percent: int) -> str:
    """``getNodeStateForBurst`` in milli-cores."""
    if node_usage is None or processors <= 0:
        return UNKNOWN
    total = processors * 1000 - lsr_requests
    ratio = 1.0 if total <= 0 else (node_usage - excluded_usage) / total
    threshold = threshold_percent / 100
    if ratio >= threshold:
        return OVERLOAD
    if ratio >= COOLING_RATIO * threshold:
        return COOLING
    return IDLE


def quota_operation(policy: str, throttled: bool | None, node_state: str) -> str:
    """``cfsQuotaBurst``'s operation for one pod; ``throttled`` None: no throttle metric (remain)."""
    if policy not in (BURST_CFS_QUOTA_ONLY, BURST_AUTO):
        return RESET
    operation = UP if throttled else REMAIN
    if node_state == OVERLOAD:
        return DOWN
    if node_state in (COOLING, UNKNOWN) and operation == UP:
        return REMAIN
    return operation


def burst_quota(limit_milli: int, current: int, operation: str, burst_percent: int) -> int:
    """The container/pod quota after ``operation``, clamped to [base, ceil]."""
    base = max(limit_milli * CFS_PERIOD // 1000, MIN_QUOTA)
    ceil = int(base * burst_percent / 100) if burst_percent > 100 else base
    target = {UP: int(current * SCALE_UP_RATIO), DOWN: int(current * SCALE_DOWN_RATIO),
              RESET: base}.get(operation, current)
    return min(max(target, base), ceil)


def _pod_strategy(node: CPUBurstStrategy, annotation: str | None) -> CPUBurstStrategy | None:
    """The annotation's ``CPUBurstConfig`` merged over the node's (``sloconfig.document.overlay``); None (the pod
    is skipped) when it is not a JSON object of those types."""
    if annotation is None:
        return node
    try:
        raw = json.loads(annotation)
        return overlay(node, raw, BURST_CONFIG_FIELDS, ANNOTATION_CPU_BURST) if isinstance(raw, dict) else None
    except ValueError:
        return None


class CPUBurst:
    name = NAME

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled

    def plan(self, snapshot: Snapshot) -> Plan:
        if not self.enabled:
            return Plan()
        node_strategy = snapshot.strategy.burst
        metric = snapshot.metric
        lsr_requests = sum(p.request_cpu for p in snapshot.pods.values() if p.qos in (QOS_LSE, QOS_LSR))
        excluded = 0
        if metric is not None:
            excluded = sum(cpu for key, (cpu, _, _) in metric.pods.items()
                           if (pod := snapshot.pods.get(key)) is not None and pod.qos in (QOS_LSE, QOS_LSR, QOS_BE))
        state = share_pool_state(-(-snapshot.node.capacity_cpu // 1000),
                                 metric.node_usage[0] if metric is not None and metric.node_usage else None,
                                 lsr_requests, excluded, node_strategy.share_pool_threshold_percent)
        settings = []
        for key in sorted(snapshot.pods):
            pod = snapshot.pods[key]
            if pod.qos in (QOS_LSE, QOS_LSR, QOS_BE) or not pod.uid:
                continue
            strategy = _pod_strategy(node_strategy, pod.annotation(ANNOTATION_CPU_BURST))
            if strategy is None:
                continue
            target = (TARGET_POD, pod.uid, MECHANISM_CGROUP)
            previous = snapshot.previous.get(target, {})
            base = max(pod.limit_cpu * CFS_PERIOD // 1000, MIN_QUOTA)
            quota = base
            values = {}
            if pod.limit_cpu > 0 and (strategy.policy in (BURST_CFS_QUOTA_ONLY, BURST_AUTO) or CPU_QUOTA in previous):
                current = int(previous.get(CPU_QUOTA, base))
                if snapshot.metric_is_new:
                    ratio = metric.throttled_ratio.get(key) if metric is not None else None
                    operation = quota_operation(strategy.policy, None if ratio is None else ratio > 0, state)
                else:
                    operation = quota_operation(strategy.policy, False, IDLE)
                quota = burst_quota(pod.limit_cpu, current, operation, strategy.cfs_quota_burst_percent)
                values[CPU_QUOTA] = str(quota)
            burst = static_burst(pod.limit_cpu, strategy.policy, strategy.cpu_burst_percent)
            values[CPU_BURST] = str(min(burst, quota))
            settings.append(Setting(*target, dict(sorted(values.items()))))
        return Plan(tuple(settings))
