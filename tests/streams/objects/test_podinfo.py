"""The priority class and QoS class the scheduler derives for a pod (apis/extension priority_utils.go, qos_utils.go)."""

import pytest

from tests.streams.scheduler.support import k8s_pod, pod_info


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
