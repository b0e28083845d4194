"""Watch events in batches: the first waited for, then those that arrived meanwhile (at most ``limit``), an
error after the events before it; checkpointed once per batch, the last event of a key deciding."""

import asyncio

import pytest

from streams.bridge.checkpoint import Checkpoint
from streams.bridge.config import BridgeConfig
from streams.bridge.convert import PUBLISHED_BY
from streams.bridge.reflector import Reflector, batches
from streams.bridge.resources import WATCHED
from streams.bridge.view import ClusterView
from tests.streams.bridge.test_refusal import TOPICS, Api, Producer, _pod

PODS = next(r for r in WATCHED if r.kind == "Pod")


async def collect(events, limit: int) -> list:
    found = []
    async for batch in batches(events, limit):
        found.append(batch)
        await asyncio.sleep(0.01)
    return found


def test_events_that_arrived_meanwhile_come_together():
    async def events():
        for index in range(7):
            yield index
        await asyncio.sleep(0.05)
        yield 7

    found = asyncio.run(collect(events(), 3))
    assert [e for batch in found for e in batch] == list(range(8))
    assert max(len(batch) for batch in found) == 3 and found[-1] == [7]


def test_an_error_comes_after_the_events_before_it():
    async def events():
        yield "a"
        yield "b"
        raise RuntimeError("410 Gone")

    got = []

    async def run():
        async for batch in batches(events(), 10):
            got.extend(batch)
    with pytest.raises(RuntimeError, match="410 Gone"):
        asyncio.run(run())
    assert got == ["a", "b"]


def test_a_batch_is_produced_then_checkpointed_once_and_the_last_event_of_a_key_wins(tmp_path):
    producer = Producer()
    reflector = Reflector(PODS, Api(), producer, TOPICS, Checkpoint(tmp_path / "checkpoint.db"), ClusterView(),
                          BridgeConfig(kubeconfig=None))
    gone = _pod("gone", "9")
    asyncio.run(reflector.apply([("ADDED", _pod("web", "5")), ("ADDED", _pod("gone", "6")),
                                 ("MODIFIED", _pod("web", "7")), ("DELETED", gone), ("BOOKMARK", _pod("x", "10"))]))
    assert [(key, value is None) for _, key, value in producer.sent] == [
        (b"default/web", False), (b"default/gone", False), (b"default/web", False), (b"default/gone", True)]
    assert reflector.checkpoint.known("pods") == {"default/web": "7"}
    assert reflector.checkpoint.cursor("pods") == "10"
    assert list(reflector.view.pods) == ["default/web"]


def test_what_koordstream_published_itself_is_neither_mirrored_nor_tombstoned(tmp_path):
    """The node agent's NodeMetric and Device (annotated ``koordstream.io/published-by``) reach their topics from
    the agent; mirroring them too would give the node aggregate each state twice."""
    producer = Producer()
    reflector = Reflector(PODS, Api(), producer, TOPICS, Checkpoint(tmp_path / "checkpoint.db"), ClusterView(),
                          BridgeConfig(kubeconfig=None))
    published = _pod("agent", "5")
    published["metadata"]["annotations"] = {PUBLISHED_BY: "node-agent"}
    asyncio.run(reflector.apply([("ADDED", published), ("ADDED", _pod("web", "6")), ("DELETED", published)]))
    assert [key for _, key, _ in producer.sent] == [b"default/web"]
    assert reflector.checkpoint.cursor("pods") == "5"


class SlowProducer(Producer):
    """Acknowledges nothing until :attr:`acknowledge` is set, as a broker whose answer is still on its way."""

    def __init__(self) -> None:
        super().__init__()
        self.acknowledge = asyncio.Event()

    async def send(self, topic, key, value):
        self.sent.append((topic, key, value))
        future = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().create_task(self._ack(future))
        return future

    async def _ack(self, future) -> None:
        await self.acknowledge.wait()
        future.set_result(None)


class ListingApi(Api):
    async def list(self, resource, page):
        return [_pod("web", "5"), _pod("db", "6")], "6"


def _in_view_before_acknowledged(tmp_path, produce) -> tuple[list[str], str | None, str | None]:
    """(pods in the view, checkpoint cursor) while ``produce(reflector)`` waits for the broker, and the cursor
    after."""
    producer = SlowProducer()
    reflector = Reflector(PODS, ListingApi(), producer, TOPICS, Checkpoint(tmp_path / "checkpoint.db"),
                          ClusterView(), BridgeConfig(kubeconfig=None))

    async def run():
        producing = asyncio.create_task(produce(reflector))
        while len(producer.sent) < 2:
            await asyncio.sleep(0)
        in_view, cursor = sorted(reflector.view.pods), reflector.checkpoint.cursor("pods")
        producer.acknowledge.set()
        await producing
        return in_view, cursor, reflector.checkpoint.cursor("pods")
    return asyncio.run(run())


def test_a_batch_is_in_the_view_before_the_broker_acknowledges_it(tmp_path):
    """The pod's decision can reach the actuator before the acknowledgement of the pod's record reaches the
    reflector; the actuator must then find the pod (it skipped "the pod no longer exists" and left it unbound)."""
    assert _in_view_before_acknowledged(
        tmp_path, lambda reflector: reflector.apply([("ADDED", _pod("web", "5")), ("ADDED", _pod("db", "6"))])
    ) == (["default/db", "default/web"], None, "6")


def test_a_relist_is_in_the_view_before_the_broker_acknowledges_it(tmp_path):
    assert _in_view_before_acknowledged(tmp_path, lambda reflector: reflector.relist()) == (
        ["default/db", "default/web"], None, "6")
