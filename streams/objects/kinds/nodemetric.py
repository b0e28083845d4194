"""NodeMetric (slo.koordinator.sh, cluster-scoped, named after its node): node and pod usage at updateTime."""

import re
from datetime import datetime, timedelta, timezone

from streams.objects.fields import FieldReader, child, item
from streams.objects.kind import KindSpec

_RFC3339 = re.compile(r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def convert(reader: FieldReader, body: dict, metadata: dict) -> dict:
    status = reader.mapping(body.get("status"), "status")
    node_metric = reader.mapping(status.get("nodeMetric"), "status.nodeMetric")
    node_usage = reader.mapping(node_metric.get("nodeUsage"), "status.nodeMetric.nodeUsage")
    return {
        "nodeUsage": reader.resources(node_usage.get("resources"), "status.nodeMetric.nodeUsage.resources"),
        "podsMetric": _pods_metric(reader, status.get("podsMetric"), "status.podsMetric"),
        "updateTime": rfc3339_millis(reader, status.get("updateTime"), "status.updateTime"),
    }


def rfc3339_millis(reader: FieldReader, value: object, path: str) -> int | None:
    """An RFC 3339 timestamp as milliseconds since the Unix epoch (digits below a millisecond dropped)."""
    text = reader.string(value, path)
    if text is None:
        return None
    match = _RFC3339.match(text)
    try:
        date, clock, fraction, zone = match.groups()
        moment = datetime.fromisoformat(f"{date}T{clock}{'+00:00' if zone in ('Z', 'z') else zone}")
    except (AttributeError, ValueError):
        reader.fail(path, f'must be an RFC 3339 time such as "2024-05-01T10:00:00Z", got "{text}"')
        return None
    return (moment - _EPOCH) // timedelta(milliseconds=1) + int(((fraction or "") + "000")[:3])


def _pods_metric(reader: FieldReader, value: object, path: str) -> list[dict]:
    pods = []
    for index, raw in enumerate(reader.sequence(value, path)):
        pod_path = item(path, index)
        pod = reader.mapping(raw, pod_path)
        usage = reader.mapping(pod.get("podUsage"), child(pod_path, "podUsage"))
        pods.append(
            {
                "namespace": reader.string(pod.get("namespace"), child(pod_path, "namespace"), required=True) or "",
                "name": reader.string(pod.get("name"), child(pod_path, "name"), required=True) or "",
                "uid": None,
                "usage": reader.resources(usage.get("resources"), child(child(pod_path, "podUsage"), "resources")),
            }
        )
    return pods


SPEC = KindSpec(
    kind="NodeMetric",
    groups=("slo.koordinator.sh",),
    schema="NodeMetric",
    topic="nodemetrics",
    namespaced=False,
    plural="nodemetrics",
    short_names=(),
    convert=convert,
)
