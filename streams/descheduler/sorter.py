"""The descheduler's pod order and usage scorers (``pkg/descheduler/utils/sorter``).

``PodSorter`` compares, in order (the first pod of the result is evicted first):

1. Koordinator priority class with default: free < batch < mid < prod < none;
2. spec.priority; 3. Kubernetes QoS: BestEffort < Burstable < Guaranteed;
4. Koordinator QoS: BE < LS < LSR < LSE = SYSTEM < none;
5. pod deletion cost; 6. eviction cost;
7. (LowNodeLoad only) usage, reversed: pods with a metric first, then the higher usage score;
8. creation time, newer first.

Usage score of a pod (``ResourceUsageScorerPod``)::

    score = sum_r w_r * f(used_r / excess_r) / sum_r w_r,   f(x) = x if x < 1 else 1/x + 1

over the resources of the pod's metric; ``excess_r`` is how far the node is over its high threshold
(only over-used resources have a weight). A pod that removes exactly the excess scores 2, the most.
Node usage score (``ResourceUsageScorer``): sum_r w_r * min(used, alloc) * 1000 // alloc // sum_r w_r.

Go's ``sort.Sort`` is not stable; here ties keep the input order (pods in key order), so the result is
deterministic.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

from streams.descheduler.snapshot import PodView
from streams.koordinator.classes import (
    KUBE_BEST_EFFORT, KUBE_BURSTABLE, KUBE_GUARANTEED, PRIORITY_BATCH, PRIORITY_FREE, PRIORITY_MID, PRIORITY_NONE,
    PRIORITY_PROD, QOS_BE, QOS_LS, QOS_LSE, QOS_LSR, QOS_NONE, QOS_SYSTEM)

PRIORITY_CLASS_ORDER = {PRIORITY_FREE: 1, PRIORITY_BATCH: 2, PRIORITY_MID: 3, PRIORITY_PROD: 4, PRIORITY_NONE: 5}
KOORD_QOS_ORDER = {QOS_BE: 1, QOS_LS: 2, QOS_LSR: 3, QOS_LSE: 4, QOS_SYSTEM: 4, QOS_NONE: 5}
KUBE_QOS_ORDER = {KUBE_BEST_EFFORT: 1, KUBE_BURSTABLE: 2, KUBE_GUARANTEED: 3}

Compare = Callable[[PodView, PodView], int]


def _cmp(a, b) -> int:
    return (a > b) - (a < b)


def _base_keys(pod: PodView) -> tuple:
    return (PRIORITY_CLASS_ORDER.get(pod.priority_class, 5), pod.priority, KUBE_QOS_ORDER.get(pod.kube_qos, 0),
            KOORD_QOS_ORDER.get(pod.koord_qos, 5), pod.deletion_cost, pod.eviction_cost)


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    return min(requested, capacity) * 1000 // capacity


def most_requested_score_pod(requested: int, capacity: int) -> float:
    if capacity == 0:
        return 0.0
    ratio = requested / capacity
    return 1 / ratio + 1 if ratio >= 1 else ratio


def node_usage_score(usage: Mapping[str, int], allocatable: Mapping[str, int], weights: Mapping[str, int]) -> int:
    score = weight_sum = 0
    for name in sorted(usage):
        weight = weights.get(name, 0)
        score += most_requested_score(usage[name], allocatable.get(name, 0)) * weight
        weight_sum += weight
    return score // weight_sum if weight_sum else 0


def pod_usage_score(usage: Mapping[str, int], excess: Mapping[str, int], weights: Mapping[str, int]) -> float:
    score, weight_sum = 0.0, 0
    for name in sorted(usage):
        weight = weights.get(name, 0)
        score += most_requested_score_pod(usage[name], excess.get(name, 0)) * weight
        weight_sum += weight
    return score / weight_sum if weight_sum else 0.0


def sort_pods(pods: list[PodView], usage: Mapping[str, Mapping[str, int]] | None = None,
              excess: Mapping[str, int] | None = None, weights: Mapping[str, int] | None = None) -> list[PodView]:
    """``PodSorter`` order; with ``usage`` (pod key -> metric), LowNodeLoad's order with the usage comparator."""

    def compare(p1: PodView, p2: PodView) -> int:
        result = _cmp(_base_keys(p1), _base_keys(p2))
        if result:
            return result
        if usage is not None:
            m1, m2 = usage.get(p1.key), usage.get(p2.key)
            if m1 is None or m2 is None:
                if (m1 is None) != (m2 is None):
                    return 1 if m1 is None else -1
            else:
                result = -_cmp(pod_usage_score(m1, excess or {}, weights or {}),
                               pod_usage_score(m2, excess or {}, weights or {}))
                if result:
                    return result
        return -_cmp(p1.created_ms, p2.created_ms)

    return sorted(pods, key=functools.cmp_to_key(compare))
