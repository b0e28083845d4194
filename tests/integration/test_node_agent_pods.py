"""On both real brokers: the node agent's pod follower turns the records it cannot take into dead letters
and keeps following."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from node_agent.pods import PodDirectory
from node_agent.publisher import Publisher, encode_manifest
from node_agent.run import STAGE, follow_pods
from streams import kafka
from streams.broker import local
from streams.schemas import codec
from streams.topology import load_topology

pytestmark = pytest.mark.integration
TOPOLOGY = load_topology()
NAMES = TOPOLOGY.names()
NODE = "follower-node"


@pytest.fixture(scope="module")
def broker(tmp_path_factory, broker_kind):
    home = tmp_path_factory.mktemp(f"node-agent-pods-{broker_kind}")
    with local.start(broker_kind, home, TOPOLOGY) as started:
        yield started.bootstrap, started.env()


def pod(name: str) -> bytes:
    return encode_manifest({"apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": name, "namespace": "shop", "uid": f"uid-{name}"},
                            "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "i"}]}})[1].value


async def produce(bootstrap: str, records: list[tuple[str, bytes, bytes]]) -> None:
    async with kafka.producer(bootstrap) as producer:
        for topic_id, key, value in records:
            await producer.send_and_wait(NAMES[topic_id], value, key=key)


async def dead_letters(bootstrap: str, count: int, timeout_s: float = 30.0) -> list[dict]:
    consumer = kafka.consumer(bootstrap, [NAMES["deadletters"]], group_id=None, from_beginning=True)
    await consumer.start()
    found: list[dict] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(found) < count and time.monotonic() < deadline:
            for messages in (await consumer.getmany(timeout_ms=500)).values():
                found += [value for _, value in (codec.decode(m.value) for m in messages)
                          if value["stage"] == STAGE]
    finally:
        await consumer.stop()
    return found


def test_wrong_schema_and_non_utf8_key_records_are_dead_letters_and_the_next_pod_is_seen(broker, caplog,
                                                                                          monkeypatch):
    bootstrap, env = broker
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    agent = type("Agent", (), {"pods": PodDirectory(NODE)})()
    tick = codec.encode("Tick", {"timestamp": 0})

    async def scenario():
        await produce(bootstrap, [("pods", b"shop/wrong-schema", tick), ("pods", b"shop/\xff\xfe", pod("bad-key")),
                                  ("decisions", b"shop/pod-as-decision", pod("pod-as-decision")),
                                  ("pods", b"shop/good", pod("good"))])
        stop = asyncio.Event()
        publisher = Publisher(bootstrap, NAMES)
        submitted = []
        submit = publisher.submit_record
        monkeypatch.setattr(publisher, "submit_record", lambda *args, **kwargs: (submitted.append(args),
                                                                                submit(*args, **kwargs)))
        tasks = [asyncio.create_task(publisher.run(stop)),
                 asyncio.create_task(follow_pods(agent, bootstrap, NAMES, stop, publisher))]
        deadline = time.monotonic() + 30
        while (agent.pods.lookup("uid-good", "Burstable").name != "good" or len(submitted) < 3) \
                and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        assert await publisher.flushed(timeout_s=30)
        stop.set()
        await asyncio.gather(*tasks)

    with caplog.at_level(logging.WARNING, logger="node_agent.run"):
        asyncio.run(scenario())
    assert agent.pods.lookup("uid-good", "Burstable").namespace == "shop"
    assert "reading pods failed" not in caplog.text
    letters = {letter["key"]: letter["reason"] for letter in asyncio.run(dead_letters(bootstrap, 3))}
    assert letters.keys() == {b"shop/wrong-schema", b"shop/\xff\xfe", b"shop/pod-as-decision"}
    assert "expected Pod on koord.pods, got Tick" in letters[b"shop/wrong-schema"]
    assert "UnicodeDecodeError" in letters[b"shop/\xff\xfe"]
    assert "got Pod" in letters[b"shop/pod-as-decision"]
