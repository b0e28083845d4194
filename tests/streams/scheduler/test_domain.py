import pytest

from streams.scheduler.domain import SchedulingDomain
from streams.scheduler.framework import REASON_NO_VICTIMS
from streams.scheduler.plugins.noderesourcesfit import NAME as FIT, REASON_INSUFFICIENT
from tests.streams.scheduler.support import (
    GI, T0, decisions, deleted, event, metric, node, pod, quota, run, scheduler_config, tick)

NO_VICTIMS = " preemption: 0/{n} nodes are available: {n} " + REASON_NO_VICTIMS + "."


def outcome(d):
    return d["pod"]["name"], d["result"], d["nodeName"]


def test_one_pod_fits_one_does_not():
    _, out = run(node("n1", cpu=2000), pod("small", cpu=1000), pod("big", cpu=4000))
    got = decisions(out)
    assert [outcome(d) for d in got] == [("small", "Scheduled", "n1"), ("big", "Unschedulable", None)]
    assert got[1]["message"] == "0/1 nodes are available: 1 Insufficient cpu." + NO_VICTIMS.format(n=1)
    assert got[1]["filterResults"] == [{"plugin": FIT, "reason": REASON_INSUFFICIENT.format(resource="cpu"), "count": 1}]


def test_message_counts_and_sorts_reasons_like_kube_scheduler():
    _, out = run(node("a", cpu=500), node("b", cpu=500, memory=1 << 20), node("c", pods=0),
                 node("d", unschedulable=True), pod("p", cpu=1000, memory=1 << 30))
    assert decisions(out)[-1]["message"] == (
        "0/4 nodes are available: 1 Insufficient memory, 1 Too many pods, 1 node(s) were unschedulable, "
        "2 Insufficient cpu. preemption: 0/4 nodes are available: 1 Preemption is not helpful for scheduling, "
        "3 No preemption victims found for incoming pod.")


def test_decision_carries_pod_requests_priority_and_classes():
    _, out = run(node("n1"), pod("be", cpu=None, memory=None, priority=5500, limits={}),
                 pod("ls", cpu=500, memory=GI, priority=9100, labels={"koordinator.sh/qosClass": "LSR"}))
    be, ls = decisions(out)
    assert (be["priority"], be["priorityClass"], be["qosClass"], be["requests"]) == (5500, "koord-batch", "BE", {})
    assert (ls["priority"], ls["priorityClass"], ls["qosClass"]) == (9100, "koord-prod", "LSR")
    assert ls["requests"] == {"cpu": 500, "memory": GI}


def test_no_double_booking_across_pods():
    _, out = run(node("n1", cpu=2000), *[pod(f"p{i}", cpu=1000) for i in range(3)])
    assert [d["result"] for d in decisions(out)] == ["Scheduled", "Scheduled", "Unschedulable"]


def test_least_allocated_spreads_and_ties_break_by_name():
    _, out = run(node("b"), node("a"), pod("p1"), pod("p2"))
    assert [d["nodeName"] for d in decisions(out)] == ["a", "b"]


def test_pending_pod_is_retried_when_a_node_arrives_after_its_backoff():
    _, out = run(pod("p", cpu=1000, ts=T0), node("n1", ts=T0 + 500), tick(T0 + 999), tick(T0 + 1000))
    got = decisions(out)
    assert [(d["result"], d["causation"]["sourceTopic"]) for d in got] == [
        ("Unschedulable", "koord.pods"), ("Scheduled", "koord.ticks")]
    assert got[0]["message"] == "no nodes available to schedule pods."


def test_released_pod_frees_room_for_the_pending_one():
    _, out = run(node("n1", cpu=1000, ts=T0), pod("a", ts=T0), pod("b", ts=T0),
                 pod("a", phase="Succeeded", ts=T0 + 1000))
    assert [(d["pod"]["name"], d["result"]) for d in decisions(out)] == [
        ("a", "Scheduled"), ("b", "Unschedulable"), ("a", "Released"), ("b", "Scheduled")]


def test_backoff_doubles_up_to_ten_seconds_and_retries_only_on_relevant_events():
    domain = SchedulingDomain("default")
    run(node("n1", cpu=1000, ts=T0), pod("a", ts=T0), domain=domain)
    _, out = run(pod("b", ts=T0), domain=domain)
    attempts = []
    for second in range(1, 40):
        now = T0 + second * 1000
        run(node("n1", cpu=1000, ts=now), domain=domain)
        entry = domain.queue.pods["default/b"]
        attempts.append((second, entry.attempts, entry.backoff_until - entry.last_attempt))
    waits = [w for _, _, w in attempts]
    assert sorted(set(waits)) == [2000, 4000, 8000, 10000]
    assert attempts[-1][1] < 40 // 2


def test_a_tick_alone_does_not_retry_a_pod_and_nothing_hot_loops():
    domain = SchedulingDomain("default")
    run(node("n1", cpu=1000, ts=T0), pod("big", cpu=4000, ts=T0), domain=domain)
    for second in range(1, 120):
        _, out = run(tick(T0 + second * 1000), domain=domain)
        assert decisions(out) == []
    assert domain.queue.pods["default/big"].attempts == 1


def test_unschedulable_pods_are_flushed_after_five_minutes():
    domain = SchedulingDomain("default")
    run(node("n1", cpu=1000, ts=T0), pod("big", cpu=4000, ts=T0), domain=domain)
    run(tick(T0 + 299_999), domain=domain)
    assert domain.queue.pods["default/big"].attempts == 1
    run(tick(T0 + 300_000), domain=domain)
    assert domain.queue.pods["default/big"].attempts == 2


def test_pending_pods_are_retried_by_priority_then_arrival():
    _, out = run(pod("low", priority=1, ts=T0), pod("high", priority=100, ts=T0), pod("mid", priority=50, ts=T0),
                 pod("high2", priority=100, ts=T0), node("n1", cpu=2000, ts=T0 + 1000))
    assert [(d["pod"]["name"], d["result"]) for d in decisions(out)[4:]] == [
        ("high", "Scheduled"), ("high2", "Scheduled"), ("mid", "Unschedulable"), ("low", "Unschedulable")]


def test_prebound_pod_is_accounted_not_scheduled():
    _, out = run(node("n1", cpu=1000), pod("x", node_name="n1"), pod("y"))
    assert [(d["result"], d["nodeName"]) for d in decisions(out)] == [("Bound", "n1"), ("Unschedulable", None)]


def test_prebound_pod_passes_its_resource_status_through_and_only_the_annotations_decisions_carry():
    status = '{"numaNodeResources":[{"node":0,"resources":{"cpu":"1","memory":"1Gi"}}]}'
    placed = pod("x", node_name="n1")
    placed.record["metadata"]["annotations"] = {"scheduling.koordinator.sh/resource-status": status,
                                                "koordinator.sh/cpuQOS": '{"enable":true}', "team": "a"}
    _, out = run(node("n1"), placed)
    assert decisions(out)[0]["annotations"] == {"scheduling.koordinator.sh/resource-status": status,
                                                "koordinator.sh/cpuQOS": '{"enable":true}'}


def test_a_pod_the_cluster_bound_to_another_node_moves_there_and_frees_the_chosen_one():
    """Observe mode: koordstream chose n1, the cluster's scheduler bound the pod to n2. n1's aggregate is told
    the pod left (Released), n2 gets it (Bound), and the next pod is placed with n2's room taken, not n1's."""
    _, out = run(node("n1", cpu=2000), node("n2", cpu=2000), pod("a", cpu=1500), pod("a", cpu=1500, node_name="n2"),
                 pod("b", cpu=1500))
    assert [(d["pod"]["name"], d["result"], d["nodeName"], d["reason"]) for d in decisions(out)] == [
        ("a", "Scheduled", "n1", None), ("a", "Released", "n1", "BoundElsewhere"), ("a", "Bound", "n2", None),
        ("b", "Scheduled", "n1", None)]


def test_delete_emits_released():
    _, out = run(node("n1"), pod("a"), deleted("Pod", "default/a"))
    assert decisions(out)[-1]["result"] == "Released" and decisions(out)[-1]["reason"] == "Deleted"


def test_every_pod_event_yields_exactly_one_decision_about_that_pod():
    events = [node("n1", cpu=2000, ts=T0), pod("a", ts=T0), pod("a", ts=T0 + 1), pod("b", cpu=4000, ts=T0 + 2),
              pod("b", cpu=4000, ts=T0 + 3), deleted("Pod", "default/zz", ts=T0 + 4), pod("a", phase="Failed", ts=T0 + 5)]
    domain = SchedulingDomain("default")
    for ev in events:
        _, out = run(ev, domain=domain)
        if ev.kind == "Pod":
            name = ev.key.partition("/")[2]
            assert [d["pod"]["name"] for d in decisions(out)].count(name) == 1


def test_duplicate_source_event_is_applied_once():
    domain = SchedulingDomain("default")
    domain.handle(node("n1"))
    first = pod("p")
    assert len(domain.handle(first)) >= 1
    assert domain.handle(first) == []


def _history():
    return [
        scheduler_config({"profiles": [{"schedulerName": "default-scheduler",
                                        "plugins": {"score": {"enabled": [{"name": "NodeResourcesFitPlus", "weight": 2}]}},
                                        "pluginConfig": [{"name": "NodeResourcesFitPlus", "args": {"resources": {
                                            "cpu": {"type": "LeastAllocated", "weight": 1}}}}]}]}, ts=T0),
        node("n1", cpu=2000, ts=T0), node("n2", cpu=1000, ts=T0), node("n3", cpu=3000, ts=T0),
        metric("n1", T0, {"cpu": 500, "memory": GI}, ts=T0), metric("n3", T0, {"cpu": 2900, "memory": GI}, ts=T0),
        quota("team", {"cpu": 3000, "memory": 8 * GI}, {"cpu": 1000}, ts=T0),
        pod("a", labels={"quota.scheduling.koordinator.sh/name": "team"}, ts=T0 + 10),
        pod("b", cpu=1500, ts=T0 + 20), pod("c", ts=T0 + 30), pod("a", phase="Failed", ts=T0 + 1500),
        pod("d", labels={"quota.scheduling.koordinator.sh/name": "team"}, priority=10, ts=T0 + 1600),
        deleted("Node", "n2", ts=T0 + 1700), pod("e", cpu=2500, ts=T0 + 1800), tick(T0 + 3000),
        node("n4", cpu=4000, ts=T0 + 3100), tick(T0 + 6000), pod("f", ts=T0 + 6100),
        node("n5", cpu=4000, ts=T0 + 6150),
        quota("tight", {"cpu": 1500, "memory": 8 * GI}, ts=T0 + 6160),
        pod("h", labels={"quota.scheduling.koordinator.sh/name": "tight"}, priority=1, ts=T0 + 6200),
        pod("i", labels={"quota.scheduling.koordinator.sh/name": "tight"}, priority=100, ts=T0 + 6300),
        tick(T0 + 9000), tick(T0 + 20000),
    ]


def test_history_covers_preemption_and_quota_statuses():
    _, out = run(*_history())
    assert "Preempted" in [d["result"] for d in decisions(out)]
    assert any(name == "ElasticQuotaStatus" and r["name"] == "team" for name, r in out)


@pytest.mark.parametrize("cut", range(1, 24))
def test_restore_from_entries_gives_the_same_outputs(cut):
    events = _history()
    _, expected = run(*events)
    live = SchedulingDomain("default")
    _, out = run(*events[:cut], domain=live)
    restored = SchedulingDomain.restore("default", live.entries())
    _, rest = run(*events[cut:], domain=restored)
    assert out + rest == expected


def test_entries_from_take_changes_rebuild_the_same_state():
    events = _history()
    live = SchedulingDomain("default")
    table: dict = {}
    for ev in events:
        live.handle(ev)
        for key, value in live.take_changes().items():
            if value is None:
                table.pop(key, None)
            else:
                table[key] = value
    assert table == live.entries()


@pytest.mark.parametrize("cut", range(1, 24))
def test_the_changes_taken_after_every_event_equal_the_entries_at_that_point(cut):
    """The worker persists only ``take_changes``; a queue change missing from it (a pending pod moved by
    an event) made a domain restored mid-stream retry other pods than the one that never stopped."""
    live = SchedulingDomain("default")
    table: dict = {}
    for ev in _history()[:cut]:
        live.handle(ev)
        for key, value in live.take_changes().items():
            if value is None:
                table.pop(key, None)
            else:
                table[key] = value
    assert table == live.entries()


def test_take_changes_reports_removed_entries():
    domain, _ = run(node("n1"), pod("a"))
    domain.take_changes()
    domain.handle(deleted("Pod", "default/a"))
    changes = domain.take_changes()
    assert changes["pod/default/a"] is None


def test_entries_are_json():
    import json

    domain, _ = run(*_history())
    assert json.loads(json.dumps(domain.entries())) == domain.entries()


def test_records_decoded_from_the_wire_give_the_same_outputs():
    """The inbox carries Avro single-object encoded records; decoding fills defaults, which the core must read."""
    import dataclasses

    from streams.schemas import codec

    events = _history()
    wire = [dataclasses.replace(ev, record=codec.decode(codec.encode(ev.kind, ev.record))[1])
            if ev.record is not None else ev for ev in events]
    assert run(*wire)[1] == run(*events)[1]


def test_plugin_calls_are_counted_and_timed_per_stage_and_result():
    domain, _ = run(node("n1", cpu=1000), pod("a"), pod("b"))
    calls = domain.frameworks["default-scheduler"].stats.calls
    assert calls[("NodeResourcesFit", "filter", "Success")][0] == 1
    assert calls[("NodeResourcesFit", "filter", "Unschedulable")][0] == 1
    assert calls[("ElasticQuota", "postFilter", "Unschedulable")][0] == 1
    assert all(seconds >= 0 for _, seconds in calls.values())


def _quiet_then_quota_change():
    """A quota's status is synced (T0 + 2000); a quiet Tick past the sync interval changes nothing (T0 + 4000);
    then a quota pod changes the status within an interval of that Tick but not of the last sync."""
    team = {"quota.scheduling.koordinator.sh/name": "team"}
    return [node("n1", cpu=8000, ts=T0), quota("team", {"cpu": 6000, "memory": 8 * GI}, {"cpu": 1000}, ts=T0),
            pod("a", labels=team, ts=T0 + 10), tick(T0 + 2000), tick(T0 + 4000), pod("b", labels=team, ts=T0 + 4500),
            tick(T0 + 6000)]


@pytest.mark.parametrize("cut", range(1, 7))
def test_a_restored_domain_syncs_quota_statuses_when_the_uninterrupted_one_does(cut):
    """The sync time moves only when a status was published: a domain restored before the quiet Tick (its
    in-memory status version unknown) published the change of pod b at the same event as one that never
    stopped, not at the next sync after it."""
    events = _quiet_then_quota_change()
    _, expected = run(*events)
    live = SchedulingDomain("default")
    _, out = run(*events[:cut], domain=live)
    _, rest = run(*events[cut:], domain=SchedulingDomain.restore("default", live.entries()))
    assert out + rest == expected
    assert [r["used"] for name, r in expected if name == "ElasticQuotaStatus"][-1]["cpu"] == 2000


def test_a_node_usage_is_kept_as_its_usage_fields_and_a_deleted_one_forgets_them():
    """The node aggregate's NodeUsage replaces the NodeMetric: the domain keeps (and writes to its table) only
    what load-aware scheduling and the descheduler read; one saying the NodeMetric was deleted removes it."""
    domain = SchedulingDomain("default")
    sent = metric("n1", T0, {"cpu": 500, "memory": GI}, pods=[{"namespace": "ns", "name": "a", "uid": None,
                                                              "usage": {"cpu": 100}, "priority": "koord-prod"}])
    domain.handle(sent)
    assert domain.take_changes()["metric/n1"] == {
        "hasNodeMetric": True, "reportIntervalSeconds": 60, "updateTime": T0, "nodeUsage": {"cpu": 500, "memory": GI},
        "systemUsage": {}, "aggregatedNodeUsages": [],
        "podsMetric": [{"namespace": "ns", "name": "a", "usage": {"cpu": 100}, "priority": "koord-prod"}]}
    domain.handle(event("NodeUsage", "n1", {**sent.record, "deleted": True}))
    assert domain.take_changes()["metric/n1"] is None and "n1" not in domain.cluster.metrics
