"""Pod (core/v1): what scheduling reads — effective requests and limits, placement constraints, phase."""

from streams.objects import names
from streams.objects.fields import INT32_MAX, INT32_MIN, FieldReader
from streams.objects.kind import CORE_GROUP, KindSpec
from streams.objects.podresources import read_pod_resources
from streams.objects.taints import read_tolerations

DEFAULT_SCHEDULER = "default-scheduler"
PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")


def convert(reader: FieldReader, body: dict, metadata: dict) -> dict:
    spec = reader.mapping(body.get("spec"), "spec")
    status = reader.mapping(body.get("status"), "status")
    requests, limits = read_pod_resources(reader, spec, "spec")
    return {
        "nodeName": reader.object_name(spec.get("nodeName"), "spec.nodeName"),
        "schedulerName": reader.object_name(spec.get("schedulerName"), "spec.schedulerName") or DEFAULT_SCHEDULER,
        "priority": reader.integer(spec.get("priority"), "spec.priority", low=INT32_MIN, high=INT32_MAX),
        "priorityClassName": reader.string(spec.get("priorityClassName"), "spec.priorityClassName"),
        "requests": requests,
        "limits": limits,
        "nodeSelector": reader.string_map(
            spec.get("nodeSelector"),
            "spec.nodeSelector",
            key_error=names.qualified_name_error,
            value_error=names.label_value_error,
        ),
        "tolerations": read_tolerations(reader, spec.get("tolerations"), "spec.tolerations"),
        "phase": reader.enum(status.get("phase"), "status.phase", PHASES),
    }


SPEC = KindSpec(
    kind="Pod",
    groups=(CORE_GROUP,),
    schema="Pod",
    topic="pods",
    namespaced=True,
    plural="pods",
    short_names=("po",),
    convert=convert,
)
