"""The node aggregate: events in, NodeResource records out, state persisted; no broker."""

from __future__ import annotations

import json
import random

import pytest

from streams.koordinator.resources import BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY
from streams.nodeaggregate import node as aggregate
from streams.nodeaggregate import statecodec
from streams.nodeaggregate.settings import DEFAULT_SETTINGS
from streams.nodeqos import registry as qos_registry
from streams.noderesource.plugins import (
    batchresource, cpunormalization, gpudeviceresource, midresource, rdmadeviceresource)
from streams.noderesource.reconcile import DISABLED_MESSAGE
from streams.pluginstats import PluginStats
from streams.schemas import codec
from streams.sloconfig.configmap import DEFAULT_CONFIG, parse_slo_config
from tests.streams.noderesource.support import (
    G, MINUTE, NOW, Gi, configmap, decision, event, fixture_a_metric, metric_record, node_record, pod_usage, tick,
)

ENABLED = parse_slo_config(configmap({"enable": True, "cpuReclaimThresholdPercent": 65,
                                      "memoryReclaimThresholdPercent": 65}), DEFAULT_CONFIG)
NODE = "test-node1"
FIXTURE_A_PODS = [decision("podA", cpu=20_000, memory=20 * G, qos="LS"),
                  decision("podB", cpu=0, memory=0, qos="BE"),
                  decision("podC", cpu=20_000, memory=40 * G, qos="LSR")]


def run(*events, config=ENABLED, state=None, stats=None):
    state = state or aggregate.initial_state()
    outputs = []
    for ev in events:
        state, out = aggregate.handle(state, ev, config, DEFAULT_SETTINGS, stats)
        outputs.extend(node_resources(out))
    return state, outputs


def node_resources(outputs: list[tuple[str, dict]]) -> list[dict]:
    """The NodeResource records among the aggregate's outputs (node QoS is tested in tests/streams/nodeqos)."""
    return [record for schema, record in outputs if schema == "NodeResource"]


def node_event(ts=NOW, offset=None, **kwargs):
    return event("Node", NODE, node_record(**kwargs), ts=ts, offset=offset)


def metric_event(ts=NOW, offset=None, **kwargs):
    return event("NodeMetric", NODE, fixture_a_metric(update_time=ts, **kwargs), ts=ts, offset=offset)


def bound(*records, ts=NOW):
    return [event("SchedulingDecision", NODE, r, ts=ts) for r in records]


def batch(out: dict) -> tuple:
    return tuple(out["allocatable"].get(name) for name in (BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY))


def test_every_node_event_publishes_one_node_resource_that_the_codec_accepts():
    state, out = run(node_event(), node_event(ts=NOW + 1000), config=DEFAULT_CONFIG)
    assert len(out) == 2
    assert out[0]["allocatable"] == {"cpu": 100_000, "memory": 120 * G, "pods": 110}
    assert out[0]["message"] == DISABLED_MESSAGE
    assert out[0]["nodeName"] == NODE and out[0]["timestamp"] == NOW
    for record in out:
        codec.encode("NodeResource", record)


def test_new_node_without_metric_is_degraded():
    _, [out] = run(node_event())
    assert batch(out) == (None, None, None, None)
    assert out["message"] == f"{batchresource.DEGRADE_MESSAGE}; {midresource.DEGRADE_MESSAGE}"


def test_node_metric_gives_koordinators_batch_numbers():
    _, out = run(node_event(), *bound(*FIXTURE_A_PODS), metric_event())
    assert len(out) == 2
    assert batch(out[1])[:2] == (25_000, 33 * G)
    assert out[1]["message"].startswith(
        "batchAllocatable[CPU(Milli-Core)]:25000 = nodeCapacity:100000 - nodeSafetyMargin:35000 - "
        "systemUsageOrNodeReserved:7000 - podHPUsed:33000; batchAllocatable[Mem(GB)]:33 = nodeCapacity:120 - "
        "nodeSafetyMargin:42 - systemUsage:12 - podHPUsed:33; midAllocatable[CPU(milli-core)]:")
    codec.encode("NodeResource", out[1])


def test_bound_high_priority_pod_without_metrics_counts_by_request():
    late = decision("podNew", cpu=10_000, memory=10 * G, priority=9500, priority_class="koord-prod", qos="LS")
    state, _ = run(node_event(), *bound(*FIXTURE_A_PODS), metric_event())
    state, out = run(*bound(late, ts=NOW + 10_000), metric_event(ts=NOW + MINUTE), state=state)
    assert batch(out[0])[:2] == (15_000, 23 * G)
    assert "podHPUsed:43000" in out[0]["message"]
    released = decision("podNew", result="Released")
    state, out = run(event("SchedulingDecision", NODE, released, ts=NOW + 2 * MINUTE),
                     metric_event(ts=NOW + 3 * MINUTE), state=state)
    assert batch(out[0])[:2] == (25_000, 33 * G)


def test_batch_and_free_pods_are_not_high_priority():
    pods = [decision("podA", cpu=20_000, memory=20 * G, qos="LS"),
            decision("podC", cpu=20_000, memory=40 * G, qos="LSR"),
            decision("podB", cpu=30_000, memory=30 * G, priority=5500, priority_class="koord-batch", qos="BE"),
            decision("podF", cpu=5_000, memory=5 * G, priority=3100, qos="BE")]
    _, out = run(node_event(), *bound(*pods), metric_event())
    assert batch(out[1])[:2] == (25_000, 33 * G)


def test_degrade_after_degrade_time_minutes_via_tick():
    state, _ = run(node_event(), *bound(*FIXTURE_A_PODS), metric_event())
    state, out = run(event("Tick", "tick", tick(NOW + 4 * MINUTE), ts=NOW + 4 * MINUTE), state=state)
    assert out == []
    state, [out] = run(event("Tick", "tick", tick(NOW + 15 * MINUTE), ts=NOW + 15 * MINUTE), state=state)
    assert batch(out)[:2] == (25_000, 33 * G), "unchanged, re-published after updateTimeThresholdSeconds"
    state, [out] = run(event("Tick", "tick", tick(NOW + 15 * MINUTE + 1), ts=NOW + 15 * MINUTE + 1), state=state)
    assert batch(out) == (None, None, None, None)
    assert out["message"] == f"{batchresource.DEGRADE_MESSAGE}; {midresource.DEGRADE_MESSAGE}"


def test_diff_threshold_suppresses_small_changes_until_the_update_time_threshold():
    state, _ = run(node_event(), *bound(*FIXTURE_A_PODS), metric_event())
    small = [pod_usage("test", "podA", 12_000, 11 * G), pod_usage("test", "podB", 10_000, 10 * G),
             pod_usage("test", "podC", 22_000, 22 * G)]
    state, out = run(event("NodeMetric", NODE, fixture_a_metric(update_time=NOW + MINUTE, pods=small),
                           ts=NOW + MINUTE), state=state)
    assert out == []
    big = [pod_usage("test", "podA", 20_000, 11 * G), *small[1:]]
    state, out = run(event("NodeMetric", NODE, fixture_a_metric(update_time=NOW + 2 * MINUTE, pods=big),
                           ts=NOW + 2 * MINUTE), state=state)
    assert batch(out[0])[:2] == (16_000, 33 * G)
    quiet = NOW + 2 * MINUTE + 300_001
    state, out = run(event("NodeMetric", NODE, fixture_a_metric(update_time=quiet, pods=big), ts=quiet), state=state)
    assert len(out) == 1


def test_duplicate_events_are_ignored():
    ev = metric_event()
    state, out = run(node_event(), *bound(*FIXTURE_A_PODS), ev)
    assert run(ev, state=state) == (state, [])
    replay = event("NodeMetric", NODE, fixture_a_metric(update_time=NOW + MINUTE), ts=NOW + MINUTE,
                   offset=ev.causation.source_offset)
    assert run(replay, state=state) == (state, [])


def test_decision_ids_are_stable_across_replays():
    events = [node_event(offset=1),
              *[event("SchedulingDecision", NODE, r, offset=10 + i) for i, r in enumerate(FIXTURE_A_PODS)],
              metric_event(offset=20)]
    assert run(*events)[1] == run(*events)[1]


def test_deleted_node_is_forgotten_and_a_recreated_node_publishes_again():
    state, _ = run(node_event(), *bound(*FIXTURE_A_PODS), metric_event())
    state, out = run(event("Node", NODE, None, ts=NOW + 1000), state=state)
    assert out == [] and state.node is None
    state, out = run(event("Tick", "tick", tick(NOW + 2000), ts=NOW + 2000), state=state)
    assert out == []
    _, [out] = run(node_event(ts=NOW + 3000), state=state)
    assert batch(out)[:2] == (25_000, 33 * G)


def test_config_change_recalculates_and_disabling_removes_batch_and_mid():
    state, _ = run(node_event(), *bound(*FIXTURE_A_PODS), metric_event())
    cause = event("ConfigMap", "koordinator-system/slo-controller-config", None).causation
    disabled = parse_slo_config(configmap({"enable": False}), ENABLED)
    state, outputs = aggregate.recalculate(state, disabled, NOW + 1000, cause, DEFAULT_SETTINGS)
    [out] = node_resources(outputs)
    assert batch(out) == (None, None, None, None) and out["message"] == DISABLED_MESSAGE
    assert aggregate.recalculate(state, disabled, NOW + 2000, cause, DEFAULT_SETTINGS) == (state, [])
    request = parse_slo_config(configmap({"enable": True, "cpuReclaimThresholdPercent": 70,
                                          "memoryReclaimThresholdPercent": 80, "memoryCalculatePolicy": "request"}),
                               ENABLED)
    _, outputs = aggregate.recalculate(state, request, NOW + 3000, event("ConfigMap", "x", None).causation,
                                     DEFAULT_SETTINGS)
    [out] = node_resources(outputs)
    assert batch(out)[:2] == (30_000, 36 * G)


SEED_CPU_NORMALIZATION = json.dumps({"enable": True, "ratioModel": {
    "Intel Xeon Platinum 8369B CPU @ 2.90GHz": {"baseRatio": 1.69, "hyperThreadEnabledRatio": 1.06,
                                                "turboEnabledRatio": 1.91, "hyperThreadTurboEnabledRatio": 1.20}}})


@pytest.mark.parametrize("ht, turbo, ratio, cpu_allocatable, batch_cpu", [
    pytest.param(True, True, "1.20", 120_000, 30_000, id="ht_and_turbo_1.20"),
    pytest.param(False, False, "1.69", 169_000, 42_250, id="base_1.69"),
])
def test_cpu_normalization_amplifies_cpu_and_batch_cpu_not_mid_cpu(ht, turbo, ratio, cpu_allocatable, batch_cpu):
    config = parse_slo_config(configmap({"enable": True, "cpuReclaimThresholdPercent": 65,
                                         "memoryReclaimThresholdPercent": 65},
                                        **{"cpu-normalization-config": SEED_CPU_NORMALIZATION}), DEFAULT_CONFIG)
    info = {"node.koordinator.sh/cpu-basic-info": json.dumps(
        {"cpuModel": "Intel Xeon Platinum 8369B CPU @ 2.90GHz", "hyperThreadEnabled": ht, "turboEnabled": turbo})}
    _, out = run(node_event(annotations=info), *bound(*FIXTURE_A_PODS),
                 metric_event(prod_reclaimable={"cpu": 10_000, "memory": 15 * G}), config=config)
    assert out[-1]["annotations"]["node.koordinator.sh/cpu-normalization-ratio"] == ratio
    assert out[-1]["allocatable"]["cpu"] == cpu_allocatable and out[-1]["capacity"]["cpu"] == 100_000
    assert batch(out[-1]) == (batch_cpu, 33 * G, 10_000, 15 * G)


def test_ratio_below_one_is_rejected_and_leaves_no_ratio():
    """The seed's 8269CY with Hyper-Threading only has ratio 0.82: out of [1, 5], so no annotation is set."""
    model = {"Intel(R) Xeon(R) Platinum 8269CY CPU @ 2.50GHz": {"baseRatio": 1.29, "hyperThreadEnabledRatio": 0.82,
                                                                 "turboEnabledRatio": 1.52,
                                                                 "hyperThreadTurboEnabledRatio": 1.0}}
    config = parse_slo_config(configmap({"enable": True}, **{"cpu-normalization-config": json.dumps(
        {"enable": True, "ratioModel": model})}), DEFAULT_CONFIG)
    info = {"node.koordinator.sh/cpu-basic-info": json.dumps(
        {"cpuModel": "Intel(R) Xeon(R) Platinum 8269CY CPU @ 2.50GHz", "hyperThreadEnabled": True})}
    _, [out] = run(node_event(annotations=info), config=config)
    assert "node.koordinator.sh/cpu-normalization-ratio" not in out["annotations"]
    assert out["allocatable"]["cpu"] == 100_000


def twenty_pods(seed: int = 5):
    rng = random.Random(seed)
    names = [(f"app-{i:02d}-{rng.getrandbits(32):08x}-{rng.getrandbits(20):05x}", i < 12) for i in range(20)]
    decisions = [decision(name, cpu=1000, memory=2 * Gi, priority=9100 if prod else 5100,
                          priority_class="koord-prod" if prod else "koord-batch", qos="LS" if prod else "BE",
                          namespace="default") for name, prod in names]
    return names, decisions, rng


def day_of_metrics(names, rng, start, minutes):
    for minute in range(minutes):
        t = start + minute * MINUTE
        usages = [pod_usage("default", name, int(700 * rng.lognormvariate(0, 0.3)),
                            int(1.5 * Gi * rng.lognormvariate(0, 0.05))) for name, _ in names]
        node_cpu = sum(u["usage"]["cpu"] for u in usages) + 1000
        node_memory = sum(u["usage"]["memory"] for u in usages) + Gi // 2
        record = metric_record(NODE, update_time=t, node_usage={"cpu": node_cpu, "memory": node_memory},
                               system_usage={"cpu": 1000, "memory": Gi // 2}, pods=usages)
        yield event("NodeMetric", NODE, record, ts=t)


LABELS = {"kubernetes.io/hostname": NODE, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
          "node.kubernetes.io/instance-type": "ecs.g7.8xlarge", "topology.kubernetes.io/zone": "cn-hangzhou-h",
          "topology.kubernetes.io/region": "cn-hangzhou", "beta.kubernetes.io/os": "linux",
          "beta.kubernetes.io/arch": "amd64"}


def test_dump_and_load_round_trip_gives_identical_subsequent_outputs():
    names, decisions, rng = twenty_pods()
    state, _ = run(node_event(cpu=32_000, memory=128 * Gi, labels=LABELS), *bound(*decisions),
                   *day_of_metrics(names, rng, NOW, 60))
    data = statecodec.dump_state(state)
    loaded = statecodec.load_state(data)
    assert statecodec.dump_state(loaded) == data
    later = list(day_of_metrics(names, random.Random(11), NOW + 60 * MINUTE, 120))
    assert run(*later, state=loaded)[1] == run(*later, state=state)[1]


def test_state_of_a_node_with_20_pods_after_a_day_fits_4_kib():
    names, decisions, rng = twenty_pods()
    state, out = run(node_event(cpu=32_000, memory=128 * Gi, labels=LABELS), *bound(*decisions),
                     *day_of_metrics(names, rng, NOW, 26 * 60))
    size = len(statecodec.dump_state(state))
    print(f"\nstate of a node with 20 pods (12 prod) after 26 h of 1-min NodeMetrics: {size} bytes")
    assert size <= 4096
    assert out[-1]["allocatable"][MID_MEMORY] > 0, "after the cold start the profile predicts ProdReclaimable"


def test_kinds_the_aggregate_does_not_handle_are_not_recorded():
    state, _ = run(node_event(), *bound(*FIXTURE_A_PODS), metric_event())
    config_event = event("ConfigMap", "koordinator-system/slo-controller-config", None)
    assert run(config_event, state=state) == (state, [])
    disabled = parse_slo_config(configmap({"enable": False}), ENABLED)
    _, out = aggregate.recalculate(state, disabled, NOW + 1000, config_event.causation, DEFAULT_SETTINGS)
    assert [o["message"] for o in node_resources(out)] == [DISABLED_MESSAGE]


@pytest.mark.parametrize("events", [
    pytest.param([], id="initial_state"),
    pytest.param([node_event()], id="node_only"),
    pytest.param([metric_event(), *bound(*FIXTURE_A_PODS)], id="metric_and_pods_before_the_node"),
    pytest.param([node_event(), *bound(*FIXTURE_A_PODS), metric_event(prod_reclaimable={"cpu": 1, "memory": 2}),
                  event("NodeMetric", NODE, metric_record(NODE, pods=[pod_usage("x", "dangling", 5, 6, "koord-batch")],
                                                          host_apps=[{"name": "h", "priority": None, "qos": None,
                                                                      "usage": {"cpu": 1}}]))],
                 id="dangling_metric_and_host_app"),
])
def test_dump_and_load_are_exact(events):
    state, _ = run(*events)
    loaded = statecodec.load_state(statecodec.dump_state(state))
    assert statecodec.dump_state(loaded) == statecodec.dump_state(state)
    assert (loaded.sources, loaded.node, dict(loaded.pods), loaded.metric, loaded.published) == \
        (state.sources, state.node, dict(state.pods), state.metric, state.published)


def test_plugin_calls_are_counted_and_timed_per_plugin_stage_and_result():
    """Two calculations (the Node, then the NodeMetric) and one node-QoS plan (the NodeMetric)."""
    stats = PluginStats()
    run(node_event(annotations={"node.koordinator.sh/cpu-basic-info": "not json"}), *bound(*FIXTURE_A_PODS),
        metric_event(), config=parse_slo_config(configmap({"enable": True}, **{"cpu-normalization-config":
                                                                              '{"enable": true}'}), DEFAULT_CONFIG),
        stats=stats)
    counts = {key: count for key, (count, seconds) in stats.calls.items()}
    assert counts == {
        (cpunormalization.NAME, "Calculate", "error"): 2, (midresource.NAME, "Calculate", "success"): 2,
        (batchresource.NAME, "Calculate", "success"): 2, (batchresource.NAME, "PreUpdate", "skip"): 2,
        (gpudeviceresource.NAME, "Calculate", "success"): 2, (rdmadeviceresource.NAME, "Calculate", "success"): 2,
        **{(name, "Plan", "success"): 1 for name in qos_registry.ORDER}}
    assert all(seconds >= 0 for count, seconds in stats.calls.values())


def device_event(devices: list[dict] | None, labels: dict | None = None):
    record = None if devices is None else {"metadata": {"name": NODE, "labels": labels or {}}, "manifest": "{}",
                                           "devices": devices}
    return event("Device", NODE, record)


GPU = {"type": "gpu", "health": True, "minor": 0, "resources": {"koordinator.sh/gpu-core": 100,
                                                                "koordinator.sh/gpu-memory": 80 * Gi,
                                                                "koordinator.sh/gpu-memory-ratio": 100}}
RDMA_DEVICE = {"type": "rdma", "health": True, "minor": 0, "resources": {}}


def test_a_device_publishes_its_gpu_and_rdma_resources_and_labels_and_its_deletion_removes_them():
    state, out = run(node_event(), device_event([GPU, {**GPU, "minor": 1}, RDMA_DEVICE],
                                                {"node.koordinator.sh/gpu-model": "A100", "team": "x"}))
    published = out[-1]
    assert {k: v for k, v in published["allocatable"].items() if k.startswith("koordinator.sh/")} == {
        "koordinator.sh/gpu": 200, "koordinator.sh/gpu-core": 200, "koordinator.sh/gpu-memory": 160 * Gi,
        "koordinator.sh/gpu-memory-ratio": 200, "koordinator.sh/rdma": 100}
    assert published["capacity"]["koordinator.sh/gpu-core"] == 200
    assert published["labels"] == {"node.koordinator.sh/gpu-model": "A100"}
    codec.encode("NodeResource", published)
    assert run(device_event([GPU, {**GPU, "minor": 1}, RDMA_DEVICE], {"node.koordinator.sh/gpu-model": "A100"}),
               state=state)[1] == [], "an unchanged Device publishes nothing"
    loaded = statecodec.load_state(statecodec.dump_state(state))
    assert loaded.device == state.device and statecodec.dump_state(loaded) == statecodec.dump_state(state)
    _, out = run(device_event(None), state=state)
    assert not [k for k in out[-1]["allocatable"] if k.startswith("koordinator.sh/")]
