"""``koord bench bridge`` at a small size: every pod created through the real API server is bound, and the
figures it prints are there and consistent."""

from __future__ import annotations

import pytest

from streams.bench import bridge, harness

pytestmark = pytest.mark.integration


def test_the_bridge_bench_binds_every_pod_and_measures_the_bridge(plane):
    with harness.running("tansu") as running:
        result = bridge.run(running, nodes=20, pods=40, plane=plane)
    assert (result["nodes"], result["pods"], result["bound"]) == (20, 40, 40)
    assert result["pods_per_s"] > 0
    assert 0 < result["p50_ms"] <= result["p99_ms"] <= result["max_ms"]
    for stage in ("create_to_decision", "decision_to_bound"):
        assert 0 < result[stage]["p50_ms"] <= result[stage]["p99_ms"]
    cost = result["bridge"]
    assert result["unbound"] is None
    assert cost["alive"] and cost["tracebacks"] == 0
    assert cost["objects"] == 60 and cost["object_changes"] >= 20 + 2 * 40
    assert cost["cpu_seconds"] > 0 and cost["rss_mib"] >= cost["baseline_rss_mib"] > 0
