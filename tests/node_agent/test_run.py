"""The cadence loop: Node and NodeResourceTopology once (again only on change), a NodeMetric per report, a failing
round survived."""

import asyncio
import tempfile

import pytest

from node_agent.agent import NodeAgent
from node_agent.collectors.gpu import NVML
from node_agent.publisher import encode_manifest
from node_agent.run import STAGE, follow_pods, run_agent
from streams.schemas import codec
from tests.streams.fakeconsumer import OnePollConsumer, message
from tests.streams.noderesource.support import configmap, decision


class Recorder:
    def __init__(self):
        self.kinds = []

    def submit_manifest(self, manifest, source="<test>"):
        self.kinds.append(manifest["kind"])


def run_for(agent, seconds):
    async def main():
        stop = asyncio.Event()
        asyncio.get_running_loop().call_later(seconds, stop.set)
        recorder = Recorder()
        await run_agent(agent, recorder, stop)
        return recorder.kinds
    return asyncio.run(main())


def test_node_once_then_node_metrics_at_the_report_interval(fake_host):
    agent = NodeAgent(fake_host.settings(collect_interval_s=0.05, report_interval_s=0.2), nvml=NVML(module=None))
    kinds = run_for(agent, 1.0)
    assert kinds[:2] == ["Node", "NodeResourceTopology"] and kinds.count("Node") == 1 and "Device" not in kinds
    assert kinds.count("NodeResourceTopology") == 1
    assert 3 <= kinds.count("NodeMetric") <= 5


def test_a_failing_round_does_not_stop_the_loop(fake_host, monkeypatch):
    agent = NodeAgent(fake_host.settings(collect_interval_s=0.05, report_interval_s=0.1), nvml=NVML(module=None))
    calls = {"n": 0}
    collect = agent.collect

    def flaky():
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("odd host")
        return collect()
    monkeypatch.setattr(agent, "collect", flaky)
    kinds = run_for(agent, 0.6)
    assert calls["n"] > 5 and "NodeMetric" in kinds


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "ns", "uid": "u-a"},
       "spec": {"containers": [{"name": "c", "image": "i"}]}}


class Letters:
    """A publisher that keeps what is submitted to it."""

    def __init__(self):
        self.records = []

    def submit_record(self, topic_id, key, schema, record, **kwargs):
        self.records.append((topic_id, key, schema, record))


def follow(monkeypatch, messages, publisher=None):
    """What ``follow_pods`` hands a pod directory from one poll of ``messages``, in a home without a record key
    (unsigned decisions are taken)."""
    monkeypatch.delenv("KOORD_RECORD_KEY", raising=False)
    monkeypatch.setenv("KOORD_HOME", tempfile.mkdtemp())
    seen = []
    pods = type("Pods", (), {"update": lambda self, key, value: seen.append(("pod", key, value)),
                             "apply_decision": lambda self, value: seen.append(("decision", value))})()

    async def main():
        stop = asyncio.Event()
        monkeypatch.setattr("streams.kafka.consumer", lambda *args, **kwargs: OnePollConsumer(messages, stop))
        await follow_pods(type("Agent", (), {"pods": pods})(), "b:9", {"pods": "pods", "decisions": "decisions"},
                          stop, publisher)

    asyncio.run(main())
    return seen


def test_follow_pods_feeds_pods_tombstones_and_decisions_and_passes_over_evictions(monkeypatch):
    _, pod = encode_manifest(POD)
    placed = codec.encode("SchedulingDecision", decision("a"))
    placed_record = codec.decode(placed)[1]
    eviction = codec.encode("Eviction", {key: placed_record[key] for key in
                                         ("decisionId", "nodeName", "pod", "causation", "timestamp")}
                            | {"reason": "Preempted", "message": ""})
    letters = Letters()
    seen = follow(monkeypatch, [message("pods", 0, pod.value, b"ns/a"), message("pods", 1, None, b"ns/b"),
                                message("decisions", 0, placed), message("decisions", 1, None),
                                message("decisions", 2, eviction)], letters)
    assert seen == [("pod", "ns/a", codec.decode(pod.value)[1]), ("pod", "ns/b", None), ("decision", placed_record)]
    assert letters.records == []


@pytest.mark.parametrize("bad, reason", [
    (message("pods", 0, b"garbage", b"ns/x"), "CodecError"),
    (message("pods", 0, codec.encode("ConfigMap", configmap()), b"ns/x"), "expected Pod on pods, got ConfigMap"),
    (message("decisions", 0, codec.encode("ConfigMap", configmap())), "expected SchedulingDecision or Eviction"),
    (message("pods", 0, None, b"\xff\xfe"), "UnicodeDecodeError"),
], ids=["undecodable", "wrong-schema-on-pods", "wrong-schema-on-decisions", "non-utf8-key"])
def test_a_record_the_pod_follower_cannot_take_is_a_dead_letter_and_the_next_is_read(monkeypatch, bad, reason):
    _, pod = encode_manifest(POD)
    letters = Letters()
    seen = follow(monkeypatch, [bad, message(bad.topic, 1, pod.value if bad.topic == "pods" else None, b"ns/a")],
                  letters)
    assert [kind for kind, *_ in seen] == (["pod"] if bad.topic == "pods" else [])
    [(topic_id, key, schema, letter)] = letters.records
    assert (topic_id, key, schema) == ("deadletters", f"{bad.topic}/0/0", "DeadLetter")
    assert reason in letter["reason"] and letter["stage"] == STAGE and letter["key"] == bad.key


def test_a_pod_record_the_directory_cannot_take_is_a_dead_letter(monkeypatch):
    letters = Letters()
    seen = []

    def update(self, key, value):
        if key == "ns/broken":
            raise KeyError("metadata")
        seen.append(key)
    pods = type("Pods", (), {"update": update, "apply_decision": lambda self, value: None})()
    _, pod = encode_manifest(POD)
    messages = [message("pods", 0, pod.value, b"ns/broken"), message("pods", 1, pod.value, b"ns/a")]

    async def main():
        stop = asyncio.Event()
        monkeypatch.setattr("streams.kafka.consumer", lambda *args, **kwargs: OnePollConsumer(messages, stop))
        await follow_pods(type("Agent", (), {"pods": pods})(), "b:9", {"pods": "pods", "decisions": "decisions"},
                          stop, letters)

    asyncio.run(main())
    assert seen == ["ns/a"] and "KeyError" in letters.records[0][3]["reason"]
