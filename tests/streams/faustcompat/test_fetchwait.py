"""The fetch-wait patch on a stand-in with Faust's aiokafka consumer-thread interface: the worker consumer
Faust builds is handed to ``pace_fetches`` and returned paced, while the patch is enabled."""

from __future__ import annotations

from streams.faustcompat import fetchwait


def test_the_worker_consumer_is_paced(monkeypatch):
    paced: list = []
    monkeypatch.setattr(fetchwait, "pace_fetches", lambda consumer: paced.append(consumer) or f"paced {consumer}")

    class Thread:
        def _create_worker_consumer(self, transport):
            return f"consumer on {transport}"

    fetchwait.install_fetch_pacing(True, Thread)
    assert Thread()._create_worker_consumer("transport") == "paced consumer on transport"
    assert paced == ["consumer on transport"]
    fetchwait.install_fetch_pacing(False, Thread)
    assert Thread()._create_worker_consumer("transport") == "consumer on transport"
    assert paced == ["consumer on transport"]
