"""A gang and how it is initialised (``core/gang.go``), from its pods' annotations or from a PodGroup.

Gang name of a pod, first non-empty: label ``pod-group.scheduling.sigs.k8s.io`` (PodGroup CRD), label
``pod-group.scheduling.sigs.k8s.io/name`` (deprecated), annotation ``gang.scheduling.koordinator.sh/name``.
Gang id = "<pod namespace>/<gang name>".

Initialisation, annotation gangs (the first valid pod wins; here "first" is the first in key order, so a
restored domain derives the same gang as the live one did):

    min      min-available (the deprecated label wins); missing or not an integer -> not initialised
    total    total-number; not an integer or 0 -> min; below min -> min
    mode     Strict or NonStrict; anything else -> Strict
    policy   match-policy (or its pod-group alias) if known, else the args' default
    wait     waiting-time as a Go duration; missing, 0, negative or invalid -> the args' default timeout
    groups   JSON list of gang ids; empty or invalid -> [own id]; the group id is the sorted ids joined by ","

PodGroup gangs: min = spec.minMember, wait = scheduleTimeoutSeconds when > 0, the same annotations on the
PodGroup for total, mode, policy and groups; a pod naming a PodGroup that does not exist is "not init".
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

from streams.koordinator.labels import (
    ANNOTATION_GANG_GROUPS, ANNOTATION_GANG_MATCH_POLICY, ANNOTATION_GANG_MIN_NUM, ANNOTATION_GANG_MODE,
    ANNOTATION_GANG_NAME, ANNOTATION_GANG_TOTAL_NUM, ANNOTATION_GANG_WAIT_TIME, ANNOTATION_POD_GROUP_MATCH_POLICY,
    GANG_MATCH_ONCE_SATISFIED, GANG_MATCH_ONLY_WAITING, GANG_MATCH_WAITING_AND_RUNNING, GANG_MODE_NON_STRICT,
    GANG_MODE_STRICT, LABEL_POD_GROUP, LABEL_POD_GROUP_MIN_AVAILABLE, LABEL_POD_GROUP_NAME)
from streams.objects.duration import parse_duration
from streams.objects.podinfo import PodInfo

MATCH_POLICIES = (GANG_MATCH_ONLY_WAITING, GANG_MATCH_WAITING_AND_RUNNING, GANG_MATCH_ONCE_SATISFIED)


@dataclasses.dataclass(frozen=True)
class Gang:
    id: str
    initialized: bool
    min: int = 0
    total: int = 0
    mode: str = GANG_MODE_STRICT
    match_policy: str = GANG_MATCH_ONCE_SATISFIED
    wait_ms: int = 600_000
    groups: tuple[str, ...] = ()

    @property
    def group_id(self) -> str:
        return ",".join(self.groups)


def gang_name_of(pod: PodInfo) -> str:
    return (pod.labels.get(LABEL_POD_GROUP) or pod.labels.get(LABEL_POD_GROUP_NAME)
            or pod.annotations.get(ANNOTATION_GANG_NAME) or "")


def gang_id_of(pod: PodInfo) -> str | None:
    name = gang_name_of(pod)
    return f"{pod.namespace}/{name}" if name else None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _common(gang_id: str, annotations: Mapping[str, str], minimum: int, wait_ms: int, default_policy: str,
            default_wait_ms: int) -> Gang:
    total = _int(annotations.get(ANNOTATION_GANG_TOTAL_NUM)) or minimum
    total = max(total, minimum)
    mode = annotations.get(ANNOTATION_GANG_MODE)
    mode = mode if mode in (GANG_MODE_STRICT, GANG_MODE_NON_STRICT) else GANG_MODE_STRICT
    policy = annotations.get(ANNOTATION_GANG_MATCH_POLICY) or annotations.get(ANNOTATION_POD_GROUP_MATCH_POLICY)
    policy = policy if policy in MATCH_POLICIES else default_policy
    try:
        groups = json.loads(annotations.get(ANNOTATION_GANG_GROUPS) or "[]")
    except ValueError:
        groups = []
    if not isinstance(groups, list) or not groups or not all(isinstance(g, str) for g in groups):
        groups = [gang_id]
    return Gang(gang_id, True, minimum, total, mode, policy, wait_ms if wait_ms > 0 else default_wait_ms,
                tuple(sorted(set(groups))))


def from_pods(gang_id: str, pods: list[PodInfo], default_policy: str, default_wait_ms: int) -> Gang:
    """The gang of annotation gang pods: initialised by the first pod (key order) with a valid minimum."""
    for pod in sorted(pods, key=lambda p: p.key):
        raw = pod.labels.get(LABEL_POD_GROUP_MIN_AVAILABLE) or pod.annotations.get(ANNOTATION_GANG_MIN_NUM)
        minimum = _int(raw)
        if minimum is None or minimum < 0:
            continue
        try:
            wait_ms = parse_duration(pod.annotations.get(ANNOTATION_GANG_WAIT_TIME) or "0")
        except ValueError:
            wait_ms = 0
        return _common(gang_id, pod.annotations, minimum, wait_ms, default_policy, default_wait_ms)
    return Gang(gang_id, False, wait_ms=0)


def from_pod_group(gang_id: str, record: Mapping, default_policy: str, default_wait_ms: int) -> Gang:
    """The gang of a PodGroup record (``PodGroup.avsc``)."""
    annotations = dict((record.get("metadata") or {}).get("annotations") or {})
    timeout_s = record.get("scheduleTimeoutSeconds") or 0
    return _common(gang_id, annotations, int(record.get("minMember") or 0), int(timeout_s) * 1000, default_policy,
                   default_wait_ms)
