"""One cycle: which reasons a node reports, and the pod count."""

import pytest

from streams.scheduler.cycle import fit_message
from streams.scheduler.framework import REASON_NOT_ELIGIBLE, sentence
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


@pytest.mark.parametrize("reasons, prefilter, postfilter, message", [
    pytest.param({"Insufficient cpu": 3}, "", "", "0/3 nodes are available: 3 Insufficient cpu.", id="filters"),
    pytest.param({"Insufficient cpu": 2, "Too many pods": 1}, "", "preemption: 0/3 nodes are available: 3 No "
                 "preemption victims found for incoming pod.",
                 "0/3 nodes are available: 1 Too many pods, 2 Insufficient cpu. preemption: 0/3 nodes are available: "
                 "3 No preemption victims found for incoming pod.", id="postfilter-fit-error"),
    pytest.param({}, "gang is not ready.", "", "0/3 nodes are available: gang is not ready.",
                 id="prefilter-with-period"),
    pytest.param({"node(s) had a reason.": 3}, "", "preemption: " + REASON_NOT_ELIGIBLE,
                 "0/3 nodes are available: 3 node(s) had a reason. preemption: not eligible due to "
                 "preemptionPolicy=Never.", id="reason-and-postfilter-with-periods"),
    pytest.param({}, "", "", "0/3 nodes are available.", id="nothing-to-say"),
])
def test_fit_message_ends_with_exactly_one_period(reasons, prefilter, postfilter, message):
    assert fit_message(3, reasons, prefilter, postfilter) == message


@pytest.mark.parametrize("text, shown", [
    pytest.param("rejected due to timeout after waiting 5s at plugin Pairs",
                 "rejected due to timeout after waiting 5s at plugin Pairs.", id="adds-one"),
    pytest.param("gang is not ready..", "gang is not ready.", id="keeps-one"),
    pytest.param("", "", id="empty"),
])
def test_sentence(text, shown):
    assert sentence(text) == shown
