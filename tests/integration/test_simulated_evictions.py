"""Node-side memory eviction carried out, end to end on the embedded default: ``koord up`` with the
simulated cluster, then an slo-controller-config turning memory eviction on with a threshold every node is
above. The node aggregate evicts BE pods in koordlet's order (same priority here, so the larger memory
user first), the simulator ends each evicted pod (phase Failed, its resources released through the pod's
deletion path), and a worker killed with SIGKILL while evictions are being decided, restarted by ``up``,
re-reads its inbox without evicting any pod a second time (one Eviction decision id per pod); ``koord replay
node`` reproduces every eviction."""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import time

import pytest

from streams.nodeqos.plugins.memoryevict import REASON_EVICTED
from streams.sloconfig.document import CONFIG_NAME, CONFIG_NAMESPACE
from tests.integration.embedded import fresh_env, koord, koord_json, read_model_rows

pytestmark = pytest.mark.integration

THRESHOLD_PERCENT = 1
"""The simulated nodes are large (64-512 GiB) and lightly used (a few percent): 1 % (lower 0) puts them all over."""
RANKED = re.compile(r"pod (\d+) of \d+ in eviction order uses (\d+) bytes")


def _evictions(env) -> list[tuple[str, str, str, int, str]]:
    """(decision id, node, pod key, timestamp, message) of every memory eviction, in topic order."""
    return read_model_rows(env, "SELECT decision_id, node_name, pod_key, timestamp_ms, message FROM evictions "
                                f"WHERE reason = '{REASON_EVICTED}' ORDER BY topic_offset")


def _phases(env) -> dict[str, str]:
    return {f"sim/{p['metadata']['name']}": p["status"]["phase"] for p in koord_json(env, "get", "pods", "-n", "sim")["items"]}


def test_memory_pressure_evicts_be_pods_in_order_and_the_simulator_ends_them_once(tmp_path):
    env = fresh_env(tmp_path / "home")
    koord(env, "up", "--detach", "--nodes", "2", "--pods-per-node", "8")
    try:
        config = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": CONFIG_NAME, "namespace": CONFIG_NAMESPACE},
                  "data": {"colocation-config": json.dumps({"enable": True}),
                           "resource-threshold-config": json.dumps({"clusterStrategy": {
                               "enable": True, "memoryEvictThresholdPercent": THRESHOLD_PERCENT,
                               "memoryEvictLowerPercent": 0}})}}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(
                d["result"] == "Scheduled" and d["pod"]["name"].startswith("sim-be-")
                for d in koord_json(env, "get", "decisions")["items"]):
            time.sleep(1)
        koord(env, "apply", "-f", "-", input_text=json.dumps(config))

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not _evictions(env):
            time.sleep(0.5)
        assert _evictions(env), "no memory eviction within 60 s of the config"
        worker = koord_json(env, "status")["processes"]["worker"]["pid"]
        os.kill(worker, signal.SIGKILL)

        deadline, status = time.monotonic() + 90, {}
        while time.monotonic() < deadline and not (
                status.get("processes", {}).get("worker", {}).get("pid") not in (None, worker)
                and status.get("consumers", {}).get("worker") == "caught up"):
            time.sleep(1)
            status = koord_json(env, "status")
        assert status["processes"]["worker"]["pid"] != worker, "up did not restart the killed worker"

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            evictions, phases = _evictions(env), _phases(env)
            if all(phases.get(pod) in ("Failed", None) for _, _, pod, _, _ in evictions):
                break
            time.sleep(1)
        replayed = json.loads(koord(env, "replay", "node", "-o", "json", check=False).stdout)
    finally:
        koord(env, "down", check=False)

    assert replayed["ok"] and replayed["outputs"]["Eviction"]["reproduced"] >= len(evictions), replayed

    per_pod = collections.Counter(pod for _, _, pod, _, _ in evictions)
    assert per_pod and max(per_pod.values()) == 1, f"a pod was evicted twice: {per_pod}"
    assert all(pod.startswith("sim/sim-be-") for pod in per_pod), f"a non-BE pod was evicted: {sorted(per_pod)}"
    not_ended = {pod: phases.get(pod) for pod in per_pod if phases.get(pod) not in ("Failed", None)}
    assert not not_ended, f"evicted pods the simulator did not end: {not_ended}"
    rounds = collections.defaultdict(list)
    for _, node, _, timestamp, message in evictions:
        rank, used = RANKED.search(message).groups()
        rounds[(node, timestamp)].append((int(rank), int(used)))
    for key, ranked in rounds.items():
        used = [u for _, u in sorted(ranked)]
        assert used == sorted(used, reverse=True), f"round {key} not in koordlet's order (larger user first): {used}"
