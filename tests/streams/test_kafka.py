"""Consumer settings by broker kind: Tansu gets a short fetch wait and pacing, Kafka aiokafka's defaults."""

from __future__ import annotations

import asyncio
import types

import pytest

from streams import kafka
from streams.app import changelog_reader
from streams.broker.tansu_workarounds import FETCH_MAX_WAIT_MS

BOOTSTRAP = "127.0.0.1:9"


@pytest.fixture
def broker_kind(monkeypatch, tmp_path):
    def set_kind(kind: str) -> None:
        monkeypatch.setenv("KOORD_HOME", str(tmp_path))
        monkeypatch.setenv("KOORD_BROKER", BOOTSTRAP)
        monkeypatch.setenv("KOORD_BROKER_KIND", kind)
    return set_kind


@pytest.mark.parametrize("kind, settings", [
    pytest.param("tansu", {"fetch_max_wait_ms": FETCH_MAX_WAIT_MS}, id="tansu-short-wait"),
    pytest.param("kafka", {}, id="kafka-defaults"),
])
def test_consumer_settings(broker_kind, kind, settings):
    broker_kind(kind)
    assert kafka.consumer_settings() == settings


@pytest.mark.parametrize("kind, paced", [
    pytest.param("tansu", True, id="tansu-paced"),
    pytest.param("kafka", False, id="kafka-unpaced"),
])
def test_long_running_consumer_is_paced_only_on_tansu(broker_kind, kind, paced):
    broker_kind(kind)

    async def make():
        return kafka.consumer(BOOTSTRAP, ["koord.decisions"], None, from_beginning=False)

    consumer = asyncio.run(make())
    assert ("start" in vars(consumer)) == paced  # pace_fetches wraps the instance's start()


def test_the_readers_of_history_keep_aiokafkas_fetch_wait_on_tansu(broker_kind):
    """Tansu serves a 10 ms fetch nothing of a large partition (``tansu_workarounds``): table recovery reads
    with aiokafka's wait."""
    broker_kind("tansu")
    app = types.SimpleNamespace(conf=types.SimpleNamespace(broker=[types.SimpleNamespace(host="127.0.0.1", port=9)]))

    async def wait_ms() -> int:
        reader = changelog_reader(app)
        await reader.stop()
        return reader._fetch_max_wait_ms
    assert asyncio.run(wait_ms()) == 500 > FETCH_MAX_WAIT_MS
