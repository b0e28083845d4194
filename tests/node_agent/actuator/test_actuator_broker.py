"""The actuator's Kafka loop on both real brokers (Tansu and Kafka): reads only its node's partition and key, applies,
acknowledges, resumes after a restart without applying anything twice."""

from __future__ import annotations

import asyncio
import time

import pytest

from node_agent.actuator.actuator import OffsetStore, run_actuator
from node_agent.publisher import Publisher
from streams import kafka
from streams.broker import local
from streams.schemas import codec
from streams.topology import load_topology
from tests.node_agent.actuator.conftest import NODE, CgroupTree, actuation, make_actuator

pytestmark = pytest.mark.integration
TOPOLOGY = load_topology()
NAMES = TOPOLOGY.names()


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory, broker_kind):
    home = tmp_path_factory.mktemp(f"actuator-broker-{broker_kind}")
    with local.start(broker_kind, home, TOPOLOGY) as broker:
        yield broker.bootstrap


async def _acks(address: str, count: int, timeout_s: float = 30.0) -> list[dict]:
    consumer = kafka.consumer(address, [NAMES["actuation-acks"]], group_id=None, from_beginning=True)
    await consumer.start()
    found, deadline = [], time.monotonic() + timeout_s
    try:
        while len(found) < count and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                found += [codec.decode(r.value)[1] for r in records]
    finally:
        await consumer.stop()
    return found


async def _run(actuator, address, state, seconds: float) -> None:
    stop = asyncio.Event()
    publisher = Publisher(address, NAMES)
    tasks = [asyncio.create_task(publisher.run(stop)),
             asyncio.create_task(run_actuator(actuator, publisher, address, NAMES, stop, OffsetStore(state)))]
    await asyncio.sleep(seconds)
    await publisher.flushed(10)
    stop.set()
    await asyncio.gather(*tasks)


def test_applies_its_own_actuations_and_resumes_after_restart(bootstrap, tmp_path):
    tree, state = CgroupTree(tmp_path / "cgroup"), tmp_path / "state"
    records = [(NAMES["actuations"], NODE, codec.encode("Actuation", actuation(
                   {"cpu.cfs_quota_us": "50000"}, sequence=1, decision="mine-1"))),
               (NAMES["actuations"], "node-b", codec.encode("Actuation", actuation(
                   {"cpu.cfs_quota_us": "70000"}, node="node-b", sequence=2, decision="theirs"))),
               (NAMES["actuations"], NODE, codec.encode("Actuation", actuation(
                   {"cpu.cfs_quota_us": "50000"}, sequence=1, decision="replay")))]
    asyncio.run(kafka.produce(bootstrap, records))
    asyncio.run(_run(make_actuator(tree, state_dir=state), bootstrap, state, 4))
    acks = asyncio.run(_acks(bootstrap, 2))
    assert [(a["actuationId"], a["applied"]) for a in acks] == [("mine-1", True), ("replay", False)]
    assert tree.read("cpu", "kubepods/besteffort", "cpu.cfs_quota_us") == "50000"

    asyncio.run(kafka.produce(bootstrap, [(NAMES["actuations"], NODE, codec.encode("Actuation", actuation(
        {"cpu.cfs_quota_us": "80000"}, sequence=3, decision="mine-3")))]))
    asyncio.run(_run(make_actuator(tree, state_dir=state), bootstrap, state, 4))
    acks = asyncio.run(_acks(bootstrap, 3))
    assert [a["actuationId"] for a in acks] == ["mine-1", "replay", "mine-3"]  # nothing re-read after restart
    assert tree.read("cpu", "kubepods/besteffort", "cpu.cfs_quota_us") == "80000"
