"""``koord up --detach``, ``status`` and ``down`` leave nothing behind, on either broker ``up`` starts."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from streams import supervision

pytestmark = pytest.mark.integration


def koord(env, *args, check=True):
    result = subprocess.run([sys.executable, "-m", "streams.cli", *args], capture_output=True, text=True,
                            env=env, timeout=120)
    if check and result.returncode != 0:
        raise AssertionError(f"koord {' '.join(args)}: {result.stdout}\n{result.stderr}")
    return result


def test_up_detach_status_down(tmp_path, broker_kind):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KOORD_")}
    home = tmp_path / "home"
    env["KOORD_HOME"] = str(home)
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
