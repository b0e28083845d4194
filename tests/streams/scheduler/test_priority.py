"""Koordinator priority classes and QoS classes (apis/extension priority.go, priority_utils.go, qos_utils.go)."""

import pytest

from streams.scheduler import priority as prio
from tests.streams.scheduler.support import k8s_pod, pod_info


@pytest.mark.parametrize("value, want", [
    (9000, "koord-prod"), (9999, "koord-prod"), (7000, "koord-mid"), (7999, "koord-mid"), (5000, "koord-batch"),
    (5999, "koord-batch"), (3000, "koord-free"), (3999, "koord-free"), (8999, ""), (0, ""), (None, ""),
])
def test_class_by_priority_range(value, want):
    assert prio.class_by_priority(value) == want


@pytest.mark.parametrize("kwargs, raw, qos, klass", [
    ({}, "", "BE", "koord-batch"),
    ({"requests": {"cpu": "1"}}, "", "LS", "koord-prod"),
    ({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}, "", "LSR", "koord-prod"),
    ({"limits": {"cpu": "1", "memory": "1Gi"}}, "", "LSR", "koord-prod"),
    ({"priority": 5500, "requests": {"cpu": "1"}}, "koord-batch", "LS", "koord-batch"),
    ({"labels": {"koordinator.sh/qosClass": "BE"}, "requests": {"cpu": "1"}}, "", "BE", "koord-batch"),
    ({"labels": {"koordinator.sh/priority-class": "koord-mid"}, "priority": 9500}, "koord-mid", "BE", "koord-mid"),
    ({"labels": {"koordinator.sh/priority-class": "gold"}, "priority": 9500}, "", "BE", "koord-batch"),
    ({"labels": {"koordinator.sh/qosClass": "LSE"}}, "", "LSE", "koord-prod"),
], ids=["best effort", "burstable", "guaranteed", "limits default the requests", "priority range wins over QoS",
        "qos label", "priority-class label wins over priority", "unknown class label means none", "LSE"])
def test_classes_of_a_pod(kwargs, raw, qos, klass):
    pod = pod_info(k8s_pod("p", **kwargs))
    assert (pod.priority_class_raw, pod.qos_class, pod.priority_class) == (raw, qos, klass)


def test_koordinator_priority_class_name_gives_its_value():
    from tests.streams.scheduler.support import converted

    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"priorityClassName": "koord-batch", "containers": [{"name": "c"}]}}
    ev = converted(body)
    assert (pod_info(ev).priority, pod_info(ev).priority_class_raw) == (5000, "koord-batch")


@pytest.mark.parametrize("resource, klass, want", [
    ("cpu", "koord-batch", "kubernetes.io/batch-cpu"), ("memory", "koord-mid", "kubernetes.io/mid-memory"),
    ("cpu", "koord-prod", "cpu"), ("cpu", "", "cpu"), ("cpu", "koord-free", ""),
])
def test_translate_resource_name_by_priority_class(resource, klass, want):
    assert prio.translate(resource, klass) == want
