"""``koord bench nodes`` against a broker that takes nothing (a listener that accepts and never answers, as
the Tansu broker did when the bench hung in its send): past ``--timeout`` it fails, naming what it waited for,
instead of hanging."""

from __future__ import annotations

import os
import socket
import subprocess

from streams import supervision


def test_a_broker_that_takes_nothing_fails_the_bench_at_its_timeout_naming_what_it_waited_for():
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        done = subprocess.run(
            supervision.koord_command("bench", "nodes", "--nodes", "5", "--pods", "2", "--rounds", "1",
                                      "--timeout", "3"),
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "KOORD_BROKER": f"127.0.0.1:{port}", "KOORD_BROKER_KIND": "tansu"})
    assert done.returncode == 1, done.stderr[-3000:]
    assert (f"Error: on KOORD_BROKER 127.0.0.1:{port} (tansu): koord bench nodes (5 nodes, 2 pods per node, 1 rounds) "
            "did not finish within 3 s (--timeout); it was waiting for the broker to take the setup's 16 records "
            "(koord.configs, koord.nodes, koord.pods): 0 of 16 sent, 0 acknowledged") in done.stderr, \
        done.stderr[-3000:]
