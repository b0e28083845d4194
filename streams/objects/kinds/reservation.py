"""Reservation (scheduling.koordinator.sh, cluster-scoped): resources held on a node for pods to come.

Requests are the effective requests of ``spec.template`` computed as for a pod
(Koordinator's ReservationRequests). The node is ``spec.template.spec.nodeName``
(a reservation pinned by its author) or else ``status.nodeName`` (one already
scheduled). Checked as Koordinator's webhook and CRD do: ``spec.template`` and at least one
``spec.owners`` entry are required, ``spec.ttl`` is a non-negative Go duration and ``spec.expires``
an RFC 3339 time, ``spec.allocatePolicy`` one of Aligned / Restricted (or empty).
"""

from streams.objects.duration import parse_duration
from streams.objects.fields import FieldReader
from streams.objects.kind import KindSpec
from streams.objects.kinds.nodemetric import rfc3339_millis
from streams.objects.podresources import read_pod_resources

ALLOCATE_POLICIES = ("Aligned", "Restricted")


def convert(reader: FieldReader, body: dict, metadata: dict) -> dict:
    spec = reader.mapping(body.get("spec"), "spec")
    if spec.get("template") is None:
        reader.fail("spec.template", "required: the pod template to reserve resources for")
    owners = reader.sequence(spec.get("owners"), "spec.owners")
    if not owners:
        reader.fail("spec.owners", "required: at least one owner (object, controller or labelSelector)")
    ttl = reader.string(spec.get("ttl"), "spec.ttl")
    if ttl is not None:
        try:
            if parse_duration(ttl) < 0:
                reader.fail("spec.ttl", f'must not be negative, got "{ttl}"')
        except ValueError as error:
            reader.fail("spec.ttl", str(error))
    rfc3339_millis(reader, spec.get("expires"), "spec.expires")
    if spec.get("allocatePolicy"):
        reader.enum(spec.get("allocatePolicy"), "spec.allocatePolicy", ALLOCATE_POLICIES)
    template = reader.mapping(spec.get("template"), "spec.template")
    pod_spec = reader.mapping(template.get("spec"), "spec.template.spec")
    status = reader.mapping(body.get("status"), "status")
    requests, _ = read_pod_resources(reader, pod_spec, "spec.template.spec")
    pinned = reader.object_name(pod_spec.get("nodeName"), "spec.template.spec.nodeName")
    scheduled = reader.object_name(status.get("nodeName"), "status.nodeName")
    return {"requests": requests, "nodeName": pinned or scheduled}


SPEC = KindSpec(
    kind="Reservation",
    groups=("scheduling.koordinator.sh",),
    schema="Reservation",
    topic="reservations",
    namespaced=False,
    plural="reservations",
    short_names=(),
    convert=convert,
)
