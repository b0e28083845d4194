"""A full KOORD_HOME stops the logs, not koordstream: the supervisor, the broker and the children stay up
and ``koord status`` says which log writes fail and why.

Kafka keeps its data under KOORD_HOME/kafka and, by design, halts when its data directory fails; the Kafka
case gives that directory a filesystem of its own, so that what is full is the logs."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time

import pytest

from streams import supervision
from tests.integration.embedded import fresh_env, koord, koord_json
from tests.integration.fullhome import fill, small_filesystem
from tests.integration.test_flow import node_yaml, pod_yaml

pytestmark = pytest.mark.integration


def test_the_supervisor_and_the_broker_survive_enospc_on_their_logs(tmp_path, broker_kind):
    with contextlib.ExitStack() as mounts:
        home = mounts.enter_context(small_filesystem(tmp_path / "home", "64m"))
        if broker_kind == "kafka":
            mounts.enter_context(small_filesystem(home / "kafka", "1g"))
        env = fresh_env(home)
        koord(env, "up", "--detach", "--nodes", "0", "--broker", broker_kind)
        try:
            koord(env, "apply", "-f", "-", "--wait", input_text=node_yaml("n1") + "---\n" + pod_yaml("p1", "1"))
            before = koord_json(env, "status")
            filler = fill(home)
            os.kill(before["processes"]["worker"]["pid"], signal.SIGKILL)
            deadline, status = time.monotonic() + 30, before
            while time.monotonic() < deadline and status["running"] and "supervisor" not in status.get("log_failures", {}):
                time.sleep(0.5)
                status = koord_json(env, "status")
            assert status["running"], "the supervisor died"
            assert supervision.pid_alive(before["processes"]["broker"]["pid"])
            assert status["processes"]["worker"]["pid"] != before["processes"]["worker"]["pid"]
            assert status["log_failures"]["supervisor"].startswith("No space left on device since ")
            assert "log writes failing for supervisor: No space left on device since " in koord(env, "status").stdout
            filler.unlink()
            assert json.loads(koord(env, "get", "pods", "-o", "json").stdout)["items"][0]["spec"]["nodeName"] == "n1"
        finally:
            koord(env, "down", check=False)
