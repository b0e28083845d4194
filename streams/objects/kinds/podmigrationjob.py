"""PodMigrationJob (scheduling.koordinator.sh, cluster-scoped): a request to move one pod, safely.

Typed: the pod (``spec.podRef``: namespace and name required when it is given, uid optional), ``spec.mode``
(ReservationFirst or EvictDirectly; absent is null, the controller's default), ``spec.ttl`` (a Go
duration, in milliseconds), ``spec.paused``, the reservation it may use (``spec.reservationOptions
.reservationRef.name``), the eviction's ``spec.deleteOptions`` (grace period, propagation policy, dry
run) and ``status.phase``. The reservation template and the status' conditions stay in the manifest.
The scheduling domain's descheduling stage reads this topic and writes each job's status back to it.
"""

from streams.objects.fields import FieldReader, child, item
from streams.objects.kind import KindSpec
from streams.objects.duration import parse_duration

MODES = ("ReservationFirst", "EvictDirectly")
PHASES = ("Pending", "Running", "Succeeded", "Failed", "Aborted")
PROPAGATION_POLICIES = ("Orphan", "Background", "Foreground")


def convert(reader: FieldReader, body: dict, metadata: dict) -> dict:
    spec = reader.mapping(body.get("spec"), "spec")
    status = reader.mapping(body.get("status"), "status")
    reservation = reader.mapping(reader.mapping(spec.get("reservationOptions"), "spec.reservationOptions")
                                 .get("reservationRef"), "spec.reservationOptions.reservationRef")
    return {
        "podRef": _pod_ref(reader, spec.get("podRef")),
        "mode": reader.enum(spec.get("mode"), "spec.mode", MODES),
        "ttlMs": _duration(reader, spec.get("ttl"), "spec.ttl"),
        "paused": bool(reader.boolean(spec.get("paused"), "spec.paused")),
        "reservationName": reader.object_name(reservation.get("name"), "spec.reservationOptions.reservationRef.name"),
        "deleteOptions": _delete_options(reader, spec.get("deleteOptions")),
        "phase": reader.enum(status.get("phase"), "status.phase", PHASES),
    }


def _pod_ref(reader: FieldReader, value: object) -> dict | None:
    if value is None:
        return None
    ref = reader.mapping(value, "spec.podRef")
    namespace = reader.object_name(ref.get("namespace"), "spec.podRef.namespace", required=True)
    name = reader.object_name(ref.get("name"), "spec.podRef.name", required=True)
    uid = reader.string(ref.get("uid"), "spec.podRef.uid")
    return {"namespace": namespace or "", "name": name or "", "uid": uid}


def _duration(reader: FieldReader, value: object, path: str) -> int | None:
    text = reader.string(value, path)
    if text is None:
        return None
    try:
        milliseconds = parse_duration(text)
    except ValueError as error:
        reader.fail(path, str(error))
        return None
    if milliseconds < 0:
        reader.fail(path, f'must not be negative, got "{text}"')
        return None
    return milliseconds


def _delete_options(reader: FieldReader, value: object) -> dict | None:
    if value is None:
        return None
    options = reader.mapping(value, "spec.deleteOptions")
    path = "spec.deleteOptions"
    return {
        "gracePeriodSeconds": reader.integer(options.get("gracePeriodSeconds"), child(path, "gracePeriodSeconds"),
                                             low=0),
        "propagationPolicy": reader.enum(options.get("propagationPolicy"), child(path, "propagationPolicy"),
                                         PROPAGATION_POLICIES),
        "dryRun": [reader.string(entry, item(child(path, "dryRun"), index)) or ""
                   for index, entry in enumerate(reader.sequence(options.get("dryRun"), child(path, "dryRun")))],
    }


SPEC = KindSpec(
    kind="PodMigrationJob",
    groups=("scheduling.koordinator.sh",),
    schema="PodMigrationJob",
    topic="podmigrationjobs",
    namespaced=False,
    plural="podmigrationjobs",
    short_names=("pmj",),
    convert=convert,
)
