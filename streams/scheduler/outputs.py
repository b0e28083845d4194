"""The outputs of one event of a scheduling domain, as (Avro schema name, record) pairs with stable ids: the
decision contract of the scheduler.

- ``SchedulingDecision`` (v2): where a pod stands after the event (``SCHEDULED``, ``UNSCHEDULABLE``,
  ``WAITING``, ``BOUND``, ``RELEASED``, ``PREEMPTED``), with the filter results and scores of its cycle, its
  requests, limits and classes, and the labels and annotations ``streams.decisions`` lists (plus what PreBind
  plugins wrote). Objects scheduled as pods (``ObjectPods``) get none.
- ``Eviction``: a pod to evict (preemption, or a migration job's), carried out by the simulator or the bridge.
- ``PodMigrationJob``: a job with its status, written back to its topic (``descheduler.migration.records``).
- ``ElasticQuotaStatus``: a quota whose runtime, used or request changed.
- ``DeadLetter`` (stage "scheduling"): an event the domain refuses; the previous state stays.

Each output's id is ``decision_id(causation, position)``: the same inbox gives the same ids.
"""

from __future__ import annotations

from typing import Protocol

from streams import decisions
from streams.deadletter import dead_letter_record
from streams.descheduler.migration.jobs import Evict, Job
from streams.descheduler.migration.records import job_record
from streams.events import InboxEvent, decision_id
from streams.koordinator.classes import PRIORITY_NONE_NAME
from streams.objects.podinfo import PodInfo
from streams.scheduler.cycle import CycleResult
from streams.schemas import codec

SCHEDULED, UNSCHEDULABLE, BOUND, RELEASED, PREEMPTED = "Scheduled", "Unschedulable", "Bound", "Released", "Preempted"
WAITING = "Waiting"
STAGE = "scheduling"


class DecidingDomain(Protocol):
    """What the outputs read of their domain."""

    domain: str
    cluster: object
    pods: dict

    def is_object_pod(self, key: str) -> bool: ...


def assigned_message(pod: PodInfo, node: str) -> str:
    return f"Successfully assigned {pod.namespace}/{pod.name} to {node}"


PROVISIONING_NOTE = ("volume.kubernetes.io/selected-node set on the PersistentVolumeClaims {claims} for their "
                     "provisioner: koordstream runs no provisioner and no PersistentVolume controller, the cluster's "
                     "must create and bind their volumes")
"""Appended to the message of a pod scheduled with claims to provision (VolumeBinding)."""


def provisioning_note(bindings: tuple[tuple[str, str | None], ...]) -> str:
    """What a scheduled pod's message adds for its claims to provision, "" when it has none."""
    claims = [claim for claim, volume in bindings if volume is None]
    return f"; {PROVISIONING_NOTE.format(claims=', '.join(claims))}" if claims else ""


def waiting_message(outcome: CycleResult, node: str) -> str:
    waiting = f"Reserved on {node}, waiting for {', '.join(outcome.waiting_on)} to permit the binding"
    return f"{waiting}: {outcome.wait_message}" if outcome.wait_message else waiting


class Outputs:
    """The outputs of one event, with their stable ids."""

    def __init__(self, domain: DecidingDomain, event: InboxEvent) -> None:
        self.domain = domain
        self.event = event
        self.items: list[tuple[str, dict]] = []
        self.decided_by_verdict: set[str] = set()
        """Pods a Permit verdict decided this event."""
        self._deferred: dict[str, None] = {}

    def defer_waiting(self, key: str) -> None:
        self._deferred[key] = None

    def flush_waiting(self) -> None:
        """A Waiting decision for each pod that started waiting this event and is still waiting."""
        domain = self.domain
        for key in self._deferred:
            held = domain.cluster.waiting.pods.get(key)
            if held is None or key in self.decided_by_verdict:
                continue
            self.decision(domain.cluster.pods[key], WAITING, None, WAITING, domain.pods[key].last_message, None)
        self._deferred = {}

    def _id(self) -> str:
        return decision_id(self.event.causation, len(self.items))

    def decision(self, pod: PodInfo, result: str, node: str | None, reason: str | None, message: str,
                 outcome: CycleResult | None) -> None:
        if self.domain.is_object_pod(pod.key):
            return
        bindings = self.domain.cluster.volume_bindings.get(pod.key, ())
        self.items.append(("SchedulingDecision", {
            "decisionId": self._id(),
            "domain": self.domain.domain,
            "pod": {"namespace": pod.namespace, "name": pod.name, "uid": pod.uid},
            "result": result,
            "nodeName": node,
            "reason": reason,
            "message": message + provisioning_note(bindings) if result == SCHEDULED else message,
            "filterResults": [{"plugin": p, "reason": r, "count": n}
                              for p, r, n in (outcome.filter_results if outcome else ())],
            "scores": [{"node": n, "score": s, "plugins": p} for n, s, p in (outcome.scores if outcome else ())],
            "causation": self.event.causation.to_record(),
            "timestamp": self.event.timestamp_ms,
            "requests": dict(pod.requests),
            "limits": dict(pod.limits),
            "priority": pod.priority,
            "priorityClass": pod.priority_class_raw or PRIORITY_NONE_NAME,
            "qosClass": pod.qos_class or None,
            "labels": decisions.selected(pod.labels, decisions.LABELS),
            "annotations": {**decisions.selected(pod.annotations, decisions.DECISION_ANNOTATIONS),
                            **self.domain.cluster.bind_annotations.get(pod.key, {})},
            "volumeBindings": [{"claim": claim, "volume": volume} for claim, volume in bindings],
        }))

    def migration_job(self, job: Job) -> None:
        """A PodMigrationJob with its status, written back to the jobs' topic (as a controller writes status)."""
        pod = self.domain.cluster.pods.get(job.pod)
        self.items.append(("PodMigrationJob", job_record(job, pod.uid if pod else None)))

    def eviction(self, evict: Evict) -> None:
        namespace, _, name = evict.pod.partition("/")
        pod = self.domain.cluster.pods.get(evict.pod)
        self.items.append(("Eviction", {
            "decisionId": self._id(),
            "nodeName": evict.node or "",
            "pod": {"namespace": namespace, "name": name, "uid": pod.uid if pod else None},
            "reason": evict.reason,
            "message": f"{evict.message} (PodMigrationJob {evict.job})" if evict.job else evict.message,
            "causation": self.event.causation.to_record(),
            "timestamp": self.event.timestamp_ms,
        }))

    def quota_status(self, tree: str, status: dict) -> None:
        self.items.append(("ElasticQuotaStatus", {
            "decisionId": self._id(),
            "domain": tree or self.domain.domain,
            **status,
            "causation": self.event.causation.to_record(),
            "timestamp": self.event.timestamp_ms,
        }))

    def dead_letter(self, reason: str) -> None:
        cause = self.event.causation
        payload = None
        if self.event.record is not None:
            try:
                payload = codec.encode(self.event.kind, self.event.record)
            except codec.CodecError:
                payload = None
        self.items.append(("DeadLetter", dead_letter_record(
            STAGE, cause.source_topic, cause.source_partition, cause.source_offset, self.event.key.encode(), payload,
            reason, self.event.timestamp_ms)))
