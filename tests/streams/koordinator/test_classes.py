"""Priority and QoS classes (``apis/extension/priority_utils_test.go``, ``qos_utils_test.go``)."""

import pytest

from streams.koordinator.classes import (
    decision_priority_class, default_priority, kube_qos_class, priority_class_by_priority, priority_class_raw,
    priority_class_with_default, qos_class_by_name, qos_class_with_default, qos_for_guaranteed,
)


@pytest.mark.parametrize("label, priority, expected", [
    pytest.param(None, 9499, "koord-prod", id="TestGetPriorityClass/#00_prod_range"),
    pytest.param(None, 5499, "koord-batch", id="TestGetPriorityClass/#01_batch_range"),
    pytest.param("koord-prod", 5499, "koord-prod", id="TestGetPriorityClass/#02_label_wins"),
    pytest.param("unknown", 5499, "", id="TestGetPriorityClass/#03_unknown_label_is_none"),
    pytest.param(None, None, "", id="no_priority"),
    pytest.param(None, 7000, "koord-mid", id="mid_range"), pytest.param(None, 3999, "koord-free", id="free_range"),
    pytest.param(None, 100, "", id="outside_every_range"),
])
def test_priority_class_raw(label, priority, expected):
    assert priority_class_raw(label, priority) == expected


@pytest.mark.parametrize("label, priority, qos, kube_qos, expected", [
    pytest.param(None, 9499, None, None, "koord-prod", id="TestGetPodPriorityClassWithDefault/#00_prod_range"),
    pytest.param("koord-prod", 5499, None, None, "koord-prod", id="TestGetPodPriorityClassWithDefault/#01_label"),
    pytest.param(None, 5499, "LSR", None, "koord-batch", id="TestGetPodPriorityClassWithDefault/#02_range_wins_over_qos"),
    pytest.param(None, None, "LSR", None, "koord-prod", id="TestGetPodPriorityClassWithDefault/#03_LSR_is_prod"),
    pytest.param(None, None, "BE", None, "koord-batch", id="TestGetPodPriorityClassWithDefault/#04_BE_is_batch"),
    pytest.param(None, None, None, "Burstable", "koord-prod", id="TestGetPodPriorityClassWithDefault/#05_burstable"),
    pytest.param(None, None, None, "Guaranteed", "koord-prod", id="TestGetPodPriorityClassWithDefault/#06_guaranteed"),
    pytest.param(None, None, None, "BestEffort", "koord-batch", id="TestGetPodPriorityClassWithDefault/#07_besteffort"),
])
def test_priority_class_with_default(label, priority, qos, kube_qos, expected):
    raw = priority_class_raw(label, priority)
    assert priority_class_with_default(raw, qos_class_with_default(qos, kube_qos)) == expected


def test_decision_fields_give_the_class_with_default():
    assert decision_priority_class("koord-mid", 7000, "BE") == "koord-mid"
    assert decision_priority_class(None, 7000, "BE") == "koord-mid"
    assert decision_priority_class(None, None, "LSE") == "koord-prod"
    assert decision_priority_class(None, None, None) == ""


def test_qos_and_default_priorities():
    assert [qos_class_by_name(q) for q in ("LS", "BE", "weird", None)] == ["LS", "BE", "", ""]
    assert [default_priority(c) for c in ("koord-prod", "koord-mid", "koord-batch", "koord-free", "", None, "x")] == \
        [9500, 7500, 5500, 3500, 0, 0, 0]


@pytest.mark.parametrize("value, want", [
    (9000, "koord-prod"), (9999, "koord-prod"), (7000, "koord-mid"), (7999, "koord-mid"), (5000, "koord-batch"),
    (5999, "koord-batch"), (3000, "koord-free"), (3999, "koord-free"), (8999, ""), (0, ""), (None, ""),
])
def test_priority_class_by_priority_range(value, want):
    assert priority_class_by_priority(value) == want


@pytest.mark.parametrize("containers, status, want", [
    pytest.param([({}, {})], None, "BestEffort", id="nothing_requested"),
    pytest.param([({"cpu": 1000}, {})], None, "Burstable", id="request_without_limit"),
    pytest.param([({"cpu": 1000, "memory": 1}, {"cpu": 1000, "memory": 1})], None, "Guaranteed", id="equal"),
    pytest.param([({}, {})], "Burstable", "Burstable", id="status_wins"),
])
def test_kube_qos_class(containers, status, want):
    assert kube_qos_class(containers, status) == want


@pytest.mark.parametrize("policy, expected", [("static", "LSR"), ("none", "LS"), ("", "LS")])
def test_guaranteed_is_lsr_only_under_kubelets_static_cpu_manager_policy(policy, expected):
    """Koordinator 1.0's QoS table; an unknown policy is kubelet's default, none."""
    assert qos_for_guaranteed(policy) == expected
