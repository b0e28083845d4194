"""PodGroup (scheduler-plugins' scheduling.sigs.k8s.io, namespaced): a gang's minimum members, resources and timeout.

Typed: ``spec.minMember`` (absent is 0, Go's zero value), ``spec.scheduleTimeoutSeconds`` (absent is
null: Coscheduling's default timeout applies) and ``spec.minResources``. Koordinator's gang annotations
(total-number, mode, match-policy, groups) stay in the metadata and the manifest, as on a pod. The
scheduling domain's Coscheduling plugin reads it.
"""

from streams.objects.fields import INT32_MAX, FieldReader
from streams.objects.kind import KindSpec


def convert(reader: FieldReader, body: dict, metadata: dict) -> dict:
    spec = reader.mapping(body.get("spec"), "spec")
    return {
        "minMember": reader.integer(spec.get("minMember"), "spec.minMember", low=0, high=INT32_MAX) or 0,
        "scheduleTimeoutSeconds": reader.integer(spec.get("scheduleTimeoutSeconds"), "spec.scheduleTimeoutSeconds",
                                                 low=0, high=INT32_MAX),
        "minResources": reader.resources(spec.get("minResources"), "spec.minResources"),
    }


SPEC = KindSpec(
    kind="PodGroup",
    groups=("scheduling.sigs.k8s.io", "scheduling.x-k8s.io"),
    schema="PodGroup",
    topic="podgroups",
    namespaced=True,
    plural="podgroups",
    short_names=("pg", "pgs"),
    convert=convert,
)
