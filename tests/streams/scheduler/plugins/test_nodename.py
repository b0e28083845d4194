"""NodeName: a named node only."""

import numpy as np

from streams.scheduler.framework import CycleState
from tests.streams.scheduler.support import k8s_pod, node, plugin_of, pod_info, run


def test_node_name_filter():
    domain, _ = run(node("n1"), node("n2"))
    plugin = plugin_of(domain, "NodeName")
    info = pod_info(k8s_pod("p", node_name="n2"))
    result = plugin.filter(CycleState(), info, np.ones(2, dtype=bool))
    assert list(result.passed) == [False, True]
    assert result.reasons[0][0] == "node(s) didn't match the requested node name"
