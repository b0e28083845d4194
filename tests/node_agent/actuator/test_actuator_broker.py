"""The actuator's Kafka loop on both real brokers (Tansu and Kafka): reads only its node's partition and key, applies,
acknowledges, resumes after a restart without applying anything twice, is not wedged by a poisoned actuation, and
starts afresh on a new incarnation of the actuations topic."""

from __future__ import annotations

import asyncio
import logging
import os
import time

import pytest

from node_agent.actuator.actuator import Actuator, OffsetStore, run_actuator
from node_agent.actuator.sequences import SequenceStore
from node_agent.actuator.verify import Verifier
from node_agent.publisher import Publisher
from streams import kafka
from streams.broker import local
from streams.broker.local import create_topics
from streams.schemas import codec
from streams.topology import load_topology
from tests.node_agent.actuator.conftest import NODE, POD_UID, CgroupTree, actuation, make_actuator

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


def _node_actuator(node: str, tree: CgroupTree, state) -> Actuator:
    """An actuator for ``node`` (each test below has its own node, so none reads another test's records)."""
    return Actuator(node, {"cgroup": tree.backend()}, Verifier(node, None, SequenceStore(state)),
                    clock=lambda: 1_700_000_000.5)


def _produce(address: str, node: str, *records: dict) -> None:
    asyncio.run(kafka.produce(address, [(NAMES["actuations"], node, codec.encode("Actuation", r)) for r in records]))


def test_a_poisoned_actuation_is_refused_and_the_next_one_applied(bootstrap, tmp_path):
    """A symlinked target file (pointing out of the tree) once made the loop retry that record forever;
    now it is acknowledged as refused and the node's next actuation is applied, through the real loop."""
    node, tree, state = "poisoned-node", CgroupTree(tmp_path / "cgroup"), tmp_path / "state"
    (tmp_path / "passwd").write_text("root:x:0:0\n")
    quota = tree.path("cpu", "kubepods/besteffort", "cpu.cfs_quota_us")
    quota.unlink()
    os.symlink(tmp_path / "passwd", quota)
    tree.pod(POD_UID)
    _produce(bootstrap, node,
             actuation({"cpu.cfs_quota_us": "50000"}, node=node, sequence=1, decision="poison"),
             actuation({"cpu.shares": "512"}, node=node, kind="pod", target=POD_UID, sequence=2, decision="after"))
    asyncio.run(_run(_node_actuator(node, tree, state), bootstrap, state, 4))
    acks = {a["actuationId"]: a for a in asyncio.run(_acks(bootstrap, 100, timeout_s=5)) if a["nodeName"] == node}
    assert acks["poison"]["applied"] is False and acks["poison"]["error"].startswith("rejected (bad-target)")
    assert acks["after"]["applied"] is True and acks["after"]["status"] == "applied"
    assert tree.read("cpu", tree.layout.pod_dir(POD_UID, "BestEffort"), "cpu.shares") == "512"
    assert (tmp_path / "passwd").read_text() == "root:x:0:0\n"


def test_a_new_broker_incarnation_discards_the_saved_offset_and_sequences(bootstrap, broker_kind, tmp_path,
                                                                          caplog):
    """State saved against one broker (offset 3, sequence 3) does not hold back a new broker's actuations,
    whose offsets and sequences start again."""
    node, tree, state = "incarnation-node", CgroupTree(tmp_path / "cgroup"), tmp_path / "state"
    _produce(bootstrap, node, *(actuation({"cpu.cfs_quota_us": str(10_000 * s)}, node=node, sequence=s,
                                          decision=f"old-{s}") for s in (1, 2, 3)))
    asyncio.run(_run(_node_actuator(node, tree, state), bootstrap, state, 4))
    assert tree.read("cpu", "kubepods/besteffort", "cpu.cfs_quota_us") == "30000"
    with local.start(broker_kind, tmp_path / "new-broker", TOPOLOGY) as broker:
        _produce(broker.bootstrap, node, actuation({"cpu.cfs_quota_us": "70000"}, node=node, sequence=1,
                                                   decision="new-1"))
        with caplog.at_level(logging.WARNING, logger="node_agent.actuator.actuator"):
            asyncio.run(_run(_node_actuator(node, tree, state), broker.bootstrap, state, 4))
        acks = [a for a in asyncio.run(_acks(broker.bootstrap, 1)) if a["nodeName"] == node]
    assert [(a["actuationId"], a["applied"]) for a in acks] == [("new-1", True)]
    assert tree.read("cpu", "kubepods/besteffort", "cpu.cfs_quota_us") == "70000"
    assert [r.message for r in caplog.records if "new incarnation" in r.message][0].startswith(
        f"actuations topic {NAMES['actuations']} is a new incarnation")


def test_a_running_agent_follows_the_actuations_topic_re_created(broker_kind, tmp_path, caplog):
    """While the loop runs, the actuations topic is deleted and created again (new topic id, offsets from 0):
    the periodic incarnation check discards the offset and sequences and the new topic's sequence 1 applies."""
    node, tree, state = "recreated-node", CgroupTree(tmp_path / "cgroup"), tmp_path / "state"
    topic = NAMES["actuations"]
    with local.start(broker_kind, tmp_path / "broker", TOPOLOGY) as broker:
        _produce(broker.bootstrap, node, *(actuation({"cpu.cfs_quota_us": str(10_000 * s)}, node=node, sequence=s,
                                                     decision=f"old-{s}") for s in (1, 2)))

        async def scenario() -> None:
            stop = asyncio.Event()
            publisher = Publisher(broker.bootstrap, NAMES)
            tasks = [asyncio.create_task(publisher.run(stop)),
                     asyncio.create_task(run_actuator(_node_actuator(node, tree, state), publisher, broker.bootstrap,
                                                      NAMES, stop, OffsetStore(state), incarnation_check_s=1.0))]
            try:
                await _until(lambda: tree.read("cpu", "kubepods/besteffort", "cpu.cfs_quota_us") == "20000")
                async with kafka.admin_client(broker.bootstrap) as admin:
                    await admin.delete_topics([topic])
                    await _until_async(lambda: _topic_gone(admin, topic))
                    await create_topics(broker.bootstrap, TOPOLOGY)
                await kafka.produce(broker.bootstrap, [(topic, node, codec.encode("Actuation", actuation(
                    {"cpu.cfs_quota_us": "70000"}, node=node, sequence=1, decision="new-1")))])
                await _until(lambda: tree.read("cpu", "kubepods/besteffort", "cpu.cfs_quota_us") == "70000")
            finally:
                await publisher.flushed(10)
                stop.set()
                await asyncio.gather(*tasks)

        with caplog.at_level(logging.WARNING, logger="node_agent.actuator.actuator"):
            asyncio.run(scenario())
    assert any(r.message.startswith(f"actuations topic {topic} is a new incarnation") for r in caplog.records)


async def _until(condition, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.2)


async def _until_async(condition, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not await condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.2)


async def _topic_gone(admin, topic: str) -> bool:
    return topic not in await admin.list_topics()
