"""``streams.bridge.statuses``: the status write each pipeline record asks of the watched object."""

from __future__ import annotations

import json

import pytest

from streams import acls
from streams.bridge import statuses
from streams.bridge.run import ACTED_ON_TOPICS
from streams.bridge.statuses import ObjectView, PatchStatus, Skip

RESERVATION_STATUS = {"phase": "Available", "nodeName": "n1", "allocatable": {"cpu": 2000, "memory": 1 << 30},
                      "allocated": {"cpu": 500}, "currentOwners": [{"namespace": "default", "name": "web-0"}],
                      "conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]}
SHOWN = {**RESERVATION_STATUS, "allocatable": {"cpu": "2", "memory": "1Gi"}, "allocated": {"cpu": "500m"}}


def reservation(status: dict | None, uid: str | None = "u1") -> dict:
    manifest = {"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation",
                "metadata": {"name": "r1", "uid": uid}, **({"status": status} if status is not None else {})}
    return {"metadata": {"name": "r1", "namespace": None, "uid": uid}, "manifest": json.dumps(manifest)}


def seen(kind: str = "Reservation", status: dict | None = None, uid: str = "u1", annotations: dict | None = None,
         namespace: str | None = None) -> ObjectView:
    return ObjectView(kind, namespace, "r1" if kind != "ElasticQuota" else "q1", uid, "7", annotations or {},
                      status or {})


@pytest.mark.parametrize("record, obj, expected", [
    pytest.param(reservation(RESERVATION_STATUS), seen(), PatchStatus("Reservation", None, "r1", "u1", "7", SHOWN),
                 id="new status, resources as quantities, at the watched version"),
    pytest.param(reservation(RESERVATION_STATUS), seen(status=SHOWN), Skip("the object shows this status already"),
                 id="shown already"),
    pytest.param(reservation(None), seen(), Skip("the record carries no status"), id="an object as applied"),
    pytest.param(reservation(RESERVATION_STATUS), None, Skip("the object no longer exists"), id="gone"),
    pytest.param(reservation(RESERVATION_STATUS, uid="u0"), seen(),
                 Skip("the status was for an earlier object of that name (uid u0, now u1)"), id="another object"),
    pytest.param(reservation(RESERVATION_STATUS), seen(status={"phase": "Succeeded"}),
                 Skip("the object is Succeeded already, a final phase"), id="final phase kept"),
])
def test_reservation(record, obj, expected):
    assert statuses.plan("Reservation", record, obj) == expected


def job(status: dict) -> dict:
    manifest = {"kind": "PodMigrationJob", "metadata": {"name": "r1"}, "status": status}
    return {"metadata": {"name": "r1", "namespace": None, "uid": None}, "manifest": json.dumps(manifest)}


@pytest.mark.parametrize("record, obj, expected", [
    pytest.param(job({"phase": "Running", "reason": "", "message": "", "nodeName": "n2"}),
                 seen("PodMigrationJob", {"phase": "Pending"}),
                 PatchStatus("PodMigrationJob", None, "r1", "u1", "7",
                             {"phase": "Running", "reason": "", "message": "", "nodeName": "n2"}), id="progress"),
    pytest.param(job({"phase": "Pending"}), seen("PodMigrationJob", {"phase": "Aborted"}),
                 Skip("the object is Aborted already, a final phase"), id="a user's abort is not undone"),
])
def test_migration_job(record, obj, expected):
    assert statuses.plan("PodMigrationJob", record, obj) == expected


def quota(namespace: str | None = "team", **fields) -> dict:
    return {"namespace": namespace, "name": "q1", "runtime": {}, "used": {}, "request": {}, **fields}


RUNTIME = "quota.scheduling.koordinator.sh/runtime"
REQUEST = "quota.scheduling.koordinator.sh/request"


@pytest.mark.parametrize("record, obj, expected", [
    pytest.param(quota(runtime={"cpu": 4000, "memory": 0}, request={"cpu": 1500}, used={"cpu": 1000}),
                 seen("ElasticQuota", namespace="team"),
                 PatchStatus("ElasticQuota", "team", "q1", "u1", "7", {"used": {"cpu": "1"}},
                             {RUNTIME: '{"cpu":"4"}', REQUEST: '{"cpu":"1500m"}'}),
                 id="annotations and used, zeros removed"),
    pytest.param(quota(runtime={"cpu": 4000}, used={"cpu": 1000}),
                 seen("ElasticQuota", {"used": {"cpu": "1000m"}}, annotations={RUNTIME: '{"cpu":"4000m","memory":"0"}'},
                      namespace="team"),
                 Skip("the object shows these values already"), id="equal quantities in another form"),
    pytest.param(quota(used={"cpu": 1000}), seen("ElasticQuota", {"used": {"cpu": "1"}}, namespace="team"),
                 Skip("the object shows these values already"), id="empty lists as no annotation"),
    pytest.param(quota(namespace=None), None, Skip("q1 is a built-in quota, with no object"), id="built-in"),
    pytest.param(quota(), None, Skip("the object no longer exists"), id="gone"),
])
def test_quota(record, obj, expected):
    assert statuses.plan("ElasticQuotaStatus", record, obj) == expected


def pod_group(status: dict) -> dict:
    manifest = {"kind": "PodGroup", "metadata": {"name": "r1", "namespace": "team", "uid": "u1"},
                "spec": {"minMember": 2}, "status": status}
    return {"metadata": {"name": "r1", "namespace": "team", "uid": "u1"}, "manifest": json.dumps(manifest),
            "minMember": 2, "scheduleTimeoutSeconds": None, "minResources": {}}


SCHEDULED = {"phase": "Scheduled", "scheduled": 2, "scheduleStartTime": "2026-11-29T04:00:00Z"}
PG_ABSENT = {"occupiedBy": None, "running": None, "succeeded": None, "failed": None}


@pytest.mark.parametrize("record, obj, expected", [
    pytest.param(pod_group({"phase": "Pending"}), seen("PodGroup", namespace="team"),
                 PatchStatus("PodGroup", "team", "r1", "u1", "7",
                             {"phase": "Pending", "scheduled": None, "scheduleStartTime": None, **PG_ABSENT}),
                 id="first status, every field named"),
    pytest.param(pod_group(SCHEDULED), seen("PodGroup", {"phase": "Running", "scheduled": 2, "running": 2,
                                                         "scheduleStartTime": "2026-11-29T04:00:00Z"}, namespace="team"),
                 PatchStatus("PodGroup", "team", "r1", "u1", "7", {**SCHEDULED, **PG_ABSENT}),
                 id="a count back to zero is removed"),
    pytest.param(pod_group(SCHEDULED), seen("PodGroup", SCHEDULED, namespace="team"),
                 Skip("the object shows this status already"), id="shown already"),
    pytest.param(pod_group(SCHEDULED), seen("PodGroup", {"phase": "Finished", "succeeded": 2}, namespace="team"),
                 Skip("the object is Finished already, a final phase"), id="finished is final"),
    pytest.param(pod_group(SCHEDULED), None, Skip("the object no longer exists"), id="gone"),
])
def test_pod_group(record, obj, expected):
    assert statuses.target("PodGroup", record) == ("PodGroup", "team", "r1")
    assert statuses.plan("PodGroup", record, obj) == expected


def test_the_bridge_may_read_every_topic_it_acts_on():
    bridge = next(role for role in acls.load_roles() if role.name == "bridge")
    assert set(ACTED_ON_TOPICS) <= set(bridge.read)
