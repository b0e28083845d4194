"""``koord bench nodes`` end to end on fresh embedded brokers: one row per node count, every NodeMetric
through the node aggregate, and the state bytes of every node read back from the changelog."""

from __future__ import annotations

import json
import subprocess

import pytest

from streams import supervision

pytestmark = pytest.mark.integration


def test_each_node_count_is_its_own_run_in_one_table():
    done = subprocess.run(supervision.koord_command(
        "bench", "nodes", "--nodes", "20", "--nodes", "40", "--pods", "3", "--rounds", "2", "--broker", "tansu",
        "-o", "json"), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = json.loads(done.stdout)["runs"]

    assert [(run["nodes"], run["pods_per_node"], run["events"]) for run in runs] == [(20, 3, 40), (40, 3, 80)]
    assert runs[0]["broker"]["bootstrap"] != runs[1]["broker"]["bootstrap"], "a fresh broker per run"
    for run in runs:
        assert run["events_per_s"] > 0 and run["state_bytes_per_node"] > 0, run
        assert 0 < run["through_scheduler_per_s"] <= run["events_per_s"], run
        assert run["restart_seconds"] > 0, run
