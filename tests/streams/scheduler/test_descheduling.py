"""The scheduling domain's descheduling stage: a DeschedulerConfiguration, LowNodeLoad rounds in event time,
PodMigrationJobs with their status, Eviction decisions — once each, across duplicates and restores."""

import json

from streams.scheduler.domain import SchedulingDomain
from tests.streams.scheduler.support import (
    T0, decisions, deleted, descheduler_config, event, metric, node, pod, run, tick)

LOW_NODE_LOAD = {"lowThresholds": {"cpu": 30, "pods": 30}, "highThresholds": {"cpu": 50, "pods": 50},
                 "anomalyCondition": {"consecutiveAbnormalities": 1, "consecutiveNormalities": 1}}


def config(abnormalities=1, mode="EvictDirectly", **extra) -> dict:
    args = {**LOW_NODE_LOAD, "anomalyCondition": {"consecutiveAbnormalities": abnormalities,
                                                  "consecutiveNormalities": 1}}
    return {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerConfiguration",
            "deschedulingInterval": "10s", **extra,
            "profiles": [{"name": "koord-descheduler",
                          "plugins": {"balance": {"enabled": [{"name": "LowNodeLoad"}]}},
                          "pluginConfig": [{"name": "LowNodeLoad", "args": args},
                                           {"name": "MigrationController",
                                            "args": {"defaultJobMode": mode, "maxMigratingPerNode": 10}}]}]}


def owned(name: str, node_name: str, ts: int, workload: str = "web"):
    manifest = {"metadata": {"ownerReferences": [{"kind": "ReplicaSet", "name": workload, "uid": f"rs-{workload}",
                                                  "controller": True}]}}
    return pod(name, cpu=400, memory=0, node_name=node_name, manifest=manifest, ts=ts)


def cluster(ts=T0):
    """n1 runs five 400m pods of one ReplicaSet: cpu 2000m is at its 50 % threshold, but 5 pods are over
    int(0.5 * 9) = 4; n2 runs one pod of another; the metrics report each pod at its request."""
    events = [node("n1", cpu=4000, pods=9, ts=ts), node("n2", cpu=4000, pods=10, ts=ts)]
    events += [owned(f"p{i}", "n1", ts) for i in range(1, 6)] + [owned("p9", "n2", ts, workload="api")]
    usage = lambda names: [{"namespace": "default", "name": n, "uid": f"uid-{n}", "usage": {"cpu": 400}}
                           for n in names]
    events += [metric("n1", ts, {"cpu": 2000}, usage([f"p{i}" for i in range(1, 6)]), ts=ts),
               metric("n2", ts, {"cpu": 400}, usage(["p9"]), ts=ts)]
    return events


def outputs(out, schema):
    return [record for name, record in out if name == schema]


def test_a_hot_node_gets_migration_jobs_and_evictions_in_event_time():
    domain, out = run(*cluster(), descheduler_config(config(), ts=T0 + 1000))
    evictions = outputs(out, "Eviction")
    assert [e["pod"]["name"] for e in evictions] == ["p1"]
    assert evictions[0]["nodeName"] == "n1"
    assert "node is overutilized, node pods usage(55.56%)>threshold(50.00%)" in evictions[0]["message"]
    jobs = outputs(out, "PodMigrationJob")
    assert {j["phase"] for j in jobs} == {"Succeeded"}
    assert json.loads(jobs[0]["manifest"])["status"]["message"] == 'Pod "default/p1" has been evicted'


def test_the_anomaly_condition_waits_for_consecutive_rounds():
    domain, out = run(*cluster(), descheduler_config(config(abnormalities=2), ts=T0 + 1000))
    assert outputs(out, "Eviction") == []
    _, out = run(tick(T0 + 11_000), domain=domain)
    assert outputs(out, "Eviction") == []
    _, out = run(tick(T0 + 21_000), domain=domain)
    assert [e["pod"]["name"] for e in outputs(out, "Eviction")] == ["p1"]


def test_reservation_first_reserves_elsewhere_then_evicts_then_the_replacement_binds_the_reservation():
    domain, out = run(*cluster(), descheduler_config(config(mode="ReservationFirst"), ts=T0 + 1000))
    assert outputs(out, "Eviction") == []
    [job] = outputs(out, "PodMigrationJob")
    assert job["phase"] == "Running"
    [created] = outputs(out, "Reservation")
    name = created["metadata"]["name"]
    spec = json.loads(created["manifest"])["spec"]
    assert spec["owners"] == [{"controller": {"kind": "ReplicaSet", "name": "web", "uid": "rs-web",
                                              "namespace": "default"}}]
    _, out = run(event("Reservation", name, created, ts=T0 + 2000), domain=domain)
    [eviction] = outputs(out, "Eviction")
    assert (eviction["pod"]["name"], eviction["nodeName"]) == ("p1", "n1")
    assert json.loads(outputs(out, "PodMigrationJob")[0]["manifest"])["status"]["reason"] == "WaitForPodBindReservation"
    ended = pod("p1", cpu=400, memory=0, node_name="n1", phase="Failed", ts=T0 + 3000)
    _, out = run(ended, owned("p1-new", None, T0 + 3100), domain=domain)
    replacement = [d for d in decisions(out) if d["pod"]["name"] == "p1-new"][-1]
    assert replacement["nodeName"] == "n2"
    assert json.loads(replacement["annotations"]["scheduling.koordinator.sh/reservation-allocated"])["name"] == name
    [done] = [j for j in outputs(out, "PodMigrationJob") if j["phase"] == "Succeeded"]
    assert json.loads(done["manifest"])["status"]["message"] == (
        f'Bind Pod "default/p1-new" in Reservation "{name}"')


def test_a_duplicated_event_or_a_restored_domain_never_evicts_twice():
    domain, out = run(*cluster(), descheduler_config(config(), ts=T0 + 1000))
    assert len(outputs(out, "Eviction")) == 1
    restored = SchedulingDomain.restore("default", domain.entries())
    _, again = run(tick(T0 + 2000), domain=restored)
    assert outputs(again, "Eviction") == []


def test_the_object_limiter_holds_a_second_move_of_the_same_workload():
    domain, _ = run(*cluster(), descheduler_config(config(), ts=T0 + 1000))
    job = {"metadata": {"name": "move-p2"}, "manifest": "{}", "podRef": {"namespace": "default", "name": "p2",
                                                                          "uid": None},
           "mode": "EvictDirectly", "ttlMs": None, "paused": False, "reservationName": None, "deleteOptions": None,
           "phase": None}
    _, out = run(event("PodMigrationJob", "move-p2", job, ts=T0 + 1500), domain=domain)
    assert outputs(out, "Eviction") == []
    _, out = run(tick(T0 + 200_000), domain=domain)
    assert "default/p2" in {f"{e['pod']['namespace']}/{e['pod']['name']}" for e in outputs(out, "Eviction")}


def test_a_single_replica_workload_is_forbidden_and_the_jobs_own_status_coming_back_changes_nothing():
    domain, _ = run(*cluster(), descheduler_config(config(), ts=T0 + 1000))
    job = {"metadata": {"name": "move-p9"}, "manifest": "{}", "podRef": {"namespace": "default", "name": "p9",
                                                                          "uid": None},
           "mode": "EvictDirectly", "ttlMs": None, "paused": False, "reservationName": None, "deleteOptions": None,
           "phase": None}
    _, out = run(event("PodMigrationJob", "move-p9", job, ts=T0 + 1500), domain=domain)
    [status] = outputs(out, "PodMigrationJob")
    assert status["phase"] == "Failed"
    assert json.loads(status["manifest"])["status"]["message"] == (
        'Pod "default/p9" is forbidden to migrate because it does not meet the requirements')
    assert outputs(out, "Eviction") == []
    _, echo = run(event("PodMigrationJob", "move-p9", status, ts=T0 + 1600), domain=domain)
    assert echo == []


def test_a_bad_configuration_is_dead_lettered_and_deleting_it_stops_the_rounds():
    bad = config()
    bad["profiles"][0]["pluginConfig"][0]["args"]["lowThresholds"] = {"cpu": 80}
    domain, out = run(*cluster(), descheduler_config(bad, ts=T0 + 1000))
    [letter] = outputs(out, "DeadLetter")
    assert "lowThresholds: cpu threshold not valid" in letter["reason"]
    _, out = run(descheduler_config(config(abnormalities=3), ts=T0 + 2000), domain=domain)
    _, out = run(deleted("KubeSchedulerConfiguration", "koord-descheduler", ts=T0 + 3000), domain=domain)
    assert domain.descheduling.config is None


def test_a_burst_of_fifty_jobs_is_held_to_the_per_node_limit():
    """50 ReservationFirst jobs for pods of one node (each of a two-replica workload, so the expected-replicas
    rule forbids none): arbitration lets maxMigratingPerNode (2) run at once; the others wait Pending."""
    events = [node("n1", cpu=64_000, pods=110, ts=T0), node("n2", cpu=64_000, pods=110, ts=T0),
              descheduler_config({"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerConfiguration",
                                  "profiles": [{"name": "koord-descheduler", "pluginConfig": [
                                      {"name": "MigrationController", "args": {"maxMigratingPerNode": 2}}]}]},
                                 ts=T0)]
    events += [owned(f"b{i:02d}", "n1", T0, workload=f"w{i:02d}") for i in range(50)]
    events += [owned(f"spare{i:02d}", "n2", T0, workload=f"w{i:02d}") for i in range(50)]
    domain, _ = run(*events)
    jobs = [event("PodMigrationJob", f"move-{i:02d}", {
        "metadata": {"name": f"move-{i:02d}"}, "manifest": "{}",
        "podRef": {"namespace": "default", "name": f"b{i:02d}", "uid": None}, "mode": "ReservationFirst",
        "ttlMs": None, "paused": False, "reservationName": None, "deleteOptions": None, "phase": None},
        ts=T0 + 1000) for i in range(50)]
    _, out = run(*jobs, domain=domain)
    phases = {j["metadata"]["name"]: j["phase"] for j in outputs(out, "PodMigrationJob")}
    running = sorted(name for name, phase in phases.items() if phase == "Running")
    assert len(running) == 2
    assert all(domain.descheduling.migrations.jobs[f"move-{i:02d}"].phase in ("Pending", "Running") for i in range(50))
    assert len(outputs(out, "Reservation")) == 2
    held = [json.loads(j["manifest"])["status"]["conditions"][0] for j in outputs(out, "PodMigrationJob")
            if j["phase"] == "Pending"]
    assert held and {c["type"] for c in held} == {"Arbitration"}
    assert held[-1]["status"] == "False"
    assert held[-1]["message"] == 'maxMigratingPerNode: 2 pods migrating on node "n1"'


def _job(name: str, pod_name: str, ts: int, phase=None, ttl_ms=None, mode="ReservationFirst"):
    return event("PodMigrationJob", name, {
        "metadata": {"name": name}, "manifest": "{}",
        "podRef": {"namespace": "default", "name": pod_name, "uid": None}, "mode": mode,
        "ttlMs": ttl_ms, "paused": False, "reservationName": None, "deleteOptions": None, "phase": phase}, ts=ts)


def _two_nodes():
    events = [node("n1", cpu=8000, pods=110, ts=T0), node("n2", cpu=8000, pods=110, ts=T0),
              descheduler_config({"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerConfiguration",
                                  "profiles": [{"name": "koord-descheduler", "pluginConfig": [
                                      {"name": "MigrationController", "args": {"maxMigratingPerNode": 1}}]}]},
                                 ts=T0)]
    return events + [owned("a", "n1", T0, "w1"), owned("a2", "n2", T0, "w1"),
                     owned("b", "n1", T0, "w2"), owned("b2", "n2", T0, "w2")]


def test_a_job_aborted_by_the_user_is_left_alone_and_frees_its_place():
    """Koordinator's Aborted ("the user forcefully aborted"): applied with status.phase Aborted, the job is no
    longer processed and stops counting toward maxMigratingPerNode, so the job it held runs."""
    domain, _ = run(*_two_nodes())
    _, out = run(_job("move-a", "a", T0 + 1000), _job("move-b", "b", T0 + 1000), domain=domain)
    jobs = domain.descheduling.migrations.jobs
    assert (jobs["move-a"].phase, jobs["move-b"].phase) == ("Running", "Pending")
    assert jobs["move-b"].held_by == 'maxMigratingPerNode: 1 pods migrating on node "n1"'
    _, out = run(_job("move-a", "a", T0 + 2000, phase="Aborted"), domain=domain)
    assert jobs["move-a"].phase == "Aborted"
    assert jobs["move-b"].phase == "Running", "the aborted job no longer holds the per-node place"
    assert jobs["move-b"].held_by, "what delayed it stays on the job"
    _, again = run(_job("move-a", "a", T0 + 3000, phase="Aborted"), domain=domain)
    assert not outputs(again, "PodMigrationJob"), "an aborted job is left alone"


def test_the_scavenger_deletes_old_jobs_and_their_reservations():
    """``defaultGCDuration`` 30 min after creation (TTL + 5 min with a TTL): a tombstone for the job and for the
    Reservation it created, and the domain forgets both."""
    domain, _ = run(*_two_nodes())
    run(_job("move-a", "a", T0 + 1000), _job("move-b", "b", T0 + 1000, ttl_ms=60_000, mode="EvictDirectly"),
        domain=domain)
    reservation = domain.descheduling.migrations.jobs["move-a"].reservation
    _, out = run(tick(T0 + 1000 + 6 * 60_000 + 1), domain=domain)
    assert [r for r in outputs(out, "PodMigrationJob") if "deletes" in r] == [{"deletes": "move-b"}]
    _, out = run(tick(T0 + 1000 + 30 * 60_000 + 1), domain=domain)
    assert {"deletes": "move-a"} in outputs(out, "PodMigrationJob")
    assert {"deletes": reservation} in outputs(out, "Reservation")
    assert domain.descheduling.migrations.jobs == {}
