"""An agent that fails stops its worker with the reason and exit status 70, instead of being restarted
in place (``streams.agents.supervisor``); on a real broker of each kind."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from aiokafka.admin import NewTopic

from streams.agents.supervisor import EXIT_AGENT_FAILED
from streams.broker import local
from streams.kafka import admin_client, produce
from streams.topology import load_topology


@pytest.fixture(scope="module")
def broker(tmp_path_factory, broker_kind):
    started = local.start(broker_kind, tmp_path_factory.mktemp("supervisor"), load_topology(), 1)
    try:
        yield started
    finally:
        started.stop()


def test_a_failing_agent_stops_the_worker_loudly(broker, tmp_path):
    async def prepare() -> None:
        async with admin_client(broker.bootstrap) as admin:
            await admin.create_topics([NewTopic("failing-probe", 1, 1)])
        await produce(broker.bootstrap, [("failing-probe", "k", b"poison")])

    asyncio.run(prepare())
    worker = subprocess.run([sys.executable, str(Path(__file__).with_name("failing_worker.py")), broker.bootstrap,
                             "failing-probe"], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                            env={**os.environ, **broker.env(), "PYTHONPATH": str(Path(__file__).resolve().parents[3])})
    output = worker.stdout + worker.stderr
    assert worker.returncode == EXIT_AGENT_FAILED, output[-3000:]
    assert "failed: RuntimeError('the probe agent fails on purpose'); stopping the worker" in output
    assert "Restarting dead" not in output
