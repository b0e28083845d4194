"""The cadence loop: Node and NodeResourceTopology once (again only on change), a NodeMetric per report, a failing
round survived."""

import asyncio

from node_agent.agent import NodeAgent
from node_agent.collectors.gpu import NVML
from node_agent.run import follow_pods, run_agent
from streams.schemas import codec
from tests.streams.fakeconsumer import OnePollConsumer, message
from tests.streams.noderesource.support import configmap


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


def test_follow_pods_feeds_pods_tombstones_and_decisions_and_skips_what_does_not_decode(monkeypatch):
    seen = []
    pods = type("Pods", (), {"update": lambda self, key, value: seen.append(("pod", key, value)),
                             "apply_decision": lambda self, value: seen.append(("decision", value))})()
    good = codec.encode("ConfigMap", configmap())
    value = codec.decode(good)[1]
    messages = [message("pods", 0, good, b"ns/a"), message("pods", 1, None, b"ns/b"), message("pods", 2, b"bad"),
                message("decisions", 0, good), message("decisions", 1, None)]

    async def main():
        stop = asyncio.Event()
        monkeypatch.setattr("streams.kafka.consumer", lambda *args, **kwargs: OnePollConsumer(messages, stop))
        await follow_pods(type("Agent", (), {"pods": pods})(), "b:9", {"pods": "pods", "decisions": "decisions"}, stop)

    asyncio.run(main())
    assert seen == [("pod", "ns/a", value), ("pod", "ns/b", None), ("decision", value)]
