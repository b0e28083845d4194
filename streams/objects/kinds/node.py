"""Node (core/v1, cluster-scoped): schedulability, taints, capacity and allocatable."""

from streams.objects.fields import FieldReader
from streams.objects.kind import CORE_GROUP, KindSpec
from streams.objects.taints import read_taints


def convert(reader: FieldReader, body: dict, metadata: dict) -> dict:
    spec = reader.mapping(body.get("spec"), "spec")
    status = reader.mapping(body.get("status"), "status")
    return {
        "unschedulable": bool(reader.boolean(spec.get("unschedulable"), "spec.unschedulable")),
        "taints": read_taints(reader, spec.get("taints"), "spec.taints"),
        "capacity": reader.resources(status.get("capacity"), "status.capacity"),
        "allocatable": reader.resources(status.get("allocatable"), "status.allocatable"),
    }


SPEC = KindSpec(
    kind="Node",
    groups=(CORE_GROUP,),
    schema="Node",
    topic="nodes",
    namespaced=False,
    plural="nodes",
    short_names=("no",),
    convert=convert,
)
