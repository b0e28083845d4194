"""Pinned cpusets through the node aggregate: SchedulingDecisions carrying ``resource-status`` in, pod cpuset
Actuations out (and the BE cpuset kept off LSE CPUs); the state keeps the cpuset and round-trips it."""

from __future__ import annotations

import json

from streams import actuation
from streams.koordinator.annotations import ANNOTATION_RESOURCE_STATUS
from streams.nodeaggregate import node as aggregate
from streams.nodeaggregate import statecodec
from streams.nodeaggregate.settings import DEFAULT_SETTINGS
from streams.nodeqos.podmeta import parse_cpu_list
from streams.sloconfig.configmap import DEFAULT_CONFIG, parse_slo_config
from tests.streams.noderesource.support import G, NOW, configmap, decision, event, metric_record, node_record

NODE = "test-node1"
UIDS = {name: f"00000000-0000-0000-0000-00000000000{i}" for i, name in enumerate(("lse", "lsr", "ls", "be"), 1)}
SUPPRESS = parse_slo_config(configmap(**{"resource-threshold-config": json.dumps({"clusterStrategy": {
    "enable": True, "cpuSuppressThresholdPercent": 70, "cpuSuppressPolicy": "cpuset"}})}), DEFAULT_CONFIG)


def _bound(name, qos, status=None, result="Bound"):
    record = decision(name, qos=qos, result=result)
    record["pod"]["uid"] = UIDS[name]
    if status is not None:
        record["annotations"] = {ANNOTATION_RESOURCE_STATUS: json.dumps(status)}
    return event("SchedulingDecision", NODE, record)


def _metric(ts):
    return event("NodeMetric", NODE, metric_record(NODE, update_time=ts, node_usage={"cpu": 4000, "memory": 10 * G}),
                 ts=ts)


def run(*events, state=None):
    state = state or aggregate.initial_state()
    outputs = []
    for ev in events:
        state, out = aggregate.handle(state, ev, SUPPRESS, DEFAULT_SETTINGS)
        outputs.extend(out)
    return state, outputs


def cgroup_actuations(outputs):
    return {(r["targetKind"], r["targetId"]): r["values"] for s, r in outputs
            if s == "Actuation" and r["mechanism"] == actuation.MECHANISM_CGROUP}


PODS = [
    _bound("lse", "LSE", {"cpuset": "0-3", "numaNodeResources": [{"node": 0, "resources": {"cpu": "4"}}]}),
    _bound("lsr", "LSR", {"cpuset": "4-5"}),
    _bound("ls", "LS"),
    _bound("be", "BE"),
]


def test_resource_status_cpusets_reach_their_pod_cgroups_and_leave_the_pools():
    state, out = run(event("Node", NODE, node_record(NODE, cpu=16_000, memory=64 * G)), *PODS, _metric(NOW))
    assert state.pods["test/lse"].cpuset == "0-3" and state.pods["test/lse"].numa_nodes == (0,)
    found = cgroup_actuations(out)
    assert found[("pod", UIDS["lse"])] == {"cpu.cfs_quota_us": "-1", "cpuset.cpus": "0-3"}
    assert found[("pod", UIDS["lsr"])] == {"cpu.cfs_quota_us": "-1", "cpuset.cpus": "4-5"}
    assert found[("pod", UIDS["ls"])] == {"cpuset.cpus": "6-15"}
    assert ("pod", UIDS["be"]) not in found
    be = parse_cpu_list(found[("qos", "BE")]["cpuset.cpus"])
    assert be and not be & {0, 1, 2, 3}, "the BE cpuset must leave the LSE pod's CPUs out"
    assert all(r["sequence"] == i for i, (_, r) in enumerate(
        [o for o in out if o[0] == "Actuation"], start=1))


def test_state_round_trips_the_cpuset_and_a_released_pin_returns_the_pool():
    state, _ = run(event("Node", NODE, node_record(NODE, cpu=16_000, memory=64 * G)), *PODS, _metric(NOW))
    data = statecodec.dump_state(state)
    loaded = statecodec.load_state(data)
    assert loaded.pods == state.pods and statecodec.dump_state(loaded) == data
    metric = _metric(NOW + 60_000)
    assert run(metric, state=loaded)[1] == run(metric, state=state)[1]
    _, out = run(_bound("lse", "LSE", result="Released"), _metric(NOW + 60_000), state=loaded)
    found = cgroup_actuations(out)
    assert found[("pod", UIDS["ls"])] == {"cpuset.cpus": "0-3,6-15"}
    assert ("pod", UIDS["lse"]) not in found


def test_a_pod_without_a_pin_on_a_node_without_reserved_cpus_gets_no_cpuset_actuation():
    _, out = run(event("Node", NODE, node_record(NODE, cpu=16_000, memory=64 * G)), _bound("ls", "LS"),
                 _metric(NOW))
    assert ("pod", UIDS["ls"]) not in cgroup_actuations(out)
