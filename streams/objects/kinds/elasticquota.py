"""ElasticQuota (scheduler-plugins' scheduling.sigs.k8s.io, renamed scheduling.x-k8s.io): min and max resources."""

from streams.objects.fields import FieldReader, child
from streams.objects.kind import KindSpec


def convert(reader: FieldReader, body: dict, metadata: dict) -> dict:
    spec = reader.mapping(body.get("spec"), "spec")
    minimum = reader.resources(spec.get("min"), "spec.min")
    maximum = reader.resources(spec.get("max"), "spec.max")
    for name, value in minimum.items():
        if name in maximum and value > maximum[name]:
            reader.fail(child("spec.min", name), f"must be less than or equal to spec.max {name}")
    return {"min": minimum, "max": maximum}


SPEC = KindSpec(
    kind="ElasticQuota",
    groups=("scheduling.sigs.k8s.io", "scheduling.x-k8s.io"),
    schema="ElasticQuota",
    topic="quotas",
    namespaced=True,
    plural="elasticquotas",
    short_names=("eq", "eqs"),
    convert=convert,
)
