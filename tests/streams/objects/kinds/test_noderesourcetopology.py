"""NodeResourceTopology: one TopologyZone per zone, quantities as canonical integers."""

import pytest

from tests.streams.objects.support import SAMPLES, problems_of, record_of

NRT = "apiVersion: topology.node.k8s.io/v1alpha1\nkind: NodeResourceTopology\nmetadata: {{name: n}}\nzones: [{zone}]\n"
KI = 1 << 10


def test_zones_in_canonical_units():
    zones = record_of(SAMPLES["NodeResourceTopology"]).record["zones"]
    assert zones == [
        {"name": "node-0", "type": "Node", "resources": [
            {"name": "cpu", "capacity": 52_000, "allocatable": 52_000, "available": 52_000},
            {"name": "memory", "capacity": 263856452 * KI, "allocatable": 263856452 * KI,
             "available": 263856452 * KI}]},
        {"name": "node-1", "type": "Node", "resources": [
            {"name": "cpu", "capacity": 52_000, "allocatable": 50_000, "available": 50_000},
            {"name": "memory", "capacity": 264221144 * KI, "allocatable": 264221144 * KI,
             "available": 264221144 * KI}]},
    ]


def test_allocatable_defaults_to_capacity_and_available_to_allocatable():
    record = record_of(NRT.format(zone='{name: node-0, resources: [{name: cpu, capacity: "4", allocatable: 3500m}]}'))
    assert record.record["zones"][0]["resources"] == [
        {"name": "cpu", "capacity": 4000, "allocatable": 3500, "available": 3500}]


@pytest.mark.parametrize(("zone", "problem"), [
    ("{type: Node}", "zones[0].name: required"),
    ("{name: node-0, resources: [{name: cpu}]}", "zones[0].resources[0].capacity: required"),
    ("{name: node-0, resources: [{name: cpu, capacity: -1}]}",
     'zones[0].resources[0].capacity: quantity must not be negative: "-1"'),
    ("{name: node-0, resources: [{name: memory, capacity: 1GB}]}",
     'zones[0].resources[0].capacity: not a valid quantity: "1GB"'),
    ("{name: node-0}, {name: node-0}", 'zones[1].name: duplicate zone "node-0"'),
], ids=["name-missing", "capacity-missing", "negative", "unparsable", "duplicate-zone"])
def test_invalid_zone(zone, problem):
    assert problems_of(NRT.format(zone=zone)) == [problem]
