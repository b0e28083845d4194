"""Reservation (scheduling.koordinator.sh, cluster-scoped): resources held on a node for pods to come.

Requests are the effective requests of ``spec.template`` computed as for a pod
(Koordinator's ReservationRequests). The node is ``spec.template.spec.nodeName``
(a reservation pinned by its author) or else ``status.nodeName`` (one already
scheduled). A reservation without a template reserves nothing.
"""

from streams.objects.fields import FieldReader
from streams.objects.kind import KindSpec
from streams.objects.podresources import read_pod_resources


def convert(reader: FieldReader, body: dict, metadata: dict) -> dict:
    spec = reader.mapping(body.get("spec"), "spec")
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
