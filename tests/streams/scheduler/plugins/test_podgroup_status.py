"""PodGroup status: Koordinator's PodGroup controller vectors (``Test_Run``, ``TestFillGroupStatusOccupied`` in
``coscheduling/controller/podgroup_test.go``) on the pure transition, and the status the scheduling domain
writes back for a gang it places.

Not ported: "Group should not enqueue, created too long" (the controller's 48 h garbage-collection skip reads
the clock). In the Go cases the pods are bound as far as the group's status goes (``makePG`` sets
``scheduled: minMember``), so ``bound`` is the number of pods here.
"""

import json

import pytest

from streams.objects.podinfo import from_record as pod_info
from streams.scheduler.plugins.coscheduling.status import Members, members_of, pod_group_status, rfc3339, step
from streams.schemas import codec
from tests.streams.scheduler.support import decisions, node, pod, pod_group, run, tick

PG = "pod-group.scheduling.sigs.k8s.io"
PREVIOUS = {"occupiedBy": "test", "scheduled": 2, "scheduleStartTime": "2026-11-29T00:00:00Z"}


def members(names, phase, group="pg", owners=None):
    manifest = {"metadata": {"ownerReferences": [{"name": name} for name in owners or ()]}}
    return [pod_info(f"default/{name}", pod(name, phase=phase, labels={PG: group}, manifest=manifest).record)
            for name in names]


def counted(pods, bound):
    """The controller's view of ``pods``: a member that ended is counted by phase (the domain forgets it)."""
    ended = {}
    for pod_ in pods:
        if pod_.phase in ("Succeeded", "Failed"):
            ended[pod_.phase] = ended.get(pod_.phase, 0) + 1
    live = [pod_ for pod_ in pods if pod_.phase not in ("Succeeded", "Failed")]
    return members_of(live, bound - sum(ended.values()), ended)


@pytest.mark.parametrize("min_member, names, phase, previous, wanted", [
    pytest.param(2, ["pod1", "pod2"], "Running", "Scheduled", "Running", id="Group running"),
    pytest.param(2, ["pod11", "pod21"], "Running", "Scheduled", "Running", id="Group running, more than min member"),
    pytest.param(2, ["pod1", "pod2"], "Failed", "Scheduled", "Failed", id="Group failed"),
    pytest.param(2, ["pod1", "pod2"], "Succeeded", "Scheduled", "Finished", id="Group finished"),
    pytest.param(2, ["pod1", "pod2"], "Pending", "Scheduling", "Scheduled",
                 id="Group status convert from scheduling to scheduled"),
    pytest.param(2, ["pod1", "pod2"], "Succeeded", "Scheduling", "Finished",
                 id="Group status convert from scheduling to succeed"),
    pytest.param(2, ["pod1", "pod2"], "Succeeded", "Pending", "Finished",
                 id="Group status convert from pending to prescheduling"),
    pytest.param(3, ["pod91", "pod92"], "Pending", "Pending", "Pending", id="Group min member more than Pod number"),
    pytest.param(2, [], "Pending", "Running", "Pending", id="Group status convert from running to pending"),
])
def test_run(min_member, names, phase, previous, wanted):
    pods = members(names, phase)
    status = pod_group_status({**PREVIOUS, "phase": previous}, min_member, counted(pods, len(pods)), 5_000)
    assert status["phase"] == wanted
    if pods:
        assert status["scheduled"] == len(pods)
        assert status.get(phase.lower(), 0) == (len(pods) if phase != "Pending" else 0)


@pytest.mark.parametrize("owners, wanted", [
    pytest.param(["new-occupied"], "default/new-occupied",
                 id="fill the Occupied of PodGroup with a single ownerReference"),
    pytest.param(["new-occupied-2", "new-occupied-1"], "default/new-occupied-1,default/new-occupied-2",
                 id="fill the Occupied of PodGroup with multi ownerReferences"),
])
def test_fill_group_status_occupied(owners, wanted):
    pods = members(["pod1", "pod2"], "Pending", owners=owners)
    status = pod_group_status({**PREVIOUS, "phase": "Pending"}, 2, counted(pods, 0), 5_000)
    assert status["occupiedBy"] == wanted
    assert status["phase"] == "Scheduling"


def test_a_new_group_steps_through_pending_and_prescheduling_and_starts_scheduling_at_the_event_time():
    pods = members(["a", "b"], "Pending")
    assert step({}, 2, counted(pods, 0), 5_000) == {"phase": "Pending"}
    assert step({"phase": "Pending"}, 2, counted(pods, 0), 5_000) == {"phase": "PreScheduling"}
    started = pod_group_status({}, 2, counted(pods, 1), 5_000)
    assert started == {"phase": "Scheduling", "scheduled": 1, "scheduleStartTime": rfc3339(5_000)}
    assert rfc3339(5_000) == "1970-01-01T00:00:05Z"
    later = pod_group_status(started, 2, counted(pods, 1), 9_000)
    assert later["scheduleStartTime"] == rfc3339(5_000)


def test_zero_counts_are_omitted_and_a_final_phase_is_kept():
    pods = members(["a", "b"], "Pending")
    assert pod_group_status({}, 2, counted(pods, 2), 5_000) == {"phase": "Scheduled", "scheduled": 2}
    finished = {"phase": "Finished", "succeeded": 2, "scheduled": 2}
    assert pod_group_status(finished, 2, Members(1, running=1, bound=1), 5_000) == finished


def test_a_podgroup_with_a_member_short_stays_pending():
    pods = members(["a"], "Pending")
    assert pod_group_status({}, 2, counted(pods, 0), 5_000) == {"phase": "Pending"}


def group_pod(name, ts=1000, node_name=None, phase=None):
    return pod(name, cpu=1000, labels={PG: "train"}, ts=ts, node_name=node_name, phase=phase)


def pod_groups(outputs):
    return [json.loads(record["manifest"])["status"] for schema, record in outputs if schema == "PodGroup"]


def test_the_domain_writes_back_the_status_of_a_gang_it_places_once_per_change():
    """A PodGroup of two: Pending with one member, then both placed at once (Scheduled, scheduled 2); the
    records encode as PodGroup and go out keyed by the group; read back (the echo on the podgroups topic) and
    again on an unrelated event, nothing more is written; the members running make it Running."""
    domain, out = run(node("n1", cpu=8000), pod_group("train", 2, ts=1000), group_pod("w0", ts=2000))
    assert pod_groups(out) == [{"phase": "Pending"}]
    domain, out = run(group_pod("w1", ts=3000), domain=domain)
    assert [d["result"] for d in decisions(out)] == ["Scheduled", "Scheduled"]
    assert pod_groups(out) == [{"phase": "Scheduled", "scheduled": 2}]
    ((_, record),) = [item for item in out if item[0] == "PodGroup"]
    codec.encode("PodGroup", record)
    echo = pod_group("train", 2, ts=3500)
    echo.record["manifest"] = record["manifest"]
    domain, out = run(echo, node("n2", ts=4000), domain=domain)
    assert pod_groups(out) == []
    domain, out = run(group_pod("w0", ts=5000, node_name="n1", phase="Running"),
                      group_pod("w1", ts=5000, node_name="n1", phase="Running"), domain=domain)
    assert pod_groups(out) == [{"phase": "Scheduled", "scheduled": 2, "running": 1},
                               {"phase": "Running", "scheduled": 2, "running": 2}]


def test_the_same_inbox_gives_the_same_statuses():
    """Three members for a minimum of three: Pending until the third arrives, then all placed at once."""
    events = [node("n1", cpu=8000), pod_group("train", 3, ts=1000), group_pod("w0", ts=2000),
              group_pod("w1", ts=3000), group_pod("w2", ts=4000)]
    first = pod_groups(run(*events)[1])
    second = pod_groups(run(*events)[1])
    assert first == second == [{"phase": "Pending"}, {"phase": "Scheduled", "scheduled": 3}]


def test_a_domain_without_members_of_the_gang_writes_nothing_and_the_one_that_lost_them_writes_pending():
    """Every domain gets every PodGroup; only the one holding its members speaks for it. Members gone: the
    controller's "running to pending"."""
    from tests.streams.scheduler.support import deleted

    domain, out = run(node("n1", cpu=8000), pod_group("train", 1, ts=1000), tick(2000))
    assert pod_groups(out) == []
    domain, out = run(group_pod("w0", ts=3000), domain=domain)
    assert pod_groups(out) == [{"phase": "Scheduled", "scheduled": 1}]
    domain, out = run(deleted("Pod", "default/w0", ts=4000), domain=domain)
    assert pod_groups(out) == [{"phase": "Pending", "scheduled": 1}], "the controller sets only the phase then"


def test_a_domain_restored_after_the_echo_writes_what_the_live_one_writes():
    """The status last written is kept by the plugin only; once it came back on the podgroups topic (the
    object's manifest shows it), a domain restored from its entries continues exactly as the live one."""
    from streams.scheduler.domain import SchedulingDomain

    live, out = run(node("n1", cpu=8000), pod_group("train", 2, ts=1000), group_pod("w0", ts=2000),
                    group_pod("w1", ts=3000))
    (record,) = [r for schema, r in out if schema == "PodGroup" and "scheduled" in r["manifest"]]
    echo = pod_group("train", 2, ts=3500)
    echo.record["manifest"] = record["manifest"]
    live, _ = run(echo, domain=live)
    restored = SchedulingDomain.restore("default", live.entries())
    later = [group_pod("w0", ts=5000, node_name="n1", phase="Succeeded"),
             group_pod("w1", ts=5000, node_name="n1", phase="Succeeded")]
    _, from_live = run(*later, domain=live)
    _, from_restored = run(*later, domain=restored)
    assert pod_groups(from_live) == pod_groups(from_restored) == [
        {"phase": "Scheduled", "scheduled": 2, "succeeded": 1},
        {"phase": "Finished", "scheduled": 2, "succeeded": 2}]
