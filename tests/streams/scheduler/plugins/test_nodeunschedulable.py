"""NodeUnschedulable: cordoned nodes, unless the pod tolerates the unschedulable taint."""

from tests.streams.scheduler.support import decisions, node, pod, run


def test_unschedulable_node_unless_tolerated():
    cordoned = node("n1", unschedulable=True)
    _, out = run(cordoned, pod("p"))
    assert decisions(out)[-1]["message"].startswith("0/1 nodes are available: 1 node(s) were unschedulable.")
    toleration = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]
    _, out = run(cordoned, pod("q", tolerations=toleration))
    assert decisions(out)[-1]["result"] == "Scheduled"
