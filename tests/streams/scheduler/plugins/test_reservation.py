"""Reservation: Koordinator's ``TestExactMatchReservation`` (RS-1..4) on the matching rules, and the v1.6
article's reservation features end to end through the domain (reserve pod, owners first, exact match,
ignored, affinity by name, taints, pod-count limit, allocate-once, TTL in event time)."""

import json

import pytest

from streams.scheduler.plugins.reservation.objects import exact_match, parse
from streams.scheduler.plugins.reservation.plugin import REASON_AFFINITY
from tests.streams.scheduler.support import decisions, node, pod, pod_info, reservation, run, tick

R = "scheduling.koordinator.sh/"
GI = 1 << 30


@pytest.mark.parametrize("names, pod_requests, reserved, expected", [
    pytest.param(["cpu"], {"cpu": 1000}, {"cpu": 1000}, True, id="RS-1"),
    pytest.param(["cpu"], {"cpu": 1000, "memory": GI}, {"cpu": 1000, "memory": 2 * GI}, True, id="RS-2"),
    pytest.param(["cpu", "memory"], {"cpu": 1000, "memory": GI}, {"cpu": 1000, "memory": 2 * GI}, False, id="RS-3"),
    pytest.param(["cpu", "memory"], {"cpu": 1000}, {"cpu": 1000}, True, id="RS-4"),
])
def test_exact_match(names, pod_requests, reserved, expected):
    spec = json.dumps({"resourceNames": names})
    info = parse("r", reservation("r", reserved["cpu"], extra_requests={k: v for k, v in reserved.items()
                                                                      if k != "cpu"}).record)
    the_pod = pod_info(pod("p", cpu=pod_requests["cpu"], memory=pod_requests.get("memory"),
                           annotations={R + "exact-match-reservation": spec}))
    assert exact_match(the_pod, info) is expected


def statuses(out):
    return {json.loads(r["manifest"])["metadata"]["name"]: json.loads(r["manifest"])["status"]
            for name, r in out if name == "Reservation"}


def placed(out, name):
    return [d for d in decisions(out) if d["pod"]["name"] == name][-1]


def owner(name, cpu=2000, labels=None, annotations=None, ts=2000):
    return pod(name, cpu=cpu, memory=None, labels={"app": "web", **(labels or {})}, annotations=annotations, ts=ts)


WEB = [{"labelSelector": {"matchLabels": {"app": "web"}}}]


def cluster():
    return [node("n1", cpu=4000), node("n2", cpu=4000)]


def test_a_reservation_is_placed_like_a_pod_and_its_owner_lands_on_it_first():
    domain, out = run(*cluster(), reservation("r1", 3000, owners=WEB, node_name="n2"))
    assert statuses(out)["r1"]["phase"] == "Available" and statuses(out)["r1"]["nodeName"] == "n2"
    assert decisions(out) == []
    _, out = run(owner("web-0"), domain=domain)
    decision = placed(out, "web-0")
    assert decision["nodeName"] == "n2"
    assert json.loads(decision["annotations"][R + "reservation-allocated"]) == {"name": "r1", "uid": "uid-r1"}
    status = statuses(out)["r1"]
    assert status["phase"] == "Succeeded" and status["currentOwners"] == [{"namespace": "default", "name": "web-0"}]
    columns = domain.cluster.columns
    assert int(columns.get(columns.requested, "cpu")[columns.row["n2"]]) == 2000


def test_reserved_resources_are_not_given_to_other_pods():
    domain, _ = run(*cluster(), reservation("r1", 3000, owners=WEB, node_name="n2"))
    _, out = run(pod("other", cpu=2000, memory=None, ts=2000), domain=domain)
    assert placed(out, "other")["nodeName"] == "n1"
    _, out = run(pod("other-2", cpu=2000, memory=None, ts=2100), pod("other-3", cpu=2000, memory=None, ts=2200),
                 domain=domain)
    assert placed(out, "other-3")["result"] == "Unschedulable"


def test_an_exact_match_owner_skips_a_reservation_of_other_amounts():
    spec = json.dumps({"resourceNames": ["cpu"]})
    domain, _ = run(*cluster(), reservation("r1", 3000, owners=WEB, node_name="n2"))
    _, out = run(owner("exact", annotations={R + "exact-match-reservation": spec}), domain=domain)
    assert placed(out, "exact")["nodeName"] == "n1"
    assert R + "reservation-allocated" not in placed(out, "exact")["annotations"]


def test_a_pod_ignoring_reservations_may_use_their_idle_resources():
    domain, _ = run(node("n1", cpu=4000), reservation("r1", 3000, owners=WEB, node_name="n1"))
    _, out = run(pod("plain", cpu=2000, memory=None, ts=2000), domain=domain)
    assert placed(out, "plain")["result"] == "Unschedulable"
    _, out = run(pod("filler", cpu=2000, memory=None, labels={R + "reservation-ignored": "true"}, ts=3000),
                 domain=domain)
    assert placed(out, "filler")["nodeName"] == "n1"


def test_reservation_affinity_by_name_pins_the_pod_to_that_reservation():
    affinity = {R + "reservation-affinity": json.dumps({"name": "r2"})}
    domain, _ = run(*cluster(), reservation("r1", 3000, node_name="n1"), reservation("r2", 3000, node_name="n2"))
    _, out = run(pod("named", cpu=1000, memory=None, annotations=affinity, ts=2000), domain=domain)
    assert placed(out, "named")["nodeName"] == "n2"
    _, out = run(pod("missing", cpu=1000, memory=None, ts=2100,
                     annotations={R + "reservation-affinity": json.dumps({"name": "nope"})}), domain=domain)
    assert placed(out, "missing")["result"] == "Unschedulable"
    assert f"2 {REASON_AFFINITY}" in placed(out, "missing")["message"]


def test_reservation_taints_admit_only_pods_that_tolerate_them():
    taint = {"key": "test-taint-key", "value": "test-taint-value", "effect": "NoSchedule"}
    domain, _ = run(node("n1", cpu=4000), reservation("tainted", 3000, node_name="n1", taints=[taint]))
    _, out = run(pod("plain", cpu=2000, memory=None, ts=2000), domain=domain)
    assert placed(out, "plain")["result"] == "Unschedulable"
    tolerating = {R + "reservation-affinity": json.dumps({"tolerations": [{**taint, "operator": "Equal"}]})}
    _, out = run(pod("tolerating", cpu=2000, memory=None, annotations=tolerating, ts=3000), domain=domain)
    assert placed(out, "tolerating")["nodeName"] == "n1"


def test_a_restricted_reservation_limits_its_pods():
    domain, out = run(node("n1", cpu=8000), reservation("limited", 3000, owners=WEB, node_name="n1",
                                                       allocateOnce=False, allocatePolicy="Restricted",
                                                       extra_requests={"pods": 1}))
    assert statuses(out)["limited"]["allocatable"] == {"cpu": 3000, "pods": 1}
    _, out = run(owner("first", cpu=1000), domain=domain)
    assert R + "reservation-allocated" in placed(out, "first")["annotations"]
    assert statuses(out)["limited"]["phase"] == "Available"
    _, out = run(owner("second", cpu=1000, ts=3000), domain=domain)
    assert R + "reservation-allocated" not in placed(out, "second")["annotations"]


def test_a_reservation_expires_in_event_time_and_gives_its_node_back():
    domain, _ = run(node("n1", cpu=4000), reservation("short", 3000, node_name="n1", ttl="10s", ts=1000))
    _, out = run(tick(11_001), domain=domain)
    status = statuses(out)["short"]
    assert (status["phase"], status["conditions"][0]["reason"]) == ("Failed", "Expired")
    columns = domain.cluster.columns
    assert int(columns.get(columns.requested, "cpu")[columns.row["n1"]]) == 0


def test_the_status_written_back_changes_nothing():
    domain, out = run(*cluster(), reservation("r1", 3000, owners=WEB, node_name="n2"))
    [(_, echo)] = [(n, r) for n, r in out if n == "Reservation"]
    from tests.streams.scheduler.support import event
    _, again = run(event("Reservation", "r1", echo, ts=1500), domain=domain)
    assert again == []
