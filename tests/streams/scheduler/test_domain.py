import pytest

from streams.scheduler.domain import SchedulingDomain
from tests.streams.scheduler.support import deleted, node, pod


def run(*events):
    domain = SchedulingDomain("default")
    out = []
    for ev in events:
        out.extend(domain.handle(ev))
    return domain, out


def test_one_pod_fits_one_does_not():
    _, out = run(node("n1", cpu=2000), pod("small", cpu=1000), pod("big", cpu=4000))
    assert [(d["pod"]["name"], d["result"], d["nodeName"]) for d in out] == [
        ("small", "Scheduled", "n1"), ("big", "Unschedulable", None)]
    assert out[1]["message"] == "0/1 nodes are available: 1 Insufficient cpu."
    assert out[1]["filterResults"] == [{"plugin": "NodeResourcesFit", "reason": "Insufficient cpu", "count": 1}]


def test_message_counts_and_sorts_reasons_like_kube_scheduler():
    _, out = run(node("a", cpu=500), node("b", cpu=500, memory=1 << 20), node("c", pods=0),
                 node("d", unschedulable=True), pod("p", cpu=1000, memory=1 << 30))
    assert out[-1]["message"] == ("0/4 nodes are available: 1 Insufficient memory, 1 Too many pods, "
                                  "1 node(s) were unschedulable, 2 Insufficient cpu.")


def test_no_double_booking_across_pods():
    _, out = run(node("n1", cpu=2000), *[pod(f"p{i}", cpu=1000) for i in range(3)])
    assert [d["result"] for d in out] == ["Scheduled", "Scheduled", "Unschedulable"]


def test_least_allocated_spreads_and_ties_break_by_name():
    _, out = run(node("b"), node("a"), pod("p1"), pod("p2"))
    assert [d["nodeName"] for d in out] == ["a", "b"]


def test_pending_pod_is_retried_when_a_node_arrives():
    _, out = run(pod("p", cpu=1000), node("n1"))
    assert [(d["result"], d["causation"]["sourceTopic"]) for d in out] == [
        ("Unschedulable", "koord.pods"), ("Scheduled", "koord.nodes")]
    assert out[0]["message"] == "no nodes available to schedule pods"


def test_released_pod_frees_room_for_the_pending_one():
    _, out = run(node("n1", cpu=1000), pod("a"), pod("b"), pod("a", phase="Succeeded"))
    assert [(d["pod"]["name"], d["result"]) for d in out] == [
        ("a", "Scheduled"), ("b", "Unschedulable"), ("a", "Released"), ("b", "Scheduled")]


def test_prebound_pod_is_accounted_not_scheduled():
    _, out = run(node("n1", cpu=1000), pod("x", node_name="n1"), pod("y"))
    assert [(d["result"], d["nodeName"]) for d in out] == [("Bound", "n1"), ("Unschedulable", None)]


def test_delete_emits_released():
    _, out = run(node("n1"), pod("a"), deleted("Pod", "default/a"))
    assert out[-1]["result"] == "Released" and out[-1]["reason"] == "Deleted"


def test_duplicate_source_event_is_applied_once():
    domain = SchedulingDomain("default")
    domain.handle(node("n1"))
    first = pod("p")
    assert len(domain.handle(first)) == 1
    assert domain.handle(first) == []


@pytest.mark.parametrize("cut", [1, 2, 3, 4])
def test_restore_from_entries_gives_the_same_decisions(cut):
    events = [node("n1", cpu=2000), node("n2", cpu=1000), pod("a"), pod("b", cpu=1500), pod("c"),
              pod("a", phase="Failed"), pod("d")]
    _, expected = run(*events)
    live = SchedulingDomain("default")
    out = [d for ev in events[:cut] for d in live.handle(ev)]
    restored = SchedulingDomain.restore("default", live.entries())
    out += [d for ev in events[cut:] for d in restored.handle(ev)]
    assert out == expected


def test_take_changes_reports_removed_entries():
    domain, _ = run(node("n1"), pod("a"))
    domain.take_changes()
    domain.handle(deleted("Pod", "default/a"))
    changes = domain.take_changes()
    assert changes["pod/default/a"] is None
