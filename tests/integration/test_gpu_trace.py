"""``koord bench trace`` end to end on a fresh embedded broker: a small trace of the openb format (two GPU nodes,
shared and whole-GPU pods, a CPU-only pod) replayed for two seeds with each policy; every pod of every seed is
decided, the placements add up, and the fragmentation-aware score leaves no more GPU unallocated than
Koordinator's default spreading."""

from __future__ import annotations

import json
import subprocess

import pytest

from streams import supervision

pytestmark = pytest.mark.integration

NODES = "sn,cpu_milli,memory_mib,gpu,model\nt-node-0,32000,131072,4,V100\nt-node-1,32000,131072,4,V100\n"
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
        "scheduled_time\n" +
        "".join(f"s-{i},1000,1024,1,{share},,LS,Running,0,1,0\n" for i, share in enumerate((300, 500, 700, 200))) +
        "w-0,2000,2048,1,1000,,BE,Running,0,1,0\nw-1,4000,4096,2,1000,,Burstable,Running,0,1,0\n"
        "c-0,1000,1024,0,0,,LS,Running,0,1,0\n")


def bench(tmp_path, policy: str) -> dict:
    (tmp_path / "nodes.csv").write_text(NODES)
    (tmp_path / "pods.csv").write_text(PODS)
    done = subprocess.run(supervision.koord_command(
        "bench", "trace", "--nodes", str(tmp_path / "nodes.csv"), "--pods", str(tmp_path / "pods.csv"),
        "--policy", policy, "--seeds", "2", "--broker", "tansu", "-o", "json"),
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_the_trace_is_replayed_through_the_broker_with_both_policies(tmp_path):
    results = {policy: bench(tmp_path, policy) for policy in ("default", "fragmentation")}
    for policy, result in results.items():
        assert result["broker"]["kind"] == "tansu" and result["gpus"] == 8
        for run in result["seeds"]:
            assert run["decided"] == run["pods"] > 7, (policy, run)
            assert run["arrived_pct_at_end"] >= 100.0
            assert 0.0 <= run["unallocated_gpu_pct"] <= 100.0 and run["fragmentation_pct"] >= 0.0
    assert [r["seed"] for r in results["default"]["seeds"]] == [42, 43]
    assert results["fragmentation"]["median"]["unallocated_gpu_pct"] <= \
        results["default"]["median"]["unallocated_gpu_pct"]
