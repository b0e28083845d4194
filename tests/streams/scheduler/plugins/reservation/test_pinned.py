"""A Reservation pinned with ``template.spec.nodeName``: its reserve pod goes to that node only (NodeName) and
passes every other Filter there, as Koordinator's reserve pod does; one that does not fit, or names a node that
does not exist, stays Pending and holds nothing."""

import json

from streams.scheduler.plugins.nodename import REASON_NODE_NAME
from streams.scheduler.plugins.noderesourcesfit import REASON_INSUFFICIENT
from tests.streams.scheduler.support import event, node, reservation, run

CLUSTER = [node("n1", cpu=4000), node("n2", cpu=4000)]


def status(out, name):
    return [json.loads(r["manifest"])["status"] for kind, r in out
            if kind == "Reservation" and json.loads(r["manifest"])["metadata"]["name"] == name][-1]


def requested_cpu(domain, node_name):
    columns = domain.cluster.columns
    return int(columns.get(columns.requested, "cpu")[columns.row[node_name]])


def test_a_pinned_reservation_that_fits_is_available_on_its_node():
    domain, out = run(*CLUSTER, reservation("fits", 3000, node_name="n2"))
    assert (status(out, "fits")["phase"], status(out, "fits")["nodeName"]) == ("Available", "n2")
    assert (requested_cpu(domain, "n1"), requested_cpu(domain, "n2")) == (0, 3000)


def test_a_pinned_reservation_too_big_for_its_node_stays_pending_with_the_filter_reason():
    domain, out = run(*CLUSTER, reservation("huge", 100_000_000_000, node_name="n1"))
    huge = status(out, "huge")
    assert (huge["phase"], huge["conditions"][0]["type"], huge["conditions"][0]["reason"]) == \
        ("Pending", "Scheduled", "Unschedulable")
    assert f"1 {REASON_INSUFFICIENT.format(resource='cpu')}" in huge["conditions"][0]["message"]
    assert (requested_cpu(domain, "n1"), requested_cpu(domain, "n2")) == (0, 0)


def test_a_reservation_pinned_to_an_unknown_node_stays_pending_until_the_node_comes():
    domain, out = run(*CLUSTER, reservation("lost", 1000, node_name="ghost"))
    lost = status(out, "lost")
    assert (lost["phase"], lost["nodeName"]) == ("Pending", None)
    assert f"2 {REASON_NODE_NAME}" in lost["conditions"][0]["message"]
    _, out = run(node("ghost", cpu=4000, ts=2000), domain=domain)
    assert (status(out, "lost")["phase"], status(out, "lost")["nodeName"]) == ("Available", "ghost")


def test_the_pending_status_written_back_changes_nothing():
    domain, out = run(*CLUSTER, reservation("huge", 100_000_000_000, node_name="n1"))
    [echo] = [r for kind, r in out if kind == "Reservation"]
    _, again = run(event("Reservation", "huge", echo, ts=1500), domain=domain)
    assert again == []
