"""One cycle: which reasons a node reports, and the pod count."""

from streams.scheduler.plugins import noderesourcesfit, nodeunschedulable
from tests.streams.scheduler.support import decisions, node, pod, run


def test_too_many_pods():
    _, out = run(node("n1", pods=1), pod("a"), pod("b"))
    assert decisions(out)[-1]["message"].startswith(
        f"0/1 nodes are available: 1 {noderesourcesfit.REASON_TOO_MANY_PODS}.")


def test_each_node_reports_the_reasons_of_the_first_filter_it_fails():
    """A cordoned node short of cpu only counts as unschedulable (NodeUnschedulable runs first)."""
    _, out = run(node("n1", cpu=500, unschedulable=True), node("n2", cpu=500), pod("p", cpu=1000))
    assert decisions(out)[-1]["filterResults"] == [
        {"plugin": noderesourcesfit.NAME, "reason": noderesourcesfit.REASON_INSUFFICIENT.format(resource="cpu"),
         "count": 1},
        {"plugin": nodeunschedulable.NAME, "reason": nodeunschedulable.REASON_UNSCHEDULABLE, "count": 1}]
