"""``koord up --detach``, ``status`` and ``down`` leave nothing behind, on either broker ``up`` starts."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import time
from pathlib import Path

import pytest

from streams import supervision
from tests.integration.embedded import fresh_env, koord

pytestmark = pytest.mark.integration


def test_up_detach_status_down(tmp_path, broker_kind):
    home = tmp_path / "home"
    env = fresh_env(home)
    started = koord(env, "up", "--detach", "--nodes", "2", "--broker", broker_kind)
    assert ("keeps topics in memory only" in started.stdout) == (broker_kind == "tansu")
    try:
        status = json.loads(koord(env, "status", "-o", "json").stdout)
        assert status["running"] and status["embedded"] and status["broker_kind"] == broker_kind
        host, port = status["bootstrap"].split(":")
        assert host == "127.0.0.1"
        assert set(status["processes"]) == {"broker", "worker", "projection", "simulator"}
        assert Path(status["processes"]["broker"]["log"]).is_relative_to(home.resolve())
        assert all(p["alive"] for p in status["processes"].values())
        deadline = time.monotonic() + 60
        decisions = []
        while not decisions and time.monotonic() < deadline:
            decisions = json.loads(koord(env, "get", "decisions", "-o", "json").stdout)["items"]
            time.sleep(0.5)
        assert decisions, "the simulated cluster produced no decision within 60s"
    finally:
        koord(env, "down", check=False)
    assert "not running" in koord(env, "status").stdout
    assert not any(supervision.pid_alive(p["pid"]) for p in status["processes"].values())
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", int(port)))


def test_status_reports_a_stuck_worker_and_up_restarts_a_killed_one(tmp_path, broker_kind):
    """A frozen worker (SIGSTOP) is alive but decides nothing: ``koord status`` says its consumers are stuck.
    Killed, ``koord up`` starts it again, and the new worker decides what waited: from the committed offsets,
    and from the first offset of a partition the group never committed (``streams.faustcompat.seek``)."""
    from tests.integration.test_flow import node_yaml, pod_yaml

    env = fresh_env(tmp_path / "home")
    koord(env, "up", "--detach", "--nodes", "0", "--broker", broker_kind)
    try:
        koord(env, "apply", "-f", "-", "--wait", input_text=node_yaml("n1") + "---\n" + pod_yaml("before", "1"))
        deadline, status = time.monotonic() + 30, {}
        while time.monotonic() < deadline and status.get("consumers", {}).get("worker") != "caught up":
            status = json.loads(koord(env, "status", "-o", "json").stdout)
        assert status["consumers"]["worker"] == "caught up", status["consumers"]
        worker = status["processes"]["worker"]["pid"]
        os.kill(worker, signal.SIGSTOP)
        try:
            koord(env, "apply", "-f", "-", input_text="---\n".join(pod_yaml(f"waiting-{i}", "0.1") for i in range(3)))
            stuck = json.loads(koord(env, "status", "-o", "json").stdout)
            assert stuck["consumers"]["worker"].startswith("STUCK: "), stuck["consumers"]
            assert stuck["processes"]["worker"]["alive"]
        finally:
            os.kill(worker, signal.SIGKILL)
            os.kill(worker, signal.SIGCONT)
        deadline = time.monotonic() + 90
        placed = set()
        while time.monotonic() < deadline and len(placed) < 3:
            pods = json.loads(koord(env, "get", "pods", "-o", "json").stdout)["items"]
            placed = {p["metadata"]["name"] for p in pods if p["spec"].get("nodeName")} - {"before"}
            time.sleep(0.5)
        assert placed == {f"waiting-{i}" for i in range(3)}
        after = json.loads(koord(env, "status", "-o", "json").stdout)
        assert after["processes"]["worker"]["pid"] != worker
        assert after["processes"]["worker"]["restarts"] == 1 and after["processes"]["worker"]["alive"]
        assert re.search(r"worker exited with code -9( \(.*\))?; started it again",
                         (Path(env["KOORD_HOME"]) / "up.log").read_text())
    finally:
        koord(env, "down", check=False)
