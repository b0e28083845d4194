"""Protection without Kafka on a fake tree with a fake clock: CPU suppress on the last stored config while the
stream is silent or unreachable, evictions only reported, a local sequence space, hand-back to the stream."""

from __future__ import annotations

import asyncio
import json

import pytest

from node_agent.actuator.protection import Protection, follow_configs, local_view
from streams.schemas import codec
from tests.streams.fakeconsumer import OnePollConsumer, message
from tests.node_agent.actuator.conftest import NODE, actuation, make_actuator
from tests.streams.noderesource.support import G, configmap, metric_record, node_record, pod_usage

BE_DIR = "kubepods/besteffort"
THRESHOLD = {"clusterStrategy": {"enable": True, "cpuSuppressThresholdPercent": 70, "cpuSuppressPolicy": "cfsQuota",
                                 "memoryEvictThresholdPercent": 80}}
CONFIG = configmap(**{"resource-threshold-config": json.dumps(THRESHOLD)})


def view(node_used=12_000, memory_used=10 * G):
    """TV-3-8: 16 cores, threshold 70, node 12, LS 8, BE 2 -> BE quota 120000 us."""
    ls, be = pod_usage("ns", "ls-pod", 8000, G), pod_usage("ns", "be-pod", 2000, 5 * G)
    ls.update(qos="LS", uid="aaaaaaaa-0000-0000-0000-00000000000a")
    be.update(qos="BE", uid="aaaaaaaa-0000-0000-0000-00000000000b")
    return local_view(node_record(NODE, cpu=16_000, memory=120 * G),
                      metric_record(NODE, node_usage={"cpu": node_used, "memory": memory_used}, pods=[ls, be]))


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def setup(v1_tree, tmp_path):
    clock = Clock()
    stream = make_actuator(v1_tree, state_dir=tmp_path / "state")
    protection = Protection(stream, tmp_path / "state", stale_after_s=30, clock=clock, wall_clock=lambda: 1.7e9)
    return v1_tree, stream, protection, clock, tmp_path / "state"


def quota(tree):
    return tree.read("cpu", BE_DIR, "cpu.cfs_quota_us")


def test_nothing_happens_while_the_stream_is_alive(setup):
    tree, _, protection, clock, _ = setup
    protection.on_config(CONFIG)
    clock.now += 29
    assert protection.tick(view()) == [] and quota(tree) == "-1" and not protection.active


def test_a_silent_stream_makes_the_agent_suppress_be_on_the_stored_config_even_after_a_restart(setup):
    tree, stream, protection, clock, state = setup
    protection.on_config(CONFIG)
    restarted = Protection(stream, state, stale_after_s=30, clock=clock, wall_clock=lambda: 1.7e9)
    clock.now += 31
    [ack] = restarted.tick(view())
    assert ack["applied"] and ack["actuationId"] == "local-1" and quota(tree) == "120000"
    assert restarted.active and restarted.tick(view()) == []  # unchanged plan: nothing written again


def test_an_unreachable_broker_protects_at_once(setup):
    tree, _, protection, _, _ = setup
    protection.on_config(CONFIG)
    protection.unreachable()
    assert protection.tick(view())[0]["applied"] and quota(tree) == "120000"


def test_local_sequences_never_touch_the_streams(setup):
    tree, stream, protection, clock, state = setup
    protection.on_config(CONFIG)
    stream_sequences = (state / "actuation-sequences.json").exists()
    clock.now += 31
    for used in (12_000, 13_000, 14_000):
        protection.tick(view(node_used=used))
    assert protection.actuator.verifier.sequences.last('["qos","BE","cgroup"]') == 3
    assert (state / "actuation-sequences.json").exists() == stream_sequences
    ack = stream.apply(actuation({"cpu.cfs_quota_us": "50000"}, sequence=1))
    assert ack["applied"] and quota(tree) == "50000"


def test_memory_eviction_is_reported_and_counted_not_carried_out(setup):
    _, _, protection, clock, _ = setup
    protection.on_config(CONFIG)
    clock.now += 31
    protection.tick(view(memory_used=100 * G))
    assert [(e["pod"]["name"], e["reason"]) for e in protection.evictions] == [("be-pod", "EvictPodByNodeMemoryUsage")]
    protection.tick(view(memory_used=100 * G))
    assert len(protection.evictions) == 1


def test_when_the_stream_is_back_its_values_are_restored_and_it_is_in_control(setup):
    tree, stream, protection, clock, _ = setup
    protection.on_config(CONFIG)
    record = actuation({"cpu.cfs_quota_us": "300000"}, sequence=7)
    protection.on_stream_ack(record, stream.apply(record))
    clock.now += 31
    protection.tick(view())
    assert quota(tree) == "120000"
    protection.contact()
    [ack] = protection.tick(view())
    assert ack["applied"] and quota(tree) == "300000" and not protection.active
    assert stream.apply(actuation({"cpu.cfs_quota_us": "250000"}, sequence=8))["applied"]
    assert quota(tree) == "250000"


def test_settings_the_stream_never_set_are_recovered_on_hand_back(setup):
    tree, _, protection, clock, _ = setup
    protection.on_config(CONFIG)
    clock.now += 31
    protection.tick(view())
    protection.contact()
    protection.tick(view())
    assert quota(tree) == "-1"


def test_follow_configs_keeps_the_configmaps_and_skips_the_rest(monkeypatch):
    seen = []
    messages = [message("configs", 0, codec.encode("ConfigMap", CONFIG)), message("configs", 1, None),
                message("configs", 2, b"bad")]

    async def main():
        stop = asyncio.Event()
        monkeypatch.setattr("streams.kafka.consumer", lambda *args, **kwargs: OnePollConsumer(messages, stop))
        await follow_configs(type("P", (), {"on_config": lambda self, value: seen.append(value)})(),
                             "b:9", {"configs": "configs"}, stop)

    asyncio.run(main())
    assert seen == [codec.decode(codec.encode("ConfigMap", CONFIG))[1]]
