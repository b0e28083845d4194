"""NodeMetric: node usage, pod usage and the update time in milliseconds."""

import pytest

from tests.streams.objects.support import SAMPLES, problems_of, record_of


def node_metric(update_time: str) -> str:
    return (
        "apiVersion: slo.koordinator.sh/v1alpha1\nkind: NodeMetric\nmetadata: {name: n}\n"
        f"status: {{updateTime: {update_time}}}\n"
    )


def test_node_metric_fields():
    record = record_of(SAMPLES["NodeMetric"]).record
    assert record["nodeUsage"] == {"cpu": 12500, "memory": 64 << 30}
    assert record["podsMetric"] == [
        {"namespace": "shop", "name": "web-1", "uid": None, "usage": {"cpu": 800, "memory": 600 << 20},
         "priority": None, "qos": None, "throttledRatio": None, "coldPageBytes": None}
    ]
    assert record["updateTime"] == 1714557600000
    assert (record["memoryCollectPolicy"], record["coldPageBytes"]) == (None, None)


def test_node_agent_additions():
    """The memory policy (Koordinator's spec field), cold page bytes and each pod's throttled ratio."""
    text = """apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeMetric
metadata: {name: n}
spec: {metricCollectPolicy: {nodeMemoryCollectPolicy: usageWithPageCache}}
status:
  nodeMetric: {coldPageBytes: 52834304}
  podsMetric:
  - {namespace: a, name: p, podUsage: {resources: {cpu: "1"}}, throttledRatio: 0.25, coldPageBytes: 4096}
"""
    record = record_of(text).record
    assert (record["memoryCollectPolicy"], record["coldPageBytes"]) == ("usageWithPageCache", 52834304)
    assert (record["podsMetric"][0]["throttledRatio"], record["podsMetric"][0]["coldPageBytes"]) == (0.25, 4096)


def test_node_agent_additions_are_checked():
    text = """apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeMetric
metadata: {name: n}
spec: {metricCollectPolicy: {nodeMemoryCollectPolicy: usageWithColdPages}}
status:
  nodeMetric: {coldPageBytes: -1}
  podsMetric:
  - {namespace: a, name: p, throttledRatio: 1.5}
"""
    assert sorted(problems_of(text)) == [
        'spec.metricCollectPolicy.nodeMemoryCollectPolicy: unsupported value "usageWithColdPages" (supported: '
        'usageWithoutPageCache, usageWithPageCache, usageWithHotPageCache)',
        "status.nodeMetric.coldPageBytes: must be between 0 and 9223372036854775807, got -1",
        "status.podsMetric[0].throttledRatio: must be a number between 0 and 1, got 1.5",
    ]


def test_full_koordinator_shape():
    text = """apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeMetric
metadata: {name: n}
status:
  nodeMetric:
    nodeUsage: {resources: {cpu: "3", memory: 4Gi}}
    systemUsage: {resources: {cpu: 500m}}
    aggregatedNodeUsages:
    - duration: 5m0s
      usage:
        p50: {resources: {cpu: "2"}}
        p99: {resources: {cpu: 3500m, memory: 5Gi}}
  podsMetric:
  - {namespace: a, name: p, priority: koord-prod, qos: LS, podUsage: {resources: {cpu: "1"}}}
  hostApplicationMetric:
  - {name: nginx, priority: koord-prod, qos: LS, usage: {resources: {cpu: 200m}}}
  prodReclaimableMetric:
    resource: {resources: {cpu: "2", memory: 1Gi}}
"""
    record = record_of(text).record
    assert record["systemUsage"] == {"cpu": 500}
    assert record["aggregatedNodeUsages"] == [{"duration": "5m0s", "avg": {}, "p50": {"cpu": 2000}, "p90": {},
                                               "p95": {}, "p99": {"cpu": 3500, "memory": 5 << 30}}]
    assert record["podsMetric"][0]["priority"] == "koord-prod" and record["podsMetric"][0]["qos"] == "LS"
    assert record["hostApplicationMetric"] == [{"name": "nginx", "priority": "koord-prod", "qos": "LS",
                                                "usage": {"cpu": 200}}]
    assert record["prodReclaimable"] == {"cpu": 2000, "memory": 1 << 30}


@pytest.mark.parametrize(
    ("text", "millis"),
    [
        ('"1970-01-01T00:00:00Z"', 0),
        ("1970-01-01T00:00:01.5Z", 1500),
        ('"1970-01-01T00:00:00.123456789Z"', 123),
        ('"1970-01-01T08:00:00+08:00"', 0),
        ('"1970-01-01t00:00:00z"', 0),
        ('"1969-12-31T23:59:59.250Z"', -750),
    ],
    ids=["epoch", "unquoted-with-fraction", "nanoseconds-truncated", "offset", "lower-case", "before-epoch"],
)
def test_update_time_is_rfc3339_in_milliseconds(text, millis):
    assert record_of(node_metric(text)).record["updateTime"] == millis


@pytest.mark.parametrize(
    "text",
    ['"2024-05-01"', '"2024-05-01T10:00:00"', '"2024-13-01T10:00:00Z"', '"yesterday"'],
    ids=["date", "no-zone", "month-13", "words"],
)
def test_update_time_must_be_rfc3339(text):
    (problem,) = problems_of(node_metric(text))
    assert problem.startswith('status.updateTime: must be an RFC 3339 time such as "2024-05-01T10:00:00Z"')


def test_pod_metric_needs_namespace_and_name():
    text = (
        "apiVersion: slo.koordinator.sh/v1alpha1\nkind: NodeMetric\nmetadata: {name: n}\n"
        "status: {podsMetric: [{podUsage: {resources: {cpu: x}}}]}\n"
    )
    assert problems_of(text) == [
        "status.podsMetric[0].namespace: required",
        "status.podsMetric[0].name: required",
        'status.podsMetric[0].podUsage.resources.cpu: not a valid quantity: "x"',
    ]
