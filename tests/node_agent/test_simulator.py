"""The synthetic fleet: deterministic, heterogeneous, Koordinator-shaped, and acknowledging like a node."""

from __future__ import annotations

import json

import pytest

from node_agent.simulator import Fleet, FleetArgs, diurnal
from streams.objects import Document, to_record

ARGS = FleetArgs(nodes=20, pods_per_node=5, seed=7, start_time=1_700_000_000.0)


def records(manifests):
    return [to_record(Document("<sim>", 0, 1, m)) for m in manifests]


def run(fleet: Fleet, seconds: int) -> list[dict]:
    out = []
    for second in range(seconds):
        out += fleet.step(second)
    return out


def test_same_seed_same_fleet_and_usage():
    a, b = Fleet(ARGS), Fleet(ARGS)
    assert a.nodes() == b.nodes() and a.devices() == b.devices() and run(a, 300) == run(b, 300)
    for fleet in (a, b):
        for i, uid in enumerate(sorted(fleet.pods)):
            fleet.apply_decision({"pod": {"uid": uid}, "nodeName": fleet.node_names[i % 20], "result": "Scheduled"})
    assert a.node_metrics(300) == b.node_metrics(300)
    assert Fleet(FleetArgs(**{**ARGS.__dict__, "seed": 8})).nodes() != a.nodes()


def test_nodes_are_heterogeneous_and_some_have_gpus():
    fleet = Fleet(ARGS)
    infos = [json.loads(n["metadata"]["annotations"]["node.koordinator.sh/cpu-basic-info"]) for n in fleet.nodes()]
    numa = {len({c["node"] for c in json.loads(n["metadata"]["annotations"]["node.koordinator.sh/cpu-topology"])
                 ["detail"]}) for n in fleet.nodes()}
    assert len({i["cpuModel"] for i in infos}) >= 3 and len(numa) >= 2
    devices = records(fleet.devices())
    assert devices and all(d.record["devices"][0]["type"] == "gpu" for d in devices)
    gpu_nodes = {d.key for d in devices}
    assert all(("nvidia.com/gpu" in r.record["capacity"]) == (r.key in gpu_nodes) for r in records(fleet.nodes()))


def test_pods_arrive_finish_and_carry_koordinator_classes():
    fleet = Fleet(ARGS)
    pods = records(run(fleet, 2000))
    created = [p for p in pods if p.record["phase"] is None]
    assert len([p for p in pods if p.record["phase"] == "Succeeded"]) > 50
    assert len(created) > ARGS.nodes * ARGS.pods_per_node
    be = [p for p in created if p.record["metadata"]["labels"]["koordinator.sh/qosClass"] == "BE"]
    ls = [p for p in created if p.record["metadata"]["labels"]["koordinator.sh/qosClass"] == "LS"]
    assert be and ls
    assert all(set(p.record["requests"]) == {"kubernetes.io/batch-cpu", "kubernetes.io/batch-memory"} for p in be)
    assert all(p.record["priorityClassName"] == "koord-batch" and p.record["priority"] == 5000 for p in be)
    assert all(p.record["priorityClassName"] == "koord-prod" and "cpu" in p.record["requests"] for p in ls)


def test_ls_usage_follows_the_day():
    assert diurnal(16 * 3600) == pytest.approx(1.0) and diurnal(4 * 3600) == pytest.approx(0.0)
    fleet = Fleet(FleetArgs(nodes=1, pods_per_node=40, seed=3, start_time=0.0, be_fraction=0.0))
    fleet.step(0)
    pods = list(fleet.pods.values())
    night = sum(fleet.pod_usage(p, 4 * 3600).cpu for p in pods)
    afternoon = sum(fleet.pod_usage(p, 16 * 3600).cpu for p in pods)
    assert afternoon > 1.5 * night


def test_node_metrics_report_bound_pods_and_convert():
    fleet = Fleet(ARGS)
    fleet.step(0)
    uid = next(iter(fleet.pods))
    node = fleet.node_names[0]
    fleet.apply_decision({"pod": {"uid": uid}, "nodeName": node, "result": "Bound"})
    metrics = {r.key: r.record for r in records(fleet.node_metrics(10))}
    assert len(metrics) == ARGS.nodes
    assert [p["name"] for p in metrics[node]["podsMetric"]] == [fleet.pods[uid].name]
    assert metrics[node]["nodeUsage"]["cpu"] >= metrics[node]["systemUsage"]["cpu"] > 0
    fleet.apply_decision({"pod": {"uid": uid}, "nodeName": None, "result": "Released"})
    assert {r.key: r.record for r in records(fleet.node_metrics(20))}[node]["podsMetric"] == []


def actuation(node, sequence, values, target="pod-1"):
    return {"decisionId": f"d-{sequence}", "nodeName": node, "sequence": sequence, "targetKind": "PodCgroup",
            "targetId": target, "mechanism": "cgroup", "values": values}


def test_actuations_are_acknowledged_with_the_values_read_back():
    fleet = Fleet(ARGS)
    node = fleet.node_names[3]
    ack = fleet.acknowledge(actuation(node, 5, {"cpu.cfs_quota_us": "50000"}), now_ms=123)
    assert ack == {"actuationId": "d-5", "nodeName": node, "sequence": 5, "applied": True, "status": "applied",
                   "values": {"cpu.cfs_quota_us": "50000"}, "error": None, "timestamp": 123}
    stale = fleet.acknowledge(actuation(node, 4, {"cpu.cfs_quota_us": "1"}), now_ms=124)
    assert (stale["applied"], stale["values"]) == (False, {"cpu.cfs_quota_us": "50000"}) and "stale" in stale["error"]
    assert stale["status"] == "rejected"
    assert fleet.acknowledge(actuation("not-ours", 1, {}), now_ms=1) is None
    from streams.schemas import codec
    assert codec.decode(codec.encode("ActuationAck", ack)) == ("ActuationAck", ack)


def test_an_eviction_ends_its_pod_once_at_the_next_step():
    fleet = Fleet(ARGS)
    fleet.step(0)
    uid = sorted(fleet.pods)[0]
    eviction = {"decisionId": "d-1", "pod": {"uid": uid}, "nodeName": "sim-node-000"}
    assert fleet.evict(eviction) is True
    assert fleet.evict(eviction) is False
    ended = [p for p in records(fleet.step(1)) if p.record["metadata"]["uid"] == uid]
    assert [p.record["phase"] for p in ended] == ["Failed"]
    assert uid not in fleet.pods
    assert fleet.evict({**eviction, "decisionId": "d-2"}) is False
