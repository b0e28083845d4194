"""koord top prints every quantity in one Kubernetes form: cores (millicores under one core), binary bytes."""

import pytest

from streams.cli import top
from streams.cli.top import human

G, M = 1 << 30, 1 << 20


@pytest.mark.parametrize("resource, value, shown", [
    ("cpu", 3500, "3.5"), ("cpu", 64000, "64"), ("cpu", 1000, "1"), ("cpu", 1049, "1"), ("cpu", 250, "250m"),
    ("cpu", 999, "999m"), ("cpu", 0, "0"),
    ("memory", 6509288968, "6.1Gi"), ("memory", 1280 * M, "1.2Gi"), ("memory", 384 * G, "384Gi"),
    ("memory", 512 * M, "512Mi"), ("memory", G - 1, "1Gi"), ("memory", 100, "100"), ("memory", 0, "0"),
    ("memory", 3 << 40, "3Ti"),
    ("kubernetes.io/batch-cpu", 10000, "10"), ("kubernetes.io/batch-cpu", 500, "500m"),
    ("kubernetes.io/batch-memory", 15 * G, "15Gi"), ("kubernetes.io/mid-memory", 700 * M, "700Mi"),
    ("pods", 110, "110"),
])
def test_one_human_form(resource, value, shown):
    assert human(resource, value) == shown


def test_top_nodes_prints_every_column_in_the_same_form(monkeypatch):
    """The issue's row: raw usage bytes beside Mi/Gi requests and allocatable; batch and mid as what the node's
    pods request of what it advertises."""
    monkeypatch.setattr(top.queries, "top_nodes", lambda engine: [
        {"name": "node-a", "broken": None,
         "usage": {"cpu": 12_345, "memory": 6509288968},
         "requested": {"cpu": 750, "memory": 1280 * M, "kubernetes.io/batch-cpu": 4_000,
                       "kubernetes.io/batch-memory": 8 * G},
         "allocatable": {"cpu": 64_000, "memory": 384 * G, "kubernetes.io/batch-cpu": 20_500,
                         "kubernetes.io/batch-memory": 96 * G, "kubernetes.io/mid-cpu": 300,
                         "kubernetes.io/mid-memory": 512 * M}},
        {"name": "node-b", "broken": "unreadable", "usage": {}, "requested": {}, "allocatable": {}},
    ])
    assert top.render(top.node_rows(None)).splitlines() == [
        "NAME             CPU USE/REQ/ALLOC  CPU%  MEM USE/REQ/ALLOC  MEM%  BATCH-CPU REQ/ALLOC  BATCH-MEM REQ/ALLOC  "
        "MID-CPU REQ/ALLOC  MID-MEM REQ/ALLOC",
        "node-a           12.3/750m/64       19%   6.1Gi/1.2Gi/384Gi  2%    4/20.5               8Gi/96Gi             "
        "-/300m             -/512Mi",
        "node-b (broken)  -/-/-              -     -/-/-              -     -/-                  -/-                  "
        "-/-                -/-",
    ]


def test_top_pods_prints_every_column_in_the_same_form(monkeypatch):
    monkeypatch.setattr(top.queries, "top_pods", lambda engine, namespace: [
        {"namespace": "default", "name": "web", "node": "node-a",
         "usage": {"cpu": 350, "memory": 200 * M}, "requests": {"cpu": 1500, "memory": 2 * G}},
        {"namespace": "default", "name": "queued", "node": None, "usage": {}, "requests": {"cpu": 100}},
    ])
    assert top.render(top.pod_rows(None, None)).splitlines() == [
        "NAMESPACE  NAME    NODE       CPU USE/REQ  MEM USE/REQ",
        "default    web     node-a     350m/1.5     200Mi/2Gi",
        "default    queued  <pending>  -/100m       -/-",
    ]
