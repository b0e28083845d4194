"""Views of the NUMA inputs: a NodeResourceTopology's zones and a pod's resource-status NUMA nodes."""

import pytest

from streams.koordinator.annotations import ANNOTATION_RESOURCE_STATUS
from streams.noderesource.views import Zone, numa_nodes_of, zones_of


def nrt(*zones: tuple[str, list[tuple[str, int]]]) -> dict:
    return {"zones": [{"name": name, "type": "Node", "resources": [
        {"name": resource, "capacity": value + 1, "allocatable": value, "available": value}
        for resource, value in resources]} for name, resources in zones]}


@pytest.mark.parametrize("record, expected", [
    pytest.param(nrt(("node-0", [("cpu", 4000), ("memory", 8 << 30), ("hugepages-2Mi", 0)]), ("node-1", [("cpu", 2000)])),
                 (Zone("node-0", 4000, 8 << 30), Zone("node-1", 2000, 0)), id="allocatable-in-order-missing-is-zero"),
    pytest.param(nrt(("node-0", [("hugepages-1Gi", 1 << 30)])), (), id="no-cpu-or-memory-listed"),
    pytest.param(nrt(), (), id="no-zones"),
    pytest.param(None, (), id="deleted"),
])
def test_zones_of(record, expected):
    assert zones_of(record) == expected


@pytest.mark.parametrize("text, expected", [
    ('{"cpuset":"0-3","numaNodeResources":[{"node":1,"resources":{"cpu":"4"}},{"node":0}]}', (1, 0)),
    ('{"numaNodeResources":[{"resources":{"cpu":"4"}}, null]}', (0, 0)),
    ('{"cpuset":"0-3"}', ()),
    ('{"numaNodeResources":[{"node":"1"}]}', ()),
    ('{"numaNodeResources":[{"node":1.5}]}', ()),
    ("not json", ()),
    ("[]", ()),
    (None, ()),
], ids=["listed-order", "node-defaults-to-zero", "no-numa-resources", "string-id", "fractional-id", "not-json",
        "not-an-object", "absent"])
def test_numa_nodes_of_resource_status(text, expected):
    annotations = {} if text is None else {ANNOTATION_RESOURCE_STATUS: text}
    assert numa_nodes_of(annotations) == expected
