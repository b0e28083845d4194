"""Every long-running command stops on SIGTERM and on SIGINT (Ctrl-C) with exit status 0 and no traceback.

Each command runs until it is running (its metrics say it reached the broker, or the worker logs "Worker
ready"), then gets the signal; two more cases signal a command while it is still importing, before any
command code runs. The commands run against a Tansu broker of this module's own, not the session's
``cluster``: the node agent and the simulator would add nodes the other tests' scheduling would see, a
second projection would take partitions (and commit offsets) from the session's, and a second worker
would rebalance its group.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request

import pytest

from streams import supervision
from streams.broker import embedded
from tests.integration.conftest import start_broker

pytestmark = pytest.mark.integration

READY_TIMEOUT_S = 60
STOP_TIMEOUT_S = 20


def _metrics(port: int) -> str:
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
    except OSError:
        return ""


def _connected(text: str) -> bool:
    return any(line.startswith("koord_node_agent_broker_connected{") and line.endswith(" 1.0")
               for line in text.splitlines())


def _consuming(text: str) -> bool:
    return 'koord_consumer_lag{consumer="koordstream-projection"' in text


COMMANDS = {
    "node-agent": (["node-agent", "--dry-run", "--state-dir", "{home}/agent"], _connected),
    "simulate": (["simulate", "--nodes", "1", "--report-interval", "5"], _connected),
    "project": (["project"], _consuming),
    "worker": (["worker"], None),
}


@pytest.fixture(scope="module")
def broker_env(tmp_path_factory):
    broker = start_broker("tansu", tmp_path_factory.mktemp("sigterm-broker"))
    try:
        yield broker.env()
    finally:
        broker.stop()


def _start(broker_env, tmp_path, args: list[str], port: int | None) -> tuple[subprocess.Popen, object]:
    args = [arg.format(home=tmp_path) for arg in args] + (["--metrics-port", str(port)] if port else [])
    env = {**os.environ, **broker_env, "KOORD_HOME": str(tmp_path),
           "KOORD_DATABASE_URL": f"sqlite:///{tmp_path / 'readmodel.sqlite'}"}
    log = open(tmp_path / "stderr.log", "w+")
    proc = subprocess.Popen(supervision.koord_command(*args), stdout=subprocess.DEVNULL, stderr=log,
                            stdin=subprocess.DEVNULL, env=env)
    return proc, log


def _stopped(proc: subprocess.Popen, log, signum: int) -> str:
    """Signal ``proc`` and return its stderr once it exits; if it does not, fail with every thread's stack."""
    proc.send_signal(signum)
    try:
        proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        time.sleep(2)
        proc.kill()
        proc.wait()
        log.seek(0)
        pytest.fail(f"still running {STOP_TIMEOUT_S}s after {signal.Signals(signum).name}:\n{log.read()[-6000:]}")
    log.seek(0)
    return log.read()


def _wait_running(proc: subprocess.Popen, log, ready) -> None:
    """Wait until ``ready()``; a command that is not running by then is killed (no process outlives its test)."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"exited {proc.returncode} before running"
        if ready():
            return
        time.sleep(0.2)
    proc.kill()
    proc.wait()
    log.seek(0)
    raise TimeoutError(f"not running within {READY_TIMEOUT_S}s:\n{log.read()[-3000:]}")


def _start_running(broker_env, tmp_path, command: str) -> tuple[subprocess.Popen, object]:
    """Start one of :data:`COMMANDS` and wait until it runs (its "Worker ready" line, or its ready metrics)."""
    args, ready_metrics = COMMANDS[command]
    port = embedded.free_loopback_port()
    proc, log = _start(broker_env, tmp_path, args, port)
    if ready_metrics is None:
        _wait_running(proc, log, lambda: "Worker ready" in (log.seek(0) or log.read()))
    else:
        _wait_running(proc, log, lambda: ready_metrics(_metrics(port)))
    return proc, log


@pytest.mark.parametrize("command, signum", [
    pytest.param("node-agent", signal.SIGTERM, id="node-agent-SIGTERM"),
    pytest.param("node-agent", signal.SIGINT, id="node-agent-SIGINT"),
    pytest.param("simulate", signal.SIGTERM, id="simulate-SIGTERM"),
    pytest.param("project", signal.SIGTERM, id="project-SIGTERM"),
    pytest.param("worker", signal.SIGTERM, id="worker-SIGTERM"),
])
def test_a_running_command_stops_quietly(broker_env, tmp_path, command, signum):
    proc, log = _start_running(broker_env, tmp_path, command)
    stderr = _stopped(proc, log, signum)
    assert "Traceback" not in stderr, stderr[-3000:]
    assert proc.returncode == 0, stderr[-3000:]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_command_signalled_while_it_starts_stops_quietly(broker_env, tmp_path, signum):
    proc, log = _start(broker_env, tmp_path, ["node-agent", "--dry-run", "--state-dir", "{home}/agent"], None)
    time.sleep(0.5)
    stderr = _stopped(proc, log, signum)
    assert "Traceback" not in stderr, stderr[-3000:]
    assert proc.returncode == 0, stderr[-3000:]


@pytest.mark.parametrize("command", ["worker", "project"])
def test_a_command_whose_broker_was_killed_stops_quietly(tmp_path, command):
    """A SIGKILLed broker, then SIGTERM: the consumer's fetches failing against a broker that is gone must not
    keep the command from stopping (``streams.broker.fetchcancel``: before it the worker never stopped)."""
    broker = start_broker("tansu", tmp_path / "broker")
    try:
        proc, log = _start_running(broker.env(), tmp_path, command)
        for broker_proc in broker.processes:
            broker_proc.kill()
            broker_proc.wait()
        deadline = time.monotonic() + 20
        while "Failed fetch messages" not in (log.seek(0) or log.read()) and time.monotonic() < deadline:
            time.sleep(0.2)
        stderr = _stopped(proc, log, signal.SIGTERM)
    finally:
        broker.stop()
    assert "Failed fetch messages" in stderr, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    assert proc.returncode == 0, stderr[-3000:]
