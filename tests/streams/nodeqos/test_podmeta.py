"""The node's kubelet CPU manager policy and the QoS class it gives Guaranteed pods without a label."""

from __future__ import annotations

import pytest

from streams.nodeqos.podmeta import cpu_manager_policy, qos_on_node
from tests.streams.nodeqos.support import pod

POLICY = "kubelet.koordinator.sh/cpu-manager-policy"


@pytest.mark.parametrize("annotations, expected", [
    pytest.param({POLICY: '{"policy": "static", "options": {"full-pcpus-only": "true"}, "reservedCPUs": "0-1"}'},
                 "static", id="static"),
    pytest.param({POLICY: '{"policy": "none"}'}, "none", id="none"),
    pytest.param({}, "none", id="absent-is-kubelets-default"),
    pytest.param({POLICY: "{}"}, "none", id="no-policy"),
    pytest.param({POLICY: "static"}, "none", id="not-json"),
    pytest.param({POLICY: '["static"]'}, "none", id="not-an-object"),
])
def test_cpu_manager_policy(annotations, expected):
    assert cpu_manager_policy(annotations) == expected


@pytest.mark.parametrize("view, policy, expected", [
    pytest.param(pod("LSR", "u"), "static", "LSR", id="guaranteed-static"),
    pytest.param(pod("LSR", "u"), "none", "LS", id="guaranteed-none"),
    pytest.param(pod("LSR", "u", labels={"koordinator.sh/qosClass": "LSR"}), "none", "LSR", id="label-wins"),
    pytest.param(pod("LS", "u"), "static", "LS", id="burstable"),
    pytest.param(pod("BE", "u"), "none", "BE", id="besteffort"),
    pytest.param(pod("", "u", labels={"koordinator.sh/qosClass": "nope"}), "none", "", id="unknown-label"),
])
def test_qos_on_node(view, policy, expected):
    """Koordinator 1.0: "When kubelet CPU Manager Policy is static, Guaranteed is equivalent to LSR; when none,
    Guaranteed is equivalent to LS"."""
    assert qos_on_node(view, policy) == expected
