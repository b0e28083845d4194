"""A PodGroup's status, as Koordinator's PodGroup controller writes it (``coscheduling/controller/podgroup.go``,
``syncHandler``), which follows scheduler-plugins' ``PodGroupStatus`` (``apis/scheduling/v1alpha1``).

One sync step from the status the object shows and the gang's children (every pod naming the gang,
``Members``: how many, how many in each phase, how many bound, ``GetBoundPodNumber``):

    ""                      -> Pending
    Pending                 -> PreScheduling when pods >= minMember > 0 (occupiedBy from the first pod)
    any other, no pods      -> Pending
    any other               -> running/succeeded/failed = the pods in that phase, scheduled = bound;
                               Scheduling (scheduleStartTime set once) when scheduled < minMember, else Scheduled;
                               Running   when Scheduled and succeeded + running >= minMember;
                               Failed    when failed > 0 and failed + running + succeeded >= minMember;
                               Finished  when succeeded >= minMember
    Finished, Failed        -> final: the controller no longer syncs them

Koordinator patches after each step and its own update event runs the next, so what the API server settles on
is the fixed point of the step: :func:`pod_group_status` iterates to it. Differences, kept so that decisions
stay deterministic: ``scheduleStartTime`` is the event time (the domain reads no clock) as RFC 3339 seconds,
as ``metav1.Time`` marshals; "the first pod" for ``occupiedBy`` is the first by key (Koordinator's is map
order). Left out: the controller's 48 h garbage-collection skip (it reads creation times against the clock).
Pod phases are what the Pod records say: with the bridge, kubelet's; in the embedded default, where nothing
runs the pods, members stay Pending and the group stops at Scheduled. A member that ended (Succeeded, Failed)
is gone from the scheduling domain, so its plugin counts the ended members of each gang; they keep counting
until the PodGroup is deleted (Koordinator's stop counting a pod when it is deleted).

Fields are omitted when zero or empty (``omitempty``), as the API server stores them.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Mapping, Sequence

from streams.objects.podinfo import PodInfo

PENDING, PRE_SCHEDULING, SCHEDULING, SCHEDULED = "Pending", "PreScheduling", "Scheduling", "Scheduled"
RUNNING, FAILED, FINISHED = "Running", "Failed", "Finished"
FINAL_PHASES = (FINISHED, FAILED)
ENDED = ("Succeeded", "Failed")
"""Pod phases of members that ended."""
FIELDS = ("phase", "occupiedBy", "scheduled", "running", "succeeded", "failed", "scheduleStartTime")
"""``PodGroupStatus``'s JSON fields (``minResources``-free: only the spec has those)."""


def rfc3339(ms: int) -> str:
    """``metav1.Time`` as JSON: UTC, whole seconds."""
    return datetime.datetime.fromtimestamp(ms // 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def occupied_by(pod: PodInfo) -> str:
    """``fillOccupiedObj``: "<namespace>/<owner name>" of each owner reference, sorted, joined by ","."""
    try:
        manifest = json.loads((pod.record or {}).get("manifest") or "{}")
    except ValueError:
        return ""
    owners = (manifest.get("metadata") or {}).get("ownerReferences") or []
    return ",".join(sorted(f"{pod.namespace}/{o.get('name', '')}" for o in owners if isinstance(o, dict)))


@dataclasses.dataclass(frozen=True)
class Members:
    """What the controller reads of a gang's children: how many there are, how many are in each pod phase it
    counts, how many are bound (``GetBoundPodNumber``) and the ``occupiedBy`` of the first."""

    count: int
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    bound: int = 0
    occupied_by: str = ""


def step(status: Mapping, min_member: int, members: Members, now_ms: int) -> dict:
    """One ``syncHandler`` run on ``status``; returns the new status (omitempty)."""
    new = dict(status)
    phase = status.get("phase") or ""
    if phase in FINAL_PHASES:
        return new
    if phase == "":
        new["phase"] = PENDING
    elif phase == PENDING:
        if members.count >= min_member > 0:
            new["phase"] = PRE_SCHEDULING
            new["occupiedBy"] = members.occupied_by or status.get("occupiedBy", "")
    elif not members.count:
        new["phase"] = PENDING
    else:
        running, succeeded, failed = members.running, members.succeeded, members.failed
        new.update(running=running, succeeded=succeeded, failed=failed, scheduled=members.bound)
        if members.bound < min_member:
            new["phase"] = SCHEDULING
            new["scheduleStartTime"] = status.get("scheduleStartTime") or rfc3339(now_ms)
        else:
            new["phase"] = SCHEDULED
        if new["phase"] == SCHEDULED and succeeded + running >= min_member:
            new["phase"] = RUNNING
        if failed and failed + running + succeeded >= min_member:
            new["phase"] = FAILED
        if succeeded >= min_member:
            new["phase"] = FINISHED
    return {key: new[key] for key in FIELDS if new.get(key)}


def pod_group_status(status: Mapping, min_member: int, members: Members, now_ms: int) -> dict:
    """The status the controller settles on: :func:`step` until it changes nothing (at most four steps:
    "" -> Pending -> PreScheduling -> a counted phase -> the same)."""
    current = {key: status[key] for key in FIELDS if status.get(key)}
    for _ in range(4):
        following = step(current, min_member, members, now_ms)
        if following == current:
            break
        current = following
    return current


def members_of(pods: Sequence[PodInfo], bound: int, ended: Mapping[str, int]) -> Members:
    """The ``Members`` of a gang whose live children are ``pods`` (``bound`` of them bound) and whose children
    that ended are counted in ``ended`` (phase -> count: the domain forgets a pod when it ends, Koordinator's
    gang keeps it until it is deleted)."""
    succeeded, failed = ended.get("Succeeded", 0), ended.get("Failed", 0)
    return Members(len(pods) + succeeded + failed, sum(pod.phase == "Running" for pod in pods), succeeded, failed,
                   bound + succeeded + failed, occupied_by(pods[0]) if pods else "")
