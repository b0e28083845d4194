"""A first run tells the story: a fresh ``koord up`` on the embedded broker shows co-location within 60 s —
batch-cpu on the nodes, a BE pod (whose requests are kubernetes.io/batch-cpu and batch-memory) placed, and a CPU suppress actuation of
the BE class — because the simulated cluster's slo-controller-config turns co-location and the resource
thresholds on."""

from __future__ import annotations

import json
import time

import pytest

from tests.integration.embedded import fresh_env, koord, read_model_rows

pytestmark = pytest.mark.integration


def test_make_up_shows_colocation_within_a_minute(tmp_path):
    env = fresh_env(tmp_path / "home")
    koord(env, "up", "--detach", "--nodes", "3")
    try:
        deadline = time.monotonic() + 60
        batch_node = be_placed = suppressed = None
        while time.monotonic() < deadline and not (batch_node and be_placed and suppressed):
            nodes = json.loads(koord(env, "get", "nodes", "-o", "json").stdout)["items"]
            batch_node = next((n["metadata"]["name"] for n in nodes
                               if int(n["status"]["allocatable"].get("kubernetes.io/batch-cpu", "0")) > 0), None)
            decisions = json.loads(koord(env, "get", "decisions", "-o", "json").stdout)["items"]
            be_placed = next((d["pod"]["name"] for d in decisions if d["result"] == "Scheduled"
                              and d["pod"]["name"].startswith("sim-be-")), None)
            explained = json.loads(koord(env, "explain", "node", batch_node, "-o", "json").stdout) \
                if batch_node else {}
            suppressed = _suppress_actuation(env) if batch_node else None
            time.sleep(1)
        assert batch_node, "no node got kubernetes.io/batch-cpu within 60s"
        assert be_placed, "no BE pod was placed on batch-cpu within 60s"
        assert suppressed, f"no CPU suppress actuation of the BE class within 60s ({explained})"
    finally:
        koord(env, "down", check=False)


def _suppress_actuation(env) -> str | None:
    """The first actuation of the BE class's cgroup (cpuset.cpus or cpu.cfs_quota_us: CPU suppress)."""
    for (values,) in read_model_rows(
            env, 'SELECT "values" FROM actuations WHERE target_kind = \'qos\' AND target_id = \'BE\''):
        if any(key in json.loads(values) for key in ("cpuset.cpus", "cpu.cfs_quota_us")):
            return values
    return None
