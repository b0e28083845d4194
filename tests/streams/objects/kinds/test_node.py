"""Node: schedulability, taints, capacity and allocatable."""

import pytest

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
