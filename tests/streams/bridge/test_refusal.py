"""An object the bridge cannot produce (here: its stored form over the state budget) is dead-lettered, counted
and reported on the object as a Warning Event; the watch goes on, and an Event the API refuses is only logged."""

from __future__ import annotations

import asyncio
import json

from streams.bridge.api import ApiError
from streams.bridge.checkpoint import Checkpoint
from streams.bridge.config import BridgeConfig
from streams.bridge.reflector import REFUSED, Reflector
from streams.bridge.resources import WATCHED
from streams.bridge.view import ClusterView
from streams.schemas import codec

PODS = next(r for r in WATCHED if r.kind == "Pod")
TOPICS = {"pods": "koord.pods", "deadletters": "koord.deadletters"}


def _pod(name: str, version: str, values: int = 0) -> dict:
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ['"' * 50] * values}]}]}}}
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": version},
            "spec": {"affinity": affinity if values else None,
                     "containers": [{"name": "c", "image": "nginx"}]}}


class Producer:
    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes, bytes | None]] = []

    async def send(self, topic, key, value):
        self.sent.append((topic, key, value))
        future = asyncio.get_running_loop().create_future()
        future.set_result(None)
        return future


class Api:
    def __init__(self, fail: bool = False) -> None:
        self.events: list[tuple[str, str, str]] = []
        self.fail = fail

    async def refusal_event(self, kind, api_version, obj, reason):
        if self.fail:
            raise ApiError("create", "events", 403, "forbidden")
        self.events.append((kind, obj["metadata"]["name"], reason))


def _reflector(tmp_path, api) -> tuple[Reflector, Producer]:
    producer = Producer()
    return Reflector(PODS, api, producer, TOPICS, Checkpoint(tmp_path / "checkpoint.db"), ClusterView(),
                     BridgeConfig(kubeconfig=None)), producer


def test_a_pod_over_the_state_budget_is_a_dead_letter_an_event_and_a_count_and_the_next_pod_is_produced(tmp_path):
    api = Api()
    reflector, producer = _reflector(tmp_path, api)
    before = REFUSED.labels("pods")._value.get()
    asyncio.run(reflector.apply([("ADDED", _pod("huge", "5", values=8_000))]))
    asyncio.run(reflector.apply([("ADDED", _pod("fine", "6"))]))
    assert [(topic, key) for topic, key, _ in producer.sent] == [("koord.deadletters", b"default/huge"),
                                                                 ("koord.pods", b"default/fine")]
    _, letter = codec.decode(producer.sent[0][2])
    assert "budget of a stored object" in letter["reason"]
    [(kind, name, reason)] = api.events
    assert (kind, name) == ("Pod", "huge") and "budget of a stored object" in reason
    assert REFUSED.labels("pods")._value.get() - before == 1
    assert reflector.checkpoint.known("pods") == {"default/huge": "5", "default/fine": "6"}


def test_an_event_the_api_refuses_is_logged_and_the_watch_goes_on(tmp_path, caplog):
    reflector, producer = _reflector(tmp_path, Api(fail=True))
    asyncio.run(reflector.apply([("ADDED", _pod("huge", "5", values=8_000))]))
    assert [topic for topic, _, _ in producer.sent] == ["koord.deadletters"]
    assert "no refusal event" in caplog.text
    assert json.dumps(reflector.checkpoint.known("pods")) == '{"default/huge": "5"}'
