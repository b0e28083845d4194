"""``koord bench bridge --versus kube-scheduler``'s kube-scheduler side on a real kube-apiserver: kube-scheduler
v1.34.4 (built with the control plane) binds every pod the bench creates, at the client rate it was given."""

from __future__ import annotations

import pytest

from streams.bench import clientrate, kubescheduler

pytestmark = pytest.mark.integration


def test_kube_scheduler_binds_the_bench_pods(plane):
    result = kubescheduler.run(nodes=3, pods=6, rate=None, client=clientrate.KUBE_SCHEDULER_DEFAULT, plane=plane)
    assert (result["nodes"], result["pods"], result["bound"], result["bound_listed"]) == (3, 6, 6, 6)
    assert result["pods_per_s"] > 0
    assert 0 < result["p50_ms"] <= result["p99_ms"] <= result["max_ms"]
    own = result["kube_scheduler"]
    assert own["alive"] and own["client"] == "qps 50 / burst 100" and own["version"] == "v1.34.4"
