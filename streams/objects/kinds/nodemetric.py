"""NodeMetric (slo.koordinator.sh, cluster-scoped, named after its node): node and pod usage at updateTime.

Koordinator's shape: ``status.nodeMetric`` holds ``nodeUsage``, ``systemUsage``
and ``aggregatedNodeUsages[] {usage: {avg|p50|p90|p95|p99: {resources}}, duration}``;
``status.podsMetric[]`` and ``status.hostApplicationMetric[]`` carry usage with
the priority and QoS class; ``status.prodReclaimableMetric.resource`` is
koordlet's prediction when it reports one. koordstream's node agent adds the
memory policy its usages were measured under (Koordinator's
``spec.metricCollectPolicy.nodeMemoryCollectPolicy``), kidled cold page bytes
(``status.nodeMetric.coldPageBytes``, ``podsMetric[].coldPageBytes``) and each
pod's CFS throttled ratio over the report interval (``podsMetric[].throttledRatio``,
a number in [0, 1]).
"""

import math
import re
from datetime import datetime, timedelta, timezone

from streams.koordinator.resources import MEMORY_COLLECT_POLICIES
from streams.objects.fields import FieldReader, child, item
from streams.objects.kind import KindSpec

_RFC3339 = re.compile(r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def convert(reader: FieldReader, body: dict, metadata: dict) -> dict:
    status = reader.mapping(body.get("status"), "status")
    node_metric = reader.mapping(status.get("nodeMetric"), "status.nodeMetric")
    reclaimable = reader.mapping(status.get("prodReclaimableMetric"), "status.prodReclaimableMetric")
    spec = reader.mapping(body.get("spec"), "spec")
    collect = reader.mapping(spec.get("metricCollectPolicy"), "spec.metricCollectPolicy")
    return {
        "nodeUsage": _resources(reader, node_metric.get("nodeUsage"), "status.nodeMetric.nodeUsage"),
        "systemUsage": _resources(reader, node_metric.get("systemUsage"), "status.nodeMetric.systemUsage"),
        "aggregatedNodeUsages": _aggregated(reader, node_metric.get("aggregatedNodeUsages"),
                                            "status.nodeMetric.aggregatedNodeUsages"),
        "podsMetric": _pods_metric(reader, status.get("podsMetric"), "status.podsMetric"),
        "hostApplicationMetric": _host_applications(reader, status.get("hostApplicationMetric"),
                                                    "status.hostApplicationMetric"),
        "prodReclaimable": _resources(reader, reclaimable.get("resource"), "status.prodReclaimableMetric.resource"),
        "updateTime": rfc3339_millis(reader, status.get("updateTime"), "status.updateTime"),
        "memoryCollectPolicy": reader.enum(collect.get("nodeMemoryCollectPolicy"),
                                           "spec.metricCollectPolicy.nodeMemoryCollectPolicy", MEMORY_COLLECT_POLICIES),
        "coldPageBytes": reader.integer(node_metric.get("coldPageBytes"), "status.nodeMetric.coldPageBytes", low=0),
    }


def _ratio(reader: FieldReader, value: object, path: str) -> float | None:
    """A number in [0, 1]; absent is None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= 1:
        reader.fail(path, f"must be a number between 0 and 1, got {value!r}")
        return None
    return float(value)


def _resources(reader: FieldReader, value: object, path: str) -> dict[str, int]:
    """``{resources: {name: quantity}}`` as canonical integers."""
    return reader.resources(reader.mapping(value, path).get("resources"), child(path, "resources"))


def _aggregated(reader: FieldReader, value: object, path: str) -> list[dict]:
    windows = []
    for index, raw in enumerate(reader.sequence(value, path)):
        window_path = item(path, index)
        window = reader.mapping(raw, window_path)
        usage = reader.mapping(window.get("usage"), child(window_path, "usage"))
        usage_path = child(window_path, "usage")
        windows.append({
            "duration": reader.string(window.get("duration"), child(window_path, "duration"), required=True) or "",
            **{stat: _resources(reader, usage.get(stat), child(usage_path, stat)) for stat in AGGREGATIONS},
        })
    return windows


AGGREGATIONS = ("avg", "p50", "p90", "p95", "p99")


def _host_applications(reader: FieldReader, value: object, path: str) -> list[dict]:
    apps = []
    for index, raw in enumerate(reader.sequence(value, path)):
        app_path = item(path, index)
        app = reader.mapping(raw, app_path)
        apps.append({
            "name": reader.string(app.get("name"), child(app_path, "name"), required=True) or "",
            "priority": reader.string(app.get("priority"), child(app_path, "priority")),
            "qos": reader.string(app.get("qos"), child(app_path, "qos")),
            "usage": _resources(reader, app.get("usage"), child(app_path, "usage")),
        })
    return apps


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
                "uid": reader.string(pod.get("uid"), child(pod_path, "uid")),
                "usage": reader.resources(usage.get("resources"), child(child(pod_path, "podUsage"), "resources")),
                "priority": reader.string(pod.get("priority"), child(pod_path, "priority")),
                "qos": reader.string(pod.get("qos"), child(pod_path, "qos")),
                "throttledRatio": _ratio(reader, pod.get("throttledRatio"), child(pod_path, "throttledRatio")),
                "coldPageBytes": reader.integer(pod.get("coldPageBytes"), child(pod_path, "coldPageBytes"), low=0),
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
