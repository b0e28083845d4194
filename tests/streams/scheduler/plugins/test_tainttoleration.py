"""TaintToleration: NoSchedule/NoExecute taints against tolerations, with kube-scheduler's reason."""

import numpy as np
import pytest

from streams.scheduler.framework import CycleState
from streams.scheduler.plugins.tainttoleration import NAME, REASON_UNTOLERATED
from tests.streams.scheduler.support import decisions, k8s_node, k8s_pod, node, plugin_of, pod_info, run

DEDICATED = REASON_UNTOLERATED.format(key="dedicated", value="gpu")
UNREACHABLE = REASON_UNTOLERATED.format(key="node.kubernetes.io/unreachable", value="")

TAINTS = {"gpu": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
          "gone": [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
                   {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
          "soft": [{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}]}


@pytest.mark.parametrize("tolerations, passing, reasons", [
    pytest.param([], ["soft"], {DEDICATED: ["gpu"], UNREACHABLE: ["gone"]},
                 id="nothing tolerated: PreferNoSchedule never filters"),
    pytest.param([{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}], ["gpu", "soft"],
                 {UNREACHABLE: ["gone"]}, id="Equal toleration"),
    pytest.param([{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}], ["soft"],
                 {DEDICATED: ["gpu", "gone"]}, id="the first untolerated taint is named"),
    pytest.param([{"operator": "Exists"}], ["gpu", "gone", "soft"], {}, id="Exists without a key tolerates everything"),
])
def test_taints_and_tolerations(tolerations, passing, reasons):
    domain, _ = run(*(node(name, taints=t) for name, t in TAINTS.items()))
    plugin = plugin_of(domain, NAME)
    result = plugin.filter(CycleState(), pod_info(k8s_pod("p", tolerations=tolerations)), np.ones(3, dtype=bool))
    names = list(TAINTS)
    assert [n for n, ok in zip(names, result.passed) if ok] == passing
    assert {r: [n for n, hit in zip(names, mask) if hit] for r, mask in result.reasons} == reasons


def test_untolerated_taints_are_reported_when_no_node_fits():
    nodes = [k8s_node("gpu", {"cpu": "4", "pods": "10"}, taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
             k8s_node("gone", {"cpu": "4", "pods": "10"}, taints=[{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}])]
    _, out = run(*nodes, k8s_pod("p", requests={"cpu": "1"}))
    assert decisions(out)[-1]["message"].startswith(f"0/2 nodes are available: 1 {DEDICATED}, 1 {UNREACHABLE}.")
