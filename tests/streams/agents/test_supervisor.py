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


def run_failing_worker(broker, tmp_path, topic: str, *args: str) -> str:
    """Run ``failing_worker.py`` on a new topic holding one record; check it exits with status 70 and why."""
    async def prepare() -> None:
        async with admin_client(broker.bootstrap) as admin:
            await admin.create_topics([NewTopic(topic, 1, 1)])
        await produce(broker.bootstrap, [(topic, "k", b"poison")])

    asyncio.run(prepare())
    worker = subprocess.run([sys.executable, str(Path(__file__).with_name("failing_worker.py")), broker.bootstrap,
                             topic, *args], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                            env={**os.environ, **broker.env(), "PYTHONPATH": str(Path(__file__).resolve().parents[3])})
    output = worker.stdout + worker.stderr
    assert worker.returncode == EXIT_AGENT_FAILED, output[-3000:]
    assert "failed: RuntimeError('the probe agent fails on purpose'); stopping the worker" in output
    assert "Restarting dead" not in output
    return output


def test_a_failing_agent_stops_the_worker_loudly(broker, tmp_path):
    run_failing_worker(broker, tmp_path, "failing-probe")


def test_a_stop_that_hangs_ends_at_the_deadline_with_every_stack(broker, tmp_path):
    output = run_failing_worker(broker, tmp_path, "hanging-probe", "hang")
    assert "the worker did not stop within 3 s; exiting with status 70 now" in output
    assert "in on_stop" in output
