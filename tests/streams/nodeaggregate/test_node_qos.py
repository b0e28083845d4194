"""Node QoS through the node aggregate: NodeMetric in, Actuations (signed with the settings' key) and Evictions
out, state persisted."""

from __future__ import annotations

import dataclasses
import json

import pytest

from streams import actuation
from streams.nodeaggregate import node as aggregate
from streams.nodeaggregate import statecodec
from streams.nodeaggregate.partition import NodePartition
from streams.nodeaggregate.settings import DEFAULT_SETTINGS, NodeAggregateSettings
from streams.nodeqos import planner
from streams.nodeqos.plugins import memoryevict
from streams.schemas import codec
from streams.sloconfig.configmap import DEFAULT_CONFIG, parse_slo_config
from streams.sloconfig.document import ConfigError
from tests.streams.noderesource.support import G, NOW, configmap, decision, event, metric_record, node_record, pod_usage, tick

NODE = "test-node1"
KEY = b"shared-secret"
THRESHOLD = {"clusterStrategy": {"enable": True, "cpuSuppressThresholdPercent": 70, "cpuSuppressPolicy": "cfsQuota",
                                 "memoryEvictThresholdPercent": 80}}
SIGNED = NodeAggregateSettings(signing_key=KEY)
SUPPRESS = parse_slo_config(configmap(**{"resource-threshold-config": json.dumps(THRESHOLD)}), DEFAULT_CONFIG)


def _bound(name, qos, uid, **kwargs):
    record = decision(name, qos=qos, **kwargs)
    record["pod"]["uid"] = uid
    return event("SchedulingDecision", NODE, record)


def _metric(ts=NOW, ls_used=8000, be_used=2000, node_used=12_000, memory_used=10 * G, be_memory=G):
    return event("NodeMetric", NODE, metric_record(
        NODE, update_time=ts, node_usage={"cpu": node_used, "memory": memory_used},
        pods=[pod_usage("test", "ls-pod", ls_used, G), pod_usage("test", "be-pod", be_used, be_memory)]), ts=ts)


def run(*events, config=SUPPRESS, state=None, settings=DEFAULT_SETTINGS):
    state = state or aggregate.initial_state()
    outputs = []
    for ev in events:
        state, out = aggregate.handle(state, ev, config, settings)
        outputs.extend(out)
    return state, outputs


def actuations(outputs, kind=None, target=None):
    return [r for s, r in outputs if s == "Actuation" and (kind is None or r["targetKind"] == kind)
            and (target is None or r["targetId"] == target)]


def test_be_over_the_suppress_threshold_gets_koordinators_cfs_quota():
    """Test_cpuSuppress_suppressBECPU (TV-3-8): 16 cores, threshold 70, node 12, LS 8, BE 2 -> 1.2 cores."""
    _, out = run(event("Node", NODE, node_record(NODE, cpu=16_000, memory=120 * G)),
                 _bound("ls-pod", "LS", "uid-ls"), _bound("be-pod", "BE", "uid-be"), _metric(), settings=SIGNED)
    [record] = [r for r in actuations(out, "qos", "BE") if r["mechanism"] == "cgroup"]
    assert (record["mechanism"], record["values"]) == ("cgroup", {actuation.CPU_QUOTA: "120000"})
    assert record["nodeName"] == NODE and record["timestamp"] == NOW
    assert actuation.verify(record, KEY)
    codec.encode("Actuation", record)


def test_a_node_metric_yields_signed_actuations_with_stable_ids_and_increasing_sequences():
    events = [event("Node", NODE, node_record(NODE, cpu=16_000, memory=120 * G)),
              _bound("ls-pod", "LS", "uid-ls"), _bound("be-pod", "BE", "uid-be"), _metric()]
    state, out = run(*events, settings=SIGNED)
    records = actuations(out)
    assert [(r["targetKind"], r["targetId"], r["mechanism"]) for r in records] == [
        ("qos", "BE", "cgroup"), ("qos", "LSR", "resctrl"), ("qos", "LS", "resctrl"), ("qos", "BE", "resctrl")]
    assert [r["sequence"] for r in records] == [1, 2, 3, 4]
    assert records[3]["values"] == {"l3.start_percent": "0", "l3.end_percent": "30", "mb.percent": "100",
                                    "tasks.pods": ""}
    assert all(actuation.verify(r, KEY) for r in records)
    assert [r["decisionId"] for r in actuations(run(*events, settings=SIGNED)[1])] == [r["decisionId"] for r in records]
    assert state.qos.sequence == 4


def test_unchanged_values_are_not_emitted_again_and_changes_continue_the_sequence():
    state, _ = run(event("Node", NODE, node_record(NODE, cpu=16_000, memory=120 * G)),
                   _bound("ls-pod", "LS", "uid-ls"), _bound("be-pod", "BE", "uid-be"), _metric(), settings=SIGNED)
    state, out = run(_metric(ts=NOW + 1000), state=state, settings=SIGNED)
    assert actuations(out) == []
    state, out = run(_metric(ts=NOW + 2000, ls_used=4000, node_used=8000), state=state, settings=SIGNED)
    [record] = actuations(out)
    assert record["sequence"] == 5 and record["values"] == {actuation.CPU_QUOTA: "280000"}, "+10 % of 16 cores"


def test_state_round_trips_through_dump_and_load_with_the_qos_memory():
    state, _ = run(event("Node", NODE, node_record(NODE, cpu=16_000, memory=120 * G)),
                   _bound("ls-pod", "LS", "uid-ls", cpu=2000),
                   _bound("be-pod", "BE", "uid-be"), _metric())
    loaded = statecodec.load_state(statecodec.dump_state(state))
    assert statecodec.dump_state(loaded) == statecodec.dump_state(state)
    assert (loaded.qos, dict(loaded.pods), loaded.metric) == (state.qos, dict(state.pods), state.metric)
    later = _metric(ts=NOW + 5000, ls_used=3000)
    assert run(later, state=loaded)[1] == run(later, state=state)[1]


def test_a_state_without_the_qos_tail_loads_with_an_empty_memory():
    state, _ = run(event("Node", NODE, node_record(NODE)), config=DEFAULT_CONFIG)
    assert statecodec.load_state(statecodec.dump_state(state)).qos == planner.QoSMemory()


def test_memory_eviction_is_a_decision_on_the_decision_stream():
    """resource-threshold-config's enable (in DEFAULT_CONFIG) turns memory eviction on: no other gate."""
    evicting = DEFAULT_SETTINGS
    state, out = run(event("Node", NODE, node_record(NODE, cpu=16_000, memory=100 * G)),
                     _bound("ls-pod", "LS", "uid-ls"), _bound("be-pod", "BE", "uid-be"),
                     _metric(memory_used=95 * G, be_memory=20 * G), settings=evicting)
    [eviction] = [r for s, r in out if s == "Eviction"]
    assert eviction["pod"] == {"namespace": "test", "name": "be-pod", "uid": "uid-be"}
    assert eviction["reason"] == memoryevict.REASON_EVICTED and eviction["nodeName"] == NODE
    codec.encode("Eviction", eviction)
    _, again = run(_metric(ts=NOW + 10_000, memory_used=95 * G, be_memory=20 * G), state=state, settings=evicting)
    assert [r for s, r in again if s == "Eviction"] == [], "an evicted pod is not picked again"


def test_partition_rejects_an_invalid_qos_config_and_keeps_the_previous_one():
    partition = NodePartition(DEFAULT_SETTINGS)
    bad = configmap(**{"resource-threshold-config": json.dumps({"clusterStrategy": {"cpuSuppressThresholdPercent": 150}})})
    [(schema, record)] = partition.apply(event("ConfigMap", "koordinator-system/slo-controller-config", bad))
    assert schema == "DeadLetter" and "cpuSuppressThresholdPercent must be in [0, 100]" in record["reason"]
    assert partition.config.qos is not None and partition.config.qos.threshold.strategy.enable is False


def test_the_pure_core_never_reads_the_key_from_the_environment(monkeypatch):
    monkeypatch.setenv(actuation.KEY_ENV, "from-env")
    _, out = run(event("Node", NODE, node_record(NODE, cpu=16_000, memory=120 * G)), _bound("be-pod", "BE", "uid-be"),
                 _metric())
    assert all(r["signature"] is None for r in actuations(out))


def test_invalid_qos_config_raises_config_error():
    bad = configmap(**{"resource-qos-config": json.dumps(
        {"clusterStrategy": {"beClass": {"resctrlQOS": {"catRangeStartPercent": 50, "catRangeEndPercent": 40}}}})})
    with pytest.raises(ConfigError, match="catRangeStartPercent"):
        parse_slo_config(bad, DEFAULT_CONFIG)


ENABLED = {"cpuQOS": {"enable": True}, "resctrlQOS": {"enable": True}}
EVERY_FEATURE = {
    "resource-qos-config": json.dumps({"clusterStrategy": {"lsrClass": ENABLED, "lsClass": ENABLED, "beClass": ENABLED}}),
    "cpu-burst-config": json.dumps({"clusterStrategy": {"policy": "auto"}}),
    "resource-threshold-config": json.dumps({"clusterStrategy": {"enable": True, "cpuSuppressPolicy": "cfsQuota"}}),
}
NETWORK = {"enable": True, "egressRequest": "50M", "egressLimit": "100M"}
EVERY_FEATURE_AND_NETWORK = {
    **EVERY_FEATURE,
    "resource-qos-config": json.dumps({"clusterStrategy": {
        "policies": {"netQOSPolicy": "terway-qos"}, "lsrClass": ENABLED,
        "lsClass": {**ENABLED, "networkQOS": NETWORK}, "beClass": {**ENABLED, "networkQOS": NETWORK}}}),
    "system-config": json.dumps({"clusterStrategy": {"totalNetworkBandwidth": "600M"}}),
}


@pytest.mark.parametrize("keys, budget", [
    pytest.param({}, 4352, id="default-qos-config-fits-4.25-KiB"),
    pytest.param(EVERY_FEATURE, 4608, id="every-feature-on-fits-4.5-KiB"),
    pytest.param(EVERY_FEATURE_AND_NETWORK, 4608, id="every-feature-and-network-qos-fits-4.5-KiB"),
])
def test_state_of_a_node_with_20_pods_after_a_day(keys, budget):
    """The UIDs the plan needs (~420 bytes for 20 pods), the QoS memory (~280 bytes with every feature on) and
    the pods' decision marks (~170 bytes, ``replays``) come on top of the node-resource state (~3.5 KiB after
    a day): the default config stays within 4.25 KiB, every feature on within 4.5 KiB; network QoS adds each
    pod's tc priority."""
    from tests.streams.nodeaggregate.test_node import LABELS, day_of_metrics, node_event, twenty_pods
    names, decisions, rng = twenty_pods()
    for index, record in enumerate(decisions):
        uid = f"{rng.getrandbits(128):032x}"
        record["pod"]["uid"] = "-".join((uid[:8], uid[8:12], uid[12:16], uid[16:20], uid[20:]))
        record["limits"] = {"cpu": 2000}
        record["requests"]["kubernetes.io/batch-cpu"] = 1000 if index >= 12 else 0
    config = parse_slo_config(configmap({"enable": True}, **keys), DEFAULT_CONFIG)
    state, out = run(node_event(cpu=32_000, memory=128 * 2**30, labels=LABELS),
                     *(event("SchedulingDecision", NODE, r) for r in decisions),
                     *day_of_metrics(names, rng, NOW, 26 * 60), config=config, settings=SIGNED)
    size = len(statecodec.dump_state(state))
    print(f"\nstate of a node with 20 pods after 26 h ({'every node-QoS feature' if keys else 'default QoS'}): "
          f"{size} bytes, {state.qos.sequence} actuations")
    assert statecodec.dump_state(statecodec.load_state(statecodec.dump_state(state))) == statecodec.dump_state(state)
    assert size <= budget


BURST = parse_slo_config(configmap(**{"cpu-burst-config": json.dumps({"clusterStrategy": {"policy": "auto"}})}),
                         DEFAULT_CONFIG)


def _throttled_metric(ts, ratio):
    ls = {**pod_usage("test", "ls-pod", 1000, G), "throttledRatio": ratio, "coldPageBytes": 4096}
    return event("NodeMetric", NODE, {**metric_record(NODE, update_time=ts, node_usage={"cpu": 4000, "memory": 10 * G},
                                                      pods=[ls]), "memoryCollectPolicy": "usageWithPageCache",
                                      "coldPageBytes": 1 << 20}, ts=ts)


def test_throttled_ratios_scale_quota_burst_once_per_node_metric_and_persist_with_the_state():
    """cfsQuotaBurst on a pod limited to 2 cores (base 200000), throttled in each report: x1.2 per NodeMetric; a
    config change re-plans on the same NodeMetric without scaling again; the ratios survive the state codec."""
    limited = decision("ls-pod", qos="LS", cpu=1000)
    limited["pod"]["uid"], limited["limits"] = "uid-ls", {"cpu": 2000}
    state, out = run(event("Node", NODE, node_record(NODE, cpu=16_000, memory=120 * G)),
                     event("SchedulingDecision", NODE, limited), _throttled_metric(NOW, 0.5),
                     _throttled_metric(NOW + 60_000, 0.3), config=BURST)
    assert [r["values"][actuation.CPU_QUOTA] for r in actuations(out, "pod", "uid-ls")] == ["240000", "288000"]
    state, out = aggregate.recalculate(state, BURST, NOW + 61_000, event("ConfigMap", NODE, {}).causation,
                                       DEFAULT_SETTINGS)
    assert actuations(out) == []
    loaded = statecodec.load_state(statecodec.dump_state(state))
    assert loaded.metric == state.metric and loaded.metric.throttled_ratio == {"test/ls-pod": 0.3}
    assert (loaded.metric.memory_policy, loaded.metric.cold_page_bytes) == ("usageWithPageCache", 1 << 20)
    assert statecodec.dump_state(loaded) == statecodec.dump_state(state)


@pytest.mark.parametrize("annotations, group", [
    pytest.param({"kubelet.koordinator.sh/cpu-manager-policy": '{"policy": "static"}'}, "LSR", id="static-LSR"),
    pytest.param({}, "LS", id="none-LS"),
])
def test_a_guaranteed_pod_joins_the_class_the_nodes_cpu_manager_policy_gives(annotations, group):
    """Koordinator 1.0: Guaranteed is LSR under the kubelet's static CPU manager policy, LS otherwise; the node
    aggregate keeps the policy annotation the node agent publishes, so the resctrl plan puts the pod in that
    class's group. The scheduler's decision says LSR for an unlabelled Guaranteed pod (Koordinator's default
    mapping); the node decides."""
    config = parse_slo_config(configmap(**{"resource-qos-config": json.dumps(
        {"clusterStrategy": {"lsrClass": ENABLED, "lsClass": ENABLED, "beClass": ENABLED}})}), DEFAULT_CONFIG)
    record = decision("web", qos="LSR", cpu=2000, memory=G)
    record["pod"]["uid"] = "uid-web"
    record["limits"] = {"cpu": 2000, "memory": G}
    _, out = run(event("Node", NODE, node_record(NODE, cpu=16_000, memory=120 * G, annotations=annotations)),
                 event("SchedulingDecision", NODE, record), _metric(), config=config)
    tasks = {r["targetId"]: r["values"]["tasks.pods"] for r in actuations(out, "qos")
             if r["mechanism"] == "resctrl" and "tasks.pods" in r["values"]}
    assert "uid-web" in tasks.get(group, "").split(","), tasks


def _tick(ts):
    return event("Tick", "tick", tick(ts), ts=ts)


def test_a_tick_re_plans_the_node_so_a_pod_pinned_since_the_last_node_metric_gets_its_cpuset():
    """A SchedulingDecision only changes the pod table; the next Tick plans the pinned pod's cpuset (and its
    quota -1) in the tick's event time, without a new NodeMetric, and a later Tick emits nothing more."""
    state, _ = run(event("Node", NODE, node_record(NODE, cpu=16_000, memory=120 * G)),
                   _bound("ls-pod", "LS", "uid-ls"), _metric())
    pinned = decision("pinned", qos="LSR", cpu=2000)
    pinned["pod"]["uid"] = "uid-pinned"
    pinned["annotations"] = {"scheduling.koordinator.sh/resource-status": json.dumps({"cpuset": "2-3"})}
    state, out = run(event("SchedulingDecision", NODE, pinned), state=state)
    assert actuations(out) == []
    state, out = run(_tick(NOW + 1000), state=state)
    [record] = [r for r in actuations(out, "pod", "uid-pinned") if r["mechanism"] == "cgroup"]
    assert record["values"][actuation.CPUSET_CPUS] == "2-3" and record["timestamp"] == NOW + 1000
    assert actuations(run(_tick(NOW + 2000), state=state)[1]) == []


def test_a_tick_does_not_scale_quota_burst_again():
    """Throttled ratios are one sample per NodeMetric: a Tick re-plans with the same NodeMetric and keeps the quota."""
    limited = decision("ls-pod", qos="LS", cpu=1000)
    limited["pod"]["uid"], limited["limits"] = "uid-ls", {"cpu": 2000}
    state, out = run(event("Node", NODE, node_record(NODE, cpu=16_000, memory=120 * G)),
                     event("SchedulingDecision", NODE, limited), _throttled_metric(NOW, 0.5), config=BURST)
    assert [r["values"][actuation.CPU_QUOTA] for r in actuations(out, "pod", "uid-ls")] == ["240000"]
    _, out = run(_tick(NOW + 1000), _tick(NOW + 2000), state=state, config=BURST)
    assert actuations(out) == []


def _pressure(ts):
    """95 of 100 GiB used, each BE pod using 10 GiB: over the threshold of 80 %, 17 GiB to release."""
    return event("NodeMetric", NODE, metric_record(
        NODE, update_time=ts, node_usage={"cpu": 4000, "memory": 95 * G},
        pods=[pod_usage("test", name, 100, 10 * G) for name in ("be-a", "be-b", "be-c")]), ts=ts)


def test_a_tick_evicts_when_the_cool_down_ends_on_a_node_metric_reported_after_the_last_eviction():
    """memoryevict's 4 s cool-down: a NodeMetric inside it evicts nothing; the Tick at its end does, on that
    NodeMetric. A Tick re-planning a NodeMetric older than the eviction evicts nothing (it still counts the
    evicted pod's usage)."""
    events = [event("Node", NODE, node_record(NODE, cpu=16_000, memory=100 * G))]
    events += [_bound(name, "BE", f"uid-{name}") for name in ("be-a", "be-b", "be-c")]
    state, out = run(*events, _pressure(NOW))
    first = [r["pod"]["name"] for s, r in out if s == "Eviction"]
    assert len(first) == 2
    _, out = run(_tick(NOW + 5000), state=state)
    assert [r for s, r in out if s == "Eviction"] == [], "the NodeMetric predates the eviction"
    state, out = run(_pressure(NOW + 2000), state=state)
    assert [r for s, r in out if s == "Eviction"] == [], "inside the cool-down"
    assert aggregate.tick_due_ms(state, SUPPRESS, NOW + 2000, DEFAULT_SETTINGS) == NOW + 4000
    _, out = run(_tick(NOW + 4000), state=state)
    [evicted] = [r for s, r in out if s == "Eviction"]
    assert evicted["pod"]["name"] not in first and evicted["timestamp"] == NOW + 4000


def test_a_state_of_the_older_format_loads_as_due_at_once():
    """``KNR1`` states (no due time in the header) load with ``due_ms`` 0: a restarted worker plans them."""
    state, _ = run(event("Node", NODE, node_record(NODE)), _metric())
    data = statecodec.dump_state(dataclasses.replace(state, due_ms=NOW + 1))
    older = b"KNR1" + data[4:16] + data[24:]

    loaded = statecodec.load_state(older)
    assert loaded.due_ms == 0 and statecodec.due_ms(older) == 0
    assert statecodec.dump_state(dataclasses.replace(loaded, due_ms=NOW + 1)) == data


def test_the_memory_of_a_pod_gone_from_the_pod_table_is_stored_beside_the_others():
    """A deleted pod's targets outlive it in the memory until the next plan: its UID stays a string among
    the indexes of the pods still there, and the state still dumps and loads."""
    memory = planner.QoSMemory(3, {("pod", "uid-gone", "cpu.burst"): {"cfs_quota": "1"},
                                   ("pod", "uid-here", "cpu.burst"): {"cfs_quota": "2"}})
    dumped = memory.to_json({"uid-here": 0})
    assert [row[1] for row in dumped[1]] == [0, "uid-gone"]
    assert planner.QoSMemory.from_json(dumped, ["uid-here"]) == memory
