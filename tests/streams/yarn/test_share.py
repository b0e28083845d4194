"""The YARN share in the node aggregate (``streams.noderesource.yarnshare``, yarn-copilot's formulas)."""

from __future__ import annotations

import json

import pytest

from streams.koordinator.annotations import ANNOTATION_THIRD_PARTY_ALLOCATIONS
from streams.koordinator.resources import BATCH_CPU, BATCH_MEMORY
from streams.nodeaggregate import statecodec
from streams.noderesource.yarnshare import (
    ANNOTATION_YARN_NODE_RESOURCE, MIB, YarnShare, writable, yarn_total)
from streams.schemas import codec
from tests.streams.nodeaggregate.test_node import FIXTURE_A_PODS, NODE, bound, metric_event, node_event, run
from tests.streams.noderesource.support import G, NOW, Gi, decision, event


def yarn_node(vcores: int, memory_mb: int, ts: int = NOW, capacity: tuple[int, int] = (25, 33_000)) -> dict:
    record = {"nodeName": NODE, "nodeId": "nm-host:8041", "cluster": "http://rm:8088", "state": "RUNNING",
              "capacityVcores": capacity[0], "capacityMemoryMB": capacity[1], "allocatedVcores": vcores,
              "allocatedMemoryMB": memory_mb, "containers": 1 if vcores else 0, "observedAt": ts}
    codec.encode("YarnNode", record)
    return event("YarnNode", NODE, record, ts=ts)


def batch(out: dict) -> tuple[int, int]:
    return out["allocatable"][BATCH_CPU], out["allocatable"][BATCH_MEMORY]


@pytest.mark.parametrize("origin, be, total", [
    ((25_000, 33 * G), (0, 0), (25, 33_000)),
    ((25_500, 33 * G + 1), (0, 0), (26, 33_001)),
    ((25_000, 33 * G), (4_000, 8 * G), (21, 25_000)),
    ((1_000, G), (4_000, 8 * G), (0, 0)),
], ids=["origin", "rounded-up-like-ScaledValue", "minus-be-requests", "never-negative"])
def test_yarn_total_is_origin_batch_minus_be_requests_in_yarn_units(origin, be, total):
    assert yarn_total(origin, be) == total


def test_the_written_total_is_never_below_what_yarn_allocated():
    share = YarnShare("h:1", "RUNNING", 6, 12_000, 8, 16_000)
    assert writable((4, 8_000), share) == (6, 12_000)
    assert writable((10, 20_000), share) == (10, 20_000)


def test_yarn_allocations_come_off_the_schedulers_batch_allocatable():
    state, out = run(node_event(), *bound(*FIXTURE_A_PODS), metric_event())
    assert batch(out[-1]) == (25_000, 33 * G)
    state, [published] = run(yarn_node(4, 8192, ts=NOW + 1), state=state)
    assert batch(published) == (25_000 - 4_000, 33 * G - 8192 * MIB)
    allocations = json.loads(published["annotations"][ANNOTATION_THIRD_PARTY_ALLOCATIONS])
    assert allocations == {"allocations": [{"name": "hadoop-yarn", "priority": "koord-batch",
                                            "resources": {BATCH_CPU: "4000", BATCH_MEMORY: str(8192 * MIB)}}]}
    assert json.loads(published["annotations"][ANNOTATION_YARN_NODE_RESOURCE]) == {
        "nodeId": "nm-host:8041", "vcores": 25, "memoryMB": 33_000}
    codec.encode("NodeResource", published)


def test_be_pods_come_off_the_nodemanagers_total_and_an_unchanged_report_publishes_nothing():
    be = decision("be-1", cpu=0, memory=0, priority=5500, priority_class="koord-batch", qos="BE")
    be["requests"] = {BATCH_CPU: 3_000, BATCH_MEMORY: 4 * G}
    state, _ = run(node_event(), *bound(*FIXTURE_A_PODS, be), metric_event())
    state, [published] = run(yarn_node(2, 1024, ts=NOW + 1), state=state)
    assert json.loads(published["annotations"][ANNOTATION_YARN_NODE_RESOURCE])["vcores"] == 22
    assert json.loads(published["annotations"][ANNOTATION_YARN_NODE_RESOURCE])["memoryMB"] == 29_000
    state, again = run(yarn_node(2, 1024, ts=NOW + 2), state=state)
    assert again == []
    loaded = statecodec.load_state(statecodec.dump_state(state))
    assert loaded.yarn == state.yarn and loaded.pods == state.pods
    assert statecodec.dump_state(loaded) == statecodec.dump_state(state)


def test_a_deleted_yarn_node_gives_the_share_back():
    state, _ = run(node_event(), *bound(*FIXTURE_A_PODS), metric_event(), yarn_node(4, 8192, ts=NOW + 1))
    state, [published] = run(event("YarnNode", NODE, None, ts=NOW + 2), state=state)
    assert batch(published) == (25_000, 33 * G)
    assert ANNOTATION_YARN_NODE_RESOURCE not in published["annotations"]


def test_a_be_pod_bound_later_moves_the_nodemanager_total_on_the_next_calculation():
    state, _ = run(node_event(), *bound(*FIXTURE_A_PODS), metric_event(), yarn_node(0, 0, ts=NOW + 1))
    be = decision("be-2", cpu=0, memory=0, priority=5500, priority_class="koord-batch", qos="BE")
    be["requests"] = {BATCH_CPU: 5_000, BATCH_MEMORY: 3 * G}
    state, nothing = run(*bound(be, ts=NOW + 2), state=state)
    assert nothing == []
    state, [published] = run(event("Tick", NODE, {"timestamp": NOW + 3}, ts=NOW + 3), state=state)
    assert json.loads(published["annotations"][ANNOTATION_YARN_NODE_RESOURCE]) == {
        "nodeId": "nm-host:8041", "vcores": 20, "memoryMB": 30_000}
    assert batch(published) == (25_000, 33 * G)
    state, quiet = run(event("Tick", NODE, {"timestamp": NOW + 4}, ts=NOW + 4), state=state)
    assert quiet == []
