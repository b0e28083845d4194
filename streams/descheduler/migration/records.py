"""A PodMigrationJob as the descheduling stage writes it back to the jobs' topic, with its status (as a
controller writes status): phase, reason, message, node, the Arbitration condition when the arbitrator held
or passed it, and the evict reason and trigger annotations of a job a LowNodeLoad round created."""

from __future__ import annotations

import json

from streams.descheduler.lownodeload import NAME as LOW_NODE_LOAD
from streams.descheduler.migration.jobs import CONDITION_ARBITRATION, Job
from streams.koordinator.annotations import ANNOTATION_EVICT_REASON, ANNOTATION_EVICT_TRIGGER


def job_record(job: Job, pod_uid: str | None) -> dict:
    """The PodMigrationJob record of ``job`` (``pod_uid``: its pod's uid, when the domain knows the pod)."""
    namespace, _, name = job.pod.partition("/")
    ref = {"namespace": namespace, "name": name, "uid": pod_uid}
    status = {"phase": job.phase, "reason": job.reason, "message": job.message, "nodeName": job.node}
    if job.held_by:
        status["conditions"] = [{"type": CONDITION_ARBITRATION, "status": "True" if job.passed else "False",
                                 "reason": "Passed" if job.passed else "HeldByLimit", "message": job.held_by}]
    manifest = {"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "PodMigrationJob",
                "metadata": {"name": job.name, "annotations": {ANNOTATION_EVICT_REASON: job.trigger,
                                                               ANNOTATION_EVICT_TRIGGER: LOW_NODE_LOAD}
                             if job.trigger else {}},
                "spec": {"podRef": ref, "mode": job.mode, "paused": job.paused}, "status": status}
    return {
        "metadata": {"name": job.name, "namespace": None, "uid": None, "labels": {},
                     "annotations": manifest["metadata"]["annotations"], "generation": 0},
        "manifest": json.dumps(manifest, sort_keys=True, separators=(",", ":")),
        "podRef": ref, "mode": job.mode, "ttlMs": job.ttl_ms, "paused": job.paused, "reservationName": None,
        "deleteOptions": None, "phase": job.phase,
    }
