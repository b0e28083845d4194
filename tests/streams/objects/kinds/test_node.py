"""Node: schedulability, taints, capacity, allocatable and images."""

import json

import pytest

from streams.objects.kinds.node import MAX_IMAGES
from streams.objects.size import state_problem, stored_form

from tests.streams.objects.support import SAMPLES, problems_of, record_of


def test_node_fields():
    record = record_of(SAMPLES["Node"]).record
    assert record["unschedulable"] is True
    assert record["taints"] == [
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unreachable", "value": None, "effect": "NoExecute"},
    ]
    assert record["capacity"] == {"cpu": 64000, "memory": 256 << 30, "pods": 110}
    assert record["allocatable"] == {"cpu": 63500, "memory": 250 << 30, "pods": 110, "kubernetes.io/batch-cpu": 20000}


def test_bare_node_has_defaults():
    record = record_of("apiVersion: v1\nkind: Node\nmetadata: {name: n}\n").record
    assert (record["unschedulable"], record["taints"], record["capacity"], record["allocatable"]) == (False, [], {}, {})


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        (
            "{taints: [{key: a, effect: Sometimes}]}",
            'spec.taints[0].effect: unsupported value "Sometimes" (supported: NoSchedule, PreferNoSchedule, NoExecute)',
        ),
        ("{taints: [{key: a}]}", "spec.taints[0].effect: required"),
        ("{taints: [{effect: NoSchedule}]}", "spec.taints[0].key: required"),
        ("{taints: [{key: a, value: 'x y', effect: NoSchedule}]}", 'spec.taints[0].value: invalid value "x y"'),
        ("{unschedulable: 'yes'}", 'spec.unschedulable: must be true or false, got string "yes"'),
        ("'...'", "spec: must be an object, got string"),
    ],
    ids=[
        "taint-effect-unknown",
        "taint-effect-missing",
        "taint-key-missing",
        "taint-value-invalid",
        "unschedulable-string",
        "spec-string",
    ],
)
def test_invalid_node(spec, problem):
    problems = problems_of(f"apiVersion: v1\nkind: Node\nmetadata: {{name: n}}\nspec: {spec}\n")
    assert len(problems) == 1 and problems[0].startswith(problem), problems


def test_negative_allocatable_is_refused():
    text = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {memory: -1Gi}}\n"
    assert problems_of(text) == ['status.allocatable.memory: quantity must not be negative: "-1Gi"']


def _node_with_images(images: list) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"images": images}})


def test_images_come_through_apply():
    text = _node_with_images([{"names": ["gcr.io/40:latest", "gcr.io/40@sha256:ab"], "sizeBytes": 40 << 20},
                              {"names": ["gcr.io/300:v1"], "sizeBytes": 300 << 20}, {"sizeBytes": 7}])
    assert record_of(text).record["images"] == [
        {"names": ["gcr.io/300:v1"], "sizeBytes": 300 << 20},
        {"names": ["gcr.io/40:latest", "gcr.io/40@sha256:ab"], "sizeBytes": 40 << 20},
        {"names": [], "sizeBytes": 7}]


def test_images_are_bounded_as_the_kubelet_bounds_them():
    """A kubelet run with --node-status-max-images -1 reports every image: the record keeps the 50 largest, five
    names each, so the stored node stays small."""
    images = [{"names": [f"registry.example/team/app-{i}:v{j}" for j in range(12)], "sizeBytes": i}
              for i in range(5000)]
    obj = record_of(_node_with_images(images))
    kept = obj.record["images"]
    assert len(kept) == MAX_IMAGES == 50 and [image["sizeBytes"] for image in kept] == list(range(4999, 4949, -1))
    assert all(image["names"] == [f"registry.example/team/app-{image['sizeBytes']}:v{j}" for j in range(5)]
               for image in kept)
    stored = json.dumps(stored_form("Node", obj.record), separators=(",", ":"))
    assert len(stored) < 20_000 and state_problem("Node", obj.record) is None


@pytest.mark.parametrize(("images", "problem"), [
    ([{"names": [1], "sizeBytes": 1}], "status.images[0].names[0]: must be a string, got number 1"),
    ([{"names": ["a"], "sizeBytes": -1}], "status.images[0].sizeBytes: must be between 0 and"),
    ([{"names": "a"}], "status.images[0].names: must be a list, got string"),
    ({"names": ["a"]}, "status.images: must be a list, got object"),
], ids=["name-number", "size-negative", "names-string", "images-object"])
def test_invalid_images(images, problem):
    problems = problems_of(_node_with_images(images))
    assert len(problems) == 1 and problems[0].startswith(problem), problems
