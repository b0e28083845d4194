"""On both real brokers (Tansu and Kafka): the simulator acknowledges actuations, the agent publishes, the
publisher rides out an outage with real aiokafka clients."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import urllib.request

import pytest
from aiokafka import AIOKafkaProducer

from node_agent.publisher import Backoff, Publisher
from streams import kafka
from streams.broker import embedded, local
from streams.schemas import codec
from streams.topology import load_topology

pytestmark = pytest.mark.integration
TOPOLOGY = load_topology()
NAMES = TOPOLOGY.names()


@pytest.fixture(scope="module")
def broker(tmp_path_factory, broker_kind):
    home = tmp_path_factory.mktemp(f"node-agent-broker-{broker_kind}")
    with local.start(broker_kind, home, TOPOLOGY) as started:
        yield started.bootstrap, home, started.env()


def koord(broker, command: str, *args: str) -> subprocess.Popen:
    _, home, broker_env = broker
    module, name = {"simulate": ("streams.cli.simulate", "simulate"),
                    "node-agent": ("streams.cli.nodeagent", "node_agent")}[command]
    env = {**os.environ, **broker_env, "KOORD_HOME": str(home)}
    return subprocess.Popen([sys.executable, "-c", f"from {module} import {name}; {name}()", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


async def read(bootstrap: str, topic_ids: list[str], until, timeout_s: float = 30.0) -> list[tuple[str, dict]]:
    """Decoded records of ``topic_ids`` until ``until(records)`` is true."""
    consumer = kafka.consumer(bootstrap, [NAMES[t] for t in topic_ids], group_id=None, from_beginning=True)
    await consumer.start()
    found: list[tuple[str, dict]] = []
    deadline = time.monotonic() + timeout_s
    try:
        while not until(found) and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                found += [codec.decode(r.value) for r in records if r.value is not None]
    finally:
        await consumer.stop()
    return found


def test_simulator_acknowledges_actuations_with_the_values_read_back(broker):
    bootstrap, _, _ = broker
    sim = koord(broker, "simulate", "--nodes", "2", "--pods-per-node", "2", "--speed", "5",
                "--duration", "100")
    try:
        asyncio.run(read(bootstrap, ["nodes"], lambda found: len(found) >= 2))
        actuation = {"decisionId": "it-d1", "nodeName": "sim-node-001", "sequence": 1, "targetKind": "PodCgroup",
                     "targetId": "pod-1", "mechanism": "cgroup", "values": {"cpu.cfs_quota_us": "50000"},
                     "signature": None, "timestamp": 1, "causation": {
                         "inboxTopic": "koord.inbox.node", "inboxPartition": 0, "inboxOffset": 0,
                         "sourceTopic": "koord.nodemetrics", "sourcePartition": 0, "sourceOffset": 0}}
        asyncio.run(kafka.produce(bootstrap, [(NAMES["actuations"], "sim-node-001",
                                               codec.encode("Actuation", actuation))]))
        acks = asyncio.run(read(bootstrap, ["actuation-acks"], lambda found: found))
        metrics = asyncio.run(read(bootstrap, ["nodemetrics"], lambda found: len(found) >= 2))
    finally:
        sim.terminate()
        output = sim.communicate(timeout=30)[0]
    assert acks, f"no ActuationAck; simulator said:\n{output[-2000:]}"
    schema, ack = acks[0]
    assert (schema, ack["actuationId"], ack["applied"], ack["values"]) == (
        "ActuationAck", "it-d1", True, {"cpu.cfs_quota_us": "50000"})
    assert {m["metadata"]["name"] for _, m in metrics} <= {"sim-node-000", "sim-node-001"}


def test_node_agent_publishes_node_and_node_metric(broker):
    bootstrap, _, _ = broker
    metrics_port = embedded.free_loopback_port()
    agent = koord(broker, "node-agent", "--node-name", "it-agent", "--collect-interval", "0.25",
                  "--report-interval", "0.5", "--metrics-port", str(metrics_port))
    try:
        found = asyncio.run(read(bootstrap, ["nodes", "nodemetrics"], lambda found: {
            s for s, r in found if r["metadata"]["name"] == "it-agent"} == {"Node", "NodeMetric"}))
        series = scrape(metrics_port)
        assert series["koord_node_agent_published_records_total"] > 0
        assert "koord_node_agent_collect_seconds" in series
    finally:
        agent.terminate()
        output = agent.communicate(timeout=30)[0]
    kinds = {schema for schema, record in found if record["metadata"]["name"] == "it-agent"}
    assert kinds == {"Node", "NodeMetric"}, output[-2000:]


def scrape(port: int) -> dict[str, float]:
    """Sample name -> summed value from a Prometheus endpoint on this machine."""
    from prometheus_client.parser import text_string_to_metric_families

    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    series: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            series[sample.name] = series.get(sample.name, 0.0) + sample.value
    return series


def test_publisher_buffers_through_an_outage_and_drops_oldest_metrics(broker):
    bootstrap, _, _ = broker
    dead = f"127.0.0.1:{embedded.free_loopback_port()}"
    live = {"on": False}

    def factory():
        return AIOKafkaProducer(**kafka.client_settings(bootstrap if live["on"] else dead), acks="all",
                                request_timeout_ms=2000)

    async def scenario():
        publisher = Publisher(bootstrap, NAMES, max_buffered_metrics=2, producer_factory=factory,
                              backoff=Backoff(initial_s=0.05, maximum_s=0.2), send_timeout_s=3)
        stop = asyncio.Event()
        task = asyncio.create_task(publisher.run(stop))
        publisher.submit_manifest({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "outage-node"}})
        for n in range(4):
            publisher.submit_manifest({"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
                                       "metadata": {"name": "outage-node"},
                                       "status": {"nodeMetric": {"nodeUsage": {"resources": {"cpu": f"{n + 1}"}}}}})
        await asyncio.sleep(1.0)
        assert not publisher.connected and publisher.pending == 3
        live["on"] = True
        assert await publisher.flushed(timeout_s=30)
        stop.set()
        await task
        return publisher
    publisher = asyncio.run(scenario())
    assert publisher.dropped == 2
    found = asyncio.run(read(bootstrap, ["nodes", "nodemetrics"], lambda found: len(
        [r for _, r in found if r["metadata"]["name"] == "outage-node"]) >= 3))
    mine = [(schema, record) for schema, record in found if record["metadata"]["name"] == "outage-node"]
    assert [s for s, _ in mine].count("Node") == 1
    assert sorted(r["nodeUsage"]["cpu"] for s, r in mine if s == "NodeMetric") == [3000, 4000]
