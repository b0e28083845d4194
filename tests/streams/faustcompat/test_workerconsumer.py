"""The switch of ``workerconsumer.wrap_worker_consumer``, on a stand-in with Faust's aiokafka consumer-thread
interface: the worker consumer is wrapped (fetch sessions, gathered fetches) only while its patch is enabled,
and enabling it again wraps it again. ``test_fetchwait.py`` checks the fetch pacing's."""

from __future__ import annotations

import pytest

from streams.faustcompat.fetchgather import install_fetch_gathering
from streams.faustcompat.fetchsession import install_fetch_sessions


@pytest.mark.parametrize("install, attribute", [
    pytest.param(install_fetch_sessions, "koord_fetch_sessions", id="fetch-sessions"),
    pytest.param(install_fetch_gathering, "koord_gathering", id="fetch-gathering"),
])
def test_the_worker_consumer_is_wrapped_only_while_enabled(install, attribute):
    class Consumer:
        async def start(self):
            pass

    class Thread:
        def _create_worker_consumer(self, transport):
            return Consumer()

    install(True, Thread)
    assert getattr(Thread()._create_worker_consumer("transport"), attribute) == {}
    install(False, Thread)
    assert not hasattr(Thread()._create_worker_consumer("transport"), attribute)
    install(True, Thread)
    assert getattr(Thread()._create_worker_consumer("transport"), attribute) == {}
