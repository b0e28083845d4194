"""The publisher through broker outages: bounded buffer, oldest metrics dropped first, state kept, reconnects."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import REGISTRY

from node_agent.publisher import Backoff, Outgoing, Publisher

NAMES = {"nodes": "koord.nodes", "nodemetrics": "koord.nodemetrics", "devices": "koord.devices",
         "actuation-acks": "koord.actuation-acks"}
FAST = Backoff(initial_s=0.001, maximum_s=0.005)


class FakeBroker:
    """Producers that fail to start while ``down``; a send fails while ``down`` too."""

    def __init__(self, down: bool = False) -> None:
        self.down = down
        self.delivered: list[tuple[str, bytes, bytes]] = []
        self.starts = 0

    def producer(self):
        broker = self

        class Producer:
            async def start(self):
                broker.starts += 1
                if broker.down:
                    raise ConnectionError("broker down")

            async def send(self, topic, key, value):
                if broker.down:
                    raise ConnectionError("broker down")
                broker.delivered.append((topic, key, value))
                future = asyncio.get_running_loop().create_future()
                future.set_result(None)
                return future

            async def stop(self):
                pass
        return Producer()


def metric(n: int) -> Outgoing:
    return Outgoing("nodemetrics", "n1", f"m{n}".encode())


def dropped(topic="nodemetrics") -> float:
    return REGISTRY.get_sample_value("koord_node_agent_dropped_records_total", {"topic": topic}) or 0.0


def test_full_buffer_drops_the_oldest_metrics_and_never_state():
    publisher = Publisher("unused:9092", NAMES, max_buffered_metrics=3, producer_factory=FakeBroker().producer)
    before = dropped()
    publisher.submit(Outgoing("nodes", "n1", b"node-v1"), droppable=False)
    for n in range(5):
        publisher.submit(metric(n), droppable=True)
    publisher.submit(Outgoing("nodes", "n1", b"node-v2"), droppable=False)
    state, samples = publisher._take()
    assert [o.value for _, o in state] == [b"node-v2"]
    assert [o.value for o in samples] == [b"m2", b"m3", b"m4"]
    assert publisher.dropped == 2 and dropped() - before == 2


def test_acks_with_their_own_identity_are_not_coalesced():
    publisher = Publisher("unused:9092", NAMES, producer_factory=FakeBroker().producer)
    for decision in ("d1", "d2"):
        publisher.submit(Outgoing("actuation-acks", "n1", decision.encode()), droppable=False, identity=decision)
    assert publisher.pending == 2


def test_outage_then_recovery_delivers_state_first_and_counts_drops():
    async def scenario():
        broker = FakeBroker(down=True)
        publisher = Publisher("unused:9092", NAMES, max_buffered_metrics=2, producer_factory=broker.producer,
                              backoff=FAST, seed=1)
        stop = asyncio.Event()
        task = asyncio.create_task(publisher.run(stop))
        publisher.submit(Outgoing("nodes", "n1", b"node"), droppable=False)
        for n in range(4):
            publisher.submit(metric(n), droppable=True)
        await asyncio.sleep(0.05)
        assert broker.starts >= 2 and not broker.delivered  # reconnecting with backoff
        broker.down = False
        assert await publisher.flushed(timeout_s=2)
        stop.set()
        await task
        return broker, publisher
    broker, publisher = asyncio.run(scenario())
    assert [value for _, _, value in broker.delivered] == [b"node", b"m2", b"m3"]
    assert broker.delivered[0][0] == "koord.nodes" and publisher.dropped == 2


def test_a_failed_send_puts_the_batch_back_in_order():
    async def scenario():
        broker = FakeBroker()
        publisher = Publisher("unused:9092", NAMES, producer_factory=broker.producer, backoff=FAST)
        producer = broker.producer()
        await producer.start()
        for n in range(3):
            publisher.submit(metric(n), droppable=True)
        broker.down = True
        assert not await publisher._send_batch(producer)
        broker.down = False
        assert await publisher._send_batch(producer)
        return broker
    assert [value for _, _, value in asyncio.run(scenario()).delivered] == [b"m0", b"m1", b"m2"]


@pytest.mark.parametrize("attempt, low, high", [(0, 0.4, 0.6), (3, 3.2, 4.8), (20, 24.0, 36.0)],
                         ids=["first", "fourth", "capped"])
def test_backoff_grows_and_is_capped(attempt, low, high):
    import random
    assert low <= Backoff().delay(attempt, random.Random(0)) <= high


def test_unknown_topic_is_refused_at_submit():
    with pytest.raises(KeyError, match="not in the topology"):
        Publisher("unused:9092", NAMES).submit(Outgoing("nowhere", "k", b""), droppable=True)


def test_the_connected_gauge_follows_the_broker():
    def connected() -> float | None:
        return REGISTRY.get_sample_value("koord_node_agent_broker_connected", {"bootstrap": "gauge:9092"})

    async def scenario():
        broker = FakeBroker(down=True)
        publisher = Publisher("gauge:9092", NAMES, producer_factory=broker.producer, backoff=FAST)
        assert connected() == 0
        stop = asyncio.Event()
        task = asyncio.create_task(publisher.run(stop))
        publisher.submit(metric(0), droppable=True)
        await asyncio.sleep(0.02)
        assert connected() == 0
        broker.down = False
        assert await publisher.flushed(timeout_s=2) and connected() == 1
        stop.set()
        await task
    asyncio.run(scenario())
