"""The assignor patch on a stand-in with Faust's aiokafka consumer-thread interface: whatever assignor Faust
chose, the worker consumer it builds assigns with the app's own."""

from __future__ import annotations

from types import SimpleNamespace

from streams.faustcompat import assignor


def test_the_worker_consumer_assigns_with_the_apps_assignor():
    class Thread:
        app = SimpleNamespace(assignor="faust's assignor")

        def _create_worker_consumer(self, transport):
            self._assignor = "round robin"
            return SimpleNamespace(transport=transport, _partition_assignment_strategy=[self._assignor])

    assignor.use_own_assignor(Thread)
    thread = Thread()
    consumer = thread._create_worker_consumer("transport")
    assert consumer.transport == "transport"
    assert consumer._partition_assignment_strategy == ["faust's assignor"]
    assert thread._assignor == "faust's assignor"
