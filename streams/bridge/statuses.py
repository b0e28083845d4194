"""Which status write a pipeline record asks of a custom resource, given the object the watch saw.

The scheduling domain computes the status of four kinds of object; the bridge writes each back as the
controller that owns it in Koordinator does, through the object's ``status`` subresource:

- **Reservation** (the ``Reservation`` record the domain writes back to the reservations topic, status in its
  manifest): ``status.phase``, ``nodeName``, ``allocatable``, ``allocated``, ``currentOwners``,
  ``conditions``, as koord-scheduler's reservation controller writes them. The record's resources are
  canonical integers; they are written as quantities (``"2"``, ``"500m"``, ``"1Gi"``), as a ResourceList
  marshals.
- **PodMigrationJob** (the ``PodMigrationJob`` record, status in its manifest): ``status.phase``, ``reason``,
  ``message``, ``nodeName``, ``conditions``, as koord-descheduler's migration controller writes them.
- **PodGroup** (the ``PodGroup`` record the domain writes back to the podgroups topic, status in its manifest):
  ``status.phase``, ``occupiedBy``, ``scheduled``, ``running``, ``succeeded``, ``failed``,
  ``scheduleStartTime``, as Koordinator's PodGroup controller writes them (``streams.scheduler.plugins
  .coscheduling.status``). Its fields are ``omitempty``: one the record omits (a count back to 0) is removed
  (``null`` in the merge patch), as the controller's merge patch of the old and new object does.
- **ElasticQuota** (``ElasticQuotaStatus``): the annotations ``quota.scheduling.koordinator.sh/runtime`` and
  ``/request`` (a ResourceList as JSON) on the object, and ``status.used``, as koord-scheduler's quota
  controller (``updateElasticQuotaStatusIfChanged``) patches them; a resource list is compared without its
  zero entries (``quotav1.RemoveZeros``). Koordinator writes both in one merge patch of the object; with
  the CRD's status subresource (as ``deploy/crds`` and Koordinator install it) the API server ignores
  ``status`` there, so the annotations go in a patch of the object and ``status.used`` in a patch of
  ``/status``. The built-in quotas (root, system, default: no namespace) have no object and are skipped.

Every write names the ``resourceVersion`` of the object it was planned against (the API server refuses it,
409, when the object changed since): the actuator then reads the object afresh and plans again, so a status
is never written over a version the bridge did not see. A plan is a skip when the object shows the record's
status already (idempotent: a record read again writes nothing), when the object is gone or is another
object of that name (uid), and when the object is in a final phase (a Reservation Succeeded or Failed, a
PodMigrationJob Succeeded, Failed or Aborted, a PodGroup Finished or Failed): Koordinator never leaves those,
and a user's abort must not be undone by an older record.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

from streams.koordinator.annotations import ANNOTATION_QUOTA_REQUEST, ANNOTATION_QUOTA_RUNTIME
from streams.objects.quantity import QuantityError, format_quantity, to_canonical
from streams.scheduler.plugins.coscheduling.status import FIELDS as POD_GROUP_STATUS_FIELDS
from streams.scheduler.plugins.coscheduling.status import FINAL_PHASES as POD_GROUP_FINAL_PHASES

RESERVATION, MIGRATION, QUOTA, POD_GROUP = "Reservation", "PodMigrationJob", "ElasticQuota", "PodGroup"
QUOTA_STATUS = "ElasticQuotaStatus"
STATUS_KINDS = (RESERVATION, MIGRATION, QUOTA, POD_GROUP)
"""Kinds whose objects the bridge's view keeps for status writes."""
SCHEMA_KIND = {RESERVATION: RESERVATION, MIGRATION: MIGRATION, QUOTA_STATUS: QUOTA, POD_GROUP: POD_GROUP}
"""The kind of object each record schema writes the status of."""
FINAL_PHASES = {RESERVATION: ("Succeeded", "Failed"), MIGRATION: ("Succeeded", "Failed", "Aborted"),
                POD_GROUP: POD_GROUP_FINAL_PHASES}
POD_GROUP_FIELDS = POD_GROUP_STATUS_FIELDS
"""``PodGroupStatus``'s fields: each is written, absent ones as null (removed)."""
QUOTA_ANNOTATIONS = {"runtime": ANNOTATION_QUOTA_RUNTIME, "request": ANNOTATION_QUOTA_REQUEST}
"""ElasticQuotaStatus field -> the annotation Koordinator writes it to."""


@dataclasses.dataclass(frozen=True)
class ObjectView:
    """What a status write needs of an object, from its last watched (or freshly read) version."""

    kind: str
    namespace: str | None
    name: str
    uid: str
    resource_version: str
    annotations: Mapping[str, str]
    status: Mapping


@dataclasses.dataclass(frozen=True)
class PatchStatus:
    """Merge patches of one object: ``annotations`` on the object (none: no patch), ``status`` on ``/status``
    (None: no patch), both with ``resource_version`` (and ``uid``) as preconditions."""

    kind: str
    namespace: str | None
    name: str
    uid: str
    resource_version: str
    status: Mapping | None
    annotations: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Skip:
    reason: str


def object_view(kind: str, obj: dict) -> ObjectView:
    metadata = obj.get("metadata") or {}
    return ObjectView(kind, metadata.get("namespace") or None, metadata["name"], metadata.get("uid", ""),
                      str(metadata.get("resourceVersion", "")), dict(metadata.get("annotations") or {}),
                      dict(obj.get("status") or {}))


def object_key(namespace: str | None, name: str) -> str:
    """How the view keys an object: "<namespace>/<name>", or the name of a cluster-scoped one."""
    return f"{namespace}/{name}" if namespace else name


def target(schema: str, record: Mapping) -> tuple[str, str | None, str] | None:
    """(kind, namespace, name) of the object ``record`` writes the status of; None for a built-in quota."""
    if schema == QUOTA_STATUS:
        return (QUOTA, record["namespace"], record["name"]) if record.get("namespace") else None
    metadata = record["metadata"]
    return SCHEMA_KIND[schema], metadata.get("namespace") or None, metadata["name"]


def plan(schema: str, record: Mapping, obj: ObjectView | None) -> PatchStatus | Skip:
    """The write ``record`` (a Reservation, PodMigrationJob, PodGroup or ElasticQuotaStatus the pipeline wrote)
    asks of ``obj``, or why there is none."""
    if schema == QUOTA_STATUS:
        return _plan_quota(record, obj)
    manifest = json.loads(record["manifest"])
    status = manifest.get("status")
    if not status:
        return Skip("the record carries no status")
    if obj is None:
        return Skip("the object no longer exists")
    uid = (manifest.get("metadata") or {}).get("uid") or record["metadata"].get("uid")
    if uid and obj.uid and uid != obj.uid:
        return Skip(f"the status was for an earlier object of that name (uid {uid}, now {obj.uid})")
    if obj.status.get("phase") in FINAL_PHASES[obj.kind]:
        return Skip(f"the object is {obj.status['phase']} already, a final phase")
    if schema == RESERVATION:
        wanted = _reservation_status(status)
    elif schema == POD_GROUP:
        wanted = {key: status.get(key) for key in POD_GROUP_FIELDS}
    else:
        wanted = dict(status)
    if all(obj.status.get(k) == v for k, v in wanted.items()):
        return Skip("the object shows this status already")
    return PatchStatus(obj.kind, obj.namespace, obj.name, obj.uid, obj.resource_version, wanted)


def _reservation_status(status: Mapping) -> dict:
    """The Reservation status with its resource lists as quantities."""
    return {key: resource_quantities(value) if key in ("allocatable", "allocated") and isinstance(value, Mapping)
            else value for key, value in status.items()}


def resource_quantities(resources: Mapping[str, int]) -> dict[str, str]:
    """A ResourceList of canonical integers as the API shows it (quantity strings), sorted by name."""
    return {name: format_quantity(name, int(value)) for name, value in sorted(resources.items())}


def _plan_quota(record: Mapping, obj: ObjectView | None) -> PatchStatus | Skip:
    if not record.get("namespace"):
        return Skip(f"{record['name']} is a built-in quota, with no object")
    if obj is None:
        return Skip("the object no longer exists")
    annotations = {}
    for field, annotation in QUOTA_ANNOTATIONS.items():
        wanted = _non_zero(record.get(field) or {})
        if _shown(obj.annotations.get(annotation)) != wanted:
            annotations[annotation] = json.dumps(resource_quantities(wanted), separators=(",", ":"))
    used = _non_zero(record.get("used") or {})
    status = None
    if _quantities(obj.status.get("used")) != used:
        status = {"used": resource_quantities(used)}
    if not annotations and status is None:
        return Skip("the object shows these values already")
    return PatchStatus(obj.kind, obj.namespace, obj.name, obj.uid, obj.resource_version, status, annotations)


def _non_zero(resources: Mapping[str, int]) -> dict[str, int]:
    return {name: int(value) for name, value in resources.items() if value}


def _shown(annotation: str | None) -> dict[str, int] | None:
    """The resource list an annotation shows (canonical, zeros removed); None when it is absent or unreadable."""
    if not annotation:
        return {}
    try:
        value = json.loads(annotation)
    except ValueError:
        return None
    return _quantities(value)


def _quantities(resources: object) -> dict[str, int] | None:
    if resources is None:
        return {}
    if not isinstance(resources, Mapping):
        return None
    try:
        return _non_zero({name: to_canonical(name, value) for name, value in resources.items()})
    except (QuantityError, TypeError, ValueError):
        return None
